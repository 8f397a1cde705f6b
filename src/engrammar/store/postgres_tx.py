"""The PostgreSQL store's transactions on a pooled connection: a pipelined transaction in one
round trip, and noticing a connection the server closed before anything is sent."""

from __future__ import annotations

import select
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg.pq import ConnStatus, TransactionStatus

__all__ = ["closed_by_server", "pipelined"]

T = TypeVar("T")
IDLE = TransactionStatus.IDLE
Conn = psycopg.Connection[Any]


def closed_by_server(conn: Conn) -> bool:
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


def pipelined(conn: Conn, fn: Callable[[Conn], T]) -> T:
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
