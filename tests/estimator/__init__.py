"""Tests: estimator."""
