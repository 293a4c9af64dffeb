"""Tests: collectors/e2e_networks."""
