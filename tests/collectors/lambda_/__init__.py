"""Tests: collectors/lambda_."""
