"""Recall, search and explain: what the ranking core (:mod:`.ranking`) returns, put to use.

``recall`` ranks with every stage, cuts the first ``limit``, sets excerpts, reads the standing
preferences, the graph paths and the tensions among what it shows, records itself for
feedback and adds the scope's knowledge passages. ``search`` ranks without the graph and records nothing; its scores are absolute.
``explain`` reads one memory off the same ranking ``recall`` cuts: its rank and score are the
ones ``recall`` gives it.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import RankingProfile
from ..errors import NotFoundError
from ..learn.preferences import select_preferences
from ..learn.rates import learned_records
from ..models import (
    Edge,
    MemoryRecord,
    Path,
    RecallFilter,
    RecallResult,
    Scope,
    ScoredMemory,
    Tension,
)
from ..recall.chunks import best_window, marked, widened
from ..recall.format import format_memories
from ..recall.graph import Walk
from ..recall.query import Query
from ..recall.tensions import detect_tension
from ..recall.text import terms
from ..store import RecallRecord
from .base import Engine, in_scope, statement, states_facts
from .ranking import Ranked, Ranking, query_at, query_vector, rank, session, shown

__all__ = ["explain", "recall", "search", "session"]

# A memory that neither holds a query term nor comes this close (cosine) to the query matches
# it in no way: the cut leaves it out rather than pad the list with it.
_NO_MATCH = 0.1
# Memories placed by something other than search stay whatever their match: prior decisions
# and preferences whose records bear on the query (brought in by feedback, or found by search
# as well), replacements of a ranked memory, and what the graph reached.
_PLACED = ("feedback", "validity", "graph")


def _matches(item: Ranked, comps: dict[str, float]) -> bool:
    """Whether ``item`` (its components as :func:`shown` gives them) matches the query."""
    return (
        item.via in _PLACED
        # a decision or preference whose record bears on the query, found by search too
        or comps.get("context_match", 0.0) > 0
        or comps.get("keyword", 0.0) > 0
        or comps.get("vector", 0.0) >= _NO_MATCH
        or comps.get("graph", 0.0) * comps.get("graph_weight", 0.0) > 0
        or "sequence" in comps
    )


def _scored(item: Ranked, comps: dict[str, float], match: float) -> ScoredMemory:
    assert item.record is not None
    comps["absolute"] = round(item.score * match, 6)
    return ScoredMemory(item.record, item.score, comps, via=item.via, note=item.note)


# -- search ---------------------------------------------------------------------------------
def search(
    engine: Engine,
    scope: Scope,
    query: str,
    limit: int,
    min_score: float = 0.0,
    as_of: float | None = None,
    where: RecallFilter | None = None,
    profile: RankingProfile | None = None,
) -> list[ScoredMemory]:
    """Hybrid search within ``scope`` (of the memories ``where`` matches), every ranking
    stage but the graph, without recording anything.

    Scores are absolute: the ranking's score (relative, the best hit near 1) times
    ``query_match``, the best cosine any candidate has with the query, so that a query
    nothing matches scores low and ``min_score`` can cut off weak results.
    """
    profile = profile or engine.config.ranking
    with session(engine, query, whole=False, profile=profile):
        ranking = rank(
            engine, scope, query_at(query, as_of), profile, limit, graph=False, where=where
        )
    out = []
    for item in ranking.items[:limit]:
        score = item.score * ranking.match
        comps = shown(item.components)
        if score < min_score or not _matches(item, comps):
            continue
        found = _scored(item, comps, ranking.match)
        found.score = score
        found.components.pop("absolute", None)
        found.components["ranking"] = round(item.score, 6)
        found.components["query_match"] = round(ranking.match, 6)
        found.components["final"] = round(score, 6)
        out.append(found)
    set_excerpts(engine, scope.workspace, ranking.query, out)
    return out


# -- recall ---------------------------------------------------------------------------------
def recall(
    engine: Engine,
    scope: Scope,
    query: str,
    limit: int,
    as_of: float | None = None,
    *,
    where: RecallFilter | None = None,
    min_score: float = 0.0,
    profile: RankingProfile | None = None,
) -> RecallResult:
    """The ranked memories of ``query`` with their paths and tensions, recorded (as a
    :class:`~engrammar.store.RecallRecord`) so that feedback can act on it, then the scope's
    knowledge passages closest to it (``knowledge_recall_limit``), all in one read session
    with one query vector. ``as_of`` is when
    the question is asked (default now): relative times in ``query`` are read against it, what
    was said later is left out and what was current then ranks first. ``where`` keeps recall
    to the memories it matches before the first ``limit`` are cut. ``min_score`` leaves out
    memories whose absolute score (``components["absolute"]``) is below it; a memory that
    matches the query neither by its words nor by its meaning is left out too.
    """
    store, config = engine.store, engine.config
    profile = profile or config.ranking
    with session(engine, query, profile=profile, preferences=_PREFERENCES_READ):
        ranking = rank(engine, scope, query_at(query, as_of), profile, limit, where=where)
        items = []
        for item in ranking.items[:limit]:
            comps = shown(item.components)
            if _matches(item, comps) and item.score * ranking.match >= min_score:
                items.append(_scored(item, comps, ranking.match))
        set_excerpts(engine, scope.workspace, ranking.query, items)
        # A preference pair's memory bears on the query only where its context matches (the
        # learned ranking then gave it a ``context_match``).
        pairs_matched = {e.id for e in ranking.items if "context_match" in e.components}
        preferences = [
            p  # what was said later, or replaced by then, is no standing preference at ``as_of``
            for p in standing_preferences(engine, scope, query, where)
            if ("pair_id" not in p.memory.metadata or p.id in pairs_matched)
            and (as_of is None or p.memory.created_at <= as_of)
            and (
                p.memory.valid_until is None or (as_of is not None and p.memory.valid_until > as_of)
            )
        ]
        listed = {i.memory.id for i in items}
        paths = result_paths(ranking.walks, listed, config.graph_max_paths)
        tensions = recall_tensions(engine, scope.workspace, [i.memory for i in items])
        qvec = query_vector(engine, query)
        result = RecallResult(
            recall_id=uuid.uuid4().hex,
            query=query,
            memories=items,
            paths=paths,
            tensions=tensions,
            formatted=format_memories(items, tensions, config.formatted_max_chars, preferences),
            preferences=preferences,
        )
        store.save_recall(
            RecallRecord(
                recall_id=result.recall_id,
                workspace=scope.workspace,
                user_id=scope.user_id,
                agent_id=scope.agent_id,
                session_id=scope.session_id,
                query=query,
                created_at=time.time(),
                memory_ids=[m.memory.id for m in items],
                paths=[p.to_dict() for p in paths],
                tensions=[t.to_dict() for t in tensions],
            )
        )
        # Recorded first: a knowledge search that fails leaves the recall to act on.
        if config.knowledge_recall_limit:
            result.knowledge = store.search_knowledge(
                scope, qvec, config.knowledge_recall_limit, config.knowledge_min_score
            )
    if result.knowledge:
        block = "\n".join(f"- {k.content}" for k in result.knowledge)
        text = f"Knowledge:\n{block}"
        result.formatted = f"{result.formatted}\n\n{text}" if result.formatted else text
    return result


def set_excerpts(
    engine: Engine, workspace: str, query: Query, items: Sequence[ScoredMemory]
) -> None:
    """The excerpt of each memory longer than ``excerpt_chars``: the window whose chunk
    vector matches the query best when it beats the memory's own vector (which reads only
    the start), widened to about ``excerpt_chars`` with the text around it, else the window
    holding most of the query's terms (the parsed query's, not read again)."""
    size = engine.config.excerpt_chars
    long = [item for item in items if len(item.memory.content) > size]
    if not long:
        return
    chunks = engine.store.memory_chunks(workspace, [item.memory.id for item in long])
    own: dict[str, np.ndarray] = {}
    if chunks:
        qvec = query_vector(engine, query.text)
        own = engine.store.vectors(workspace, list(chunks))
    wanted = set(query.terms)
    for item in long:
        text = item.memory.content
        by_terms = best_window(text, wanted, size, size // 5)
        assert by_terms is not None  # the text is longer than one window
        found = chunks.get(item.memory.id)
        if found and item.memory.id in own:
            # ``a.dot(b)``: ``a @ b``'s product (the same bits) at about half its cost a call.
            best = max(found, key=lambda c: float(c.embedding.dot(qvec)))
            # A vector window wins only where the words do not say more: it holds as many
            # distinct query terms as the window with most of them (the windows with vectors
            # are the first ``window_limit``; a fact past them is found by its words).
            if (
                float(best.embedding.dot(qvec)) > float(own[item.memory.id].dot(qvec))
                and len(wanted & set(terms(text[best.start : best.end]))) >= by_terms[1]
            ):
                start, end = best.start, best.end
                inner = best_window(text[start:end], wanted, size, size // 5)
                if inner is not None:  # a window wider than excerpt_chars: its part
                    start, end = start + inner[0][0], start + inner[0][1]
                else:  # a narrower one: with the text around it, up to excerpt_chars
                    start, end = widened(text, start, end, size)
                item.excerpt = marked(text, start, end)
                continue
        item.excerpt = marked(text, *by_terms[0])


# Recall weighs at most this many of a scope's newest standing preferences for its slot.
_PREFERENCES_READ = 500


def standing_preferences(
    engine: Engine, scope: Scope, query: str, where: RecallFilter | None = None
) -> list[ScoredMemory]:
    """The scope's standing preferences that bear on ``query``, best first: memories of kind
    ``preference`` (that ``where`` matches) whose cosine with the query reaches
    ``preferences_min_similarity``, at most ``preferences_limit`` (the newest
    ``_PREFERENCES_READ`` are weighed); whether or not search ranked them (docs/learning.md,
    "Standing preferences")."""
    limit = engine.config.preferences_limit
    if limit == 0 or (
        where is not None and where.kinds is not None and "preference" not in where.kinds
    ):
        return []
    found = [
        m
        for m in engine.store.memories_of_kind(scope, "preference", _PREFERENCES_READ)
        if in_scope(m, scope, where)
    ]
    if not found:
        return []
    vecs = engine.store.vectors(scope.workspace, [m.id for m in found])
    qvec = query_vector(engine, query)
    chosen = select_preferences(
        [(m.id, float(vecs[m.id] @ qvec)) for m in found if m.id in vecs],
        min_similarity=engine.config.preferences_min_similarity,
        limit=limit,
    )
    by_id = {m.id: m for m in found}
    return [
        ScoredMemory(by_id[i], s, {"preference_similarity": round(s, 6)}, via="preference")
        for i, s in chosen
    ]


def result_paths(walks: Sequence[Walk], shown: set[str], limit: int) -> list[Path]:
    """The walks that brought up a shown memory, strongest first."""
    best: dict[tuple[str, ...], Walk] = {}
    for w in walks:
        if w.nodes[-1] in shown:
            best[tuple(w.nodes)] = w
    ordered = sorted(best.values(), key=lambda w: (-w.score, w.nodes))
    return [w.to_path() for w in ordered[:limit]]


def recall_tensions(
    engine: Engine, workspace: str, records: Sequence[MemoryRecord]
) -> list[Tension]:
    """Contradictions among the recalled memories.

    They were found when the memories were added (``contradicts`` edges), so recall reads the
    edges between its results instead of judging every pair again: one query, then the rules
    re-run only on the few linked pairs (for the kind, the reason and which side is newer).
    """
    if len(records) < 2:
        return []
    store = engine.store
    by_id = {r.id: r for r in records if states_facts(r.role, r.kind)}
    pairs = {
        tuple(sorted((e.src, e.dst)))
        for e in store.edges_from(workspace, list(by_id), kind="contradicts")
        if e.kind == "contradicts" and e.dst in by_id
    }
    if not pairs:
        return []
    vecs = store.vectors(workspace, sorted({i for pair in pairs for i in pair}))
    # Which side is newer was decided when they were added (message order within a call, time
    # then insertion across calls): a ``supersedes`` edge runs from the newer to the older.
    newer_of = {
        (e.dst, e.src)
        for e in store.edges_from(workspace, list(by_id), kind="supersedes")
        if e.kind == "supersedes" and e.dst in by_id
    }
    out = []
    for a, b in sorted(pairs):
        if a not in vecs or b not in vecs:
            continue
        if (b, a) in newer_of or by_id[b].superseded_by == a:
            a, b = b, a
        older, newer = statement(by_id[a]), statement(by_id[b])
        if (a, b) in newer_of or by_id[a].superseded_by == b:
            newer = dataclasses.replace(newer, seq=older.seq + 1)
        found = detect_tension(
            older, newer, float(vecs[a] @ vecs[b]), engine.config.tension_min_similarity
        )
        if found is not None:
            out.append(found)
    return sorted(out, key=lambda t: -t.confidence)


# -- explain --------------------------------------------------------------------------------
def explain(
    engine: Engine,
    scope: Scope,
    query: str,
    memory_id: str,
    limit: int,
    profile: RankingProfile | None = None,
) -> dict[str, Any]:
    """Every component of ``memory_id``'s score for ``query`` and where it ranks: read off the
    list ``recall`` cuts (same stages, same order), so rank and score are what ``recall``
    gives it; ``in_results`` says whether that is within ``limit``."""
    store = engine.store
    profile = profile or engine.config.ranking
    found = store.get_memories(scope.workspace, [memory_id]).get(memory_id)
    if found is None or not in_scope(found, scope):
        raise NotFoundError(f"memory {memory_id!r} not found in this scope")
    with session(engine, query, whole=False, profile=profile):
        ranking = rank(engine, scope, query_at(query, None), profile, limit, focus=memory_id)
    return _explanation(engine, scope, ranking, memory_id, found, limit)


def _explanation(
    engine: Engine,
    scope: Scope,
    ranking: Ranking,
    memory_id: str,
    found: MemoryRecord,
    limit: int,
) -> dict[str, Any]:
    store = engine.store
    position = next((k for k, e in enumerate(ranking.items) if e.id == memory_id), None)
    entry = ranking.items[position] if position is not None else None
    walk: Walk | None = entry.walk if entry is not None else None
    paths = [
        w.to_path().to_dict()
        for w in sorted(ranking.walks, key=lambda w: -w.score)
        if w.nodes[-1] == memory_id
    ]
    # Name only what the caller can read: an edge to a memory outside the scope (another
    # user's, an agent-level one a user-bound key cannot GET) is left out, ids and all.
    edges_out = store.edges_from(scope.workspace, [memory_id])
    edges_in = store.edges_to(scope.workspace, [memory_id])
    others = {e.dst for e in edges_out} | {e.src for e in edges_in}
    others |= {n for p in paths for n in p["nodes"]}
    readable = {
        i
        for i, r in store.get_memories(scope.workspace, list(others)).items()
        if in_scope(r, scope)
    } | {memory_id}
    edges_out = [e for e in edges_out if e.dst in readable]
    edges_in = [e for e in edges_in if e.src in readable]
    paths = [p for p in paths if set(p["nodes"]) <= readable]
    best = walk.to_path().to_dict() if walk is not None else None
    if best is not None and not set(best["nodes"]) <= readable:
        best = None
    comps = shown(entry.components) if entry is not None else {}
    listed = (
        entry is not None and position is not None and position < limit and _matches(entry, comps)
    )
    out: dict[str, Any] = {
        "memory_id": memory_id,
        "content": found.content,
        "query": ranking.query.text,
        "rank": position + 1 if position is not None else None,
        "in_results": listed,
        "limit": limit,
        "via": entry.via if entry is not None else None,
        "is_seed": memory_id in ranking.seeds,
        "score": round(entry.score, 6) if entry is not None else None,
        "components": comps,
        "best_path": best,
        "paths": paths,
        "edges": {
            "out": [_edge_dict(e) for e in sorted(edges_out, key=lambda e: -e.weight)],
            "in": [_edge_dict(e) for e in sorted(edges_in, key=lambda e: -e.weight)],
        },
        "score_to_beat": round(ranking.items[position - 1].score, 6) if position else None,
        "learned": {
            k: v
            for k, v in comps.items()
            if k.startswith("learned") or k in ("context_match", "accepted_level")
        },
        "note": entry.note if entry is not None else None,
        "formula": "relevance = (1 - keyword_weight) x vector + keyword_weight x keyword, each "
        "divided by its list's best; + session_weight x the session's best relevance; + "
        "neighbour support; x (1 + time_weight) near the time named; + graph_weight x graph "
        "(seed relevance x edge weights along the best walk); x (1 + learned) from feedback "
        "(bounded, decayed, shrunk; matching prior decisions first); then what is current first",
    }
    out["records"], out["sources"] = learned_records(entry.adjustment if entry else None)
    return out


def _edge_dict(e: Edge) -> dict[str, Any]:
    return {"src": e.src, "dst": e.dst, "kind": e.kind, "weight": round(e.weight, 6)}
