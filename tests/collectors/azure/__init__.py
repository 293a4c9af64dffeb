"""Tests: collectors/azure."""
