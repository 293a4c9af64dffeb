"""Tests: support."""
