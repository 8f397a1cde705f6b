"""A batched add's neighbour searches answered in process on PostgreSQL
(:mod:`engrammar.store.postgres.add_search`): the same neighbours with the same similarities,
and so the same graph, as the server's search statement (which scans a scope of up to 2,000
memories exactly); inactive memories are never found, long memories are scored by their best
window, and a batch too small for its scope still goes to the server. (The test of the
batched statement against one search per vector, ``test_postgres_vectors.py``, runs its
small user's batch in process too.)"""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.engine import ingest
from engrammar.errors import StoreError
from engrammar.store.postgres.add_search import searched_here
from engrammar.store.postgres.exact_vectors import nearest, stacked
from engrammar.store.postgres.ingest import PostgresIngest
from engrammar.store.postgres.store import PostgresStore

TOPICS = ["hiking", "painting", "adoption", "camping", "guitar", "pottery", "marathon", "baking"]
PLACES = ["the lake", "the mountains", "Paris", "the studio", "the park", "Berlin"]
# What long memories end with, past their first window, and what the batch then says.
TAILS = [
    "In the evening I repaired the old sailing boat's rudder with my uncle.",
    "Afterwards we argued about which chess opening suits a beginner best.",
    "Then my sister called about her new job at the observatory.",
    "Later I planted tulip bulbs along the fence in the back garden.",
]


def _history(n: int) -> list[str]:
    out = []
    for i in range(n):
        topic, place = TOPICS[i % len(TOPICS)], PLACES[(i // 3) % len(PLACES)]
        text = f"I spent day {i} on {topic} near {place} with my friend number {i % 7}."
        if i % 20 == 0:  # a long message: window vectors past the first 250 characters
            text += f" It was a long day of {topic}, and {place} was lovely." * 6
            text += " " + TAILS[(i // 20) % len(TAILS)]
        out.append(text)
    return out


def _batch() -> list[str]:
    said = [t.replace("In the evening I", "I").replace("Afterwards we", "We") for t in TAILS]
    return [f"{said[i % len(said)]} That was week {i}." for i in range(24)] + _history(256)[240:]


def test_nearest_is_exact_cosine_with_windows_and_ties_by_id() -> None:
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(50, 16)).astype(np.float32)
    vecs[3] = vecs[2]  # a tie: the smaller id first
    ids = [f"m{i:02d}" for i in range(50)]
    rows = (ids, vecs * (1 + np.arange(50) % 3)[:, None])  # not unit length
    windows = [("m05", rng.normal(size=16)), ("m40", rng.normal(size=16)), ("gone", vecs[0])]
    window_rows = ([m for m, _ in windows], np.stack([v for _, v in windows]))
    queries = rng.normal(size=(20, 16)).astype(np.float32)
    queries[0] = vecs[2] * 3
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    found = nearest(queries, rows, window_rows, 5)
    for q, hits in zip(queries, found, strict=True):
        scores = {f"m{i:02d}": float(s) for i, s in enumerate(unit @ (q / np.linalg.norm(q)))}
        for mid, v in windows[:2]:
            w = float(np.dot(v, q) / np.linalg.norm(v) / np.linalg.norm(q))
            scores[mid] = max(scores[mid], w)
        expected = sorted(scores, key=lambda m: (-round(scores[m], 5), m))[:5]
        assert [m for m, _ in hits] == expected
        assert all(abs(s - scores[m]) < 1e-5 for m, s in hits)
    assert [m for m, _ in found[0][:2]] == ["m02", "m03"]
    assert nearest(queries[:2], stacked(None), window_rows, 5) == [[], []]


def _pgvector_binary(v: np.ndarray) -> bytes:
    return len(v).to_bytes(2, "big") + b"\x00\x00" + np.asarray(v, dtype=">f4").tobytes()


def test_stacked_decodes_pgvector_binary_vectors_at_once() -> None:
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(4, 6)).astype(np.float32)
    ids, matrix = stacked((["a", "b", "c", "d"], b"".join(_pgvector_binary(v) for v in vecs)))
    assert ids == ["a", "b", "c", "d"] and matrix.dtype == np.float32
    assert np.array_equal(matrix, vecs)
    assert stacked(None)[0] == [] and stacked((None, None))[0] == []  # no rows: NULL aggregates
    with pytest.raises(StoreError, match="one dimension"):
        stacked((["a", "b"], _pgvector_binary(vecs[0]) + _pgvector_binary(vecs[1][:5])))


def test_searched_here_only_for_a_batch_large_next_to_its_scope() -> None:
    assert searched_here(1000, 4000) and searched_here(16, 320)
    assert not searched_here(15, 10)  # a few messages: the server walks
    assert not searched_here(100, 2001)  # more than 20 memories a message
    assert not searched_here(5000, 20_001)  # past the largest scope read
    assert not searched_here(1000, None)  # size unknown


def _archive(store: PostgresStore, user: str, marks: list[str]) -> None:
    def run(conn: Any) -> None:
        for mark in marks:
            conn.execute(
                "UPDATE memories SET status = 'archived' WHERE user_id = %s AND content LIKE %s",
                (user, f"%{mark}%"),
            )

    store._tx("archive", run)


def _graph(store: PostgresStore, user: str) -> tuple[Any, ...]:
    """A user's edges with ids replaced by positions in insertion order."""

    def run(conn: Any) -> tuple[Any, ...]:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM memories WHERE user_id = %s ORDER BY seq", (user,))]  # fmt: skip
        pos = {m: i for i, m in enumerate(ids)}
        return tuple(
            sorted(
                (pos[s], pos[d], k, round(w, 9))
                for s, d, k, w in conn.execute(
                    "SELECT src, dst, kind, weight FROM edges WHERE src = ANY(%s)", (ids,)
                )
            )
        )

    return store._tx("graph", run, transaction=False)


@pytest.mark.postgres
def test_in_process_search_links_as_the_server_search(
    pg_url: str, minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two users get the same history (some of it forgotten) and the same batch of 40; one's
    batch is searched in process, the other's on the server: the same edges, and the
    in-process search answered every batch it may."""
    mem = Memory(Config(store=pg_url), embedder=minilm)
    store = mem.store
    assert isinstance(store, PostgresStore)
    history, batch = _history(240), _batch()
    here: list[int] = []
    original = PostgresIngest._search_here

    def counting(*a: Any, **k: Any) -> Any:
        here.append(len(a[2]))
        return original(*a, **k)

    monkeypatch.setattr(PostgresIngest, "_search_here", staticmethod(counting))
    try:
        for user, in_process in (("here", True), ("server", False)):
            monkeypatch.setattr(PostgresIngest, "_search_in_process", in_process)
            # Memories as near as each other are ranked by id (and edges past a memory's cap
            # left out by it): ids counted per user, so that both break ties alike.
            count = itertools.count()
            ids = SimpleNamespace(
                uuid4=lambda c=count, u=user: SimpleNamespace(hex=f"{u}-{next(c):08d}")
            )
            monkeypatch.setattr(ingest, "uuid", ids)
            for start in range(0, len(history), 60):
                mem.add(history[start : start + 60], user_id=user)
            listed = mem.list(user_id=user, limit=500)
            for memory_id in [m.id for m in listed if "day 1" in m.content]:  # 1, 10-19, 1xx
                mem.forget(memory_id)
            # Memories no longer active (as a rejected output is) are never found.
            _archive(store, user, ["day 40 ", "day 60 ", "day 3 ", "day 5 "])
            mem.add(batch, user_id=user)
        # Four calls of 60 (the first into an empty scope), then the batch of 40.
        assert here == [60, 60, 60, 60, 40]
        assert _graph(store, "here") == _graph(store, "server")
    finally:
        mem.close()
