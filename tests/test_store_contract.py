"""The Store contract, asserted identically against every backend (SQLite and PostgreSQL).

Each test receives ``store`` (conftest.py), or ``clients``: a factory of handles on one fresh store
(several handles = several clients of the same database) and its location, for child processes.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import threading
import time
from typing import Any

import numpy as np
import pytest

from backends import StoreClients, config_for
from engrammar import Config, HashEmbedder
from engrammar.errors import ConflictError, EmbedderError, NotFoundError, StoreError
from engrammar.models import Scope
from engrammar.recall.keyword import BM25Index
from engrammar.recall.text import terms
from engrammar.store import (
    EdgeAdjustment,
    EdgeBounds,
    EdgeDelta,
    MemoryUpdate,
    NewEdge,
    NewMemory,
    RecallRecord,
    ReplyQuery,
    Store,
    open_store,
)
from engrammar.store.base import ReplySignal

EMB = HashEmbedder()
WS = "default"
LO, HI = 0.01, 1.0
pytestmark = pytest.mark.every_store


_counter = iter(range(10**9))


def new(
    content: str,
    *,
    user_id: str | None = "alice",
    agent_id: str | None = None,
    session_id: str | None = None,
    workspace: str = WS,
    kind: str = "message",
    metadata: dict[str, Any] | None = None,
    memory_id: str | None = None,
    created_at: float | None = None,
) -> NewMemory:
    key = "\x00".join([workspace, user_id or "", agent_id or "", session_id or "", content])
    return NewMemory(
        id=memory_id or f"m{next(_counter):06d}",
        workspace=workspace,
        user_id=user_id,
        agent_id=agent_id,
        session_id=session_id,
        role="user",
        content=content,
        kind=kind,
        created_at=created_at if created_at is not None else time.time(),
        metadata=metadata or {},
        dedup_key=hashlib.sha256(key.encode()).hexdigest(),
        embedding=EMB.embed([content])[0],
    )


def add(store: Store, *rows: NewMemory, edges: tuple[NewEdge, ...] = ()) -> list[str]:
    return [i for i, _ in store.add_memories(list(rows), edges)]


# -- memories ------------------------------------------------------------------------------------
def test_add_get_roundtrip(store: Store) -> None:
    row = new("I write docs before code.", metadata={"source": "chat", "n": 3, "nested": [1.5]})
    [(memory_id, created)] = store.add_memories([row])
    assert created and memory_id == row.id
    got = store.get_memories(WS, [memory_id, "missing"])
    assert list(got) == [memory_id]
    rec = got[memory_id]
    assert (rec.content, rec.role, rec.kind, rec.status) == (
        row.content,
        "user",
        "message",
        "active",
    )
    assert (rec.user_id, rec.agent_id, rec.session_id) == ("alice", None, None)
    assert rec.created_at == row.created_at
    assert rec.metadata == {"source": "chat", "n": 3, "nested": [1.5]}
    vec = store.vectors(WS, [memory_id])[memory_id]
    assert vec.dtype == np.float32
    np.testing.assert_allclose(vec, row.embedding, rtol=0, atol=1e-7)


def test_get_is_scoped_to_workspace(store: Store) -> None:
    [memory_id] = add(store, new("only in w1", workspace="w1"))
    assert store.get_memories("w2", [memory_id]) == {}
    assert store.vectors("w2", [memory_id]) == {}
    assert list(store.get_memories("w1", [memory_id])) == [memory_id]


def test_dedup_returns_existing_id_and_edges_follow(store: Store) -> None:
    a = new("the cat sat on the mat")
    b = new("the dog chased the cat")
    add(store, a, b)
    again = new("the cat sat on the mat")  # same scope and content: same dedup key
    c = new("a third memory about cats")
    result = store.add_memories(
        [again, c],
        [NewEdge(again.id, c.id, "sequence", 0.4), NewEdge(c.id, again.id, "semantic", 0.3)],
    )
    assert result == [(a.id, False), (c.id, True)]
    assert store.get_memories(WS, [again.id]) == {}
    out = {(e.src, e.dst, e.kind): e.weight for e in store.edges_from(WS, [a.id, c.id])}
    assert out == {(a.id, c.id, "sequence"): 0.4, (c.id, a.id, "semantic"): 0.3}


def test_dedup_within_one_batch(store: Store) -> None:
    x, y = new("same words"), new("same words")
    assert store.add_memories([x, y]) == [(x.id, True), (x.id, False)]


def test_failed_batch_writes_nothing(store: Store) -> None:
    first = new("kept from before")
    add(store, first)
    clash = new("a different text", memory_id=first.id)  # id taken: the batch must fail whole
    with pytest.raises(StoreError):
        store.add_memories([new("would be written first"), clash])
    listed = store.list_memories(Scope(WS, "alice"), 100, 0)
    assert [m.content for m in listed] == ["kept from before"]


def test_list_order_scope_and_paging(store: Store) -> None:
    ids = add(
        store,
        new("one", agent_id="a1", session_id="s1"),
        new("two", agent_id="a1", session_id="s2"),
        new("three", agent_id="a2", session_id="s1"),
    )
    add(store, new("bob's", user_id="bob"))
    add(store, new("other workspace", workspace="w2"))
    assert [m.id for m in store.list_memories(Scope(WS, "alice"), 10, 0)] == ids
    assert [m.id for m in store.list_memories(Scope(WS, "alice"), 2, 1)] == ids[1:]
    assert [m.id for m in store.list_memories(Scope(WS, "alice", "a1"), 10, 0)] == ids[:2]
    assert [m.id for m in store.list_memories(Scope(WS, "alice", None, "s1"), 10, 0)] == [
        ids[0],
        ids[2],
    ]
    assert len(store.list_memories(Scope(WS), 10, 0)) == 4
    assert [m.content for m in store.list_memories(Scope("w2"), 10, 0)] == ["other workspace"]


def test_update_content_metadata_status_and_history(store: Store) -> None:
    row = new("I live in Paris")
    add(store, row)
    moved = new("I live in Berlin")
    rec = store.update_memory(
        WS,
        row.id,
        MemoryUpdate(
            content=moved.content,
            embedding=moved.embedding,
            dedup_key=moved.dedup_key,
            reason="moved",
        ),
    )
    assert rec.content == "I live in Berlin" and rec.updated_at >= rec.created_at
    np.testing.assert_allclose(store.vectors(WS, [row.id])[row.id], moved.embedding, atol=1e-7)
    assert store.keyword_search(Scope(WS, "alice"), "paris", 5) == []
    assert [h for h, _ in store.keyword_search(Scope(WS, "alice"), "berlin", 5)] == [row.id]
    store.update_memory(WS, row.id, MemoryUpdate(metadata={"tag": "home"}, reason="tagged"))
    rec = store.update_memory(WS, row.id, MemoryUpdate(status="superseded", reason="newer fact"))
    assert rec.status == "superseded" and rec.metadata == {"tag": "home"}
    history = store.history(WS, row.id)
    assert [(h["op"], h["before"], h["after"], h["reason"]) for h in history] == [
        ("add", None, "I live in Paris", ""),
        ("update", "I live in Paris", "I live in Berlin", "moved"),
        ("metadata", None, '{"tag": "home"}', "tagged"),
        ("status", "active", "superseded", "newer fact"),
    ]
    assert [h["rev"] for h in history] == sorted(h["rev"] for h in history)
    # Not active any more: neither search finds it.
    assert store.keyword_search(Scope(WS, "alice"), "berlin", 5) == []
    assert row.id not in dict(store.vector_search(Scope(WS, "alice"), moved.embedding, 5))


def test_get_memories_sees_other_clients_changes(clients: StoreClients) -> None:
    store, other = clients.open(), clients.open()
    a, b = new("first text"), new("second text")
    add(store, a, b)
    assert store.get_memories(WS, [a.id, b.id])[a.id].content == "first text"  # read once
    emb = EMB.embed(["changed text"])[0]
    other.update_memory(
        WS,
        a.id,
        MemoryUpdate(
            content="changed text", embedding=emb, dedup_key="k2", metadata={"x": 1}, reason="edit"
        ),
    )
    other.forget(Scope(WS, "alice"), [b.id])
    got = store.get_memories(WS, [a.id, b.id])
    assert (got[a.id].content, got[a.id].metadata) == ("changed text", {"x": 1})
    assert b.id not in got
    got[a.id].metadata["x"] = 2  # a caller's record is its own
    assert store.get_memories(WS, [a.id])[a.id].metadata == {"x": 1}
    assert store.get_memories("elsewhere", [a.id]) == {}


def test_update_errors_leave_memory_unchanged(store: Store) -> None:
    a, b = new("first text"), new("second text")
    add(store, a, b)
    with pytest.raises(ConflictError):
        store.update_memory(
            WS,
            a.id,
            MemoryUpdate(
                content=b.content,
                embedding=b.embedding,
                dedup_key=b.dedup_key,
                metadata={"x": 1},
                reason="clash",
            ),
        )
    assert store.get_memories(WS, [a.id])[a.id].content == "first text"
    assert store.get_memories(WS, [a.id])[a.id].metadata == {}
    with pytest.raises(NotFoundError):
        store.update_memory(WS, "nope", MemoryUpdate(metadata={}, reason=""))
    with pytest.raises(NotFoundError):
        store.update_memory("w2", a.id, MemoryUpdate(metadata={}, reason=""))
    with pytest.raises(NotFoundError):
        store.history(WS, "nope")


def test_forget_ids_and_scope(store: Store) -> None:
    a, b, c = new("alpha fact"), new("beta fact"), new("gamma fact")
    d = new("bob fact", user_id="bob")
    add(store, a, b, c, edges=(NewEdge(a.id, b.id, "semantic", 0.5),))
    add(
        store, d,
        edges=(NewEdge(b.id, c.id, "semantic", 0.5), NewEdge(d.id, a.id, "entity", 1)),
    )  # fmt: skip
    assert store.forget(Scope(WS, "alice"), [a.id, "missing", d.id]) == 1  # d is bob's
    assert set(store.get_memories(WS, [a.id, b.id, c.id, d.id])) == {b.id, c.id, d.id}
    edges = store.edges_from(WS, [a.id, b.id, c.id, d.id])
    assert [(e.src, e.dst) for e in edges] == [(b.id, c.id)]
    history = store.history(WS, a.id)
    assert [h["op"] for h in history] == ["add", "forget"]
    assert all(h["before"] is None and h["after"] is None for h in history)
    assert store.keyword_search(Scope(WS), "alpha", 5) == []
    assert store.forget(Scope(WS, "alice"), None) == 2
    assert store.list_memories(Scope(WS, "alice"), 10, 0) == []
    assert [m.id for m in store.list_memories(Scope(WS), 10, 0)] == [d.id]
    assert store.edges_from(WS, [b.id, c.id, d.id]) == []


def test_stats_counts(store: Store) -> None:
    a, b = new("one", kind="fact"), new("two")
    add(store, a, b, new("three", user_id="bob"), edges=(NewEdge(a.id, b.id, "semantic", 0.5),))
    store.save_recall(RecallRecord("r1", WS, "alice", None, None, "q", time.time(), [a.id]))
    s = store.stats(Scope(WS, "alice"))
    assert (s["memories"], s["edges"], s["recalls"]) == (2, 1, 1)
    assert s["memories_by_kind"] == {"fact": 1, "message": 1}
    assert s["bytes_on_disk"] > 0
    assert store.stats(Scope(WS))["memories"] == 3
    assert store.stats(Scope("empty"))["memories"] == 0


def test_embedder_mismatch(clients: StoreClients) -> None:
    clients.open()
    other = open_store(clients.config)
    clients.handles.append(other)
    with pytest.raises(EmbedderError):
        other.check_embedder("bigger", EMB.dim * 2)
    other.check_embedder("renamed-same-size", EMB.dim)  # a new name of the same size is fine


# -- search --------------------------------------------------------------------------------------
CORPUS = [
    ("alice", None, "I started learning the violin last spring and practise every evening."),
    ("alice", None, "My sister plays the cello in an orchestra in Lisbon."),
    ("alice", "a1", "We adopted a rescue dog named Pepper; she loves long walks."),
    ("alice", "a1", "The violin teacher says my bowing improved a lot this month."),
    ("alice", None, "Lisbon has steep streets, so walks with the dog are a workout."),
    ("alice", None, "I bake sourdough bread on Sundays; the starter is called Bubbles."),
    ("bob", None, "Bob collects vintage violin strings and rare sheet music."),
    ("bob", None, "Bob runs marathons; his best time was in Berlin."),
    ("alice", None, "Orchestra rehearsals move to Thursday evenings from next week."),
    ("alice", "a2", "Pepper the dog hates thunderstorms and hides under the bed."),
]


def _load_corpus(store: Store) -> list[NewMemory]:
    rows = [new(text, user_id=user, agent_id=agent) for user, agent, text in CORPUS]
    store.add_memories(rows)
    return rows


def _reference_bm25(
    rows: list[NewMemory], query: str, scope: Scope, k: int
) -> list[tuple[str, float]]:
    """BM25 computed directly with the pure index, per (workspace, user) partition."""
    hits: list[tuple[str, float]] = []
    for user in sorted({r.user_id or "" for r in rows}):
        part = [r for r in rows if (r.user_id or "") == user and r.workspace == scope.workspace]
        if scope.user_id is not None and user != scope.user_id:
            continue
        index = BM25Index(k1=Config().bm25_k1, b=Config().bm25_b)
        for slot, r in enumerate(part):
            index.add(slot, terms(r.content))
        scores = index.scores(terms(query), len(part))
        for slot, r in enumerate(part):
            if scores[slot] > 0 and (scope.agent_id is None or r.agent_id == scope.agent_id):
                hits.append((r.id, float(scores[slot])))
    hits.sort(key=lambda h: -h[1])
    return hits[:k]


@pytest.mark.parametrize(
    ("query", "scope"),
    [
        ("violin practice", Scope(WS, "alice")),
        ("dog walks in Lisbon", Scope(WS, "alice")),
        ("violin", Scope(WS)),
        ("the dog Pepper", Scope(WS, "alice", "a1")),
        ("orchestra evenings", Scope(WS, "alice")),
        ("marathon in Berlin", Scope(WS, "alice")),
    ],
)
def test_keyword_search_is_bm25(store: Store, query: str, scope: Scope) -> None:
    rows = _load_corpus(store)
    got = store.keyword_search(scope, query, 5)
    want = _reference_bm25(rows, query, scope, 5)
    assert [h for h, _ in got] == [h for h, _ in want]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-4)


@pytest.mark.parametrize(
    ("query", "scope"),
    [
        ("violin practice", Scope(WS, "alice")),
        ("violin", Scope(WS)),
        ("the dog Pepper", Scope(WS, "alice", "a1")),
    ],
)
def test_keyword_scores_are_the_searchs_scores_of_the_given_memories(
    store: Store, query: str, scope: Scope
) -> None:
    rows = _load_corpus(store)
    every = dict(_reference_bm25(rows, query, scope, len(rows)))
    mine = [
        r
        for r in rows
        if scope.user_id in (None, r.user_id) and scope.agent_id in (None, r.agent_id)
    ]
    inside = [r.id for r in mine if r.id in every]
    without = [r.id for r in mine if r.id not in every]
    assert inside and without
    # Asked right after a search of the same words and on their own, the same scores; a
    # memory that holds none of the words is left out.
    store.keyword_search(scope, query, 2)
    for _ in range(2):
        got = store.keyword_scores(scope, terms(query), inside + without)
        assert set(got) == set(inside)
        np.testing.assert_allclose([got[i] for i in inside], [every[i] for i in inside], rtol=1e-4)
    assert store.keyword_scores(scope, terms(query), []) == {}
    assert store.keyword_scores(scope, [], inside) == {}
    # Another user's memories are not this scope's.
    others = [r.id for r in rows if r.user_id not in (None, scope.user_id)]
    if scope.user_id is not None:
        assert store.keyword_scores(scope, terms(query), others) == {}


def test_keyword_scores_follow_changes_of_the_index(store: Store) -> None:
    _load_corpus(store)
    scope = Scope(WS, "alice")
    [target] = [i for i, _ in store.keyword_search(scope, "violin", 1)]
    before = store.keyword_scores(scope, ["violin"], [target])[target]
    # More documents holding the word: its idf, so the same memory's score, falls.
    add(store, *(new(f"violin note {i}") for i in range(5)))
    after = store.keyword_scores(scope, ["violin"], [target])[target]
    assert after < before
    assert after == pytest.approx(dict(store.keyword_search(scope, "violin", 50))[target])


def test_keyword_search_edge_cases(store: Store) -> None:
    _load_corpus(store)
    assert store.keyword_search(Scope(WS, "alice"), "the and of", 5) == []  # only stop words
    assert store.keyword_search(Scope(WS, "alice"), "quantum", 5) == []
    assert store.keyword_search(Scope(WS, "alice"), "violin", 0) == []
    assert store.keyword_search(Scope("w2"), "violin", 5) == []
    # Punctuation and quotes in user text are just text.
    hits = store.keyword_search(Scope(WS, "alice"), 'violin\'s "teacher" & | ! (bowing):*', 5)
    assert hits and hits[0][1] > 0


def test_vector_search_exact_and_scoped(store: Store) -> None:
    rows = _load_corpus(store)
    query = EMB.embed(["violin lessons in the evening"])[0]
    scope = Scope(WS, "alice")
    got = store.vector_search(scope, query, 4)
    cands = [r for r in rows if r.user_id == "alice"]
    sims = {r.id: float(r.embedding @ query) for r in cands}
    want = sorted(sims, key=lambda i: -sims[i])[:4]
    assert [h for h, _ in got] == want
    np.testing.assert_allclose([s for _, s in got], [sims[i] for i in want], atol=1e-5)
    agent_hits = store.vector_search(Scope(WS, "alice", "a1"), query, 10)
    assert {h for h, _ in agent_hits} == {r.id for r in rows if r.agent_id == "a1"}
    assert len(store.vector_search(Scope(WS), query, 100)) == len(rows)
    assert store.vector_search(Scope("w2"), query, 5) == []


def test_vector_searches_answer_each_row_like_vector_search(store: Store) -> None:
    _load_corpus(store)
    queries = EMB.embed(["violin lessons in the evening", "my sister's new job", "hiking"])
    for scope in (Scope(WS, "alice"), Scope(WS, "alice", "a1"), Scope(WS), Scope("w2")):
        batch = store.vector_searches(scope, queries, 3)
        one_by_one = [store.vector_search(scope, q, 3) for q in queries]
        assert [[h for h, _ in row] for row in batch] == [[h for h, _ in r] for r in one_by_one]
        for row, single in zip(batch, one_by_one, strict=True):
            np.testing.assert_allclose([s for _, s in row], [s for _, s in single], atol=1e-5)
    assert store.vector_searches(Scope(WS, "alice"), queries[:0], 3) == []


# -- graph ---------------------------------------------------------------------------------------
def test_edges_insert_keeps_max_weight_and_filters(store: Store) -> None:
    a, b, c = new("a node"), new("b node"), new("c node")
    add(store, a, b, c, edges=(NewEdge(a.id, b.id, "semantic", 0.3),))
    # Edges come with rows (the rows tell the workspace); an exact duplicate row is fine.
    store.add_memories(
        [new("a node")],
        [
            NewEdge(a.id, b.id, "semantic", 0.2),  # lower: kept at 0.3
            NewEdge(a.id, c.id, "semantic", 0.7),
            NewEdge(a.id, b.id, "sequence", 0.9),
            NewEdge(a.id, a.id, "semantic", 1.0),  # self-loops are dropped
        ],
    )
    got = {(e.dst, e.kind): e.weight for e in store.edges_from(WS, [a.id])}
    assert got == {(b.id, "semantic"): 0.3, (c.id, "semantic"): 0.7, (b.id, "sequence"): 0.9}
    strong = {(e.dst, e.kind) for e in store.edges_from(WS, [a.id], min_weight=0.5)}
    assert strong == {(c.id, "semantic"), (b.id, "sequence")}
    assert store.edges_from("w2", [a.id]) == []


def test_adjust_edges_clamps_and_reports_changes(store: Store) -> None:
    a, b, c = new("from"), new("to"), new("elsewhere")
    add(
        store, a, b, c,
        edges=(NewEdge(a.id, b.id, "semantic", 0.5), NewEdge(a.id, c.id, "semantic", 0.99)),
    )  # fmt: skip
    changed = store.adjust_edges(
        WS,
        EdgeAdjustment(
            [
                EdgeDelta(a.id, b.id, "semantic", 0.2),
                EdgeDelta(a.id, c.id, "semantic", 0.5),  # clamps to 1.0
                EdgeDelta(a.id, b.id, "sequence", 0.2),  # no such edge: nothing happens
            ],
            EdgeBounds(LO, HI),
        ),
    )
    assert changed is not None
    assert sorted((e.dst, round(e.weight, 9)) for e in changed) == sorted(
        [(b.id, 0.7), (c.id, 1.0)]
    )
    # Already at the ceiling: no change, not reported.
    again = store.adjust_edges(
        WS, EdgeAdjustment([EdgeDelta(a.id, c.id, "semantic", 0.1)], EdgeBounds(LO, HI))
    )
    assert again == []
    down = store.adjust_edges(
        WS, EdgeAdjustment([EdgeDelta(a.id, b.id, "semantic", -5.0)], EdgeBounds(LO, HI))
    )
    assert down is not None and [e.weight for e in down] == [LO]
    # Another workspace's call never touches these edges.
    assert (
        store.adjust_edges(
            "w2", EdgeAdjustment([EdgeDelta(a.id, b.id, "semantic", 0.5)], EdgeBounds(LO, HI))
        )
        == []
    )
    weights = {e.dst: e.weight for e in store.edges_from(WS, [a.id])}
    assert weights == {b.id: LO, c.id: 1.0}


def test_adjust_edges_consumes_recall_once(store: Store) -> None:
    a, b = new("x"), new("y")
    add(store, a, b, edges=(NewEdge(a.id, b.id, "semantic", 0.5),))
    store.save_recall(RecallRecord("r1", WS, "alice", None, None, "q", time.time(), [a.id]))
    first = store.adjust_edges(
        WS, EdgeAdjustment([EdgeDelta(a.id, b.id, "semantic", 0.1)], EdgeBounds(LO, HI), "r1")
    )
    assert first is not None and len(first) == 1
    second = store.adjust_edges(
        WS, EdgeAdjustment([EdgeDelta(a.id, b.id, "semantic", 0.1)], EdgeBounds(LO, HI), "r1")
    )
    assert second is None
    assert store.adjust_edges(WS, EdgeAdjustment([], EdgeBounds(LO, HI), "no-such-recall")) is None
    assert [round(e.weight, 9) for e in store.edges_from(WS, [a.id])] == [0.6]
    rec = store.get_recall(Scope(WS, "alice"), "r1")
    assert rec is not None and rec.consumed_at is not None


def _unit(*values: float) -> np.ndarray:
    v = np.zeros(EMB.dim, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def _feed_back(
    store: Store, recall_id: str, context: np.ndarray, verdicts: dict[str, float]
) -> None:
    t = time.time()
    store.save_recall(RecallRecord(recall_id, WS, "alice", None, None, "q", t, list(verdicts)))
    signals = [
        ReplySignal(WS, "alice", None, None, recall_id, m, v, 0.5, t, context)
        for m, v in verdicts.items()
    ]
    assert (
        store.adjust_edges(WS, EdgeAdjustment([], EdgeBounds(LO, HI), recall_id, signals))
        is not None
    )


def test_reply_facts_follow_the_matching_recalls(clients: StoreClients) -> None:
    store, other = clients.open(), clients.open()
    a, b, c = new("apples"), new("bread"), new("cheese")
    add(store, a, b, c)
    near, far = _unit(1.0), _unit(0.0, 1.0)
    _feed_back(store, "r-near", near, {a.id: 1.0, b.id: -1.0})
    _feed_back(store, "r-far", far, {c.id: 1.0, b.id: 1.0})
    alice = Scope(WS, "alice")
    got = store.reply_facts(alice, ReplyQuery(lambda: _unit(1.0, 0.1), 0.9, 0.0, 100))
    assert {(r.recall_id, r.memory_id, r.value) for r in got} == {
        ("r-near", a.id, 1.0),
        ("r-near", b.id, -1.0),
    }
    assert np.allclose(got[0].context_vec, near, atol=1e-6)
    # A rating's own recall is read whatever its query: only the pair it names.
    got = store.reply_facts(
        alice, ReplyQuery(lambda: near, 0.9, 0.0, 100), witnesses=[("r-far", c.id)]
    )
    assert {(r.recall_id, r.memory_id) for r in got} == {
        ("r-near", a.id),
        ("r-near", b.id),
        ("r-far", c.id),
    }
    assert next(r for r in got if r.recall_id == "r-far").context_vec @ far > 0.999
    # Another client's feedback is seen at once; the newest ``limit`` recalls are kept.
    _feed_back(other, "r-near2", _unit(1.0, 0.05), {c.id: 1.0})
    got = store.reply_facts(alice, ReplyQuery(lambda: near, 0.9, 0.0, 1))
    assert {r.recall_id for r in got} == {"r-near2"}

    # Other users, old signals, forgotten memories and deleted signals are not returned.
    def unwanted() -> np.ndarray:
        raise AssertionError("a scope without fed-back recalls needs no query vector")

    assert store.reply_facts(Scope(WS, "bob"), ReplyQuery(unwanted, 0.9, 0.0, 100)) == []
    assert store.reply_facts(alice, ReplyQuery(lambda: near, 0.9, time.time() + 60, 100)) == []
    store.forget(alice, [a.id])
    assert {
        r.memory_id for r in store.reply_facts(alice, ReplyQuery(lambda: near, 0.9, 0.0, 100))
    } == {
        b.id,
        c.id,
    }
    other.forget(alice, None)
    assert store.reply_facts(alice, ReplyQuery(lambda: near, -2.0, 0.0, 100)) == []


# -- recalls -------------------------------------------------------------------------------------
def test_forgetting_a_scope_removes_its_recalls(store: Store) -> None:
    t = time.time()
    store.save_recall(RecallRecord("ra", WS, "alice", None, None, "alice's query", t, []))
    store.save_recall(RecallRecord("rb", WS, "bob", None, None, "bob's query", t, []))
    store.forget(Scope(WS, "alice"), None)
    assert store.get_recall(Scope(WS, "alice"), "ra") is None
    assert store.get_recall(Scope(WS, "alice"), None) is None
    kept = store.get_recall(Scope(WS, "bob"), "rb")
    assert kept is not None and kept.query == "bob's query"


def test_recalls_roundtrip_newest_and_scope(store: Store) -> None:
    t = time.time()
    paths = [{"nodes": ["a", "b"], "weights": [0.5], "kinds": ["semantic"], "score": 0.9}]
    tensions = [{"a": "a", "b": "b", "kind": "negation", "confidence": 0.8}]
    store.save_recall(
        RecallRecord("r1", WS, "alice", "a1", "s1", "q1", t, ["a", "b"], paths, tensions)
    )
    store.save_recall(RecallRecord("r2", WS, "alice", "a1", "s1", "q2", t + 1, ["c"]))
    store.save_recall(RecallRecord("r3", WS, "bob", None, None, "q3", t + 2, []))
    got = store.get_recall(Scope(WS, "alice"), "r1")
    assert got is not None
    assert (got.query, got.memory_ids, got.paths, got.tensions) == (
        "q1",
        ["a", "b"],
        paths,
        tensions,
    )
    assert (got.agent_id, got.session_id, got.created_at, got.consumed_at) == ("a1", "s1", t, None)
    newest = store.get_recall(Scope(WS, "alice"), None)
    assert newest is not None and newest.recall_id == "r2"
    assert store.get_recall(Scope(WS, "bob"), "r1") is None
    assert store.get_recall(Scope("w2"), None) is None
    store.adjust_edges(WS, EdgeAdjustment([], EdgeBounds(LO, HI), "r2"))
    # Consumed or not, the newest is the newest: feedback refuses it rather than reaching back.
    newest = store.get_recall(Scope(WS, "alice"), None)
    assert newest is not None and newest.recall_id == "r2" and newest.consumed_at is not None
    newest_any = store.get_recall(Scope(WS), None)
    assert newest_any is not None and newest_any.recall_id == "r3"


def test_closed_store_raises(clients: StoreClients) -> None:
    store = clients.open()
    store.close()
    with pytest.raises(StoreError):
        store.list_memories(Scope(WS), 1, 0)


# -- concurrency ---------------------------------------------------------------------------------
def _hub(store: Store, n: int) -> tuple[str, list[str]]:
    hub = new("hub memory")
    spokes = [new(f"spoke number {i}") for i in range(n)]
    add(
        store, hub, *spokes,
        edges=tuple(NewEdge(hub.id, s.id, "semantic", 0.5) for s in spokes),
    )  # fmt: skip
    return hub.id, [s.id for s in spokes]


def _deltas(worker: int, hub: str, spokes: list[str], rounds: int) -> list[list[EdgeDelta]]:
    """Each call touches every spoke (so calls contend on the same rows), in a shuffled order
    (so a store that locked rows in call order could deadlock)."""
    rng = np.random.default_rng(worker)
    calls = []
    for _ in range(rounds):
        order = rng.permutation(len(spokes))
        calls.append(
            [EdgeDelta(hub, spokes[i], "semantic", 0.001 * (1 + (worker + i) % 3)) for i in order]
        )
    return calls


def _expected(workers: int, spokes: list[str], rounds: int) -> dict[str, float]:
    return {
        s: 0.5 + sum(rounds * 0.001 * (1 + (w + i) % 3) for w in range(workers))
        for i, s in enumerate(spokes)
    }


def test_adjust_edges_threads_lose_no_update(clients: StoreClients) -> None:
    stores = [clients.open() for _ in range(2)]
    hub, spokes = _hub(stores[0], 6)
    workers, rounds = 8, 15
    errors: list[BaseException] = []

    def work(w: int) -> None:
        try:
            for deltas in _deltas(w, hub, spokes, rounds):
                stores[w % 2].adjust_edges(WS, EdgeAdjustment(deltas, EdgeBounds(LO, HI)))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = {e.dst: e.weight for e in stores[1].edges_from(WS, [hub])}
    want = _expected(workers, spokes, rounds)
    assert got == pytest.approx(want, abs=1e-9)


def _process_worker(location: str, w: int, hub: str, spokes: list[str], rounds: int) -> None:
    store = open_store(config_for(location))
    try:
        for deltas in _deltas(w, hub, spokes, rounds):
            store.adjust_edges(WS, EdgeAdjustment(deltas, EdgeBounds(LO, HI)))
    finally:
        store.close()


@pytest.mark.processes
def test_adjust_edges_processes_lose_no_update(clients: StoreClients) -> None:
    store = clients.open()
    hub, spokes = _hub(store, 5)
    workers, rounds = 3, 12
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_process_worker, args=(clients.location, w, hub, spokes, rounds))
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * workers
    got = {e.dst: e.weight for e in store.edges_from(WS, [hub])}
    assert got == pytest.approx(_expected(workers, spokes, rounds), abs=1e-9)


def test_adjust_edges_saturates_at_the_clamp_under_contention(clients: StoreClients) -> None:
    stores = [clients.open() for _ in range(2)]
    hub, spokes = _hub(stores[0], 2)
    up = [EdgeDelta(hub, s, "semantic", 0.05) for s in spokes]

    def work(w: int) -> None:
        for _ in range(10):
            stores[w % 2].adjust_edges(WS, EdgeAdjustment(up, EdgeBounds(LO, HI)))

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [e.weight for e in stores[0].edges_from(WS, [hub])] == [HI, HI]


def test_concurrent_adds_of_one_text_create_one_memory(clients: StoreClients) -> None:
    stores = [clients.open() for _ in range(2)]
    results: list[tuple[str, bool]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(6)

    def work(w: int) -> None:
        row = new("said at the same moment")
        barrier.wait()
        out = stores[w % 2].add_memories([row])
        with lock:
            results.extend(out)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(created for _, created in results) == 1
    assert len({memory_id for memory_id, _ in results}) == 1
    assert len(stores[0].list_memories(Scope(WS, "alice"), 10, 0)) == 1


def test_feedback_consumes_a_recall_once_under_contention(clients: StoreClients) -> None:
    stores = [clients.open() for _ in range(2)]
    hub, spokes = _hub(stores[0], 3)
    stores[0].save_recall(RecallRecord("rc", WS, "alice", None, None, "q", time.time(), [hub]))
    outcomes: list[object] = []
    barrier = threading.Barrier(6)
    deltas = [EdgeDelta(hub, s, "semantic", 0.1) for s in spokes]

    def work(w: int) -> None:
        barrier.wait()
        outcomes.append(
            stores[w % 2].adjust_edges(WS, EdgeAdjustment(deltas, EdgeBounds(LO, HI), "rc"))
        )

    threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(o is not None for o in outcomes) == 1
    assert [round(e.weight, 9) for e in stores[1].edges_from(WS, [hub])] == [0.6] * 3


def test_mixed_clients_add_recall_and_adjust_at_once(clients: StoreClients) -> None:
    """Threads adding, recalling and adjusting edges through their own Memory at the same time:
    nothing fails, every add lands once, every delta counts."""
    from engrammar import Memory

    config = config_for(clients.location)
    first = clients.open()
    hub, spokes = _hub(first, 4)
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work(w: int) -> None:
        try:
            with Memory(config, embedder=EMB) as mem:
                barrier.wait()
                for i in range(8):
                    mem.add(f"client {w} says thing {i}", user_id=f"user{w}")
                    mem.recall(f"thing {i}", user_id=f"user{w}")
                    mem.store.adjust_edges(
                        WS,
                        EdgeAdjustment(
                            [EdgeDelta(hub, s, "semantic", 0.001) for s in spokes],
                            EdgeBounds(LO, HI),
                        ),
                    )
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for w in range(4):
        listed = first.list_memories(Scope(WS, f"user{w}"), 100, 0)
        assert sorted(m.content for m in listed) == sorted(
            f"client {w} says thing {i}" for i in range(8)
        )
    weights = [e.weight for e in first.edges_from(WS, [hub])]
    assert weights == pytest.approx([0.5 + 4 * 8 * 0.001] * 4, abs=1e-9)


# -- graph support -------------------------------------------------------------------------------
def test_latest_memories_and_term_postings(store: Store) -> None:
    rows = _load_corpus(store)
    alice = [r for r in rows if r.user_id == "alice"]
    latest = store.latest_memories(Scope(WS, "alice"), 3)
    assert [m.id for m in latest] == [r.id for r in alice[::-1][:3]]
    superseded = alice[-1]
    store.update_memory(WS, superseded.id, MemoryUpdate(status="superseded", reason="test"))
    assert superseded.id not in [m.id for m in store.latest_memories(Scope(WS, "alice"), 3)]
    n, postings = store.term_postings(Scope(WS, "alice"), ["violin", "dog", "zebra", "dog"], 1)
    assert n == len(alice) - 1
    violin = [r.id for r in alice if "violin" in r.content.lower()]
    dog = [r.id for r in alice if "dog" in r.content.lower() and r.id != superseded.id]
    assert postings == {"violin": (len(violin), violin[-1:]), "dog": (len(dog), dog[-1:]),
                        "zebra": (0, [])}  # fmt: skip
    n_a1, postings_a1 = store.term_postings(Scope(WS, "alice", "a1"), ["violin"], 10)
    assert n_a1 == 2 and postings_a1["violin"][0] == 1
    n_all, postings_all = store.term_postings(Scope(WS), ["violin"], 10)
    assert n_all == len(rows) - 1 and postings_all["violin"][0] == 3


def test_memories_of_kind_newest_first_active_in_scope(store: Store) -> None:
    older, newer, message = (
        new("I prefer tea.", kind="preference"),
        new("I can't stand loud bars.", kind="preference"),
        new("We went out on Friday."),
    )
    other_user = new("I prefer coffee.", kind="preference", user_id="bob")
    gone = new("I always cycle.", kind="preference")
    add(store, older, newer, message, other_user, gone)
    store.update_memory(WS, gone.id, MemoryUpdate(status="superseded", reason="test"))
    found = store.memories_of_kind(Scope(WS, "alice"), "preference", 10)
    assert [m.id for m in found] == [newer.id, older.id]
    assert [m.id for m in store.memories_of_kind(Scope(WS, "alice"), "preference", 1)] == [newer.id]
    assert [m.id for m in store.memories_of_kind(Scope(WS, "bob"), "preference", 10)] == [
        other_user.id
    ]


def test_update_with_edges_replaces_content_edges_and_keeps_learned_weights(
    store: Store,
) -> None:
    a, b, c, d = new("changing"), new("kept neighbour"), new("old neighbour"), new("new one")
    add(
        store, a, b, c, d,
        edges=(NewEdge(a.id, b.id, "semantic", 0.5), NewEdge(c.id, a.id, "entity", 0.4),
               NewEdge(b.id, a.id, "sequence", 0.5), NewEdge(b.id, c.id, "semantic", 0.3)),
    )  # fmt: skip
    store.adjust_edges(
        WS, EdgeAdjustment([EdgeDelta(a.id, b.id, "semantic", 0.3)], EdgeBounds(LO, HI))
    )  # learned: 0.8
    store.update_memory(
        WS,
        a.id,
        MemoryUpdate(
            content="changed text",
            embedding=EMB.embed(["changed text"])[0],
            dedup_key="changed-key",
            reason="edit",
            edges=[
                NewEdge(a.id, b.id, "semantic", 0.5),
                NewEdge(a.id, d.id, "contradicts", 0.5),
                NewEdge(d.id, a.id, "contradicts", 0.5),
            ],
        ),
    )
    out_of_a = {(e.dst, e.kind): round(e.weight, 9) for e in store.edges_from(WS, [a.id])}
    assert out_of_a == {(b.id, "semantic"): 0.8, (d.id, "contradicts"): 0.5}
    into_a = {(e.src, e.kind) for e in store.edges_to(WS, [a.id])}
    # The sequence edge stays; the old neighbour's entity edge is gone.
    assert into_a == {(b.id, "sequence"), (d.id, "contradicts")}
    # Edges not touching the memory are left alone.
    assert {(e.dst, e.kind) for e in store.edges_from(WS, [b.id])} == {
        (a.id, "sequence"), (c.id, "semantic")}  # fmt: skip
    # A metadata-only update (no edges given) changes no edge.
    store.update_memory(WS, a.id, MemoryUpdate(metadata={"x": 1}, reason="meta"))
    assert len(store.edges_from(WS, [a.id])) == 2


def test_edges_to_and_edge_counts(store: Store) -> None:
    a, b, c = new("a"), new("b"), new("c")
    add(
        store, a, b, c,
        edges=(NewEdge(a.id, c.id, "semantic", 0.2), NewEdge(b.id, c.id, "entity", 0.8),
               NewEdge(a.id, b.id, "sequence", 0.5)),
    )  # fmt: skip
    into_c = {(e.src, e.kind) for e in store.edges_to(WS, [c.id])}
    assert into_c == {(a.id, "semantic"), (b.id, "entity")}
    assert [e.src for e in store.edges_to(WS, [c.id], min_weight=0.5)] == [b.id]
    assert store.edges_to("w2", [c.id]) == []
    assert [(e.dst, e.kind) for e in store.edges_from(WS, [a.id], kind="sequence")] == [
        (b.id, "sequence")
    ]
    assert store.edges_from(WS, [a.id], min_weight=0.6, kind="sequence") == []
    assert store.edge_counts(WS, [a.id, b.id, c.id, "none"]) == {a.id: 2, b.id: 1, c.id: 0,
                                                                 "none": 0}  # fmt: skip


def test_keyword_index_holds_the_speaker(store: Store) -> None:
    """Both stores index "speaker: content", so a question naming a person finds what they
    said; a changed speaker is re-indexed."""
    row = new("I went hiking in the Alps", metadata={"speaker": "Caroline"})
    add(store, row, new("Mountains are lovely", metadata={"speaker": "Mel"}))
    assert [h for h, _ in store.keyword_search(Scope(WS, "alice"), "Caroline", 5)] == [row.id]
    store.update_memory(WS, row.id, MemoryUpdate(metadata={"speaker": "Jon"}, reason="renamed"))
    assert store.keyword_search(Scope(WS, "alice"), "Caroline", 5) == []
    assert [h for h, _ in store.keyword_search(Scope(WS, "alice"), "Jon hiking", 5)] == [row.id]


# -- API keys ------------------------------------------------------------------------------------
def test_api_keys(store: Store) -> None:
    from engrammar.store.base import ApiKeyRecord

    a = ApiKeyRecord("k1", "h1", WS, "alice", "laptop", 1.0)
    b = ApiKeyRecord("k2", "h2", "w2", None, "", 2.0)
    store.create_api_key(a)
    store.create_api_key(b)
    with pytest.raises(ConflictError):
        store.create_api_key(ApiKeyRecord("k1", "other", WS, None, "", 3.0))
    assert store.get_api_key("k1") == a
    assert store.get_api_key("nope") is None
    assert [k.key_id for k in store.list_api_keys(None)] == ["k1", "k2"]
    assert [k.key_id for k in store.list_api_keys("w2")] == ["k2"]
    assert store.revoke_api_key("k1") is True
    assert store.revoke_api_key("k1") is False
    revoked = store.get_api_key("k1")
    assert revoked is not None and revoked.revoked_at is not None
    with pytest.raises(NotFoundError):
        store.revoke_api_key("nope")
