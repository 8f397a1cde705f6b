"""A small scope's vector hits found in process from its held graph (store/postgres/local.py):
the same memories, in the same order, as the server's vector statement, with the same
similarities to ~1e-7; recalls and feedback then send no vector statement; a scope past
``EXACT_MAX`` and a changed scope are answered right."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.test_postgres_reads import QUERIES, _fill, _recall_view

from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.models import Scope
from engrammar.store import MemoryUpdate
from engrammar.store.postgres import graph as postgres_graph
from engrammar.store.postgres import local as postgres_local
from engrammar.store.postgres import reply as postgres_reply
from engrammar.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

# Longer than chunk_chars (250): stored with chunk windows, which the search scores too.
LONG = (
    "Melanie told the whole story of the camping weekend: the tent blew over on the first "
    "night, the kids found a family of frogs by the creek, and on Sunday they hiked to the "
    "waterfall where her son finally caught his first fish, a small trout he insisted on "
    "releasing. She said the highlight was roasting marshmallows while her daughter sang "
    "songs she had learned at school, and that they already booked the same site for August."
)


def _many() -> list[str]:
    """Near neighbours of one another: 240 short statements from a few words."""
    who = ["Caroline", "Melanie", "Jon", "Gina", "Tim", "Maria"]
    did = ["painted", "visited", "talked about", "bought", "planned", "remembered"]
    what = ["a lake", "the library", "a guitar", "her sister", "the garden", "a new job", "a dog"]
    when = ["on Monday", "last summer", "yesterday", "in May"]
    rows = [f"{w} {d} {x} {t}." for w in who for d in did for x in what for t in when]
    return rows[::4]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _memory(url: str, embedder: Any, graph: bool = True) -> Memory:
    mem = Memory(Config(store=url), embedder=embedder)
    assert isinstance(mem.store, PostgresStore)
    mem.store._graph_cache = graph
    return mem


def _graph(mem: Memory) -> Any:
    graph = mem.store._held_graph(Scope(mem.config.workspace, "u1", None, None))  # type: ignore[attr-defined]
    assert isinstance(graph, postgres_graph.ScopeGraph)
    return graph


class _Searches:
    """Records the vector statements the recall and feedback exchanges queue while ``on``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[str] = []
        self.on = True
        for module in (postgres_graph, postgres_reply):
            original = module.execute_searching

            def counting(cur: Any, sql: str, args: Any, ef: Any, original: Any = original) -> None:
                if self.on:
                    self.sent.append(sql)
                original(cur, sql, args, ef)

            monkeypatch.setattr(module, "execute_searching", counting)


def test_local_hits_equal_the_servers_vector_statement(pg_url: str, embedder: Any) -> None:
    """With long memories (chunk windows), a forgotten memory and a query equal to a stored
    vector: the same ids in the same order as the server's statement, similarities within
    1e-6, for k from 1 to more than the scope holds."""
    mem = _memory(pg_url, embedder)
    try:
        _fill(mem)
        mem.add([{"role": "user", "name": "Melanie", "content": LONG}], user_id="u1")
        mem.add([{"role": "user", "content": t} for t in _many()], user_id="u1")
        store = mem.store
        assert isinstance(store, PostgresStore)
        gone = mem.recall("pottery class", user_id="u1").memories[0].id
        mem.forget(memory_id=gone, user_id="u1")
        # As an import restores one: kept, not searched.
        hidden = mem.recall("guitar", user_id="u1").memories[0].id
        store.update_memory(
            mem.config.workspace, hidden, MemoryUpdate(status="superseded", reason="test")
        )
        mem.recall(QUERIES[0], user_id="u1")  # holds the graph, refreshed past both
        graph = _graph(mem)
        assert graph.wins, "the long memory's windows should be in the graph"
        assert hidden in graph.rows
        scope = Scope(mem.config.workspace, "u1", None, None)
        own = next(i for i in graph.rows if i != hidden)
        queries = [embedder.embed([q])[0] for q in [*QUERIES, "frogs by the creek", "trout"]]
        for memory_id in (own, hidden):  # a query equal to a stored vector
            queries.append(np.frombuffer(bytes(graph.rows[memory_id][-1])[4:], ">f4").copy())
        compared = 0
        for query in queries:
            for k in (1, 5, 10, 100):
                local = postgres_local.local_hits(graph, query, k)
                server = store._server_hits(scope, query, k)
                assert local is not None
                assert [r[0] for r in local] == [r[0] for r in server]
                for (_, sim, dist), (_, s_sim, s_dist) in zip(local, server, strict=True):
                    assert sim == pytest.approx(float(s_sim), abs=1e-6)
                    assert dist == pytest.approx(float(s_dist), abs=1e-6)
                assert not {gone, hidden} & {r[0] for r in local}
                compared += len(local)
        assert compared > 800
        assert own in {r[0] for r in postgres_local.local_hits(graph, queries[-2], 1) or []}
    finally:
        mem.close()


def test_recall_and_feedback_of_a_held_scope_send_no_vector_statement(
    pg_url: str, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the scope's graph is held, recall and feedback find their vector hits in
    process; the answers equal a store's that does not keep the graph."""
    mem, plain = _memory(pg_url, embedder), _memory(pg_url, embedder, graph=False)
    try:
        _fill(mem)
        mem.recall(QUERIES[0], user_id="u1")  # reads the graph
        count = _Searches(monkeypatch)
        for query in QUERIES:
            fast = mem.recall(query, user_id="u1", limit=5)
            count.on = False
            slow = plain.recall(query, user_id="u1", limit=5)
            count.on = True
            assert _recall_view(fast) == _recall_view(slow), query
            out = mem.feedback(response=fast.memories[0].content, user_id="u1")
            assert out["consumed"] and out["drawn_on"]
        assert count.sent == []
        # Without the graph, a recall and a feedback each send their statement.
        plain.recall(QUERIES[0], user_id="u1")
        plain.feedback(response="pottery", user_id="u1")
        assert len(count.sent) == 2
    finally:
        mem.close()
        plain.close()


def test_a_scope_past_exact_max_goes_to_the_server(
    pg_url: str, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A held graph of more memories than the server scans exactly: its searches stay in the
    server (the HNSW walk's answer, not an exact one computed here)."""
    mem = _memory(pg_url, embedder)
    try:
        _fill(mem)
        mem.recall(QUERIES[0], user_id="u1")
        monkeypatch.setattr(postgres_local, "EXACT_MAX", len(_graph(mem).rows) - 1)
        count = _Searches(monkeypatch)
        mem.recall(QUERIES[1], user_id="u1")
        mem.feedback(response="pottery", user_id="u1")
        assert len(count.sent) == 2
    finally:
        mem.close()


def test_the_local_vectors_follow_the_scopes_changes(pg_url: str, embedder: Any) -> None:
    """A memory another store adds, and one it forgets, change the next recall's hits: the
    searchable vectors are built again after a change of rows, and kept otherwise."""
    mem, other = _memory(pg_url, embedder), _memory(pg_url, embedder)
    try:
        _fill(mem)
        mem.recall(QUERIES[0], user_id="u1")
        graph = _graph(mem)
        first = postgres_local.local_vectors(graph)
        mem.recall(QUERIES[1], user_id="u1")
        assert postgres_local.local_vectors(graph) is first  # nothing changed: kept
        query = "What did Melanie's son catch at the waterfall?"
        (added,) = other.add(
            [{"role": "user", "name": "Melanie", "content": "My son caught a trout at the falls."}],
            user_id="u1",
        )
        hit = mem.recall(query, user_id="u1", limit=3)
        assert added in [m.id for m in hit.memories]
        assert postgres_local.local_vectors(graph) is not first
        other.forget(memory_id=added, user_id="u1")
        again = mem.recall(query, user_id="u1", limit=3)
        assert added not in [m.id for m in again.memories]
    finally:
        mem.close()
        other.close()


class _Failing:
    """The default embedder, failing on one text."""

    def __init__(self, inner: Any, bad: str) -> None:
        self.inner, self.bad = inner, bad
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts: list[str]) -> Any:
        if self.bad in texts:
            raise RuntimeError("the embedder failed")
        return self.inner.embed(texts)


def test_a_reply_that_fails_to_embed_mid_exchange_changes_nothing(
    pg_url: str, embedder: Any
) -> None:
    """Feedback embeds the reply while the server answers the recall's read (the exchange
    is open then): an embedder failing there raises, the recall stays unconsumed, and the
    same store takes the next feedback on that recall."""
    bad = "The pottery class was on Saturday."
    mem = Memory(Config(store=pg_url), embedder=_Failing(embedder, bad))
    try:
        _fill(mem)
        mem.recall(QUERIES[0], user_id="u1")  # holds the graph
        rec = mem.recall(QUERIES[1], user_id="u1", limit=5)
        before = mem.store.get_recall(Scope(mem.config.workspace, "u1"), rec.recall_id)
        with pytest.raises(RuntimeError, match="embedder failed"):
            mem.feedback(response=bad, user_id="u1")
        after = mem.store.get_recall(Scope(mem.config.workspace, "u1"), rec.recall_id)
        assert after is not None and before is not None
        assert after.consumed_at is None
        out = mem.feedback(response=rec.memories[0].content, user_id="u1")
        assert out["consumed"] and out["recall_id"] == rec.recall_id
    finally:
        mem.close()
