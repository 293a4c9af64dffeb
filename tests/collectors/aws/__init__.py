"""Tests: collectors/aws."""
