"""Tests: collectors/vast."""
