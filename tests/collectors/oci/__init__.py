"""Tests: collectors/oci."""
