"""Database schema, engine and migrations."""
