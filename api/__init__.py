"""The read-only HTTP API and the CLI: answers from pricedb, the same functions behind both."""
