"""The ranking core: from a query to its ranked memories, in named stages read top to bottom.

=============  ===========================================================================
stage          what it does (the weights are a :class:`~engrammar.RankingProfile`)
=============  ===========================================================================
query          parsed once (:func:`~engrammar.recall.query.parse_query`): terms, the time
               it names, whether it asks about the past or the asker's own present, whose
               words it asks about, what kind of thing it asks for (a time, an amount);
               its vector reads it as the person it asks about would put it ("did
               Melanie" as "did I": ``names_in_vector``)
candidates     full-text search (BM25 over every message's whole text) and vector search
               (a long message is matched by its best window), ``candidate_pool`` each
fusion         each score divided by the best of its list, blended by ``keyword_weight``
refinement     session evidence (``session_weight``), conversation neighbours
               (``neighbour_weight``), the time the query names (``time_weight``), a
               message that states the kind of thing asked for (``answer_weight``), whose
               words it asks about, the asker's or the assistant's (``role_weight``), a
               message that only asks (``question_weight``)
graph          walks from the best candidates along weighted edges (``graph_*``)
learned        feedback records re-rank, bounded, decayed and shrunk (``learn.scoring``);
               a rating teaches a memory the words of the question it answered
               (``learn.terms``); one given for a question about another named period
               than the query's does not count
validity       what is current first: a superseded memory hands its score on to what
               replaced it for a question about the present (``superseded_factor``) and
               ranks above it for one about the past; ``as_of`` leaves out what was said
               later; for the asker's own facts a newer restatement moves above the older
               (``recency_*``)
cut            the first ``limit``
=============  ===========================================================================

``search`` runs every stage but the graph and records nothing (its scores are absolute);
``recall`` runs them all, cuts the first ``limit``, sets excerpts, reads the standing
preferences, the graph paths and the tensions among what it shows, records itself for feedback
and adds the scope's knowledge passages; ``explain`` reads one memory off the very list
``recall`` cuts, so both report the same rank and score. No stage
looks at what kind of conversation the candidates come from: each weighs evidence of the
memory itself (its words, its vectors, its session, its date, its role, its edges, its
feedback).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
import uuid
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any, cast, overload

import numpy as np

from ..config import RankingProfile
from ..errors import NotFoundError
from ..learn.preferences import select_preferences
from ..learn.rates import Adjustment, Signal, learned_records
from ..learn.scoring import LearnParams, RatingFacts, learned_ranking
from ..learn.terms import TermUse, idf, term_signals
from ..models import (
    Edge,
    ExplainedEdge,
    Explanation,
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
from ..recall.fusion import Candidate, Fused, fused, missed_hits, session_evidence
from ..recall.graph import Walk, best_support, best_walks, expand
from ..recall.query import (
    Query,
    apart,
    in_first_person,
    named_span,
    names_speaker,
    only_asks,
    parse_query,
    sequence_support,
    states_kind,
    time_match,
)
from ..recall.supersession import Version, new_amount, newer_first, rank_by_validity
from ..recall.tensions import detect_tension
from ..recall.text import index_text, speaker_of, terms, topic_terms, who_speaks
from ..store import (
    Completed,
    LearningAhead,
    RecallRecord,
    RefineAhead,
    SearchQuery,
    read_ahead,
)
from .base import Engine, in_scope, own_word, pinned, reaches, reading, statement, states_facts
from .edge_context import edge_reader, reads_edge_parts

__all__ = [
    "REFINE_DEPTH",
    "Ranked",
    "Ranking",
    "candidates",
    "explain",
    "feedback_since",
    "keep_order",
    "learned",
    "query_at",
    "query_vector",
    "rank",
    "recall",
    "recall_tensions",
    "search",
    "session",
    "shown",
]

# Only the head of the fused list can reach the results: refinement reads records and edges
# for it, and a bounded boost never lifts a candidate from further down.
REFINE_DEPTH = 60
# Feedback older than this many half-lives weighs < 1/1000 of a fresh signal: not read.
_HORIZON_HALF_LIVES = 10
# The newest recalls whose replies count for a query (200 matching recalls already saturate
# the shrinkage N / (N + feedback_min_samples)).
_MATCHING_RECALLS = 200

# For a question about one side's words, the side whose messages count less (role_weight).
_OTHER_SIDE = {"user": "assistant", "assistant": "user"}

EdgesFrom = Callable[[str, Sequence[str], float, str | None], list[Edge]]
# The records of the given ids that are stored (as ``Store.get_memories`` answers).
Records = Callable[[Sequence[str]], dict[str, MemoryRecord]]

# The components the stages keep unrounded while they rank (a recall weighs ~150 candidates
# and shows a few): :func:`shown` rounds them to 6 places where a ranking is handed out.
_UNROUNDED = frozenset(
    {"vector", "keyword", "relevance", "session", "final", "score_before_learning"}
)


def shown(components: dict[str, float]) -> dict[str, float]:
    """A ranked item's components as recall, search and explain hand them out: a new dict,
    every score rounded to 6 places."""
    out = components.copy()  # the same keys in the same order; only the scores rewritten
    for k in _UNROUNDED.intersection(out):
        out[k] = round(out[k], 6)
    return out


@dataclass(slots=True)
class Ranked:
    """One memory's place in a ranking, with every component of its score."""

    id: str
    score: float
    components: dict[str, float] = field(default_factory=dict)
    via: str = "search"  # search, graph, feedback (a prior decision), or validity
    note: str | None = None
    walk: Walk | None = None
    adjustment: Adjustment | None = None  # the learned part, per record and source
    record: MemoryRecord | None = None
    #: the candidate it was ranked from (its ranks in the two searches), until learning
    candidate: Candidate | None = None


@dataclass
class Ranking:
    """The ranked memories of one query, best first (``items``), the first ``limit`` of which
    a recall returns; the walks behind graph support; ``match``, the best cosine any candidate
    has with the query (what makes scores absolute)."""

    query: Query
    items: list[Ranked]
    walks: list[Walk]
    seeds: list[str]
    match: float
    #: Candidates the cut left below ``items`` (``explain`` ranks one of them right after it).
    beyond: frozenset[str] = frozenset()


# -- the pipeline -----------------------------------------------------------------------------
def rank(
    engine: Engine,
    scope: Scope,
    query: Query,
    profile: RankingProfile,
    limit: int,
    *,
    graph: bool = True,
    where: RecallFilter | None = None,
    focus: str | None = None,
) -> Ranking:
    """Every stage in order; ``focus`` (explain) is kept in the list wherever it lands, even
    when neither search nor the graph found it."""
    qvec = query_vector(engine, query.text)
    edges_from: EdgesFrom = _edge_reads(engine, scope, qvec) if graph else engine.store.edges_from
    read = _records(engine, scope)
    cands, tail = _candidates(engine, scope, query, profile, qvec, where, edges_from, read)
    match = max(_best_cosine(cands), tail.fused.best_vector())
    walks: list[Walk] = []
    seeds: list[str] = []
    support: dict[str, Walk] = {}
    if graph:
        cands, walks, seeds, support = _graph(
            engine, scope, profile, cands, tail, qvec, edges_from, where, focus, read
        )
    graph_weight = profile.graph_weight if graph else None
    listed = _Listed(_best_first(_ranked(cands, graph_weight, support)), tail, graph_weight)
    finish = _Finish(listed, graph_weight)
    learned_items = learned(engine, scope, query, listed, qvec, finish)
    items, beyond = _validity(
        engine, scope, query, profile, learned_items, limit, where, focus, read, finish
    )
    return Ranking(query, items, walks, seeds, match, beyond)


_ID, _SCORE, _RELEVANCE = attrgetter("id"), attrgetter("score"), attrgetter("relevance")
_SCORE_OF = itemgetter(1)


def _best_first(items: Iterable[Ranked]) -> list[Ranked]:
    """``items`` by score, best first, equal ones by id (two sorts keyed in C: see
    :func:`~engrammar.recall.fusion.best_first`)."""
    out = sorted(items, key=_ID)
    out.sort(key=_SCORE, reverse=True)
    return out


def _best_cosine(cands: Sequence[Candidate]) -> float:
    """The best cosine any candidate has with the query, 0 at least (and with none)."""
    best: float | None = None
    for c in cands:
        cos = 0.0 if c.vector < 0.0 else c.vector  # max(c.vector, 0.0), without the call
        if best is None or cos > best:
            best = cos
    return 0.0 if best is None else best


def _edge_reads(engine: Engine, scope: Scope, qvec: np.ndarray) -> EdgesFrom:
    """Edges with the weights feedback gave them counted near the recalls that earned them,
    the reply signals read at the first edge read (after the searches, so that a store's read
    session can fetch them with the searches' neighbourhood)."""
    readers: list[EdgesFrom] = []

    def edges_from(
        workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        if not readers:
            reader = edge_reader(engine, scope, qvec, feedback_since(engine))
            readers.append(engine.store.edges_from if reader is None else reader.edges_from)
        return readers[0](workspace, ids, min_weight, kind)

    return edges_from


def _records(engine: Engine, scope: Scope) -> Records:
    """The records one ranking reads, each read (and decoded) once however many stages ask."""
    held: dict[str, MemoryRecord | None] = {}

    def read(ids: Sequence[str]) -> dict[str, MemoryRecord]:
        missing = [i for i in dict.fromkeys(ids) if i not in held]
        if missing:
            found = engine.store.get_memories(scope.workspace, missing)
            for i in missing:
                held[i] = found.get(i)
        return {i: r for i in ids if (r := held[i]) is not None}

    return read


# -- candidates, fusion and refinement --------------------------------------------------------
def candidates(
    engine: Engine,
    scope: Scope,
    query: Query,
    profile: RankingProfile,
    qvec: np.ndarray,
    *,
    where: RecallFilter | None = None,
    edges: EdgesFrom | None = None,
    read: Records | None = None,
) -> list[Candidate]:
    """Search, fusion and refinement: the candidates of ``query`` (of the memories ``where``
    matches) best first."""
    head, tail = _candidates(
        engine,
        scope,
        query,
        profile,
        qvec,
        where,
        edges or engine.store.edges_from,
        read or _records(engine, scope),
    )
    rest = [tail.take(memory_id) for memory_id in tail.ids()]
    return sorted(head + rest, key=_RELEVANCE, reverse=True)  # stable: ties keep their order


class _Tail:
    """The fused candidates below the refined head that no stage has changed, best first (by
    relevance as fused, equal ones by id): each is made a :class:`Candidate` only when a stage
    takes it (:meth:`take`). Of a recall's ~150 candidates most are never shown, and making
    one costs more than anything else done with it."""

    def __init__(self, fused: Fused, start: int) -> None:
        self.fused = fused
        self._ids = fused.ids[start:]
        self._held: set[str] | None = None  # the ids still here, once asked
        self._taken = False

    def __contains__(self, memory_id: str) -> bool:
        if self._held is None:
            self._held = set(self._ids)
        return memory_id in self._held

    def ids(self) -> list[str]:
        """The ids still here, best first."""
        if self._taken:
            held = self._held
            assert held is not None
            self._ids = [memory_id for memory_id in self._ids if memory_id in held]
            self._taken = False
        return self._ids

    def take(self, memory_id: str) -> Candidate:
        """The candidate of ``memory_id`` (which is here), out of the tail."""
        if memory_id in self:
            assert self._held is not None
            self._held.discard(memory_id)
            self._taken = True
        return self.fused.candidate(memory_id)


def _candidates(
    engine: Engine,
    scope: Scope,
    query: Query,
    profile: RankingProfile,
    qvec: np.ndarray,
    where: RecallFilter | None,
    edges: EdgesFrom,
    read: Records,
) -> tuple[list[Candidate], _Tail]:
    """:func:`candidates` as the refined head, best first (by relevance, stably), and the
    tail below it: the whole list is the two merged, the head first where their relevances
    tie."""
    store = engine.store
    pool = engine.config.candidate_pool
    keyword_hits, vector_hits = store.searches(scope, SearchQuery(query.terms, qvec, pool, where))
    if scope.user_id is None:
        keyword_hits, vector_hits = _reaching(scope, keyword_hits, vector_hits, read)
    # Each list completed with the other's hits it missed, unless the store did (Completed).
    if not isinstance(vector_hits, Completed):
        vector_hits = _complete_vector_hits(engine, scope, qvec, vector_hits, keyword_hits)
    if not isinstance(keyword_hits, Completed):
        keyword_hits = _complete_keyword_hits(
            engine, scope, query, vector_hits[:pool], keyword_hits
        )
    found = fused(vector_hits, keyword_hits, keyword_weight=profile.keyword_weight)
    return _refine(engine, scope, query, profile, found, qvec, where, edges, read)


def _reaching(
    scope: Scope,
    keyword_hits: list[tuple[str, float]],
    vector_hits: list[tuple[str, float]],
    read: Records,
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The hits of a scope without a user that may reach it: a search of every user's
    memories finds the users' decisions and preferences too, which are theirs alone."""
    ids = list(dict.fromkeys(i for i, _ in [*keyword_hits, *vector_hits]))
    records = read(ids)
    gone = {i for i, r in records.items() if not reaches(r, scope)}
    if not gone:
        return keyword_hits, vector_hits
    return [h for h in keyword_hits if h[0] not in gone], [
        h for h in vector_hits if h[0] not in gone
    ]


def _complete_vector_hits(
    engine: Engine,
    scope: Scope,
    qvec: np.ndarray,
    vector_hits: list[tuple[str, float]],
    keyword_hits: list[tuple[str, float]],
) -> list[tuple[str, float]]:
    """``vector_hits`` plus the cosine of every keyword hit the vector list missed
    (:func:`~engrammar.recall.fusion.missed_hits`), unless the store's searches added them
    already (``Store.searches``)."""
    seen = {memory_id for memory_id, _ in vector_hits}
    missing = [memory_id for memory_id, _ in keyword_hits if memory_id not in seen]
    if not missing:
        return vector_hits
    vecs = engine.store.vectors(scope.workspace, missing)
    chunks = engine.store.memory_chunks(scope.workspace, missing)
    found = [m for m in missing if m in vecs]
    if not found:
        return vector_hits
    # ``np.array`` of the rows: a third of ``np.stack``'s time, and as strict on shapes.
    windows = [[c.embedding for c in chunks.get(m, ())] for m in found] if chunks else None
    return vector_hits + missed_hits(found, np.array([vecs[m] for m in found]), windows, qvec)


def _complete_keyword_hits(
    engine: Engine,
    scope: Scope,
    query: Query,
    vector_hits: list[tuple[str, float]],
    keyword_hits: list[tuple[str, float]],
) -> list[tuple[str, float]]:
    """``keyword_hits`` plus the BM25 score of every vector hit the keyword list missed that
    holds a query term, best first after it: a memory that holds the query's words, though not
    enough of them for the keyword list, is scored by them, not as if it held none."""
    seen = {memory_id for memory_id, _ in keyword_hits}
    missing = [memory_id for memory_id, _ in vector_hits if memory_id not in seen]
    if not missing or not query.terms:
        return keyword_hits
    scores = engine.store.keyword_scores(scope, query.terms, missing)
    extra = [(m, scores[m]) for m in missing if m in scores]
    if not extra:
        return keyword_hits
    return keyword_hits + sorted(extra, key=_SCORE_OF, reverse=True)  # stable: ties keep order


def _refine(
    engine: Engine,
    scope: Scope,
    query: Query,
    profile: RankingProfile,
    found: Fused,
    qvec: np.ndarray,
    where: RecallFilter | None,
    edges_from: EdgesFrom,
    read: Records,
) -> tuple[list[Candidate], _Tail]:
    """Session evidence, neighbour support, the named time, the kind of answer asked for, a
    message that only asks and whose words the question asks about, on the head of the list
    (:func:`_candidates`)."""
    head = [found.candidate(memory_id) for memory_id in found.ids[:REFINE_DEPTH]]
    tail = _Tail(found, REFINE_DEPTH)
    if not head:
        return head, tail
    if profile.neighbour_weight > 0:
        neighbours: dict[str, list[tuple[str, float]]] = {}
        for edge in edges_from(scope.workspace, [c.id for c in head], 0.0, "sequence"):
            if edge.kind == "sequence":
                neighbours.setdefault(edge.src, []).append((edge.dst, edge.weight))
        head = _join_neighbours(
            engine, scope, profile, found, head, tail, qvec, neighbours, where, read
        )
        known = {c.id for c in head}
        neighbours = {k: [o for o in v if o[0] in known] for k, v in neighbours.items()}
        head = sequence_support(head, neighbours, profile.neighbour_weight)
    records = read([c.id for c in head])
    if profile.session_weight > 0:
        head = session_evidence(
            head, {i: r.session_id for i, r in records.items()}, profile.session_weight
        )
    span = query.span if profile.time_weight > 0 else None
    wants = query.wants if profile.answer_weight > 0 else None
    other = _OTHER_SIDE.get(query.whose or "") if profile.role_weight > 0 else None
    speakers = _speakers(records) if profile.role_weight > 0 and query.capitals else {}
    named = {s for s in set(speakers.values()) if names_speaker(s, query.capitals)}
    for cand in head:
        record = records.get(cand.id)
        if record is None:
            continue
        if span is not None and (hit := time_match(record.created_at, span)):
            _weigh(cand, "time", profile.time_weight * hit)
        if wants is not None and _states(wants, record):
            _weigh(cand, "answer", profile.answer_weight)
        if profile.question_weight > 0 and only_asks(record.content):
            _weigh(cand, "question", -profile.question_weight)
        if (other is not None and record.role == other) or (
            named and cand.id in speakers and speakers[cand.id] not in named
        ):
            _weigh(cand, "role", -profile.role_weight)
    return sorted(head, key=_RELEVANCE, reverse=True), tail  # stable: ties keep their order


def _speakers(records: dict[str, MemoryRecord]) -> dict[str, str]:
    """The speaker of each of ``records`` that has one (its name, or its text's label)."""
    out = {}
    for memory_id, record in records.items():
        speaker = who_speaks(record.metadata, record.content)
        if speaker is not None:
            out[memory_id] = speaker
    return out


def _weigh(cand: Candidate, name: str, change: float) -> None:
    """Relevance x (1 + ``change``), recorded as the component ``name``."""
    cand.relevance *= 1.0 + change
    cand.components[name] = round(change, 6)
    cand.components["relevance"] = round(cand.relevance, 6)


# Whether a memory states a time or an amount, by (kind, id, last update, length): a pure
# reading of its text, asked again on every recall that has it among the head (a long message's scan
# costs far more than the look-up). Cleared whole when full.
_STATED: dict[tuple[str, str, float, int], bool] = {}
_STATED_MAX = 65_536


def _states(kind: str, record: MemoryRecord) -> bool:
    key = (kind, record.id, record.updated_at, len(record.content))
    found = _STATED.get(key)
    if found is None:
        found = states_kind(kind, record.content)
        if len(_STATED) >= _STATED_MAX:
            _STATED.clear()
        _STATED[key] = found
    return found


def _join_neighbours(
    engine: Engine,
    scope: Scope,
    profile: RankingProfile,
    fused: Fused,
    head: list[Candidate],
    tail: _Tail,
    qvec: np.ndarray,
    neighbours: dict[str, list[tuple[str, float]]],
    where: RecallFilter | None,
    read: Records,
) -> list[Candidate]:
    """``head`` plus the neighbours of its memories: tail candidates move up as they are
    (taken out of ``tail``), others join with their own vector relevance (on the fused
    scale)."""
    in_head = {c.id for c in head}
    reached = {dst for outs in neighbours.values() for dst, _ in outs} - in_head
    if not reached:
        return head
    in_tail = {i for i in reached if i in tail}
    moved = [tail.take(i) for i in sorted(in_tail)]
    found = read(sorted(reached - in_tail))
    fresh = sorted(i for i, r in found.items() if in_scope(r, scope, where))
    vecs = engine.store.vectors(scope.workspace, fresh)
    scale = fused.vector_scale(profile.keyword_weight)
    joined = [_vector_only(m, float(vecs[m].dot(qvec)), scale) for m in fresh if m in vecs]
    return head + moved + joined


def _vector_only(memory_id: str, cos: float, scale: tuple[float, float]) -> Candidate:
    """A memory that no search found, scored by its cosine on the fused scale."""
    rel = scale[0] * max(cos, 0.0) / scale[1]
    cand = Candidate(memory_id, vector=cos, relevance=rel)
    cand.components = {"vector": cos, "keyword": 0.0, "relevance": rel}
    return cand


# -- graph ------------------------------------------------------------------------------------
def _leading(head: list[Candidate], tail: _Tail, n: int) -> list[Candidate]:
    """The first ``n`` candidates of ``head`` and ``tail`` merged (by relevance, the head
    first where they tie), those of the tail taken out of it."""
    out: list[Candidate] = []
    ids, relevance = tail.ids(), tail.fused.relevance
    h = t = 0
    while len(out) < n and (h < len(head) or t < len(ids)):
        if t < len(ids) and (h == len(head) or relevance[ids[t]] > head[h].relevance):
            out.append(tail.take(ids[t]))  # ``ids`` stays as it was: a new list is made next
            t += 1
        else:
            out.append(head[h])
            h += 1
    return out


def _graph(
    engine: Engine,
    scope: Scope,
    profile: RankingProfile,
    cands: list[Candidate],
    tail: _Tail,
    qvec: np.ndarray,
    edges_from: EdgesFrom,
    where: RecallFilter | None,
    focus: str | None,
    read: Records,
) -> tuple[list[Candidate], list[Walk], list[str], dict[str, Walk]]:
    """Walks from the best candidates (of ``cands`` and ``tail`` merged, :func:`_candidates`);
    what they reach joins the list with its own vector relevance, and every candidate a walk
    reached carries its best walk's score as ``graph`` (the others get 0 where their
    components are completed, :class:`_Finish`): the candidates of ``tail`` among the seeds or
    reached are taken out of it into the list; the best walk to each memory it reached."""
    first = _leading(cands, tail, profile.graph_seeds)
    by_id = {c.id: c for c in cands}
    for c in first:
        by_id.setdefault(c.id, c)
    seeds = [c.id for c in first]
    walks: list[Walk] = []
    if profile.graph_depth > 0 and seeds:
        frontier = [Walk([c.id], score=c.relevance) for c in first]
        for _ in range(profile.graph_depth):
            edges = edges_from(
                scope.workspace,
                [w.nodes[-1] for w in frontier],
                profile.graph_min_edge_weight,
                None,
            )
            step = expand(frontier, edges, profile.graph_fanout)
            if not step:
                break
            walks += step
            frontier = best_walks(step)[: profile.graph_seeds * profile.graph_fanout]
    outside = {n for w in walks for n in w.nodes if n not in by_id and n not in tail}
    if focus is not None and focus not in by_id and focus not in tail:
        outside.add(focus)
    if outside:
        records = read(sorted(outside))
        valid = {n for n, r in records.items() if in_scope(r, scope, where)}
        walks = [w for w in walks if all(n in by_id or n in tail or n in valid for n in w.nodes)]
        vecs = engine.store.vectors(scope.workspace, sorted(valid))
        scale = tail.fused.vector_scale(profile.keyword_weight)
        for n in sorted(valid):
            by_id[n] = _vector_only(n, float(vecs[n].dot(qvec)) if n in vecs else 0.0, scale)
    support = best_support(walks)
    for memory_id, walk in support.items():
        reached = by_id.get(memory_id)
        if reached is None and memory_id in tail:
            reached = by_id[memory_id] = tail.take(memory_id)
        if reached is not None:
            comps = reached.components
            comps["graph"] = round(walk.score, 6)
            comps["graph_hops"] = len(walk.weights)
            comps["graph_edge_weight"] = round(math.prod(walk.weights), 6)
    return list(by_id.values()), walks, seeds, support


def _ranked(
    cands: Sequence[Candidate], graph_weight: float | None, support: dict[str, Walk]
) -> list[Ranked]:
    """Each candidate as a ranked item: its relevance plus ``graph_weight`` x graph support
    (its best walk's, from ``support``); one that no search found came ``via`` the graph (its
    edges, sequence edges included); it takes over the candidate's components (completed by
    :class:`_Finish`). One comprehension for the ~150 candidates: a call for each costs a
    third of the time."""
    walk = support.get
    return [
        Ranked(
            c.id,
            c.relevance
            if graph_weight is None
            else c.relevance + graph_weight * c.components.get("graph", 0.0),
            c.components,
            "graph" if c.vector_rank is None and c.keyword_rank is None else "search",
            None,
            walk(c.id),
            None,
            None,
            c,
        )
        for c in cands
    ]


class _Listed(Sequence[Ranked]):
    """Ranked items best first (by score, equal ones by id): ``made``, those the stages made
    (in that order), merged with the candidates of ``tail``, whose scores are their
    relevances and which are in that order already; a tail item is made a :class:`Ranked`
    when first read. ``ids``: every item's, in order."""

    def __init__(self, made: list[Ranked], tail: _Tail, graph_weight: float | None) -> None:
        self._fused = tail.fused
        self._graph_weight = graph_weight
        rest = tail.ids()
        relevance = self._fused.relevance
        # The items made that come before the whole tail (most of them: the refined head),
        # then the others merged with the tail one by one.
        first = bisect_left(made, (-relevance[rest[0]], rest[0]), key=_ORDER) if rest else len(made)
        ids = [item.id for item in made[:first]]
        entries: list[Ranked | None] = [*made[:first]]
        t, n = 0, len(rest)
        for item in made[first:]:
            score, key = item.score, item.id
            while t < n and ((r := relevance[rest[t]]) > score or (r == score and rest[t] < key)):
                ids.append(rest[t])
                entries.append(None)
                t += 1
            ids.append(key)
            entries.append(item)
        ids += rest[t:]
        entries += [None] * (n - t)
        self.ids = ids
        self._entries = entries

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[Ranked]:
        return iter(self[:])  # every item made at once (feedback re-ranks them all)

    @overload
    def __getitem__(self, at: int) -> Ranked: ...

    @overload
    def __getitem__(self, at: slice) -> list[Ranked]: ...

    def __getitem__(self, at: int | slice) -> Ranked | list[Ranked]:
        places = range(*at.indices(len(self.ids))) if isinstance(at, slice) else [at]
        entries = self._entries
        due = [k for k in places if entries[k] is None]
        if due:  # made together: one comprehension (see _ranked)
            made = _ranked(
                [self._fused.candidate(self.ids[k]) for k in due], self._graph_weight, {}
            )
            for k, item in zip(due, made, strict=True):
                entries[k] = item
        if isinstance(at, slice):
            return cast(list[Ranked], entries[at])
        return cast(Ranked, entries[at])


# What orders ranked items best first: the score, then the id.
_ORDER: Callable[[Ranked], tuple[float, str]] = lambda item: (-item.score, item.id)  # noqa: E731


def _ids_of(items: Sequence[Ranked]) -> list[str]:
    """The ids of ``items`` in order (a :class:`_Listed`'s without making its items)."""
    return items.ids if isinstance(items, _Listed) else [item.id for item in items]


class _Finish:
    """The components a ranked item gets before learning (``graph_weight``, its ranks in the
    two searches, ``final``, ``score_before_learning``, ``rank_before_learning``), added to an
    item when a stage first reads them: to every item before feedback re-ranks them, else
    only to the head the cut keeps and to the memory ``explain`` asks about. Most of a
    recall's ~150 candidates are never shown."""

    def __init__(self, items: Sequence[Ranked], graph_weight: float | None) -> None:
        self._ids = _ids_of(items)  # best first: an item's place before learning
        self._graph_weight = graph_weight

    def __call__(self, items: Iterable[Ranked]) -> None:
        # Not done yet (``final`` is set here first, or by feedback for what it adds).
        due = {item.id: item for item in items if "final" not in item.components}
        graph_weight = self._graph_weight
        for place, memory_id in enumerate(self._ids, 1):
            if not due:
                break
            item = due.pop(memory_id, None)
            if item is None:
                continue
            cand = item.candidate
            assert cand is not None  # every item ranked before learning has its candidate
            comps = item.components
            if graph_weight is not None:
                if "graph" not in comps:  # no walk reached it (see _graph)
                    comps["graph"], comps["graph_hops"], comps["graph_edge_weight"] = 0.0, 0, 0.0
                comps["graph_weight"] = graph_weight
            if cand.vector_rank is not None:
                comps["vector_rank"] = cand.vector_rank + 1
            if cand.keyword_rank is not None:
                comps["keyword_rank"] = cand.keyword_rank + 1
            comps["final"] = item.score
            comps["score_before_learning"] = item.score
            comps["rank_before_learning"] = place


# -- learned ------------------------------------------------------------------------------------
def feedback_since(engine: Engine, now: float | None = None) -> float:
    """The oldest feedback record worth reading."""
    now = time.time() if now is None else now
    return now - _HORIZON_HALF_LIVES * engine.config.feedback_half_life_days * 86_400.0


def learned(
    engine: Engine,
    scope: Scope,
    query: Query,
    items: Sequence[Ranked],
    qvec: np.ndarray,
    finish: Callable[[Iterable[Ranked]], None] | None = None,
) -> Sequence[Ranked]:
    """Re-rank by the feedback records (:mod:`engrammar.learn.scoring`): items go in best
    first (by score, then id), with scores near [0, 1], and come out re-ranked, with memories
    surfaced by matching decisions or preference pairs added (``via`` feedback) and every
    learned component in ``components``; ``qvec`` is the query's vector (reply signals count
    for recalls whose query is like it); ``finish`` completes the items' components before
    feedback's are added (:class:`_Finish`). For a query that names a time, a rating given for
    a question about another period does not count (:func:`_this_period`): the memory's
    ``learned_other_period`` component says how many were left out."""
    store, cfg = engine.store, engine.config
    now = time.time()
    # Reply signals count only for a matching query, so the store searches the recalls'
    # queries before reading any.
    events, pairs, ratings, replies = store.learning_reads(
        scope,
        _ids_of(items),
        feedback_since(engine, now),
        cfg.feedback_records_limit,
        _given(qvec),
        cfg.feedback_reply_context_min,
        min(cfg.feedback_records_limit, _MATCHING_RECALLS),
    )
    ratings, other_period = _this_period(query, ratings)
    extra = _learned_terms(engine, scope, query, ratings)
    if not (events or pairs or ratings or replies or extra or other_period):
        return items
    items = list(items)
    if finish is not None:
        finish(items)
    for item in items:
        if item.id in other_period:
            item.components["learned_other_period"] = float(other_period[item.id])
    if not (events or pairs or ratings or replies or extra):
        return items
    if ratings:  # whose rating it is: the rated memory's own user's rejection places it
        owners = store.get_memories(scope.workspace, sorted({r.memory_id for r in ratings}))
        for r in ratings:
            r.own = r.memory_id in owners and owners[r.memory_id].user_id == r.user_id
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
    texts = None
    if events or pairs:
        records = store.get_memories(scope.workspace, [i.id for i in items])
        texts = {memory_id: r.content for memory_id, r in records.items()}
    ranked = learned_ranking(
        [(i.id, i.score) for i in items if i.id in vecs],
        qvec,
        vecs,
        events,
        pairs,
        ratings,
        params,
        now,
        texts,
        replies,
        extra,
    )
    base = {i.id: i for i in items}
    out = []
    for s in ranked:
        before = base.get(s.id)
        comps = {**(before.components if before else {}), **s.components}
        comps["final"] = s.score
        out.append(
            Ranked(
                s.id,
                s.score,
                comps,
                before.via if before else "feedback",
                s.note,
                before.walk if before else None,
                s.adjustment,
            )
        )
    return out


def _this_period(
    query: Query, ratings: list[RatingFacts]
) -> tuple[list[RatingFacts], dict[str, int]]:
    """The ratings that count for ``query``, and per memory how many were left out for being
    given for a question about another time: one that, read as if asked with ``query``
    (relative times against the same moment), names a period sharing no moment with the one
    ``query`` names. What was right for "in June" says nothing about "in July"; the same words
    always name the same period, whenever they were asked. Each question is read once."""
    if query.span is None or not ratings:
        return ratings, {}
    spans: dict[str, tuple[float, float] | None] = {}
    kept: list[RatingFacts] = []
    left: dict[str, int] = {}
    for rating in ratings:
        text = rating.context
        if text and text not in spans:
            spans[text] = named_span(text, query.as_of)
        named = spans[text] if text else None
        if named is not None and apart(named, query.span):
            left[rating.memory_id] = left.get(rating.memory_id, 0) + 1
        else:
            kept.append(rating)
    return kept, left


# What a rating's verdict says about the memory for questions in the same words.
_RATING_VERDICT = {"accepted": 1.0, "corrected": -1.0}


def _learned_terms(
    engine: Engine, scope: Scope, query: Query, ratings: Sequence[RatingFacts]
) -> dict[str, list[Signal]]:
    """Learned query terms: the ``terms`` signals (:mod:`engrammar.learn.terms`) of the rated
    candidates whose accepted or corrected ratings' questions hold topic terms of ``query``
    that the memory does not contain, weighed by their IDF among the scope's memories; empty
    when ``feedback_term_weight`` is 0 or no rating taught them words. Derived from the stored
    records at every recall: undoing a record takes its part back."""
    store, cfg = engine.store, engine.config
    if cfg.feedback_term_weight <= 0:
        return {}
    found = [r for r in ratings if r.verdict in _RATING_VERDICT and r.context]
    if not found:
        return {}
    records = store.get_memories(scope.workspace, sorted({r.memory_id for r in found}))
    own: dict[str, set[str]] = {
        i: set(terms(index_text(r.content, speaker_of(r.metadata)))) for i, r in records.items()
    }
    asked: dict[str, set[str]] = {}

    def topic(text: str) -> set[str]:
        if text not in asked:
            asked[text] = topic_terms(text)
        return asked[text]

    wanted = query.topic
    if not wanted:
        return {}
    uses = []
    for rating in found:
        if rating.memory_id not in own or rating.context is None:
            continue
        learned = (topic(rating.context) & wanted) - own[rating.memory_id]
        if learned:
            uses.append(
                TermUse(
                    rating.memory_id,
                    rating.rating_id,
                    _RATING_VERDICT[rating.verdict],
                    rating.created_at,
                    frozenset(learned),
                    rating.source,
                )
            )
    if not uses:
        return {}
    n, postings = store.term_postings(scope, sorted(wanted), 0)
    weights = {t: idf(postings[t][0], n) for t in wanted if t in postings}
    return term_signals(uses, weights, cfg.feedback_term_weight)


# -- validity and the cut -----------------------------------------------------------------------
def _validity(
    engine: Engine,
    scope: Scope,
    query: Query,
    profile: RankingProfile,
    items: Sequence[Ranked],
    limit: int,
    where: RecallFilter | None,
    focus: str | None,
    read: Records,
    finish: Callable[[Iterable[Ranked]], None],
) -> tuple[list[Ranked], frozenset[str]]:
    """The head of the learned list (its records read; with ``where``, only what it matches)
    re-ranked by what is current (:func:`_by_validity`), ``focus`` after it if the cut left it
    out; and the ids of the candidates the cut left out. ``finish`` completes the components
    of the items it hands out (:class:`_Finish`)."""
    depth = limit * 4 if query.pinned else limit * 2
    head: list[Ranked] = []
    records: dict[str, MemoryRecord] = {}
    ids = _ids_of(items)
    start = 0  # items[start:] are the rest
    while start < len(ids) and len(head) < depth:
        step = items[start : start + depth - len(head)]
        start += len(step)
        found = read([e.id for e in step])
        found = {i: r for i, r in found.items() if reaches(r, scope)}
        if where is not None:
            found = {i: r for i, r in found.items() if where.matches(r)}
        head += [e for e in step if e.id in found]
        records.update(found)
        if where is None:
            break
    finish(head)
    by_id = {e.id: e for e in head}
    out = []
    for record, score, comps, note, via in _by_validity(
        engine, scope, query, profile, head, records, limit, where
    ):
        before = by_id.get(record.id)
        out.append(
            Ranked(
                record.id,
                score,
                comps,
                via,
                note,
                before.walk if before else None,
                before.adjustment if before else None,
                record,
            )
        )
    if focus is not None and all(e.id != focus for e in out):
        at = next((k for k in range(start, len(ids)) if ids[k] == focus), None)
        if at is not None:
            tail = items[at]
            finish([tail])
            tail.record = read([focus]).get(focus)
            out.append(tail)
    for position, entry in enumerate(out, 1):
        entry.components["rank"] = position
    return out, frozenset(ids[start:])


# Replacements followed from a superseded memory to the one current now.
_MAX_HOPS = 5

# (record, score, components, note, via) of one ranked memory.
_Item = tuple[MemoryRecord, float, dict[str, float], "str | None", str]


def _version(record: MemoryRecord) -> Version:
    # By position (id, created_at, valid_until, superseded_by, seq, session): a frozen
    # dataclass set by keywords costs twice the time, for every record of the head.
    return Version(
        record.id, record.created_at, record.valid_until, record.superseded_by, 0, record.session_id
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


def _by_validity(
    engine: Engine,
    scope: Scope,
    query: Query,
    profile: RankingProfile,
    ranked: Sequence[Any],
    records: dict[str, MemoryRecord],
    limit: int,
    where: RecallFilter | None = None,
) -> list[_Item]:
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
    scores = {r.id: r.score for r in items}
    moved: dict[str, float] = scores
    why: dict[str, str] = {}
    # Only a memory some other replaced can move (items said after ``as_of`` are left out
    # above): with none among them, every score stands, as rank_by_validity would leave it.
    if any(r.superseded_by is not None for r in records.values()):
        versions = _versions(records)
        # A replacement its user rejected for this question replaces nothing here: "keep
        # this one" on the older side of a tension is the user saying the newer is not true.
        rejected = {r.id for r in items if r.components.get("rejected_by_user")}
        for k, v in versions.items():
            if v.superseded_by in rejected:
                versions[k] = dataclasses.replace(v, valid_until=None, superseded_by=None)
        moved, why = rank_by_validity(
            scores, versions, query.past, as_of, profile.superseded_factor
        )
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
    if why:  # else every score stands, in the learned order already (as keep_order keeps it)
        out = keep_order(out, [r.id for r in items], set(why))
    if profile.recency_similarity < 1.0 and query.own_facts and len(out) > 1:
        out = _newer_first(engine, scope, query, profile, out[:limit]) + out[limit:]
    return out


def keep_order(
    out: list[_Item],
    before: list[str],
    moved: set[str],
) -> list[_Item]:
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
    engine: Engine, scope: Scope, query: Query, profile: RankingProfile, out: list[_Item]
) -> list[_Item]:
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
        return new_amount(contents.get(older, ""), contents.get(newer, ""), asked, query.names)

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
    return _reordered(out, order, "newer")


def _reordered(
    out: list[_Item],
    order: list[str],
    component: str,
) -> list[_Item]:
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


# -- one read session per recall ----------------------------------------------------------------
_SESSION = threading.local()


def _given(vector: np.ndarray) -> Callable[[], np.ndarray]:
    """``vector`` as the store's protocol asks for the query's (a function returning it)."""
    return lambda: vector


@contextmanager
def session(
    engine: Engine,
    query: str | None = None,
    *,
    whole: bool = True,
    profile: RankingProfile | None = None,
    preferences: int = 0,
) -> Iterator[None]:
    """One read session for a whole recall (see :meth:`~engrammar.store.Store.reading`); with
    ``query``, embedded once for every stage of the recall (:func:`query_vector`), the learned
    ranking's reads may be read ahead with the rest: the store is given the query's vector,
    never its text."""
    config = engine.config
    profile = profile or config.ranking
    outer: tuple[str, np.ndarray] | None = getattr(_SESSION, "query", None)
    held: tuple[str, np.ndarray] | None = None
    if query is not None:
        vector = (
            outer[1]
            if outer is not None and outer[0] == query
            else engine.embed_one(vector_text(query, profile))
        )
        held = (query, vector)
    # The plan only for a store that reads ahead (the embedded one answers as asked).
    plan = (
        reading(
            engine.store,
            feedback_since(engine),
            preferences=preferences if whole and config.preferences_limit else 0,
            knowledge=whole and config.knowledge_recall_limit > 0,
            learning=LearningAhead(
                _given(held[1]),
                config.feedback_records_limit,
                config.feedback_reply_context_min,
                min(config.feedback_records_limit, _MATCHING_RECALLS),
                edge_parts=reads_edge_parts(engine),
            )
            if held is not None
            else None,
            refine=RefineAhead(profile.keyword_weight, REFINE_DEPTH),
        )
        if read_ahead(engine.store) is not None
        else nullcontext()
    )
    with plan:
        if outer is not None or held is None:
            yield
            return
        _SESSION.query = held
        try:
            with pinned(engine.store):
                yield
        finally:
            _SESSION.query = None


def vector_text(query: str, profile: RankingProfile) -> str:
    """What the vector of ``query`` embeds: the query as the person it asks about would put it
    (``names_in_vector`` 0), else the query."""
    return query if profile.names_in_vector else in_first_person(query)


def query_vector(engine: Engine, query: str) -> np.ndarray:
    """The vector of ``query`` (of :func:`vector_text`): the read session's when it is this
    query's (ranking, excerpts, standing preferences and knowledge passages of one recall share
    it), else embedded now."""
    held: tuple[str, np.ndarray] | None = getattr(_SESSION, "query", None)
    if held is not None and held[0] == query:
        return held[1]
    return engine.embed_one(vector_text(query, engine.config.ranking))


def query_at(text: str, as_of: float | None) -> Query:
    """``text`` parsed as asked at ``as_of`` (default now, and then nothing is left out for
    being said later)."""
    if as_of is None:
        return parse_query(text, time.time())
    return parse_query(text, as_of, pinned=True)


# -- recall, search and explain: the ranking put to use -------------------------------------
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
) -> Explanation:
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
) -> Explanation:
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
    records, sources = learned_records(entry.adjustment if entry else None)
    return {
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
        "records": records,
        "sources": sources,
    }


def _edge_dict(e: Edge) -> ExplainedEdge:
    return {"src": e.src, "dst": e.dst, "kind": e.kind, "weight": round(e.weight, 6)}
