"""Read replicas, exercised: a primary and a streaming hot standby on loopback (tests/pg.py).

Reads (search, get, list, stats, recall's reads) go to the standby, writes (add, the recall
record, feedback) to the primary; a process reads its own writes; a standby that stops mid-load
costs no request and no write, and reads return to it when it is back.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.store.postgres.replicas import PRIMARY
from engrammar.store.postgres.store import PostgresStore

pytestmark = [pytest.mark.postgres]

# Durable commits (fsync stays off: the data is thrown away): a commit is sent to the standby
# at once, as on a real primary, instead of after the WAL writer's delay.
_OPTIONS = "-c fsync=off -c full_page_writes=off -c max_connections=100 -c shared_buffers=32MB"


class Pair:
    def __init__(self, primary: Any, standby: Any, database: str) -> None:
        self.primary, self.standby, self.database = primary, standby, database

    @property
    def primary_url(self) -> str:
        return str(self.primary.url(self.database))

    @property
    def standby_url(self) -> str:
        return str(self.standby.url(self.database))


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    import pg

    bindir, reason = pg.find_bindir()
    if bindir is None or importlib.util.find_spec("psycopg") is None:
        if pg.REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required (ENGRAMMAR_REQUIRE_PG=1): {reason}")
        pytest.skip(reason or "psycopg is not installed")
    primary = pg.PgServer(bindir, options=_OPTIONS)
    primary.start()
    standby = None
    try:
        url = primary.new_database()
        standby = primary.standby()
        yield Pair(primary, standby, url.rsplit("/", 1)[1])
    finally:
        if standby is not None:
            standby.stop()
        primary.stop()


def _open(pair: Pair, workspace: str) -> Memory:
    return Memory(
        Config(store=pair.primary_url, replica_urls=(pair.standby_url,), workspace=workspace),
        embedder=HashEmbedder(),
    )


def _replica_reads(mem: Memory) -> int:
    store = mem.store
    assert isinstance(store, PostgresStore)
    return sum(n for url, n in store._replicas.reads.items() if url != PRIMARY)


def _one(url: str, sql: str, *args: Any) -> Any:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql, args).fetchone()
        return None if row is None else row[0]


def test_reads_on_the_standby_writes_on_the_primary(pair: Pair) -> None:
    assert _one(pair.standby_url, "SELECT pg_is_in_recovery()") is True
    mem = _open(pair, "w-route")
    try:
        ids = mem.add(
            [{"role": "user", "content": f"Note {i}: the blue kettle is in cupboard {i}."}
             for i in range(5)],
            user_id="u",
        )  # fmt: skip
        before = _replica_reads(mem)
        # Its own writes, read at once: every read waits for the standby's replay (or reads
        # the primary), never misses them.
        assert {m.id for m in mem.list(user_id="u")} == set(ids)
        assert mem.get(ids[0]).id == ids[0]
        assert mem.search("blue kettle cupboard", user_id="u", limit=3)
        assert mem.stats(user_id="u")["memories"] == 5
        result = mem.recall("where is the kettle", user_id="u", limit=3)
        assert _replica_reads(mem) > before
        # The recall record is on the primary; feedback finds it there and writes there.
        assert _one(pair.primary_url, "SELECT count(*) FROM recalls WHERE id = %s",
                    result.recall_id) == 1  # fmt: skip
        mem.feedback(response=result.memories[0].content, user_id="u")
        assert (
            _one(pair.primary_url, "SELECT consumed_at FROM recalls WHERE id = %s",
                 result.recall_id) is not None
        )  # fmt: skip
        facts = mem.stats(user_id="u")["replicas"]
        assert facts[0]["up"] is True and facts[0]["reads"] > 0
    finally:
        mem.close()


def test_standby_stops_mid_load_then_returns(pair: Pair) -> None:
    mem = _open(pair, "w-fail")
    errors: list[BaseException] = []
    written: list[str] = []
    stop = threading.Event()

    def load(worker: int) -> None:
        n = 0
        while not stop.is_set():
            try:
                n += 1
                written.extend(
                    mem.add(f"worker {worker} message {n} about tea and biscuits", user_id="u")
                )
                mem.search("tea biscuits", user_id="u", limit=5)
                mem.recall("what about tea", user_id="u", limit=3)
                mem.list(user_id="u", limit=5)
            except BaseException as exc:
                errors.append(exc)
                return

    threads = [threading.Thread(target=load, args=(w,)) for w in range(2)]
    try:
        for t in threads:
            t.start()
        # Conditions, not durations: a loaded machine may take seconds for each step.
        deadline = time.monotonic() + 60
        while _replica_reads(mem) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        served_before = _replica_reads(mem)
        assert served_before > 0
        pair.standby.halt()  # the standby goes away mid-load
        deadline = time.monotonic() + 60
        while mem.stats(user_id="u")["replicas"][0]["up"] and time.monotonic() < deadline:
            time.sleep(0.1)
        down = mem.stats(user_id="u")["replicas"][0]
        assert down["up"] is False
        stalled = _replica_reads(mem)
        store = mem.store
        assert isinstance(store, PostgresStore)
        on_primary = store._replicas.reads[PRIMARY]
        deadline = time.monotonic() + 60
        while store._replicas.reads[PRIMARY] <= on_primary + 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert store._replicas.reads[PRIMARY] > on_primary + 3  # the primary serves the reads
        assert _replica_reads(mem) == stalled  # ... and nothing was read from the standby
        pair.standby.launch()  # ... and comes back
        deadline = time.monotonic() + 60
        while _replica_reads(mem) == stalled and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _replica_reads(mem) > stalled, "reads did not return to the standby"
        # Load enough to mean something however slow the machine: more than ten adds.
        deadline = time.monotonic() + 120
        while len(written) <= 10 and not errors and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        mem.close()
    assert errors == []
    # No lost write: every id an add returned is on the primary.
    import psycopg

    with psycopg.connect(pair.primary_url, autocommit=True) as conn:
        stored = {
            r[0]
            for r in conn.execute(
                "SELECT id FROM memories WHERE workspace = 'w-fail' AND id = ANY(%s)", (written,)
            )
        }
    assert stored == set(written) and len(written) > 10
