"""The inspector's store reads (engrammar.store.sql.inspect) answer the same on SQLite and on
PostgreSQL: filtered pages with totals, scope counts, edges of a kind, the edge-weight log
(written by adjust_edges, removed by forget) and reply signals."""

from __future__ import annotations

import pytest

from engrammar.models import Scope
from engrammar.store import (
    EdgeAdjustment,
    EdgeBounds,
    EdgeDelta,
    MemoryFilter,
    NewEdge,
    RecallRecord,
    Store,
)
from engrammar.store.base import ReplySignal
from test_store_contract import EMB, HI, LO, WS, add, new

pytestmark = pytest.mark.every_store


def test_find_memories_filters_orders_and_counts(store: Store) -> None:
    rows = [
        new("Deploys are on Tuesdays.", created_at=100.0),
        new("Coverage is 100% now_ok", created_at=200.0),
        new("Tea, not coffee.", created_at=300.0, kind="preference"),
        new("Ops note", agent_id="ops", session_id="s1", created_at=400.0),
        new("Bob's row", user_id="bob", created_at=500.0),
        new("Other workspace deploys", workspace="w2", created_at=600.0),
    ]
    add(store, *rows)
    alice = Scope(WS, "alice")

    def contents(scope: Scope, **kw: object) -> tuple[list[str], int]:
        limit = int(kw.pop("limit", 100))  # type: ignore[call-overload]
        offset = int(kw.pop("offset", 0))  # type: ignore[call-overload]
        found, total = store.find_memories(scope, MemoryFilter(**kw), limit, offset)  # type: ignore[arg-type]
        return [r.content for r in found], total

    assert contents(alice) == (
        ["Deploys are on Tuesdays.", "Coverage is 100% now_ok", "Tea, not coffee.", "Ops note"],
        4,
    )
    assert contents(alice, newest_first=True, limit=2) == (
        ["Ops note", "Tea, not coffee."],
        4,
    )
    assert contents(alice, newest_first=True, limit=2, offset=2)[0] == [
        "Coverage is 100% now_ok",
        "Deploys are on Tuesdays.",
    ]
    assert contents(alice, text="DEPLOYS") == (["Deploys are on Tuesdays."], 1)
    assert contents(alice, text="100%") == (["Coverage is 100% now_ok"], 1)
    assert contents(alice, text="0%") == (["Coverage is 100% now_ok"], 1)
    assert contents(alice, text="w_o") == (["Coverage is 100% now_ok"], 1)
    assert contents(alice, text="n_w") == ([], 0)  # "_" is literal, not any character
    assert contents(alice, kind="preference") == (["Tea, not coffee."], 1)
    assert contents(alice, since=200.0, until=400.0) == (
        ["Coverage is 100% now_ok", "Tea, not coffee."],
        2,
    )
    assert contents(Scope(WS, "alice", "ops"), role="user") == (["Ops note"], 1)
    assert contents(alice, role="assistant") == ([], 0)
    assert contents(Scope("w2"), text="deploys") == (["Other workspace deploys"], 1)


def test_scope_counts_and_edges_of_a_kind(store: Store) -> None:
    a, b = new("I live in Paris."), new("I moved to Berlin.")
    c = new("Bob lives in Rome.", user_id="bob")
    d = new("ops", agent_id="ops", session_id="s1")
    e = new("elsewhere", workspace="w2")
    add(
        store, a, b, c, d, e,
        edges=(NewEdge(a.id, b.id, "contradicts", 0.9), NewEdge(a.id, c.id, "contradicts", 0.9),
               NewEdge(a.id, b.id, "semantic", 0.5)),
    )  # fmt: skip
    assert store.scope_counts(Scope(WS), 100) == [
        ("alice", None, None, 2),
        ("alice", "ops", "s1", 1),
        ("bob", None, None, 1),
    ]
    assert store.scope_counts(Scope(WS, "bob"), 100) == [("bob", None, None, 1)]
    assert store.scope_counts(Scope(WS), 1) == [("alice", None, None, 2)]
    assert store.scope_counts(Scope("w2"), 100) == [("alice", None, None, 1)]
    pairs = {(x.src, x.dst) for x in store.scope_edges(Scope(WS), "contradicts", 100)}
    assert pairs == {(a.id, b.id), (a.id, c.id)}
    # Within alice's scope only the edge with both ends hers counts.
    alice = store.scope_edges(Scope(WS, "alice"), "contradicts", 100)
    assert [(x.src, x.dst) for x in alice] == [(a.id, b.id)]
    assert store.scope_edges(Scope("w2"), "contradicts", 100) == []


def test_edge_changes_are_logged_and_forgotten_with_their_memory(store: Store) -> None:
    a, b, c = new("from"), new("to"), new("elsewhere")
    add(
        store, a, b, c,
        edges=(NewEdge(a.id, b.id, "semantic", 0.5), NewEdge(b.id, c.id, "semantic", 0.5)),
    )  # fmt: skip
    store.save_recall(RecallRecord("r1", WS, "alice", None, None, "q", 1.0, [a.id, b.id]))
    vec = EMB.embed(["q"])[0]
    signal = ReplySignal(WS, "alice", None, None, "r1", a.id, 1.0, 0.8, 5.0, vec)
    changed = store.adjust_edges(
        WS,
        EdgeAdjustment(
            [EdgeDelta(a.id, b.id, "semantic", 0.2), EdgeDelta(b.id, c.id, "semantic", -0.1)],
            EdgeBounds(LO, HI),
            consume_recall="r1",
            reply_signals=[signal],
        ),
    )
    assert changed is not None and len(changed) == 2
    store.adjust_edges(
        WS, EdgeAdjustment([EdgeDelta(a.id, b.id, "semantic", 5.0)], EdgeBounds(LO, HI))
    )
    log = store.edge_changes(WS, [a.id], 100)
    assert [(x["dst"], round(x["weight"], 6), x["delta"], x["recall_id"]) for x in log] == [
        (b.id, 0.7, 0.2, "r1"),
        (b.id, HI, 5.0, None),
    ]
    assert {x["src"] for x in store.edge_changes(WS, [c.id], 100)} == {b.id}
    assert store.edge_changes("w2", [a.id], 100) == []
    rows = store.reply_signal_rows(Scope(WS, "alice"), None, 10)
    assert [(r["recall_id"], r["memory_id"], r["value"]) for r in rows] == [("r1", a.id, 1.0)]
    assert store.reply_signal_rows(Scope(WS, "alice"), b.id, 10) == []
    assert store.reply_signal_rows(Scope(WS, "bob"), None, 10) == []
    store.forget(Scope(WS), [b.id])
    assert store.edge_changes(WS, [a.id, b.id, c.id], 100) == []
