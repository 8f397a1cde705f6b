"""The PostgreSQL recall record sent without waiting (store/postgres/recall_write.py): no
round trip of its own in a recall, yet whole, readable by this process at once and by another
right after, written again when its answer is an error, and never twice."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.models import Scope
from engrammar.store.base import RecallRecord
from engrammar.store.postgres import recall_write as postgres_recall_write
from engrammar.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

TEXTS = [
    "I went to a support group yesterday and it helped a lot.",
    "We talked about adoption agencies and counseling.",
    "My kids love camping in the mountains every summer.",
    "I signed up for a pottery class on Saturday.",
]


def _mem(url: str) -> Memory:
    return Memory(Config(store=url), embedder=HashEmbedder())


def _fill(mem: Memory) -> None:
    mem.add([{"role": "user", "content": t} for t in TEXTS], user_id="u1", session_id="s1")


def _rows(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT id, query, created_at, memory_ids, paths, tensions, consumed_at "
            "FROM recalls ORDER BY seq"
        ).fetchall()


def test_recall_waits_for_no_record_write_and_feedback_finds_it(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = _mem(pg_url)
    _fill(mem)
    calls: list[str] = []
    original = PostgresStore._tx

    def counting(self: Any, what: str, *a: Any, **kw: Any) -> Any:
        calls.append(what)
        return original(self, what, *a, **kw)

    monkeypatch.setattr(PostgresStore, "_tx", counting)
    result = mem.recall("What did I sign up for?", user_id="u1")
    assert "saving the recall" not in calls
    # Read at once by feedback in the same process (it waits for the answer first).
    out = mem.feedback(response="You signed up for pottery.", user_id="u1",
                       recall_id=result.recall_id)  # fmt: skip
    assert out is not None
    [row] = _rows(pg_url)
    assert row[0] == result.recall_id
    assert row[1] == "What did I sign up for?"
    assert row[3] == [m.id for m in result.memories]
    assert row[6] is not None  # consumed by that feedback
    mem.close()


def test_another_store_reads_the_record_right_after_recall(pg_url: str) -> None:
    mem = _mem(pg_url)
    _fill(mem)
    other = PostgresStore(pg_url)
    for _ in range(5):
        result = mem.recall("camping with the kids", user_id="u1")
        found = other.get_recall(Scope(workspace="default", user_id="u1"), result.recall_id)
        assert found is not None and found.recall_id == result.recall_id
        assert found.memory_ids == [m.id for m in result.memories]
    other.close()
    mem.close()


def _record(n: int, created: float = 1_700_000_000.123456789) -> RecallRecord:
    return RecallRecord(
        recall_id=f"r{n}", workspace="default", user_id="u1", agent_id=None, session_id="s1",
        query=f"question {n} with 'quotes' and ünïcode", created_at=created + n,
        memory_ids=["a", "b"], paths=[{"nodes": ["a", "b"], "score": 0.5}],
        tensions=[{"a": "a", "b": "b", "kind": "contradicts"}],
    )  # fmt: skip


def test_records_land_whole_and_exact(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    records = [_record(n) for n in range(20)]
    for r in records:
        store.save_recall(r)
    store.close()  # waits for every answer
    rows = _rows(pg_url)
    assert [r[0] for r in rows] == [r.recall_id for r in records]
    for row, r in zip(rows, records, strict=True):
        assert row[1:6] == (r.query, r.created_at, r.memory_ids, r.paths, r.tensions)


def test_failed_send_and_failed_answer_write_the_usual_way(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_url)

    def broken(conn: Any, record: RecallRecord) -> None:
        raise psycopg.OperationalError("lost")

    with monkeypatch.context() as m:
        m.setattr(postgres_recall_write, "_send", broken)
        store.save_recall(_record(1))
    assert [r[0] for r in _rows(pg_url)] == ["r1"]
    # The same record again: the server refuses the second INSERT (a duplicate key); it is
    # written again with ON CONFLICT DO NOTHING: one row, no error.
    store.save_recall(_record(1))
    store.save_recall(_record(2))
    with monkeypatch.context() as m:
        m.setattr(postgres_recall_write, "_answered", lambda conn: False)  # as if lost
        store.save_recall(_record(3))
        store._recall_writes_done()
    store.close()
    assert [r[0] for r in _rows(pg_url)] == ["r1", "r2", "r3"]


def test_threads_recalling_at_once(pg_url: str) -> None:
    mem = _mem(pg_url)
    _fill(mem)
    ids: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        for _ in range(5):
            r = mem.recall("pottery class", user_id="u1")
            with lock:
                ids.append(r.recall_id)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mem.close()
    assert sorted(r[0] for r in _rows(pg_url)) == sorted(ids)
    assert len(ids) == 20


def test_a_named_recall_not_found_is_looked_for_once_more(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    t = time.perf_counter()
    assert store.get_recall(Scope(workspace="default", user_id="u1"), "missing") is None
    assert time.perf_counter() - t >= postgres_recall_write.LATE
    store.close()


def test_second_hop_guess_skips_the_edge_back_to_the_seed(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first-hop node's strongest edge leads back to its seed (semantic edges go both ways):
    the walk skips it and takes the next three; the prefetch reads those three's records, so
    the recall reads no record of its own (store/postgres/reads.py, ``reach2``; main's guess
    counted the edge back and read the third one's record in an exchange of its own)."""
    import uuid

    from engrammar.store.base import NewEdge, NewMemory

    embedder = HashEmbedder()
    mem = Memory(Config(store=pg_url, candidate_pool=2), embedder=embedder)
    texts = {
        "s": "garden plans for the spring",
        "f": "garden plans for the summer",
        "h": "harbour boats at dawn",
        "a": "kitchen knives sharpened",
        "b": "studio lights repaired",
        "c": "violin strings replaced",
    }
    ids = {k: uuid.uuid4().hex for k in texts}
    rows = [
        NewMemory(
            id=ids[k], workspace="default", user_id="u1", agent_id=None, session_id=f"x{k}",
            role="user", content=t, kind="fact", created_at=1_700_000_000.0 + n, metadata={},
            dedup_key=uuid.uuid4().hex, embedding=embedder.embed([t])[0],
        )
        for n, (k, t) in enumerate(texts.items())
    ]  # fmt: skip
    edges = [
        NewEdge(ids["s"], ids["h"], "semantic", 0.9),
        NewEdge(ids["h"], ids["s"], "semantic", 0.95),
        NewEdge(ids["h"], ids["a"], "semantic", 0.8),
        NewEdge(ids["h"], ids["b"], "semantic", 0.7),
        NewEdge(ids["h"], ids["c"], "semantic", 0.6),
    ]
    mem.store.add_memories(rows, edges)
    calls: list[str] = []
    original = PostgresStore._tx

    def counting(self: Any, what: str, *a: Any, **kw: Any) -> Any:
        calls.append(what)
        return original(self, what, *a, **kw)

    monkeypatch.setattr(PostgresStore, "_tx", counting)
    result = mem.recall("garden plans", user_id="u1", limit=6)
    reached = {n for p in result.paths for n in p.nodes}
    assert {ids["a"], ids["b"], ids["c"]} <= reached  # the walk went on past the seed's edge
    # (their edges are read afterwards: the tensions among the results ask for them)
    assert "get" not in calls, calls
    mem.close()
