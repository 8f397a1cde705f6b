"""Facts that change, in a ranking: what is current ranks first (``recall.supersession``).

The learned ranking's head is re-ranked by validity: a superseded memory hands its score on to
the memory that replaced it (fetched if search missed it) for a question about the present and
ranks above it for a question about the past; ``as_of`` leaves out what was said later and
counts a memory replaced only later as current; for a question about the speaker's own present,
a later restatement of an earlier memory moves above it (``recency_similarity``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from ..models import MemoryRecord, RecallFilter, Scope
from ..recall.query import query_time_range
from ..recall.repeats import group_repeats
from ..recall.supersession import (
    Version,
    asks_about_own_facts,
    names_upcoming_time,
    new_amount,
    newer_first,
    rank_by_validity,
)
from ..recall.text import terms, topic_terms
from ..recall.timeref import relative_time_range
from .base import Engine, in_scope, own_word, states_facts
from .candidates import keyword_text

__all__ = ["Scored", "by_validity", "grouped_repeats", "reordered"]

# A named time ending less than this before now reaches now ("this year" ends now, give or
# take the rounding of its end).
_NOW_SLACK = 60.0
# Replacements followed from a superseded memory to the one current now.
_MAX_HOPS = 5

# (id, score, components, note, via) of one ranked memory.
Scored = tuple[str, float, dict[str, float], "str | None", str]


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
    query: str,
    ranked: Sequence[Scored],
    records: dict[str, MemoryRecord],
    as_of: float | None,
    limit: int,
    where: RecallFilter | None = None,
) -> list[tuple[MemoryRecord, float, dict[str, float], str | None, str]]:
    """``ranked`` (best first, their ``records`` fetched) re-ranked by what is current (a
    replacement is brought in only if ``where`` matches it): each
    memory with its record, score, components (``supersession``: the change of score; ``newer``:
    1 when a later restatement moved above an earlier one), note and ``via``. Restatements
    move only within the first ``limit`` (what the caller shows)."""
    config = engine.config
    items = [r for r in ranked if r[0] in records]
    if as_of is not None:
        items = [r for r in items if records[r[0]].created_at <= as_of]
    now = time.time() if as_of is None else as_of
    span = query_time_range(query) or relative_time_range(query, now)
    if span is not None and span[1] < now - _NOW_SLACK and not names_upcoming_time(query):
        # A question that names a past time ("two weeks ago", "in May 2023") asks what held
        # then: the time boost ranks by date, and what replaced a memory later does not count.
        # A time that reaches now ("this year", "today") asks about the present, and so does
        # a present-tense question naming a day or month ("Are we flying on Saturday?": the
        # next one, though the calendar finds the last).
        return [(records[r[0]], r[1], dict(r[2]), r[3], r[4]) for r in items]
    # The memories that replaced the ranked ones, as far as the chains go.
    wanted = {records[r[0]].superseded_by for r in items} - {None} - set(records)
    for _ in range(_MAX_HOPS):
        if not wanted:
            break
        found = engine.store.get_memories(scope.workspace, sorted(w for w in wanted if w))
        found = {k: v for k, v in found.items() if in_scope(v, scope, where)}
        records.update(found)
        wanted = {v.superseded_by for v in found.values()} - {None} - set(records)
    versions = _versions(records)
    scores = {r[0]: r[1] for r in items}
    moved, why = rank_by_validity(scores, versions, query, as_of, config.superseded_factor)
    by_id = {r[0]: r for r in items}
    out = []
    for memory_id, score in moved.items():
        if memory_id in by_id:
            _, before, comps, note, via = by_id[memory_id]
            comps = dict(comps)
        else:  # brought in as the memory that replaced a ranked one
            before, comps, note, via = 0.0, {}, None, "graph"
        if memory_id in why:
            comps["supersession"] = round(score - before, 6)
            note = note or why[memory_id]
        comps["final"] = round(score, 6)
        out.append((records[memory_id], score, comps, note, via))
    out = _keep_order(out, [r[0] for r in items], set(why))
    if config.recency_similarity < 1.0 and asks_about_own_facts(query) and len(out) > 1:
        out = _newer_first(engine, scope, query, out[:limit]) + out[limit:]
    return out


def _keep_order(
    out: list[tuple[MemoryRecord, float, dict[str, float], str | None, str]],
    before: list[str],
    moved: set[str],
) -> list[tuple[MemoryRecord, float, dict[str, float], str | None, str]]:
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
    engine: Engine,
    scope: Scope,
    query: str,
    out: list[tuple[MemoryRecord, float, dict[str, float], str | None, str]],
) -> list[tuple[MemoryRecord, float, dict[str, float], str | None, str]]:
    config = engine.config
    # A request's framing words ("recommend", "tips", "this weekend") are none of its terms.
    asked = topic_terms(keyword_text(config, query))
    contents = {x[0].id: x[0].content for x in out}
    held: dict[str, set[str]] = {}

    def query_terms(memory_id: str) -> set[str]:
        # Tokenised only for the pairs that pass the cheaper tests (time, session, likeness,
        # score), once each: a long message costs its stemming only when it matters.
        if memory_id not in held:
            held[memory_id] = set(terms(contents.get(memory_id, ""))) & asked
        return held[memory_id]

    def updates_amount(older: str, newer: str) -> bool:
        return new_amount(contents.get(older, ""), contents.get(newer, ""), asked, query)

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
    # The ratio test compares scores with the proximity factor divided out (the graph and
    # learned parts of a score are divided with it, a close enough undoing): how a
    # restatement places the question's words ("30 videos so far for Corey's series") says
    # nothing about whether it updates the first statement, and the gain would keep it below
    # the older one.
    scores = {x[0].id: x[1] / (1.0 + x[2].get("proximity", 0.0)) for x in out}
    order = newer_first(
        [x[0].id for x in out],
        scores,
        versions,
        vectors,
        config.recency_similarity,
        config.recency_min_ratio,
        query_terms,
        config.recency_term_share,
        updates_amount if config.recency_new_amount else None,
        # What feedback lowered for questions like this one keeps its place.
        stay={x[0].id for x in out if x[2].get("learned", 0.0) < 0},
    )
    return reordered(out, order, "newer")


def reordered(
    out: list[tuple[MemoryRecord, float, dict[str, float], str | None, str]],
    order: list[str],
    component: str,
) -> list[tuple[MemoryRecord, float, dict[str, float], str | None, str]]:
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


def grouped_repeats(
    out: list[tuple[MemoryRecord, float, dict[str, float], str | None, str]],
) -> list[tuple[MemoryRecord, float, dict[str, float], str | None, str]]:
    """``out`` with the copies of a text said several times in the places they earned, the
    newest in the best of them (``recall.repeats``); a place keeps its score, and each copy
    carries the component ``repeats``, how many other copies of it ``out`` holds."""
    groups = group_repeats([(x[0].id, x[0].content, x[0].created_at) for x in out])
    if len(groups) == len(out):
        return out
    by_id = {x[0].id: x for x in out}
    place = {x[0].id: k for k, x in enumerate(out)}
    result = list(out)
    for group in groups:
        if len(group) < 2:
            continue
        for position, memory_id in zip(sorted(place[i] for i in group), group, strict=True):
            record, _, comps, note, via = by_id[memory_id]
            comps = {**comps, "repeats": float(len(group) - 1)}
            result[position] = (record, out[position][1], comps, note, via)
    return result
