"""The scale-out store: PostgreSQL with pgvector."""

from .search import redact_url
from .store import PostgresStore

__all__ = ["PostgresStore", "redact_url"]
