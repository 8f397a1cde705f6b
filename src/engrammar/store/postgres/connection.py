"""How the halves of the PostgreSQL store reach the server: the connection type, and the pool,
transactions and reads that :class:`~.store.PostgresStore` provides to each of them."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from .replicas import Replicas

__all__ = ["Conn", "Connected"]

Conn = psycopg.Connection[Any]
T = TypeVar("T")


class Connected:
    """What every half of the store calls on the store (declared for the type checker; the
    store defines them)."""

    _pool: ConnectionPool[Conn]
    _replicas: Replicas
    _closed: bool

    if TYPE_CHECKING:

        def _conn(self) -> AbstractContextManager[Conn]:
            """A pooled connection to the primary."""

        def _tx(
            self,
            what: str,
            fn: Callable[[Conn], T],
            *,
            transaction: bool = True,
            idempotent: bool = False,
            attempts: int = 4,
            pipeline: bool = False,
            rerunnable: bool = False,
        ) -> T:
            """Run ``fn`` on a pooled connection, in one transaction, retried when safe."""

        def _read(
            self,
            what: str,
            fn: Callable[[Conn], T],
            *,
            transaction: bool = False,
            pipeline: bool = False,
        ) -> T:
            """A read, on a replica when one is up to date, else on the primary."""
