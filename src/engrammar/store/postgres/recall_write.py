"""The PostgreSQL recall record, sent without waiting for the server's answer.

A recall's last exchange was the INSERT of its record: a round trip whose answer the recall
does not need. Here the statement (with its Sync: the server commits it on its own) is sent
on a pooled connection before ``recall`` returns, and a worker thread collects the answer and
gives the connection back to the pool. So the record is on its way to the server, whole (one
statement), when the caller gets the recall id; the caller does not wait for the round trip.

What still waits for it: every later exchange of this store (any thread: ``_conn``) first
waits until the records sent before it are answered, so this process reads its own records
(feedback's ``get_recall``, the recall's consumption, undo, export) as before. A record whose
answer is an error, or whose connection broke, is written again the usual way (``ON CONFLICT
DO NOTHING``: the first may have landed) when it is collected. ``get_recall`` of a named
recall that it does not find looks once more a moment later (``LATE``): another process's
record sent just before may still be on its way through the server.

With read replicas the record is written the usual way (the write's WAL position must be
known before the next read).
"""

from __future__ import annotations

import json
import select
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import psycopg
from psycopg import pq

from ..base import RecallRecord
from ..sql.store import RECALL_COLUMNS, recall_values
from .connection import Conn, Connected

__all__ = ["LATE", "RecallWrites"]

T = TypeVar("T")

# Text-format parameters: the casts say what the float and JSON texts are.
_PLACES = "$1, $2, $3, $4, $5, $6, $7::float8, $8::jsonb, $9::jsonb, $10::jsonb, $11::float8"
_INSERT = f"INSERT INTO recalls ({RECALL_COLUMNS}) VALUES ({_PLACES})".encode()
# Set on the worker thread while it writes a record again.
_WORKER = threading.local()
# Seconds ``get_recall`` of a named recall waits before looking again when it is not found.
LATE = 0.05


def _params(record: RecallRecord) -> list[bytes | None]:
    """The INSERT's parameters in PostgreSQL's text format (a float as ``repr``: exact)."""
    out: list[bytes | None] = []
    for value in recall_values(record, json.dumps):
        if isinstance(value, (int, float)):
            value = repr(float(value))
        out.append(None if value is None else value.encode())
    return out


def _send(conn: Conn, record: RecallRecord) -> None:
    """Send the INSERT (Parse, Bind, Execute, Sync) and flush it out, not waiting for the
    answer."""
    pgconn = conn.pgconn
    pgconn.send_query_params(_INSERT, _params(record))
    while pgconn.flush():  # the connection is non-blocking: wait until the socket takes it
        select.select([], [pgconn.socket], [])


def _answered(conn: Conn) -> bool:
    """Wait for the answer of ``_send``; whether the record was written."""
    pgconn = conn.pgconn
    ok = False
    try:
        while True:
            while pgconn.is_busy():
                select.select([pgconn.socket], [], [])
                pgconn.consume_input()
            result = pgconn.get_result()
            if result is None:
                return ok
            ok = result.status == pq.ExecStatus.COMMAND_OK
    except (psycopg.Error, OSError, ValueError):
        conn.close()  # broken: the pool drops it
        return False


class RecallWrites(Connected):
    """``save_recall`` of :class:`~.store.PostgresStore` (see the module docstring)."""

    # provided by the store
    def _state(self) -> tuple[threading.Condition, list[Future[None]], list[Any]]:
        state = self.__dict__.get("_recall_writes")
        if state is None:
            state = self.__dict__.setdefault(
                "_recall_writes", (threading.Condition(threading.RLock()), [], [])
            )
        return state  # type: ignore[no-any-return]

    def save_recall(self, record: RecallRecord) -> None:
        if self._replicas:
            self._write_recall(record)
            return
        self._recall_writes_done()
        lock, sent, worker = self._state()
        conn = self._pool.getconn()
        try:
            if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                raise psycopg.OperationalError("the connection is not idle")
            _send(conn, record)
        except (psycopg.Error, OSError, ValueError):
            if not conn.closed and conn.pgconn.is_busy():
                conn.close()  # sent in part, or not answered: not for another caller
            self._pool.putconn(conn)
            self._write_recall(record)  # the usual way (the first may have landed)
            return
        with lock:
            if not worker:
                worker.append(ThreadPoolExecutor(1, thread_name_prefix="engrammar-recalls"))
            sent.append(worker[0].submit(self._collect, conn, record))

    def _collect(self, conn: Conn, record: RecallRecord) -> None:
        ok = _answered(conn)
        self._pool.putconn(conn)
        if not ok:
            _WORKER.active = True  # its own write must not wait for itself
            try:
                self._write_recall(record)
            finally:
                _WORKER.active = False

    def _write_recall(self, record: RecallRecord) -> None:
        sql = f"INSERT INTO recalls ({RECALL_COLUMNS}) VALUES ({', '.join(['%s'] * 11)})"
        params = [None if p is None else p.decode() for p in _params(record)]
        self._tx(
            "saving the recall",
            lambda c: c.execute(sql + " ON CONFLICT (workspace, id) DO NOTHING", params),
            transaction=False,
            rerunnable=True,
        )

    def _recall_writes_done(self) -> None:
        """Wait until every record sent so far is answered (written again if it failed)."""
        state = self.__dict__.get("_recall_writes")
        if state is None or not state[1] or getattr(_WORKER, "active", False):
            return
        lock, sent, _ = state
        waiting = list(sent)
        try:
            for future in waiting:
                future.result()  # a failed second write raises here (StoreError)
        finally:
            with lock:
                sent[:] = [f for f in sent if not f.done()]

    def _close_recall_writes(self) -> None:
        self._recall_writes_done()
        state = self.__dict__.get("_recall_writes")
        if state is not None and state[2]:
            state[2][0].shutdown(wait=True)
            state[2].clear()
