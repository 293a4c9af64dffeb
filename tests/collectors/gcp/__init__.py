"""Tests: collectors/gcp."""
