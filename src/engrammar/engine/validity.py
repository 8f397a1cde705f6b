"""Facts that change, in a ranking: what is current ranks first (``recall.supersession``).

The learned ranking's head is re-ranked by validity: a superseded memory hands its score on to
the memory that replaced it (fetched if search missed it) for a question about the present and
ranks above it for a question about the past; ``as_of`` leaves out what was said later and
counts a memory replaced only later as current; for a question about the speaker's own present,
a later restatement of an earlier memory moves above it (``recency_similarity``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..config import RankingProfile
from ..models import MemoryRecord, RecallFilter, Scope
from ..recall.query import Query
from ..recall.supersession import Version, new_amount, newer_first, rank_by_validity
from ..recall.text import terms
from .base import Engine, in_scope, own_word, states_facts

__all__ = ["Item", "by_validity", "reordered"]

# Replacements followed from a superseded memory to the one current now.
_MAX_HOPS = 5

# (record, score, components, note, via) of one ranked memory.
Item = tuple[MemoryRecord, float, dict[str, float], "str | None", str]


def _version(record: MemoryRecord) -> Version:
    return Version(
        record.id,
        record.created_at,
        record.valid_until,
        record.superseded_by,
        session=record.session_id,
    )


def _versions(records: dict[str, MemoryRecord]) -> dict[str, Version]:
    """The versions of ``records``; an assistant's answer never counts as replaced (stores
    written before such replacements were left out at ingest, see
    :func:`~engrammar.engine.base.states_facts`)."""
    out = {}
    for k, r in records.items():
        v = _version(r)
        if v.superseded_by is not None and not states_facts(r.role, r.kind):
            v = dataclasses.replace(v, valid_until=None, superseded_by=None)
        out[k] = v
    return out


def by_validity(
    engine: Engine,
    scope: Scope,
    query: Query,
    profile: RankingProfile,
    ranked: Sequence[Any],
    records: dict[str, MemoryRecord],
    limit: int,
    where: RecallFilter | None = None,
) -> list[Item]:
    """``ranked`` (items with ``id``, ``score``, ``components``, ``note`` and ``via``, best
    first, their ``records`` fetched) re-ranked by what is current: each memory with its
    record, score, components (``supersession``: the change of score; ``newer``: 1 when a later
    restatement moved above an earlier one), note and ``via``. A replacement is brought in only
    if ``where`` matches it; restatements move only within the first ``limit``."""
    as_of = query.as_of if query.pinned else None
    items = [
        r
        for r in ranked
        if r.id in records and (as_of is None or records[r.id].created_at <= as_of)
    ]
    if query.names_past_time:
        # A question that names a past time ("two weeks ago", "in May 2023") asks what held
        # then: the time stage ranks by date, and what replaced a memory later does not count.
        return [(records[r.id], r.score, dict(r.components), r.note, r.via) for r in items]
    # The memories that replaced the ranked ones, as far as the chains go.
    wanted = {records[r.id].superseded_by for r in items} - {None} - set(records)
    for _ in range(_MAX_HOPS):
        if not wanted:
            break
        found = engine.store.get_memories(scope.workspace, sorted(w for w in wanted if w))
        found = {k: v for k, v in found.items() if in_scope(v, scope, where)}
        records.update(found)
        wanted = {v.superseded_by for v in found.values()} - {None} - set(records)
    versions = _versions(records)
    # A replacement its user rejected for this question replaces nothing here: "keep this
    # one" on the older side of a tension is the user saying the newer is not true.
    rejected = {r.id for r in items if r.components.get("rejected_by_user")}
    for k, v in versions.items():
        if v.superseded_by in rejected:
            versions[k] = dataclasses.replace(v, valid_until=None, superseded_by=None)
    scores = {r.id: r.score for r in items}
    moved, why = rank_by_validity(scores, versions, query.past, as_of, profile.superseded_factor)
    by_id = {r.id: r for r in items}
    out = []
    for memory_id, score in moved.items():
        if memory_id in by_id:
            r = by_id[memory_id]
            before, comps, note, via = r.score, dict(r.components), r.note, r.via
        else:  # brought in as the memory that replaced a ranked one
            before, comps, note, via = 0.0, {}, None, "validity"
        if memory_id in why:
            comps["supersession"] = round(score - before, 6)
            note = note or why[memory_id]
        comps["final"] = score  # rounded where the ranking is handed out
        out.append((records[memory_id], score, comps, note, via))
    out = _keep_order(out, [r.id for r in items], set(why))
    if profile.recency_similarity < 1.0 and query.own_facts and len(out) > 1:
        out = _newer_first(engine, scope, query, profile, out[:limit]) + out[limit:]
    return out


def _keep_order(
    out: list[Item],
    before: list[str],
    moved: set[str],
) -> list[Item]:
    """The learned ranking's order (which need not follow the scores: prior decisions come
    first), with only the memories whose score validity changed placed anew: each before the
    first unchanged memory that now scores lower."""
    by_id = {x[0].id: x for x in out}
    kept = [by_id[i] for i in before if i in by_id and i not in moved]
    # Equal scores by id: ``moved`` is a set, whose order changes from process to process.
    for item in sorted((by_id[i] for i in moved if i in by_id), key=lambda x: (-x[1], x[0].id)):
        at = next((k for k, x in enumerate(kept) if x[1] < item[1]), len(kept))
        kept.insert(at, item)
    return kept


def _newer_first(
    engine: Engine, scope: Scope, query: Query, profile: RankingProfile, out: list[Item]
) -> list[Item]:
    asked = set(query.topic)
    contents = {x[0].id: x[0].content for x in out}
    held: dict[str, set[str]] = {}

    def query_terms(memory_id: str) -> set[str]:
        # Tokenised only for the pairs that pass the cheaper tests (time, session, likeness,
        # score), once each: a long message costs its stemming only when it matters.
        if memory_id not in held:
            held[memory_id] = set(terms(contents.get(memory_id, ""))) & asked
        return held[memory_id]

    def updates_amount(older: str, newer: str) -> bool:
        return new_amount(contents.get(older, ""), contents.get(newer, ""), asked, query.text)

    # Only someone's own words restate one another; the rest keep their places.
    ids = [x[0].id for x in out if own_word(x[0].role, x[0].kind)]
    if len(ids) < 2:
        return out
    vectors = engine.store.vectors(scope.workspace, ids)
    versions = {x[0].id: _version(x[0]) for x in out if x[0].id in vectors}
    times = [x[0].created_at for x in out]
    if len(set(times)) < len(times):  # said at one time (one add): stored order tells
        stored = engine.store.insertion_order(scope.workspace, ids)
        versions = {k: dataclasses.replace(v, seq=stored.get(k, 0)) for k, v in versions.items()}
    scores = {x[0].id: x[1] for x in out}
    order = newer_first(
        [x[0].id for x in out],
        scores,
        versions,
        vectors,
        profile.recency_similarity,
        profile.recency_min_ratio,
        query_terms,
        profile.recency_term_share,
        updates_amount,
        # What feedback lowered for questions like this one keeps its place.
        stay={x[0].id for x in out if x[2].get("learned", 0.0) < 0},
    )
    return reordered(out, order, "newer")


def reordered(
    out: list[Item],
    order: list[str],
    component: str,
) -> list[Item]:
    """``out`` in the order of the ids ``order`` (a permutation of theirs); a memory placed
    above where it stood carries ``component`` = 1, so ``explain`` shows why it moved."""
    before = {x[0].id: k for k, x in enumerate(out)}
    if order == list(before):
        return out
    by_id = {x[0].id: x for x in out}
    result = []
    for position, memory_id in enumerate(order):
        record, score, comps, note, via = by_id[memory_id]
        if position < before[memory_id]:
            comps = {**comps, component: 1.0}
        result.append((record, score, comps, note, via))
    return result
