"""Operator endpoints beside the API: health, OpenAPI, metrics."""
