"""Tests: collectors/tencent."""
