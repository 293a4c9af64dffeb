"""Tests: collectors/manual."""
