"""Collectors: one per provider, each fetching (HTTP only) and parsing (pure) its price source."""
