"""Tests: collectors/verda."""
