"""How the halves of the PostgreSQL store reach the server: the connection type, and the pool,
transactions and reads that :class:`~.store.PostgresStore` provides to each of them."""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import ConnStatus, TransactionStatus
from psycopg_pool import PoolTimeout

from ...errors import StoreError
from .replicas import lsn

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from .replicas import Replicas

__all__ = ["Conn", "Connected"]

Conn = psycopg.Connection[Any]
T = TypeVar("T")
IDLE = TransactionStatus.IDLE
#: Failures after which the whole transaction runs again.
_RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)


class Connected:
    """Connections, transactions and reads for every half of the store: on the primary's pool,
    retried when safe, reads on a replica that has replayed this process's writes."""

    _pool: ConnectionPool[Conn]
    _replicas: Replicas
    _closed: bool
    _local: threading.local  # this thread's read session; ``primary``: reads stay there
    _lsn_lock: threading.Lock
    _written: int  # WAL insert position after this process's newest write

    def _recall_writes_done(self) -> None:
        """Wait for the recall records this process sent without waiting (none here; see
        :mod:`.recall_write`)."""

    @contextmanager
    def _conn(self) -> Iterator[Conn]:
        if self._closed:
            raise StoreError("the store is closed")
        self._recall_writes_done()  # this process reads the recall records it sent
        with self._pool.connection() as conn:
            yield conn

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
        """Run ``fn`` on a pooled connection, in one transaction unless ``transaction`` is false
        (``fn`` then runs a single statement, atomic by itself, or only reads). ``pipeline``:
        the transaction runs in pipeline mode with BEGIN and COMMIT sent as statements and one
        Sync at the end, so that what ``fn`` sends before it first reads a result travels with
        BEGIN, and the rest with COMMIT: one round trip if ``fn`` reads nothing before it
        returns (psycopg's ``transaction()`` and ``executemany`` sync on their own, a round
        trip each). A failure rolls the transaction back before the connection is returned.

        Retried: a transaction that lost a deadlock or a serialization conflict; and a call that
        met a connection the server had closed (restart, failover), when ``fn`` only reads, the
        connection failed before the transaction began, or ``fn`` is ``rerunnable`` (safe to run
        again after a COMMIT whose answer was lost). Other failures raise StoreError.
        """
        for attempt in range(attempts):
            held: list[Conn] = []
            began = False
            try:
                with self._conn() as conn:
                    held.append(conn)
                    if not transaction:
                        out = fn(conn)
                    elif pipeline:
                        if _closed_by_server(conn):
                            # Nothing was sent: the next attempt takes a fresh connection.
                            conn.close()
                            raise psycopg.OperationalError("the server closed the connection")
                        began = True
                        out = _pipelined(conn, fn)
                    else:
                        with conn.transaction():
                            began = True
                            out = fn(conn)
                    if self._replicas and not idempotent:
                        self._note_write(conn)
                    return out
            except _RETRYABLE:
                if attempt == attempts - 1:
                    raise StoreError(f"{what} failed: the database kept aborting it") from None
                time.sleep(0.01 * (2**attempt))
            except PoolTimeout as exc:
                raise StoreError(f"{what} failed: no database connection ({exc})") from exc
            except psycopg.OperationalError as exc:
                lost = bool(held) and held[0].closed
                # ``rerunnable`` writes guard themselves against a second run (an add finds its
                # rows by their unique keys and reports them as existing; an edge update that
                # consumes a recall finds it consumed), so a COMMIT that did land before the
                # connection went is not applied twice.
                if lost and (idempotent or not began or rerunnable) and attempt < attempts - 1:
                    continue  # the pool drops the dead connection; the next one is fresh
                raise StoreError(f"{what} failed: {exc}") from exc
            except psycopg.Error as exc:
                raise StoreError(f"{what} failed: {exc}") from exc
        raise AssertionError("unreachable")

    def _read(
        self,
        what: str,
        fn: Callable[[Conn], T],
        *,
        transaction: bool = False,
        pipeline: bool = False,
    ) -> T:
        """A read: on a replica when one is up and has replayed this process's writes, else
        on the primary (:mod:`.replicas`). ``transaction``, ``pipeline``: see _tx."""
        if self._replicas and not getattr(self._local, "primary", False):
            if self._closed:
                raise StoreError("the store is closed")

            def run(conn: Conn) -> T:
                if not transaction:
                    return fn(conn)
                if pipeline:
                    return _pipelined(conn, fn)
                with conn.transaction():
                    return fn(conn)

            served, out = self._replicas.read(run, self._written)
            if served:
                return out  # type: ignore[return-value]
            self._replicas.read_on_primary()
        return self._tx(what, fn, transaction=transaction, idempotent=True, pipeline=pipeline)

    def _note_write(self, conn: Conn) -> None:
        """Remember where the WAL stood after a write, so reads wait for replicas to get there.
        The insert position: with ``synchronous_commit = off`` the commit may not be written
        out yet."""
        row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        position = lsn(row[0] if row else None)
        with self._lsn_lock:
            self._written = max(self._written, position)

    @contextmanager
    def _on_primary(self) -> Iterator[None]:
        before = getattr(self._local, "primary", False)
        self._local.primary = True
        try:
            yield
        finally:
            self._local.primary = before


def _closed_by_server(conn: Conn) -> bool:
    """Whether the server closed an idle pooled connection (restart, failover, a terminated
    backend), seen without a round trip: its last message or the end of the stream is waiting
    on the socket. A pipelined transaction learns of a dead connection only after it has sent
    everything, too late to tell whether COMMIT ran; this lets it take another one first."""
    if conn.closed:
        return True
    try:
        ready, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    if not ready:
        return False
    try:
        conn.pgconn.consume_input()
    except psycopg.OperationalError:
        return True
    return conn.pgconn.status != ConnStatus.OK


def _pipelined(conn: Conn, fn: Callable[[Conn], T]) -> T:
    """``fn`` in one transaction in pipeline mode: BEGIN and COMMIT sent as statements and one
    Sync at the end (psycopg's ``transaction()`` syncs after BEGIN and before COMMIT, a round
    trip each); rolled back if anything fails, so the connection goes back idle."""
    try:
        with conn.pipeline():
            conn.execute("BEGIN")
            out = fn(conn)
            conn.execute("COMMIT")
        return out
    except BaseException:
        if not conn.closed and conn.info.transaction_status != IDLE:
            conn.execute("ROLLBACK")
        raise
