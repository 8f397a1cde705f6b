"""Filters on recall and search: metadata (equality, ``in``), kind, role, a time range on
created_at, and ``min_score``; applied before the top-k cut, on every store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from backends import open_memory
from engrammar import Memory, ValidationError
from engrammar.models import RecallFilter, Scope
from engrammar.store.sqlite.index import IndexRow, ScopeIndex, Within

both_stores = pytest.mark.every_store

QUERY = "billing invoice refund account"


def _crowd(mem: Memory, others: int = 130) -> list[str]:
    """``others`` memories that match QUERY on every word (topic "other"), then three that
    match it on one word only (topic "billing"): the three rank far below the top-k, beyond
    the candidate pool (100) of either search."""
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": f"billing invoice refund account number {i} was settled",
            "metadata": {"topic": "other", "n": i},
        }
        for i in range(others)
    ]
    messages += [
        {
            "role": "user",
            "content": f"a short note on billing, item {j}",
            "metadata": {"topic": "billing", "n": 1000 + j},
        }
        for j in range(3)
    ]
    ids = mem.add(user_id="u", messages=messages).stored
    return ids[-3:]


@both_stores
def test_a_filter_reaches_matches_far_below_the_cut(mem: Memory) -> None:
    targets = _crowd(mem)
    plain = mem.search(QUERY, user_id="u", limit=3)
    assert not {h.id for h in plain} & set(targets)  # the test means something
    assert not {m.id for m in mem.recall(QUERY, user_id="u", limit=3).memories} & set(targets)

    only = {"metadata": {"topic": "billing"}}
    assert {h.id for h in mem.search(QUERY, user_id="u", limit=3, filters=only)} == set(targets)
    recalled = mem.recall(QUERY, user_id="u", limit=3, filters=only)
    assert {m.id for m in recalled.memories} == set(targets)
    # `in`, and a limit larger than what matches: all of it, nothing else.
    both = {"metadata": {"topic": {"in": ["billing", "nothing-else"]}}}
    found = mem.recall(QUERY, user_id="u", limit=10, filters=both).memories
    assert {m.id for m in found} == set(targets)


@both_stores
def test_kind_role_and_time_range(mem: Memory) -> None:
    day = 86_400.0
    start = datetime(2024, 3, 1, tzinfo=UTC).timestamp()
    rows = [
        ("user", "fact", 0, "The deploy script lives in tools/deploy.sh"),
        ("assistant", "message", 1, "The deploy script is run by the release job"),
        ("user", "decision", 2, "We decided the deploy script runs only on weekdays"),
        ("user", "message", 3, "The deploy script failed again on Friday"),
        ("assistant", "fact", 4, "The deploy script needs the staging token"),
    ]
    ids = mem.add(
        user_id="u",
        messages=[
            {"role": r, "kind": k, "timestamp": start + d * day, "content": c}
            for r, k, d, c in rows
        ],
    ).stored
    by = dict(zip(range(5), ids, strict=True))
    q = "deploy script"

    def found(op: str, filters: dict[str, Any]) -> set[str]:
        if op == "search":
            return {h.id for h in mem.search(q, user_id="u", filters=filters)}
        return {m.id for m in mem.recall(q, user_id="u", filters=filters).memories}

    for op in ("search", "recall"):
        assert found(op, {"kind": "fact"}) == {by[0], by[4]}
        assert found(op, {"kind": ["fact", "decision"]}) == {by[0], by[2], by[4]}
        assert found(op, {"role": "assistant"}) == {by[1], by[4]}
        assert found(op, {"role": ["assistant"], "kind": "message"}) == {by[1]}
        # since is inclusive, until exclusive; ISO-8601, epoch seconds and datetimes alike.
        assert found(op, {"since": "2024-03-02T00:00:00Z", "until": start + 4 * day}) == {
            by[1],
            by[2],
            by[3],
        }
        assert found(op, {"until": datetime(2024, 3, 2, tzinfo=UTC)}) == {by[0]}
        assert found(op, {"since": start + 4 * day}) == {by[4]}


@both_stores
def test_metadata_values_compare_as_json(mem: Memory) -> None:
    messages = [
        {"role": "user", "content": "lamp one is on", "metadata": {"v": 1}},
        {"role": "user", "content": "lamp two is on", "metadata": {"v": 1.0}},
        {"role": "user", "content": "lamp three is on", "metadata": {"v": True}},
        {"role": "user", "content": "lamp four is on", "metadata": {"v": "1"}},
        {"role": "user", "content": "lamp five is on", "metadata": {"v": None}},
        {"role": "user", "content": "lamp six is on", "metadata": {"other": 1}},
        {"role": "user", "content": "lamp seven is on", "metadata": {"v": [1]}},
    ]
    ids = mem.add(user_id="u", messages=messages).stored

    def found(value: Any) -> set[int]:
        hits = mem.search("lamp is on", user_id="u", filters={"metadata": {"v": value}})
        return {ids.index(h.id) for h in hits}

    assert found(1) == {0, 1}  # 1 equals 1.0, never true
    assert found(1.0) == {0, 1}
    assert found(True) == {2}
    assert found("1") == {3}
    assert found(None) == {4, 5}  # null, or no such key
    assert found({"in": [True, "1"]}) == {2, 3}
    assert found({"in": [None, 1]}) == {0, 1, 4, 5}
    # Every condition must hold: two keys.
    both = mem.search("lamp", user_id="u", filters={"metadata": {"v": 1, "other": 1}})
    assert both == []


@both_stores
def test_graph_and_slots_bring_in_nothing_the_filter_excludes(location: str) -> None:
    # A conversation: the replies share no word with the query and a small candidate pool
    # leaves them out of search, so only their sequence edges (neighbour support) bring them in.
    with open_memory(location, candidate_pool=4, ranking={"neighbour_weight": 0.3}) as mem:
        _graph_and_slots(mem)


def _graph_and_slots(mem: Memory) -> None:
    convo = []
    for i in range(6):
        convo.append({"role": "user", "content": f"How should I water the fern, day {i}?"})
        convo.append({"role": "assistant", "content": f"Twice a week is plenty, tip {i}."})
    mem.add(user_id="u", session_id="s", messages=convo)
    mem.add(user_id="u", content="I prefer watering ferns in the morning.", kind="preference")
    roles = {m.id: m.role for m in mem.list(user_id="u")}
    plain = mem.recall("water the fern", user_id="u", limit=20)
    assert any(m.memory.role == "assistant" for m in plain.memories)

    r = mem.recall("water the fern", user_id="u", limit=20, filters={"role": "user"})
    assert r.memories and all(m.memory.role == "user" for m in r.memories)
    assert all(roles[n] == "user" for p in r.paths for n in p.nodes)
    # The record feedback acts on holds what was shown.
    record = mem.store.get_recall(Scope("default", user_id="u"), r.recall_id)
    assert record is not None and record.memory_ids == [m.id for m in r.memories]

    assert [p.memory.kind for p in r.preferences] == ["preference"]
    kinds = mem.recall("water the fern", user_id="u", filters={"kind": ["message"]})
    assert kinds.preferences == [] and all(m.memory.kind == "message" for m in kinds.memories)
    later = mem.recall("water the fern", user_id="u", filters={"metadata": {"x": 1}})
    assert later.memories == [] and later.preferences == [] and later.paths == []


@both_stores
def test_recall_min_score_is_the_absolute_score(mem: Memory) -> None:
    mem.add(user_id="u", content="The staging database runs on port 5433.")
    mem.add(user_id="u", content="Lunch is at noon on Fridays.")
    r = mem.recall("staging database port", user_id="u")
    assert r.memories
    # The absolute score is what search returns: the ranking's score x query_match, one
    # factor for the whole query.
    ratios = {round(m.components["absolute"] / m.score, 4) for m in r.memories if m.score > 0}
    assert len(ratios) == 1 and 0 < ratios.pop() <= 1
    best = max(m.components["absolute"] for m in r.memories)
    top = mem.recall("staging database port", user_id="u", min_score=best * 0.999)
    assert [m.id for m in top.memories] == [
        m.id for m in r.memories if m.components["absolute"] >= best * 0.999
    ]
    assert mem.recall("staging database port", user_id="u", min_score=best + 0.01).memories == []
    hits = mem.search("staging database port", user_id="u")
    assert hits[0].score == pytest.approx(best, abs=0.05)


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ([], "filters"),
        ({"topic": "x"}, "filters.topic"),
        ({"metadata": []}, "filters.metadata"),
        ({"metadata": {"topic": {"in": "billing"}}}, "filters.metadata.topic.in"),
        ({"metadata": {"topic": {"in": []}}}, "filters.metadata.topic.in"),
        ({"metadata": {"topic": {"in": ["a", {"b": 1}]}}}, "filters.metadata.topic.in[1]"),
        ({"metadata": {"topic": {"eq": "a"}}}, "filters.metadata.topic"),
        ({"metadata": {"topic": ["a", "b"]}}, "filters.metadata.topic"),
        ({"metadata": {"topic": float("nan")}}, "filters.metadata.topic"),
        ({"metadata": {"topic": "a\x00"}}, "filters.metadata.topic"),
        ({"kind": "note"}, "filters.kind"),
        ({"kind": ["fact", "note"]}, "filters.kind[1]"),
        ({"kind": []}, "filters.kind"),
        ({"kind": 3}, "filters.kind"),
        ({"role": "robot"}, "filters.role"),
        ({"since": "yesterday"}, "filters.since"),
        ({"until": -5}, "filters.until"),
        ({"since": 200, "until": 100}, "filters.until"),
    ],
)
def test_bad_filters_name_the_field(mem: Memory, filters: Any, field: str) -> None:
    for call in (mem.recall, mem.search):
        with pytest.raises(ValidationError) as err:
            call("anything", user_id="u", filters=filters)
        assert err.value.field == field


def test_bad_min_score_on_recall(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="min_score"):
        mem.recall("anything", user_id="u", min_score=-1)


def test_filter_records_match_like_the_stores() -> None:
    f = RecallFilter(metadata=(("t", ("a", 2)),), kinds=("fact",), since=10.0, until=20.0)
    assert f.matches_fields("fact", "user", 10.0, {"t": "a"})
    assert f.matches_fields("fact", "user", 19.9, {"t": 2.0})
    assert not f.matches_fields("fact", "user", 20.0, {"t": "a"})
    assert not f.matches_fields("message", "user", 15.0, {"t": "a"})
    assert not f.matches_fields("fact", "user", 15.0, {"t": [2]})
    assert not f.matches_fields("fact", "user", 15.0, None)
    assert not f.matches_fields("fact", "user", float("nan"), {"t": "a"})


@both_stores
def test_filters_follow_adds_updates_and_forgets(mem: Memory) -> None:
    first = mem.add(
        user_id="u",
        messages=[
            {"role": "user", "content": f"the router in room {i} blinks", "metadata": {"room": i}}
            for i in range(6)
        ],
    ).stored

    def rooms(value: Any) -> set[str]:
        found = mem.search("router blinks", user_id="u", filters={"metadata": {"room": value}})
        return {h.id for h in found}

    assert rooms({"in": [1, 2]}) == {first[1], first[2]}  # builds the embedded index's lookup
    later = mem.add(user_id="u", content="the router in room 2 blinks again", metadata={"room": 2})
    assert rooms(2) == {first[2], *later.stored}
    mem.update(first[1], metadata={"room": 2})
    assert rooms(1) == set() and rooms(2) == {first[1], first[2], *later.stored}
    mem.forget(first[2])
    assert rooms(2) == {first[1], *later.stored}


def test_the_approximate_index_scans_what_a_filter_keeps_exactly() -> None:
    rng = np.random.default_rng(3)
    dim, n = 32, 3000
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = ScopeIndex(dim, 1.2, 0.1, ann_threshold=1000)
    for i, v in enumerate(vecs):
        meta = {"tag": "rare"} if i % 1000 == 7 else {"tag": "common"}
        index.upsert(IndexRow(f"m{i}", None, None, float(i), f"text {i}", v, metadata=meta))
    query = vecs[1]
    rare = RecallFilter(metadata=(("tag", ("rare",)),))
    assert {i for i, _ in index.vector_search(query, 10, Within(where=rare))} == {
        "m7",
        "m1007",
        "m2007",
    }
    late = RecallFilter(since=2995.0, kinds=("message",))
    assert {i for i, _ in index.vector_search(query, 10, Within(where=late))} == {
        f"m{i}" for i in range(2995, 3000)
    }
