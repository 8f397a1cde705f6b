"""A process's copy of a user scope's graph (store/postgres/graph.py, migration m017's change
log): recalls answered from it equal the plain prefetch's, and writes of another process (or
another store object) are seen by the next recall."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from tests.pg import Exchanges, copy_database
from tests.test_postgres_reads import QUERIES, _fill, _recall_view

from engrammar import Config, HashEmbedder, Memory
from engrammar.store.postgres import graph as postgres_graph
from engrammar.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres


def _memory(url: str, graph: bool = True) -> Memory:
    mem = Memory(Config(store=url), embedder=HashEmbedder())
    assert isinstance(mem.store, PostgresStore)
    mem.store._graph_cache = graph
    return mem


def test_recalls_from_the_graph_equal_the_prefetch_with_feedback_between(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two store objects on one database, one holding the scope's graph, one prefetching
    every time: recall after recall with feedback (which moves edge weights and logs edge
    changes) in between, both answer the same; the graph is read once, then refreshed in
    the exchange of the vector search."""
    filler = _memory(pg_url)
    _fill(filler)
    filler.close()
    cached, plain = _memory(pg_url), _memory(pg_url, graph=False)
    count = Exchanges(monkeypatch)
    try:
        loads = 0
        for query in QUERIES * 2:
            count.names.clear()
            fast = cached.recall(query, user_id="u1", limit=5)
            loads += count.names.count("reading the scope's graph")
            # the vector hits with what changed in one exchange; the graph answers the rest
            assert count.names.count("vector search and neighbourhood") == 1, count.names
            assert not {"get", "reading edges", "reading chunk vectors"} & set(count.names)
            slow = plain.recall(query, user_id="u1", limit=5)
            assert _recall_view(fast) == _recall_view(slow), query
            # Feedback on one recall (the other's stays unconsumed), edges move for both.
            cached.feedback(response=fast.memories[0].content, user_id="u1",
                            recall_id=fast.recall_id)  # fmt: skip
        assert loads == 1
        graphs = cached.store._scope_graphs  # type: ignore[attr-defined]
        assert len(graphs) == 1
        assert isinstance(next(iter(graphs.values())), postgres_graph.ScopeGraph)
    finally:
        cached.close()
        plain.close()


def test_another_stores_writes_are_seen_by_the_next_recall(pg_url: str) -> None:
    """A store holding the graph; another store object on the database adds a memory, forgets
    one the first recall returned and gives feedback: the holder's next recall equals a
    fresh store's and the plain prefetch's, with the new memory and without the forgotten."""
    mem = _memory(pg_url)
    _fill(mem)
    other = _memory(pg_url)
    try:
        query = "What does Melanie like to do with her kids?"
        first = mem.recall(query, user_id="u1", limit=5)
        gone = first.memories[0].id
        other.forget(memory_id=gone, user_id="u1")
        added = other.add(
            [{"role": "user", "name": "Melanie", "content": "My kids like to fish at the lake."}],
            user_id="u1",
            session_id="s9",
        )
        again = other.recall(query, user_id="u1", limit=5)
        other.feedback(response=again.memories[0].content, user_id="u1")
        after = mem.recall(query, user_id="u1", limit=5)
        fresh, plain = _memory(pg_url), _memory(pg_url, graph=False)
        try:
            assert _recall_view(after) == _recall_view(fresh.recall(query, user_id="u1", limit=5))
            assert _recall_view(after) == _recall_view(plain.recall(query, user_id="u1", limit=5))
        finally:
            fresh.close()
            plain.close()
        ids = [m.id for m in after.memories]
        assert gone not in ids
        assert any(a in ids for a in added)
    finally:
        mem.close()
        other.close()


def test_change_log_names_what_each_write_changed(pg_url: str) -> None:
    """Every write to memories, edges, memory_chunks and edge_changes logs the ids it changed
    with its transaction's id, at or above a snapshot's xmin taken before it."""
    mem = _memory(pg_url)
    try:
        store = mem.store
        assert isinstance(store, PostgresStore)

        def mark(conn: Any) -> int:
            return int(conn.execute(postgres_graph._MARK).fetchone()[0])

        before = store._tx("mark", mark, transaction=False)
        _fill(mem)
        rec = mem.recall(QUERIES[0], user_id="u1")
        mem.feedback(response=rec.memories[0].content, user_id="u1")

        def logged(conn: Any) -> dict[str, set[str]]:
            out: dict[str, set[str]] = {}
            for tbl, ids in conn.execute(
                "SELECT tbl, ids FROM change_log WHERE xid >= %s::text::xid8", (str(before),)
            ):
                out.setdefault(tbl, set()).update(ids)
            return out

        found = store._tx("log", logged, transaction=False)

        def ids(conn: Any, sql: str) -> set[str]:
            return {r[0] for r in conn.execute(sql)}

        memories = store._tx("m", lambda c: ids(c, "SELECT id FROM memories"), transaction=False)
        sources = store._tx("e", lambda c: ids(c, "SELECT src FROM edges"), transaction=False)
        changed = store._tx(
            "p", lambda c: ids(c, "SELECT src FROM edge_changes"), transaction=False
        )
        assert memories and found["m"] >= memories
        assert sources and found["e"] >= sources
        assert changed and found["p"] >= changed
    finally:
        mem.close()


def test_a_scope_above_the_limits_is_prefetched(pg_url: str) -> None:
    """A scope larger than both ``scope_cache_bytes`` and ``scope_graph_max`` is not kept:
    every recall prefetches, as before."""
    mem = Memory(
        Config(store=pg_url, scope_cache_bytes=3 * postgres_graph.MEMORY_BYTES, scope_graph_max=3),
        embedder=HashEmbedder(),
    )
    plain = _memory(pg_url, graph=False)
    try:
        _fill(mem)
        for query in QUERIES[:2]:
            assert _recall_view(mem.recall(query, user_id="u1")) == _recall_view(
                plain.recall(query, user_id="u1")
            )
        graphs = mem.store._scope_graphs  # type: ignore[attr-defined]
        assert all(isinstance(v, float) for v in graphs.values())
    finally:
        mem.close()
        plain.close()


def _held(mem: Memory, user: str) -> Any:
    """The scope's graph once its read behind the recalls is done (or what is there then)."""
    graphs = mem.store._scope_graphs  # type: ignore[attr-defined]
    behind = mem.store._graphs_behind  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    while ("default", user) in behind and time.monotonic() < deadline:
        time.sleep(0.02)
    return graphs.get(("default", user))


def test_the_newest_scope_is_kept_past_the_budget_and_large_ones_do_not_thrash(
    pg_url: str,
) -> None:
    """Past ``scope_cache_bytes`` the most recently used scope's graph is still kept (up to
    ``scope_graph_max`` memories), as the embedded store keeps its newest scope index: read
    behind the recalls (the first prefetches, with the same answers). A second such scope
    pushes it out, and the first is then prefetched, not read again at its next recall (two
    large scopes in turn would read each other out every time); the answers stay the plain
    reads'."""
    mem = Memory(
        Config(store=pg_url, scope_cache_bytes=3 * postgres_graph.MEMORY_BYTES),
        embedder=HashEmbedder(),
    )
    plain = _memory(pg_url, graph=False)
    try:
        _fill(mem)
        mem.add(["I keep bees on the roof.", "The bees swarmed in May.", "Honey again."] * 2,
                user_id="u2")  # fmt: skip
        first = mem.recall(QUERIES[0], user_id="u1")
        assert _recall_view(first) == _recall_view(plain.recall(QUERIES[0], user_id="u1"))
        assert isinstance(_held(mem, "u1"), postgres_graph.ScopeGraph)
        again = mem.recall(QUERIES[0], user_id="u1")  # from the graph
        assert _recall_view(again) == _recall_view(first)
        mem.recall("bees", user_id="u2")
        assert isinstance(_held(mem, "u2"), postgres_graph.ScopeGraph)
        graphs = mem.store._scope_graphs  # type: ignore[attr-defined]
        assert isinstance(graphs[("default", "u1")], float)  # pushed out, not read again soon
        for query in QUERIES[:2]:
            assert _recall_view(mem.recall(query, user_id="u1")) == _recall_view(
                plain.recall(query, user_id="u1")
            )
        assert isinstance(graphs[("default", "u1")], float)
        assert isinstance(graphs[("default", "u2")], postgres_graph.ScopeGraph)
    finally:
        mem.close()
        plain.close()


def test_graphs_past_the_total_go_least_recently_used_first(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``scope_cache_bytes`` in all graphs of a store (MEMORY_BYTES a memory), the least
    recently used go; a scope whose graph went is read whole again by its next recall, with
    the same answers."""
    mem = _memory(pg_url)
    try:
        _fill(mem)
        mem.add("I keep bees on the roof.", user_id="u2")
        first = mem.recall(QUERIES[0], user_id="u1")
        held = len(mem.store._scope_graphs[("default", "u1")].rows)  # type: ignore[attr-defined]
        # Room for u1's graph alone: u2's pushes it out, and u1's next recall pushes u2 out.
        mem.store._graph_bytes = held * postgres_graph.MEMORY_BYTES  # type: ignore[attr-defined]
        mem.recall("bees", user_id="u2")
        graphs = mem.store._scope_graphs  # type: ignore[attr-defined]
        assert [k[1] for k in graphs] == ["u2"]
        again = mem.recall(QUERIES[0], user_id="u1")
        assert [k[1] for k in graphs] == ["u1"]
        assert _recall_view(again)["memories"] == _recall_view(first)["memories"]
    finally:
        mem.close()


def test_another_users_writes_are_not_shipped_into_the_graph(pg_url: str) -> None:
    """The change log is kept per workspace; a refresh reads only the changes of the scope's
    own user: another user's adds in the same workspace leave the copy as it was, and the
    user's own add after them is in it."""
    mem = _memory(pg_url)
    _fill(mem)
    other = _memory(pg_url)
    try:
        mem.recall(QUERIES[0], user_id="u1", limit=5)
        graph = mem.store._scope_graphs[("default", "u1")]  # type: ignore[attr-defined]
        before = (set(graph.rows), set(graph.out), set(graph.wins))
        other.add(["Someone else's note about the garden.", "And another one."], user_id="u9")
        mem.recall(QUERIES[1], user_id="u1", limit=5)
        assert (set(graph.rows), set(graph.out), set(graph.wins)) == before
        [mine] = other.add(["The garden gate is painted green."], user_id="u1")
        found = mem.recall("What colour is the garden gate?", user_id="u1", limit=5)
        assert mine in graph.rows and mine in [m.memory.id for m in found.memories]
    finally:
        mem.close()
        other.close()


def test_scope_cache_bytes_bounds_the_graphs(pg_url: str) -> None:
    """``Config.scope_cache_bytes`` bounds the graphs; with ``scope_graph_max`` 0 not even the
    newest may exceed it: a scope whose graph would not fit is prefetched every time."""
    filler = _memory(pg_url)
    _fill(filler)
    filler.close()
    small = Memory(
        Config(store=pg_url, scope_cache_bytes=3 * postgres_graph.MEMORY_BYTES, scope_graph_max=0),
        embedder=HashEmbedder(),
    )
    try:
        small.recall(QUERIES[0], user_id="u1")
        graphs = small.store._scope_graphs  # type: ignore[attr-defined]
        assert all(isinstance(v, float) for v in graphs.values())
    finally:
        small.close()


def test_reading_one_scopes_graph_does_not_hold_up_another_scopes_recall(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scope's graph is read under its own lock: while u1's (slow) read goes on, u2's first
    recall reads u2's graph and answers; u1's recall then gets its graph too."""
    mem = _memory(pg_url)
    try:
        _fill(mem)
        mem.add(["I keep bees on the roof.", "The bees swarmed in May."], user_id="u2")
        started, release = threading.Event(), threading.Event()
        original = PostgresStore._read_graph

        def slow(store: PostgresStore, scope: Any, limit: int, budget: int | None = None) -> Any:
            if scope.user_id == "u1":
                started.set()
                release.wait(180)  # u1's read holds until u2's recall is judged
            return original(store, scope, limit, budget)

        monkeypatch.setattr(PostgresStore, "_read_graph", slow)
        first = threading.Thread(target=lambda: mem.recall(QUERIES[0], user_id="u1"))
        first.start()
        assert started.wait(30)
        other = threading.Thread(target=lambda: mem.recall("bees", user_id="u2"))
        other.start()
        other.join(120)  # however slow a loaded machine: it is not waiting for u1
        done = not other.is_alive()
        release.set()
        first.join(120)
        other.join(120)
        assert done, "u2's recall waited for u1's graph"
        graphs = mem.store._scope_graphs  # type: ignore[attr-defined]
        assert isinstance(graphs[("default", "u1")], postgres_graph.ScopeGraph)
        assert isinstance(graphs[("default", "u2")], postgres_graph.ScopeGraph)
    finally:
        mem.close()


def test_feedback_in_another_process_reads_the_graph_once_then_takes_three_exchanges(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Feedback in a process that never recalled the scope (another store object here) reads
    the scope's graph as a recall would, then takes three exchanges (the recall's read, the
    BM25 scores of the reply's vector hits the keyword list missed, the edge update); what it
    learns equals
    what a process without graphs learns (compared on a copy of the store)."""
    asker = _memory(pg_url)
    _fill(asker)
    asker.close()
    copy = copy_database(pg_url, "_fb")
    count = Exchanges(monkeypatch)

    def rounds(url: str, graph: bool) -> tuple[list[Any], list[list[str]], Any]:
        recaller, learner = _memory(url, graph=False), _memory(url, graph=graph)
        outs, seen = [], []
        try:
            for query in QUERIES[:3]:
                found = recaller.recall(query, user_id="u1")
                # The recaller's process writes its recall after answering; feedback arriving
                # before that reads again once it is there (a third exchange under load).
                recaller.store._recall_writes_done()  # type: ignore[attr-defined]
                del count.names[:]
                top = found.memories[0].memory.content
                out = learner.feedback(response=top, user_id="u1", recall_id=found.recall_id)
                seen.append(list(count.names))
                out.pop("recall_id")
                outs.append(out)
            edges = learner.store._tx(  # type: ignore[attr-defined]
                "reading",
                lambda c: c.execute(
                    "SELECT src, dst, kind, weight FROM edges ORDER BY src, dst, kind"
                ).fetchall(),
                transaction=False,
            )
            return outs, seen, edges
        finally:
            recaller.close()
            learner.close()

    outs, seen, edges = rounds(pg_url, True)
    plain_outs, _, plain_edges = rounds(copy, False)
    assert outs == plain_outs and edges == plain_edges
    assert seen[0].count("reading the scope's graph") == 1
    assert all("reading the scope's graph" not in s for s in seen[1:])
    assert [len(s) for s in seen[1:]] == [3, 3], seen
