"""Tests: collectors."""
