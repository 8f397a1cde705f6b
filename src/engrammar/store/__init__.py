"""Stores: the contract (:class:`Store`) and its backends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import base
from .base import *  # noqa: F403 (the contract: every name of its __all__)
from .base import Backend

if TYPE_CHECKING:
    from ..config import Config

__all__ = [*base.__all__, "open_store"]


def open_store(config: Config) -> Backend:
    """The store that ``config.store`` names."""
    if config.is_sqlite:
        from .sqlite.store import SQLiteStore

        return SQLiteStore(
            config.sqlite_file,
            busy_timeout_ms=config.busy_timeout_ms,
            bm25_k1=config.bm25_k1,
            bm25_b=config.bm25_b,
            ann_threshold=config.ann_threshold,
            scope_cache_bytes=config.scope_cache_bytes,
        )
    try:
        from .postgres.store import PostgresStore
    except ImportError as exc:
        from ..errors import StoreError

        raise StoreError(
            f"the PostgreSQL store needs the 'postgres' extra: pip install 'engrammar[postgres]' "
            f"({exc})"
        ) from exc
    return PostgresStore(
        config.store,
        pool_size=config.pool_size,
        bm25_k1=config.bm25_k1,
        bm25_b=config.bm25_b,
        hnsw_m=config.hnsw_m,
        hnsw_ef_construction=config.hnsw_ef_construction,
        hnsw_ef_search=config.hnsw_ef_search,
        replica_urls=config.replica_urls,
        replica_wait_ms=config.replica_wait_ms,
        scope_cache_bytes=config.scope_cache_bytes,
        scope_graph_max=config.scope_graph_max,
    )
