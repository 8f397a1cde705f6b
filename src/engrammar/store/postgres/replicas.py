"""Read replicas of the PostgreSQL store: reads to streaming hot standbys, writes to the primary.

* **Routing.** :meth:`Replicas.read` runs a read on the next replica that is up (round robin);
  the store runs every write, the recall record and ``get_recall`` on the primary.
* **Reading one's own writes.** After each write the store notes the primary's WAL insert
  position. A read goes to a replica only once that replica has replayed past the newest
  position this process wrote; it waits for that at most ``wait_s`` (polling the replica's
  replay position), then reads from the primary instead.
* **Failures.** A replica that cannot be reached, drops the connection or cancels the query
  (a conflict with replay) is marked down for ``retry_s``; the read goes to the primary, so
  the caller never sees the failure. After ``retry_s`` the next read tries the replica again,
  and a replica that answers is used again.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ...models import ReplicaFacts

if TYPE_CHECKING:
    from .connection import Conn


__all__ = ["PRIMARY", "Replicas", "lsn"]

#: The key of :attr:`Replicas.reads` that counts reads the primary served instead.
PRIMARY = "(primary)"

T = TypeVar("T")


def lsn(text: str | None) -> int:
    """A WAL position (``'16/B374D848'``) as an integer, for comparisons; 0 for none."""
    if not text:
        return 0
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


class _Replica:
    def __init__(self, url: str, pool: ConnectionPool[Conn]) -> None:
        self.url = url
        self.pool = pool
        self.down_until = 0.0
        self.replayed = 0  # newest replay position seen on it


class Replicas:
    """The replicas of one store (see the module docstring).

    Args:
        urls: libpq URLs of the standbys.
        configure: what each new connection runs first (the store's session settings).
        pool_size: most connections per replica.
        wait_s: how long a read waits for a replica to replay this process's writes.
        connect_timeout: seconds to wait for a replica's connection.
        retry_s: how long a failed replica is left alone.
    """

    def __init__(
        self,
        urls: tuple[str, ...],
        *,
        configure: Callable[[Conn], None],
        pool_size: int,
        wait_s: float,
        connect_timeout: float,
        retry_s: float = 1.0,
    ) -> None:
        self._wait_s = wait_s
        self._timeout = connect_timeout
        self._retry_s = retry_s
        self._lock = threading.Lock()
        self._next = itertools.count()
        self.reads: Counter[str] = Counter()
        self._replicas: list[_Replica] = []
        for url in urls:
            pool: ConnectionPool[Conn] = ConnectionPool(
                url,
                min_size=1,
                max_size=max(1, pool_size),
                kwargs={"autocommit": True, "connect_timeout": max(1, int(connect_timeout))},
                configure=configure,
                timeout=connect_timeout,
                open=False,
                name="engrammar-replica",
                # A replica down at start must not stop the store from opening.
                reconnect_timeout=3600.0,
            )
            pool.open(wait=False)
            self._replicas.append(_Replica(url, pool))

    def __bool__(self) -> bool:
        return bool(self._replicas)

    def close(self) -> None:
        for r in self._replicas:
            r.pool.close()

    def read(self, fn: Callable[[Conn], T], written: int) -> tuple[bool, T | None]:
        """``(True, fn(conn))`` on a replica that is up and has replayed past ``written``;
        ``(False, None)`` when none could serve it (the caller reads from the primary)."""
        n = len(self._replicas)
        start = next(self._next)
        now = time.monotonic()
        for i in range(n):
            replica = self._replicas[(start + i) % n]
            if replica.down_until > now:
                continue
            try:
                # Probing a replica that was down: do not wait long for its connection.
                timeout = self._timeout if replica.down_until == 0.0 else min(self._timeout, 0.5)
                with replica.pool.connection(timeout=timeout) as conn:
                    if not self._caught_up(replica, conn, written):
                        continue
                    out = fn(conn)
                replica.down_until = 0.0
                with self._lock:
                    self.reads[replica.url] += 1
                return True, out
            except (PoolTimeout, psycopg.OperationalError, psycopg.errors.QueryCanceled):
                replica.down_until = time.monotonic() + self._retry_s
            except psycopg.Error:
                # Anything else a standby may refuse: read from the primary this time.
                continue
        return False, None

    def read_on_primary(self) -> None:
        """Count a read that no replica could serve."""
        with self._lock:
            self.reads[PRIMARY] += 1

    def _caught_up(self, replica: _Replica, conn: Conn, written: int) -> bool:
        """Whether ``replica`` has replayed past ``written``, waiting up to ``wait_s``."""
        if replica.replayed >= written:
            return True
        deadline = time.monotonic() + self._wait_s
        pause = 0.001
        while True:
            row = conn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()
            replica.replayed = max(replica.replayed, lsn(row[0] if row else None))
            if replica.replayed >= written:
                return True
            if time.monotonic() + pause > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def facts(self, redact: Callable[[str], str]) -> list[ReplicaFacts]:
        """Each replica: its URL (password hidden), whether it is in use, reads it served."""
        now = time.monotonic()
        return [
            {"url": redact(r.url), "up": r.down_until <= now, "reads": self.reads[r.url]}
            for r in self._replicas
        ]
