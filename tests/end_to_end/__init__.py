"""Tests: end_to_end."""
