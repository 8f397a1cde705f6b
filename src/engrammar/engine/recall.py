"""Recall: the ranked memories of a query, with the graph paths and tensions behind them.

One ranking pass serves ``search``, ``recall`` and ``explain``:

1. candidates: keyword and vector search, fused and refined (:mod:`.candidates`);
2. graph walk (``recall`` and ``explain``): walks along the strongest edges from the best
   candidates; a memory's graph support is its best walk's score (``recall.graph``);
3. learned ranking: the feedback records (events, reviews, preference pairs, ratings, reply
   signals) re-rank the result and may bring in prior decisions (``learn.scoring``);
4. ``recall`` then reads the tensions among what it shows and records itself; ``explain``
   reads every component of one memory's score off the same pass.

Reads go through the :class:`~engrammar.store.Store`; every decision is a pure function of
``recall/`` or ``learn/``.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import NotFoundError
from ..learn.preferences import select_preferences
from ..learn.rates import Adjustment, learned_records
from ..learn.scoring import LearnParams, learned_ranking
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
from ..recall.chunks import best_excerpt, excerpt, marked, widened
from ..recall.format import format_memories
from ..recall.fusion import Candidate
from ..recall.graph import Walk, best_support, best_walks, expand
from ..recall.roles import role_discount
from ..recall.tensions import detect_tension
from ..store import LearningAhead, RecallRecord, RefineAhead
from .base import Engine, in_scope, reading, statement, states_facts
from .candidates import REFINE_DEPTH, candidates, fusion_config, refined, search_hits
from .edge_context import edge_reader, reads_edge_parts
from .event_order import by_events
from .learned_terms import learned_term_signals
from .validity import by_validity, grouped_repeats

__all__ = ["Ranked", "Ranking", "explain", "graph_rank", "learned", "recall", "search"]

_HORIZON_HALF_LIVES = 10
# The newest recalls whose replies count for a query: an agent asking the same question again
# and again would otherwise make every recall read more signals (up to feedback_records_limit
# recalls, ~10 signals each); 200 matching recalls already saturate the shrinkage
# (N / (N + feedback_min_samples)).
_MATCHING_RECALLS = 200


@dataclass
class Ranked:
    """One memory's place in the graph-aware ranking, with every component of its score."""

    id: str
    relevance: float
    final: float
    via: str
    components: dict[str, float] = field(default_factory=dict)
    walk: Walk | None = None


@dataclass
class Ranking:
    entries: list[Ranked]
    walks: list[Walk]
    seeds: list[str]
    match: float = 0.0  # query_match: the best cosine of any candidate with the query


@dataclass
class Learned:
    """One memory's place after the learned ranking."""

    id: str
    score: float
    components: dict[str, float]
    note: str | None = None
    via: str = "search"
    adjustment: Adjustment | None = None  # the learned part, per record and source


# -- search ---------------------------------------------------------------------------------
def search(
    engine: Engine,
    scope: Scope,
    query: str,
    limit: int,
    min_score: float = 0.0,
    as_of: float | None = None,
    where: RecallFilter | None = None,
) -> list[ScoredMemory]:
    """Hybrid search within ``scope`` (of the memories ``where`` matches, filtered before the
    top ``limit`` are cut), refined and re-ranked by learning and by what is current (at
    ``as_of``), without the graph.

    Scores are absolute: the ranking's score (relative, the best hit near 1) times
    ``query_match``, the best cosine any memory of the scope (that ``where`` matches) has
    with the query. A query nothing matches scores low however its hits rank among
    themselves, so scores compare across queries and ``min_score`` can cut off weak results.
    """
    with session(engine, query, whole=False):
        return _search(engine, scope, query, limit, min_score, as_of, where)


def _search(
    engine: Engine,
    scope: Scope,
    query: str,
    limit: int,
    min_score: float,
    as_of: float | None,
    where: RecallFilter | None,
) -> list[ScoredMemory]:
    asked = time.time() if as_of is None else as_of  # relative times read against it
    cands = candidates(engine, scope, query, as_of=asked, links=False, where=where)
    match = _query_match(cands)
    ranked = learned(
        engine, scope, query, [Learned(c.id, c.relevance, dict(c.components)) for c in cands]
    )
    out = []
    for item in _current(engine, scope, query, ranked, limit, as_of, where):
        score = item.score * match
        if score < min_score:
            break  # best first: the rest score lower still
        comps = dict(item.components)
        comps["ranking"] = round(item.score, 6)
        comps["query_match"] = round(match, 6)
        comps["final"] = round(score, 6)
        out.append(
            ScoredMemory(
                item.memory,
                score,
                comps,
                via=item.via,
                note=item.note,
            )
        )
    set_excerpts(engine, scope.workspace, query, out)
    return out


def _query_match(cands: Sequence[Candidate]) -> float:
    """The best cosine any candidate has with the query (0 when none is like it)."""
    return max((max(c.vector, 0.0) for c in cands), default=0.0)


def set_excerpts(engine: Engine, workspace: str, query: str, items: Sequence[ScoredMemory]) -> None:
    """The excerpt of each memory longer than ``excerpt_chars``: the window whose chunk
    vector matches the query best when it beats the memory's own vector (which reads only
    the start), widened to about ``excerpt_chars`` with the text around it, else the window
    holding most of the query's terms."""
    size = engine.config.excerpt_chars
    long = [item for item in items if len(item.memory.content) > size]
    if not long:
        return
    chunks = engine.store.memory_chunks(workspace, [item.memory.id for item in long])
    own: dict[str, np.ndarray] = {}
    if chunks:
        qvec = engine.embed_one(query)
        own = engine.store.vectors(workspace, list(chunks))
    for item in long:
        text = item.memory.content
        found = chunks.get(item.memory.id)
        if found and item.memory.id in own:
            best = max(found, key=lambda c: float(c.embedding @ qvec))
            if float(best.embedding @ qvec) > float(own[item.memory.id] @ qvec):
                start, end = best.start, best.end
                inner = best_excerpt(text[start:end], query, size, size // 5)
                if inner is not None:  # a window wider than excerpt_chars: its part
                    start, end = start + inner[0], start + inner[1]
                else:  # a narrower one: with the text around it, up to excerpt_chars
                    start, end = widened(text, start, end, size)
                item.excerpt = marked(text, start, end)
                continue
        item.excerpt = excerpt(text, query, size)


def _current(
    engine: Engine,
    scope: Scope,
    query: str,
    ranked: Sequence[Learned],
    limit: int,
    as_of: float | None,
    where: RecallFilter | None = None,
) -> list[ScoredMemory]:
    """The head of a learned ranking, re-ranked by what is current (``engine.validity``);
    with ``where``, only what it matches (search and the graph kept to it already; this also
    holds the prior decisions that feedback brings in to it)."""
    depth = limit * (4 if as_of is not None else 2)
    head: list[Learned] = []
    records: dict[str, MemoryRecord] = {}
    rest = list(ranked)
    while rest and len(head) < depth:
        # Without a filter one read; with one, read on while what it drops leaves room.
        step, rest = rest[: depth - len(head)], rest[depth - len(head) :]
        found = engine.store.get_memories(scope.workspace, [e.id for e in step])
        if where is not None:
            found = {i: r for i, r in found.items() if where.matches(r)}
            step = [e for e in step if e.id in found]
        head += step
        records.update(found)
        if where is None:
            break
    items = by_validity(
        engine,
        scope,
        query,
        [(e.id, e.score, e.components, e.note, e.via) for e in head],
        records,
        as_of,
        limit,
        where,
    )
    if engine.config.group_repeats:
        items = grouped_repeats(items)
    if engine.config.event_cover:
        items = by_events(engine, scope, query, items, as_of, where)
    return [
        ScoredMemory(record, score, comps, via=via, note=note)
        for record, score, comps, note, via in items[:limit]
    ]


# -- recall ---------------------------------------------------------------------------------
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
    found = engine.store.memories_of_kind(scope, "preference", _PREFERENCES_READ)
    if where is not None:
        found = [m for m in found if where.matches(m)]
    if not found:
        return []
    vecs = engine.store.vectors(scope.workspace, [m.id for m in found])
    qvec = engine.embed_one(query)
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


def recall(
    engine: Engine,
    scope: Scope,
    query: str,
    limit: int,
    as_of: float | None = None,
    *,
    where: RecallFilter | None = None,
    min_score: float = 0.0,
) -> RecallResult:
    """The graph-aware, learned ranking of ``query`` with its paths and tensions; recorded
    (as a :class:`~engrammar.store.RecallRecord`, with what it showed) so that feedback can
    act on it. ``as_of`` is when the question is asked (default now): relative times in
    ``query`` are read against it, and what was current then ranks first (see
    ``engine.validity``). A memory longer than ``excerpt_chars`` carries the excerpt the query
    is about.

    ``where`` keeps recall to the memories it matches, before the top ``limit`` are cut: in
    search, along the graph, in the preferences slot. ``min_score`` leaves out memories whose
    absolute score (``components["absolute"]``: the ranking's score times the best cosine any
    candidate has with the query, the scale ``search`` returns) is below it.
    """
    store, config = engine.store, engine.config
    # The reads in one session (a server store answers them in few round trips).
    with session(engine, query):
        ranking = graph_rank(
            engine, scope, query, as_of=time.time() if as_of is None else as_of, where=where
        )
        ranked = learned(engine, scope, query, _graph_items(ranking.entries))
        items = []
        for item in _current(engine, scope, query, ranked, limit, as_of, where):
            absolute = item.score * ranking.match
            if absolute < min_score:
                continue  # prior decisions lead whatever their score: not a sorted list
            # Not ``query_match``: a component by that name marks a score that includes it.
            item.components["absolute"] = round(absolute, 6)
            items.append(item)
        set_excerpts(engine, scope.workspace, query, items)
        # A preference pair's memory bears on the query only where its context matches (the
        # learned ranking then gave it a ``context_match``).
        pairs_matched = {e.id for e in ranked if "context_match" in e.components}
        preferences = [
            p  # what was said later, or replaced by then, is no standing preference at ``as_of``
            for p in standing_preferences(engine, scope, query, where)
            if ("pair_id" not in p.memory.metadata or p.id in pairs_matched)
            and (as_of is None or p.memory.created_at <= as_of)
            and (
                p.memory.valid_until is None or (as_of is not None and p.memory.valid_until > as_of)
            )
        ]
        shown = {i.id for i in items}
        paths = result_paths(ranking.walks, shown, config.graph_max_paths)
        tensions = recall_tensions(engine, scope.workspace, [i.memory for i in items])
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
            memory_ids=[m.id for m in items],
            paths=[p.to_dict() for p in paths],
            tensions=[t.to_dict() for t in tensions],
        )
    )
    return result


def graph_rank(
    engine: Engine,
    scope: Scope,
    query: str,
    focus: str | None = None,
    as_of: float | None = None,
    where: RecallFilter | None = None,
) -> Ranking:
    """Fused candidates, walks from the best of them, and the combined ranking, best first.

    ``focus`` (explain) is scored even when neither search nor the graph found it; relative
    times in ``query`` are read against ``as_of``. With ``where``, only the memories it
    matches are searched, and a walk through one it does not match is left out.
    """
    store, config = engine.store, engine.config
    hits = search_hits(engine, scope, query, where=where)
    qvec, vector_hits, keyword_hits = hits
    # The weights feedback gave edges count near the recalls that earned them.
    reader = edge_reader(engine, scope, qvec, _feedback_since(engine))
    edges_from = store.edges_from if reader is None else reader.edges_from
    cands = refined(engine, scope, query, hits, as_of, where=where, edges=edges_from)
    by_id: dict[str, Candidate] = {c.id: c for c in cands}
    seeds = [c.id for c in cands[: config.graph_seeds]]
    walks: list[Walk] = []
    if config.graph_depth > 0 and seeds:
        frontier = [Walk([c.id], score=c.relevance) for c in cands[: config.graph_seeds]]
        for _ in range(config.graph_depth):
            edges = edges_from(
                scope.workspace, [w.nodes[-1] for w in frontier], config.graph_min_edge_weight, None
            )
            step = expand(frontier, edges, config.graph_fanout)
            if not step:
                break
            walks += step
            frontier = best_walks(step)[: config.graph_seeds * config.graph_fanout]
    outside = {n for w in walks for n in w.nodes if n not in by_id}
    if focus is not None and focus not in by_id:
        outside.add(focus)
    if outside:
        records = store.get_memories(scope.workspace, sorted(outside))
        valid = {n for n, r in records.items() if in_scope(r, scope, where)}
        walks = [w for w in walks if all(n in by_id or n in valid for n in w.nodes)]
        vecs = store.vectors(scope.workspace, sorted(valid))
        # Scored on the same scale as fused candidates (vector part only: no keyword hit).
        kw = 0.0 if not keyword_hits else (1.0 if not vector_hits else config.keyword_weight)
        top_vec = max((max(s, 0.0) for _, s in vector_hits), default=0.0) or 1.0
        reached = []
        for n in sorted(valid):
            cos = float(vecs[n] @ qvec) if n in vecs else 0.0
            rel = (1 - kw) * max(cos, 0.0) / top_vec if config.fusion == "score" else 0.0
            reached.append(
                Candidate(
                    n,
                    vector=cos,
                    relevance=rel,
                    components={
                        "vector": round(cos, 6),
                        "keyword": 0.0,
                        "relevance": round(rel, 6),
                    },
                )
            )
        # What the graph reaches is discounted like a search hit of the same role.
        roles = {n: records[n].role for n in valid if records[n].kind == "message"}
        by_id.update(
            (c.id, c) for c in role_discount(reached, query, roles, config.assistant_penalty)
        )
    support = best_support(walks)
    # Neighbours that refinement brought in were found along sequence edges, not by search.
    found = {c.id for c in cands if c.vector_rank is not None or c.keyword_rank is not None}
    entries: list[Ranked] = []
    for cand in by_id.values():
        walk = support.get(cand.id)
        graph = walk.score if walk is not None else 0.0
        final = cand.relevance + config.graph_weight * graph
        comps = dict(cand.components)
        if cand.vector_rank is not None:
            comps["vector_rank"] = cand.vector_rank + 1
        if cand.keyword_rank is not None:
            comps["keyword_rank"] = cand.keyword_rank + 1
        comps["graph"] = round(graph, 6)
        comps["graph_hops"] = len(walk.weights) if walk is not None else 0
        comps["graph_edge_weight"] = round(math.prod(walk.weights), 6) if walk is not None else 0.0
        comps["graph_weight"] = config.graph_weight
        comps["final"] = round(final, 6)
        via = "search" if cand.id in found else "graph"
        entries.append(Ranked(cand.id, cand.relevance, final, via, comps, walk))
    entries.sort(key=lambda e: (-e.final, e.id))
    for rank, entry in enumerate(entries, 1):
        entry.components["rank"] = rank
    return Ranking(entries, walks, seeds, _query_match(cands))


def _graph_items(entries: Sequence[Ranked]) -> list[Learned]:
    """The graph ranking's entries as items for the learned step."""
    return [Learned(e.id, e.final, dict(e.components), via=e.via) for e in entries]


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


class QueryVector:
    """The query's vector for the learned ranking: embedded at most once, when first asked."""

    def __init__(self, engine: Engine, query: str) -> None:
        self._engine = engine
        self.query = query
        self._vec: np.ndarray | None = None

    def __call__(self) -> np.ndarray:
        if self._vec is None:
            self._vec = self._engine.embed_one(self.query)
        return self._vec


# The query vector of this thread's open session (shared by the store's read-ahead and
# ``learned``, so that the query is embedded once).
_SESSION = threading.local()


def _ahead(engine: Engine, context: QueryVector) -> LearningAhead:
    """What ``learned`` will ask ``learning_reads`` (so that the store can read it ahead)."""
    cfg = engine.config
    return LearningAhead(
        context,
        cfg.feedback_records_limit,
        cfg.feedback_reply_context_min,
        min(cfg.feedback_records_limit, _MATCHING_RECALLS),
        edge_parts=reads_edge_parts(engine),
    )


@contextmanager
def session(engine: Engine, query: str | None = None, *, whole: bool = True) -> Iterator[None]:
    """One read session for a whole recall (its ranking, standing preferences and knowledge
    passages; only the ranking if not ``whole``): see :meth:`~engrammar.store.ReadAhead.reading`.
    With ``query``, the learned ranking's reads may be read ahead with the rest."""
    config = engine.config
    context = QueryVector(engine, query) if query is not None else None
    # The keyword weight its fusion will use, for a server store's guess of the fused head.
    fused = fusion_config(config, query) if query is not None else config
    outer = getattr(_SESSION, "context", None)
    with reading(
        engine.store,
        _feedback_since(engine),
        preferences=_PREFERENCES_READ if whole and config.preferences_limit else 0,
        knowledge=whole and config.knowledge_recall_limit > 0,
        learning=_ahead(engine, context) if context is not None else None,
        refine=RefineAhead(fused.keyword_weight, REFINE_DEPTH)
        if config.fusion == "score"
        else None,
    ):
        if outer is not None or context is None:
            yield  # a nested session: the outer one's reads and vector go on
            return
        _SESSION.context = context
        try:
            yield
        finally:
            _SESSION.context = None


def _context(engine: Engine, query: str) -> QueryVector:
    """The session's query vector when it is this query's, else a new one."""
    found: QueryVector | None = getattr(_SESSION, "context", None)
    return found if found is not None and found.query == query else QueryVector(engine, query)


# -- the learned ranking --------------------------------------------------------------------
def _feedback_since(engine: Engine, now: float | None = None) -> float:
    """The oldest feedback record worth reading: older signals weigh < 1/1000 of a fresh one."""
    now = time.time() if now is None else now
    return now - _HORIZON_HALF_LIVES * engine.config.feedback_half_life_days * 86_400.0


def learned(engine: Engine, scope: Scope, query: str, items: Sequence[Learned]) -> list[Learned]:
    """Re-rank scored items by the feedback records (see :mod:`engrammar.learn.scoring`).

    A pipeline step of its own: any ranking (search's fused relevance, recall's graph
    score) goes in as items with scores in [0, 1] and comes out re-ranked, with memories
    surfaced by matching decisions or preference pairs added and every learned component in
    ``components``.
    """
    store, cfg = engine.store, engine.config
    items = list(items)
    now = time.time()
    since = _feedback_since(engine, now)
    ids = [i.id for i in items]
    # Embedded at most once, and only when some record may use it.
    context = _context(engine, query)

    # Reply signals count only for a matching query (and as witnesses of ratings given
    # on their recall), so the store searches the recalls' queries before reading any.
    events, pairs, ratings, replies = store.learning_reads(
        scope,
        ids,
        since,
        cfg.feedback_records_limit,
        context,
        cfg.feedback_reply_context_min,
        min(cfg.feedback_records_limit, _MATCHING_RECALLS),
    )
    extra = learned_term_signals(engine, scope, query, ratings)
    if not (events or pairs or ratings or replies or extra):
        return items
    qvec = context()
    params = LearnParams(
        half_life_days=cfg.feedback_half_life_days,
        min_samples=cfg.feedback_min_samples,
        max_adjustment=cfg.feedback_max_adjustment,
        context_min=cfg.feedback_context_min,
        context_full=cfg.feedback_context_full,
        same_output=cfg.feedback_same_output,
        reply_weight=cfg.feedback_reply_weight,
        conflict_weight=cfg.feedback_conflict_weight,
        reply_top=max(1, cfg.feedback_reply_top),
        reply_context_min=cfg.feedback_reply_context_min,
        reply_context_full=cfg.feedback_reply_context_full,
        rating_context_min=cfg.feedback_rating_context_min,
        rating_context_full=cfg.feedback_rating_context_full,
        rating_memory_margin=cfg.feedback_rating_memory_margin,
        source_window_s=cfg.feedback_source_window_s,
        rating_anchor=cfg.feedback_rating_anchor,
        anchor_bound=cfg.feedback_anchor_bound,
    )
    vecs = store.vectors(scope.workspace, [i.id for i in items])
    kept = [(i.id, i.score) for i in items if i.id in vecs]
    base = {i.id: i for i in items}
    out = []
    texts = None
    if events or pairs:
        records = store.get_memories(scope.workspace, [i.id for i in items])
        texts = {memory_id: r.content for memory_id, r in records.items()}
    ranked = learned_ranking(
        kept, qvec, vecs, events, pairs, ratings, params, now, texts, replies, extra
    )
    for position, s in enumerate(ranked, 1):
        before = base.get(s.id)
        comps = {**(before.components if before else {}), **s.components}
        comps["final"] = round(s.score, 6)
        if "rank" in comps:
            comps["rank"] = position
        via = before.via if before else "feedback"
        out.append(Learned(s.id, s.score, comps, s.note, via, s.adjustment))
    return out


# -- explain --------------------------------------------------------------------------------
def explain(engine: Engine, scope: Scope, query: str, memory_id: str, limit: int) -> dict[str, Any]:
    """Every component of ``memory_id``'s score for ``query`` and where it ranked, before
    and after the learned ranking, read off one ranking pass."""
    with reading(engine.store, _feedback_since(engine)):
        return _explain(engine, scope, query, memory_id, limit)


def _explain(
    engine: Engine, scope: Scope, query: str, memory_id: str, limit: int
) -> dict[str, Any]:
    store = engine.store
    found = store.get_memories(scope.workspace, [memory_id]).get(memory_id)
    if found is None or not in_scope(found, scope):
        raise NotFoundError(f"memory {memory_id!r} not found in this scope")
    ranking = graph_rank(engine, scope, query, focus=memory_id)
    entry = next(e for e in ranking.entries if e.id == memory_id)
    rank = int(entry.components["rank"])
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
    best = entry.walk.to_path().to_dict() if entry.walk is not None else None
    if best is not None and not set(best["nodes"]) <= readable:
        best = None
    above = ranking.entries[rank - 2] if rank > 1 else None
    out = {
        "memory_id": memory_id,
        "content": found.content,
        "query": query,
        "rank": rank,
        "in_results": rank <= limit,
        "limit": limit,
        "via": entry.via,
        "is_seed": memory_id in ranking.seeds,
        "score": round(entry.final, 6),
        "components": dict(entry.components),
        "best_path": best,
        "paths": paths,
        "edges": {
            "out": [_edge_dict(e) for e in sorted(edges_out, key=lambda e: -e.weight)],
            "in": [_edge_dict(e) for e in sorted(edges_in, key=lambda e: -e.weight)],
        },
        "score_to_beat": round(above.final, 6) if above is not None else None,
        "formula": "final = relevance + graph_weight * graph; relevance = fused vector and "
        "keyword score; graph = seed relevance x product of edge weights along the best path",
    }
    return _explain_learned(out, learned(engine, scope, query, _graph_items(ranking.entries)))


def _explain_learned(out: dict[str, Any], ranked: Sequence[Learned]) -> dict[str, Any]:
    """Add the feedback records' part to the graph's explanation: each learned component,
    the note, and the rank and score after learning (what recall returns)."""
    memory_id = out["memory_id"]
    position = next((i for i, e in enumerate(ranked) if e.id == memory_id), None)
    if position is None:
        return out
    entry = ranked[position]
    out["rank_before_learning"] = out["rank"]
    out["score_before_learning"] = out["score"]
    out["rank"] = position + 1
    out["in_results"] = position < out["limit"]
    out["score"] = round(entry.score, 6)
    out["components"] = {**out["components"], **entry.components, "rank": position + 1}
    out["learned"] = {
        k: v
        for k, v in entry.components.items()
        if k.startswith("learned") or k in ("context_match", "accepted_level")
    }
    out["note"] = entry.note
    out["records"], out["sources"] = learned_records(entry.adjustment)
    out["score_to_beat"] = round(ranked[position - 1].score, 6) if position else None
    out["formula"] += (
        "; then × (1 + learned), learned = bounded, decayed, shrunk sum of feedback-record "
        "signals (see learned_*); matching prior decisions rank first"
    )
    return out


def _edge_dict(e: Edge) -> dict[str, Any]:
    return {"src": e.src, "dst": e.dst, "kind": e.kind, "weight": round(e.weight, 6)}
