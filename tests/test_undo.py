"""Undo of feedback records and the per-source bound (item 4), on both stores.

The undo tests compare the whole ranking state before a record was given with the state after
its undo: every recalled memory with its score, for several queries, and every edge weight.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession

from backends import open_memory
from engrammar import Config, HashEmbedder, Memory, NotFoundError
from engrammar.keys import create_api_key
from engrammar.learn.rates import Signal, aggregate
from engrammar.learn.replay import LoggedChange, replay_edge
from engrammar.store import EdgeAdjustment, EdgeBounds, EdgeDelta
from serving import mcp_session, serve_in_thread

FACTS = [
    "alpha beta gamma release notes",
    "alpha beta delta release plan",
    "beta gamma delta deploy checklist",
    "gamma delta epsilon rollback steps",
    "alpha gamma epsilon incident review",
    "delta epsilon zeta on-call rota",
    "alpha zeta eta team lunch",
    "beta eta theta budget sheet",
]
QUERIES = ["alpha beta", "gamma delta", "epsilon zeta", "beta theta"]


def _state(mem: Memory) -> dict[str, Any]:
    """Every query's ranking (ids and scores) and every edge weight: what learning changes."""
    ids = [m.id for m in mem.list(user_id="u", limit=1000)]
    rankings = {
        q: [(m.id, m.score) for m in mem.recall(q, user_id="u", limit=20).memories] for q in QUERIES
    }
    edges = {(e.src, e.dst, e.kind): e.weight for e in mem.store.edges_from("default", sorted(ids))}
    return {"memories": sorted(ids), "rankings": rankings, "edges": edges}


def _give(mem: Memory, kind: str, ids: list[str]) -> str:
    """Give one feedback record of ``kind``; returns its id."""
    if kind == "rating":
        return mem.rate_memory(ids[1], "accepted", context="alpha beta", user_id="u").id
    if kind == "rating_on_recall":
        # Accepted for this very question: placed among its best (feedback_rating_anchor).
        recall = mem.recall("beta theta", user_id="u", limit=20)
        last = recall.memories[-1]
        return mem.rate_memory(last.id, "accepted", recall_id=recall.recall_id, user_id="u").id
    if kind == "rating_correction":
        return mem.rate_memory(
            ids[0], "corrected", "alpha beta gamma notes moved to the wiki", user_id="u"
        ).id
    if kind == "implicit":
        return mem.rate_memory(ids[2], "accepted", weight=0.8, user_id="u").id
    if kind == "pair":
        return mem.create_preference_pair(
            "gamma delta", "gamma delta rollback first", "beta gamma delta deploy", user_id="u"
        ).id
    if kind == "event":
        return mem.create_feedback_event(
            "alpha beta", "alpha beta delta release plan", "corrected",
            corrected_output="alpha beta release plan v2", reason="v2 replaced it", user_id="u",
        ).id  # fmt: skip
    if kind == "logged":
        return mem.log_event("checkpoint", {"step": 1}, user_id="u").id
    if kind == "reply":
        recall = mem.recall("alpha beta gamma", user_id="u")
        out = mem.feedback(
            response="alpha beta gamma release notes", user_id="u", recall_id=recall.recall_id
        )
        assert out["consumed"] is True
        return recall.recall_id
    raise AssertionError(kind)


KINDS = [
    "rating",
    "rating_on_recall",
    "rating_correction",
    "implicit",
    "pair",
    "event",
    "logged",
    "reply",
]


@pytest.mark.every_store
def test_undo_restores_every_ranking_and_edge_exactly(mem: Memory) -> None:
    ids = mem.add(FACTS, user_id="u")
    before = _state(mem)
    for kind in KINDS:
        record_id = _give(mem, kind, ids)
        if kind != "logged":
            assert _state(mem) != before, f"{kind} changed nothing: the test would prove nothing"
        out = mem.undo(record_id)
        assert out["record_id"] == record_id
        assert _state(mem) == before, kind
        with pytest.raises(NotFoundError):
            mem.undo(record_id)


@pytest.mark.every_store
def test_undoing_an_event_takes_its_reviews_and_decision_back(mem: Memory) -> None:
    ids = mem.add(FACTS, user_id="u")
    before = _state(mem)
    event_id = _give(mem, "event", ids)
    review = mem.create_decision_review(event_id, "adopted", "success", user_id="u")
    assert review.decision_memory_id is not None
    out = mem.undo(event_id)
    assert out["kind"] == "feedback_event"
    assert out["undone"] == [event_id, review.id]
    assert len(out["memories_removed"]) == 2  # the corrected answer and the adopted one
    assert _state(mem) == before
    with pytest.raises(NotFoundError):
        mem.get_decision_review(review.id)


@pytest.mark.every_store
def test_undo_of_a_record_between_others_leaves_them(mem: Memory) -> None:
    ids = mem.add(FACTS, user_id="u")
    first = mem.rate_memory(ids[3], "accepted", context="gamma delta", user_id="u")
    with_first = _state(mem)
    second = mem.rate_memory(ids[3], "rejected", context="gamma delta", user_id="u")
    pair = mem.create_preference_pair(
        "epsilon zeta", "delta epsilon zeta on-call rota", "alpha zeta eta lunch", user_id="u"
    )
    mem.undo(pair.id)
    mem.undo(second.id)
    after = _state(mem)
    assert after["memories"] == with_first["memories"]
    assert after["edges"] == with_first["edges"]
    for q in QUERIES:  # decay moved the first rating's weight by ~1e-7 meanwhile
        assert [i for i, _ in after["rankings"][q]] == [i for i, _ in with_first["rankings"][q]]
        for (_, a), (_, b) in zip(after["rankings"][q], with_first["rankings"][q], strict=True):
            assert a == pytest.approx(b, abs=1e-6)
    assert mem.get_memory_rating(first.id).id == first.id


@pytest.mark.every_store
def test_a_reply_undone_replays_the_edges_it_clamped(mem: Memory) -> None:
    """Undo replays the log without the change; subtracting it would be wrong here."""
    ids = mem.add(FACTS[:3], user_id="u")
    edge = mem.store.edges_from("default", ids)[0]
    key = (edge.src, edge.dst, edge.kind)
    lo, hi = mem.config.edge_weight_min, mem.config.edge_weight_max
    recalls = [mem.recall(q, user_id="u").recall_id for q in ("alpha", "beta", "gamma")]
    deltas = [+0.9, +0.5, -0.3]  # the first lifts the edge to the ceiling, the second is clamped
    for rid, d in zip(recalls, deltas, strict=True):
        changed = mem.store.adjust_edges(
            "default", EdgeAdjustment([EdgeDelta(*key, d)], EdgeBounds(lo, hi), consume_recall=rid)
        )
        assert changed is not None
    w0 = edge.weight
    now = mem.store.edges_from("default", [edge.src])
    current = next(e.weight for e in now if (e.src, e.dst, e.kind) == key)
    assert current == min(hi, max(lo, min(hi, max(lo, min(hi, w0 + 0.9)) + 0.5) - 0.3))
    mem.undo(recalls[0])
    expected = min(hi, max(lo, min(hi, max(lo, w0 + 0.5)) - 0.3))
    subtracted = current - (min(hi, w0 + 0.9) - w0)
    assert expected != pytest.approx(subtracted)  # the case where subtracting is wrong
    after = mem.store.edges_from("default", [edge.src])
    assert next(e.weight for e in after if (e.src, e.dst, e.kind) == key) == expected
    # The log was rewritten to that history: undoing the next change is exact as well.
    mem.undo(recalls[1])
    after = mem.store.edges_from("default", [edge.src])
    assert next(e.weight for e in after if (e.src, e.dst, e.kind) == key) == max(lo, w0 - 0.3)
    # An undone reply's recall can receive feedback again.
    assert mem.feedback(response="alpha", user_id="u", recall_id=recalls[0])["consumed"]


def test_replay_applies_an_ingest_raise_between_changes() -> None:
    rows = [
        LoggedChange(1, -0.5, 0.8, 0.3, undone=True),
        LoggedChange(2, +0.1, 0.6, 0.7, undone=False),  # ingest raised 0.3 -> 0.6 in between
    ]
    weight, rewritten = replay_edge(rows, 0.7, 0.0, 1.0)
    assert weight == pytest.approx(0.9)  # 0.8, raised to max(0.8, 0.6), + 0.1
    assert rewritten == [(2, 0.8, pytest.approx(0.9))]


@pytest.mark.every_store
def test_a_bound_user_undoes_only_its_own_records(mem: Memory) -> None:
    a = mem.add(["alpha beta"], user_id="a")[0]
    rating = mem.rate_memory(a, "accepted", user_id="a")
    with pytest.raises(NotFoundError):
        mem.undo(rating.id, user_id="b")
    assert mem.undo(rating.id, user_id="a")["kind"] == "memory_rating"


@pytest.mark.every_store
def test_explain_lists_each_record_and_source_with_its_contribution(mem: Memory) -> None:
    ids = mem.add(FACTS, user_id="u")
    r1 = mem.rate_memory(ids[0], "accepted", user_id="u", source="app")
    r2 = mem.rate_memory(ids[0], "accepted", user_id="u", agent_id="bot")
    r3 = mem.rate_memory(
        ids[0], "rejected", user_id="u", source="app", timestamp=time.time() - 86_400 * 30
    )
    out = mem.explain("alpha beta", ids[0], user_id="u")
    records = {r["record_id"]: r for r in out["records"]}
    assert set(records) == {r1.id, r2.id, r3.id}
    assert records[r2.id]["source"] == "agent:bot"
    assert records[r1.id]["contribution"] > 0 > records[r3.id]["contribution"]
    # The month-old rejection counts half (one half-life) of a fresh rating now.
    assert records[r3.id]["contribution"] == pytest.approx(
        -records[r1.id]["contribution"] / 2, rel=1e-3
    )
    total = sum(r["contribution"] for r in out["records"])
    assert total == pytest.approx(out["learned"]["learned"], abs=1e-5)
    sources = {s["source"]: s["contribution"] for s in out["sources"]}
    assert set(sources) == {"app", "agent:bot"}
    assert sum(sources.values()) == pytest.approx(total, abs=1e-5)


@pytest.mark.every_store
def test_a_flood_from_one_source_weighs_one_rating(location: str) -> None:
    mem = open_memory(location)
    try:
        ids = mem.add(FACTS, user_id="u")
        mem.rate_memory(ids[0], "accepted", user_id="u", source="user")
        clean = mem.explain("alpha beta", ids[0], user_id="u")["learned"]["learned"]
        start = time.time()
        start -= start % 60  # one window of feedback_source_window_s
        for i in range(200):
            mem.rate_memory(
                ids[0], "rejected", user_id="u", source="flood", timestamp=start + i * 0.25
            )
        out = mem.explain("alpha beta", ids[0], user_id="u")
        bound = mem.config.feedback_max_adjustment
        assert abs(out["learned"]["learned"]) <= bound
        sources = {s["source"]: s["contribution"] for s in out["sources"]}
        # 200 rejections in a minute count as one: they cancel the one acceptance, no more.
        assert out["learned"]["learned"] == pytest.approx(0.0, abs=1e-6)
        assert sources["flood"] == pytest.approx(-sources["user"])
        assert clean > 0
    finally:
        mem.close()


def test_without_the_window_a_flood_outweighs() -> None:
    now = 60.0 * 16_667  # the start of a window
    signals = [Signal(1.0, 1.0, now, "rating", origin="user")]
    signals += [Signal(-1.0, 1.0, now + i * 0.06, "rating", origin="flood") for i in range(1000)]
    kw = {"now": now + 60, "half_life_days": 30.0, "min_samples": 3.0, "max_adjustment": 0.5}
    open_ = aggregate(signals, **kw)
    windowed = aggregate(signals, source_window_s=60.0, **kw)
    assert open_.value == pytest.approx(-0.5, abs=0.01)  # at the bound, never beyond
    assert abs(windowed.value) < 0.01
    assert sum(windowed.by_record.values()) == pytest.approx(0.0)  # no record ids given
    assert sum(windowed.by_origin.values()) == pytest.approx(windowed.value)


@pytest.mark.every_store
def test_forgetting_a_user_takes_back_its_replies_edge_changes(mem: Memory) -> None:
    shared = mem.add(FACTS[:4], agent_id="team")
    before = {(e.src, e.dst, e.kind): e.weight for e in mem.store.edges_from("default", shared)}
    mem.add(["alpha beta personal note"], user_id="v")
    recall = mem.recall("alpha beta gamma", agent_id="team", user_id="v")
    mem.store.adjust_edges(
        "default",
        EdgeAdjustment(
            [EdgeDelta(*k, 0.3) for k in sorted(before)],
            EdgeBounds(mem.config.edge_weight_min, mem.config.edge_weight_max),
            consume_recall=recall.recall_id,
        ),
    )
    changed = {(e.src, e.dst, e.kind): e.weight for e in mem.store.edges_from("default", shared)}
    assert changed != before
    mem.forget(user_id="v")
    after = {(e.src, e.dst, e.kind): e.weight for e in mem.store.edges_from("default", shared)}
    assert after == before


@pytest.mark.every_store
def test_export_and_import_carry_sources_and_undo_works_after(mem: Memory, tmp_path: Path) -> None:
    ids = mem.add(FACTS, user_id="u")
    plain = _state(mem)["edges"]
    recall_id = _give(mem, "reply", ids)
    taught = _state(mem)["edges"]
    assert taught != plain
    rating = mem.rate_memory(ids[0], "accepted", user_id="u", source="reviewer-7")
    path = tmp_path / "out.jsonl"
    mem.export(str(path), user_id="u")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert any(r.get("table") == "memory_ratings" and r["source"] == "reviewer-7" for r in lines)
    assert any(r.get("table") == "edge_changes" for r in lines)
    assert mem.import_(str(path))["records"] == 0  # into itself: nothing new, log not doubled
    with open_memory(str(tmp_path / "copy")) as other:  # an embedded store, from either
        first = other.import_(str(path))
        again = other.import_(str(path))
        assert first["records"] > 0 and again["records"] == 0  # the log is not doubled
        assert other.get_memory_rating(rating.id).source == "reviewer-7"
        before = other.explain("alpha beta", ids[0], user_id="u")["records"]
        assert [r["record_id"] for r in before] == [rating.id]
        other.undo(rating.id)
        assert other.explain("alpha beta", ids[0], user_id="u").get("records", []) == []
        assert _state(other)["edges"] == taught
        other.undo(recall_id)
        assert _state(other)["edges"] == plain


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    config = Config(
        # A write every 1,000 s once the burst is spent: however slowly a loaded machine runs
        # the calls, none comes back before the test ends.
        path=str(tmp_path / "store"),
        feedback_rate_limit_per_s=0.001,
        feedback_rate_limit_burst=3,
    )
    memory = Memory(config, embedder=HashEmbedder())
    memory.add(FACTS, user_id="u")
    key_a = create_api_key(memory.store, "default")[0]
    key_b = create_api_key(memory.store, "default")[0]
    for base in serve_in_thread(memory):
        yield base, key_a, key_b
    memory.close()


@pytest.mark.processes
def test_feedback_writes_are_limited_per_source_over_http(served: tuple[str, str, str]) -> None:
    base, key_a, key_b = served
    a = {"Authorization": f"Bearer {key_a}"}
    b = {"Authorization": f"Bearer {key_b}"}
    with httpx.Client(base_url=base, timeout=30) as c:
        found = c.post("/v1/search", json={"query": "alpha", "user_id": "u"}, headers=a).json()
        memory_id = found["results"][0]["memory"]["id"]
        body = {"memory_id": memory_id, "verdict": "rejected", "user_id": "u", "source": "spoof"}
        codes = [c.post("/v1/ratings", json=body, headers=a).status_code for _ in range(5)]
        assert codes[:3] == [201, 201, 201] and codes[3] == 429
        r = c.post("/v1/ratings", json=body, headers=a)
        assert r.status_code == 429 and "feedback writes" in r.json()["error"]["message"]
        assert int(r.headers["Retry-After"]) >= 1
        # Reads are not feedback writes; another key (source) has its own budget.
        assert c.post("/v1/search", json={"query": "alpha", "user_id": "u"}, headers=a).is_success
        rating = c.post("/v1/ratings", json=body, headers=b).json()
        assert rating["source"].startswith("key:") and rating["source"] != "spoof"
        undone = c.post("/v1/undo", json={"record_id": rating["id"]}, headers=b)
        assert undone.status_code == 200 and undone.json()["kind"] == "memory_rating"
        # The key decides the source, but a malformed one is still refused, not ignored.
        bad = c.post("/v1/feedback", json={"response": "x", "user_id": "u", "source": 5}, headers=b)
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "source"


@pytest.mark.processes
def test_mcp_over_http_shares_the_feedback_budget(served: tuple[str, str, str]) -> None:
    """The same per-source budget holds for feedback written through MCP's tools: a key that
    spent its burst over REST is refused on /mcp too, with the kind and the wait; a second
    key still writes; nothing refused reaches the store."""
    base, key_a, key_b = served

    async def session(key: str, body: Callable[[ClientSession], Awaitable[None]]) -> None:
        async with mcp_session(base, key) as s:
            await body(s)

    with httpx.Client(base_url=base, timeout=30) as c:
        a = {"Authorization": f"Bearer {key_a}"}
        found = c.post("/v1/search", json={"query": "alpha", "user_id": "u"}, headers=a).json()
        memory_id = found["results"][0]["memory"]["id"]
        body = {"memory_id": memory_id, "verdict": "accepted", "user_id": "u"}
        assert c.post("/v1/ratings", json=body, headers=a).status_code == 201
    outcomes: list[Any] = []

    async def rate(s: ClientSession) -> None:
        for _ in range(4):
            r = await s.call_tool(
                "memory_feedback", {"memory_id": memory_id, "verdict": "rejected", "user_id": "u"}
            )
            outcomes.append(r)
        # A read is not a feedback write: the same key still searches.
        hits = await s.call_tool("memory_search", {"query": "alpha", "user_id": "u"})
        outcomes.append(hits)

    anyio.run(session, key_a, rate)
    written = [r for r in outcomes[:4] if not r.is_error]
    refused = [r for r in outcomes[:4] if r.is_error]
    assert len(written) == 2 and len(refused) == 2  # burst 3: one spent over REST
    message = refused[0].content[0].text
    assert message.startswith("RateLimited: too many feedback writes from key:")
    assert "retry in" in message
    assert not outcomes[4].is_error

    async def other(s: ClientSession) -> None:
        r = await s.call_tool(
            "memory_feedback", {"memory_id": memory_id, "verdict": "accepted", "user_id": "u"}
        )
        outcomes.append(r)

    anyio.run(session, key_b, other)
    assert not outcomes[-1].is_error
    with httpx.Client(base_url=base, timeout=30) as c:
        listed = c.get(
            "/v1/ratings", params={"user_id": "u"}, headers={"Authorization": f"Bearer {key_b}"}
        )
        assert listed.status_code == 200, listed.text
        rows = next(v for v in listed.json().values() if isinstance(v, list))
        # One over REST, two over MCP from key a, one from key b: the refused two never landed.
        assert len([r for r in rows if r["memory_id"] == memory_id]) == 4


@pytest.mark.processes
def test_undo_from_the_cli(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(ENGRAMMAR_PATH=str(tmp_path / "store"), ENGRAMMAR_EMBEDDER="hash")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "engrammar.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    added = json.loads(cli("add", "alpha beta gamma", "-u", "u", "--json").stdout)
    memory_id = added["ids"][0]
    rated = json.loads(cli("rate", "create", memory_id, "--verdict", "accepted", "--json").stdout)
    out = cli("undo", rated["id"])
    assert out.returncode == 0, out.stderr
    assert f"undid memory rating {rated['id']}" in out.stdout
    again = cli("undo", rated["id"])
    assert again.returncode != 0 and "no feedback record" in again.stderr
