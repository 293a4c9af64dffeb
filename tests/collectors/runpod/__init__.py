"""Tests: collectors/runpod."""
