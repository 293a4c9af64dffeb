"""Tests: collectors/autodl."""
