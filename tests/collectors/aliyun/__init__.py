"""Tests: collectors/aliyun."""
