"""The memory graph: which edges a new memory gets, and how recall walks them (pure functions).

At add time a memory is linked to

* **semantic** neighbours: memories of the scope (or of the same batch) whose cosine is at
  least ``graph_semantic_threshold``; weight = the cosine;
* its **sequence** neighbours: the previous and next message of the same conversation;
* memories sharing **rare terms or names** (``entity``): a term links only when few memories of
  the scope hold it (document frequency), so common words never become hubs; weight grows
  with the summed IDF of the shared terms, names counting more;
* memories it contradicts (``contradicts``, both ways) and, when it is the newer statement of a
  changed fact, the memory it replaces (``supersedes``).

Every edge is directed and stored in both directions where the relation is symmetric; each
memory keeps at most ``graph_max_edges_per_memory`` outgoing edges (contradictions and sequence
first, then the strongest). At recall time, walks start at the best direct hits and follow the
strongest edges: a walk's score is the seed's relevance times the product of its edge weights,
so feedback that changes a weight changes what the walk brings up.
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..models import Edge, Path
from .text import terms

__all__ = [
    "EdgeProposal",
    "Walk",
    "batch_semantic_edges",
    "batch_similarities",
    "best_support",
    "cap_edges",
    "entities",
    "expand",
    "nearest",
    "salient_term_edges",
    "sequence_edges",
    "stored_semantic_edges",
]

# Order in which kinds claim a memory's limited edge budget.
_PRIORITY = {"contradicts": 0, "supersedes": 0, "sequence": 1, "entity": 2, "semantic": 2}
# How strongly a shared name counts against a shared ordinary rare term.
_ENTITY_BOOST = 1.5
# Summed IDF at which a term edge reaches ~63% of the weight range.
_TERM_SCALE = 6.0

_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z]+(?:'s)?\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\"]\s+|\n)\s*$")


@dataclass(frozen=True)
class EdgeProposal:
    """A candidate edge before the per-memory budget is applied."""

    src: str
    dst: str
    kind: str
    weight: float


def _clamp(x: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, x))


def stored_semantic_edges(
    ids: Sequence[str],
    existing_hits: Sequence[Sequence[tuple[str, float]]],
    threshold: float,
    lo: float,
    hi: float,
) -> list[EdgeProposal]:
    """Edges from each new memory to the stored ones near it (``existing_hits[i]`` = the
    nearest stored memories of ``ids[i]``), for cosines >= ``threshold``; both directions."""
    out: list[EdgeProposal] = []
    for i, hits in enumerate(existing_hits):
        for other, cos in hits:
            if cos >= threshold and other != ids[i]:
                w = _clamp(cos, lo, hi)
                out.append(EdgeProposal(ids[i], other, "semantic", w))
                out.append(EdgeProposal(other, ids[i], "semantic", w))
    return out


def batch_similarities(vectors: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """The cosines within a batch (unit vectors), as ``(start, block)``: ``block[r]`` holds
    those of memory ``start + r`` with every memory of the batch. In blocks of rows, so a batch
    of thousands of messages never builds an n x n matrix at once."""
    for start in range(0, len(vectors), 512):
        yield start, vectors[start : start + 512] @ vectors.T


def batch_semantic_edges(
    ids: Sequence[str],
    start: int,
    block: np.ndarray,
    threshold: float,
    lo: float,
    hi: float,
    per_memory: int | None = None,
) -> list[EdgeProposal]:
    """Edges among the batch itself, for cosines >= ``threshold``, both directions; for one
    ``(start, block)`` of :func:`batch_similarities` (``block`` is left as it was).

    With ``per_memory``, each new memory proposes edges to its ``per_memory`` nearest of the
    batch only: :func:`cap_edges` keeps no more than that many of its semantic and entity
    edges, and a pair left out was beyond both memories' nearest (up to ties in weight), so
    the edges kept are the same while a batch of near-duplicates no longer proposes every
    pair of itself.
    """
    out: list[EdgeProposal] = []
    if per_memory is None:
        for r in range(block.shape[0]):
            i = start + r
            row = block[r]
            for j in map(int, np.flatnonzero(row >= threshold)):
                if j > i and ids[j] != ids[i]:
                    w = _clamp(float(row[j]), lo, hi)
                    out.append(EdgeProposal(ids[i], ids[j], "semantic", w))
                    out.append(EdgeProposal(ids[j], ids[i], "semantic", w))
        return out
    rows = block.shape[0]
    others = block.copy()
    others[np.arange(rows), np.arange(start, start + rows)] = -np.inf
    near, cosines = nearest(others, per_memory + 1)
    for r, (js, values, above) in enumerate(
        zip(near.tolist(), cosines.tolist(), (cosines >= threshold).tolist(), strict=True)
    ):
        i = start + r
        for j, cos, keep in zip(js, values, above, strict=True):
            if keep and ids[j] != ids[i]:
                out.append(EdgeProposal(ids[i], ids[j], "semantic", _clamp(cos, lo, hi)))
    return out


def nearest(block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``block``, the columns of its ``k`` largest values (every column when it has
    no more than ``k``), in the order ``np.argpartition`` of the row alone gives them, and
    those values. One call for the whole block: ``argpartition`` along the last axis
    partitions each row as it partitions that row by itself."""
    rows, n = block.shape
    if n > k:
        order = np.argpartition(-block, k - 1, axis=1)[:, :k]
    else:
        order = np.broadcast_to(np.arange(n), (rows, n))
    return order, np.take_along_axis(block, order, axis=1)


def sequence_edges(ids: Sequence[str], previous: str | None, weight: float) -> list[EdgeProposal]:
    """Consecutive messages of one conversation, both directions; ``previous`` is the memory
    said just before this batch in the same session (if any)."""
    chain = ([previous] if previous else []) + list(ids)
    out: list[EdgeProposal] = []
    for a, b in itertools.pairwise(chain):
        if a != b:
            out.append(EdgeProposal(a, b, "sequence", weight))
            out.append(EdgeProposal(b, a, "sequence", weight))
    return out


def _starts_sentence(text: str, start: int) -> bool:
    """Whether ``text[start:]`` begins a sentence: ``_SENTENCE_START`` matches the text before
    it. Read backwards over the whitespace only, so a long text costs linear time, not the
    quadratic time of searching every prefix."""
    k = start
    while k > 0 and text[k - 1].isspace():
        k -= 1
    if k == 0:
        return True
    gap = text[k:start]
    return "\n" in gap or (bool(gap) and text[k - 1] in '.!?:;"')


def entities(text: str) -> set[str]:
    """Index terms of capitalised words that do not start a sentence (names, places, brands)."""
    found: set[str] = set()
    for m in _CAPITALISED.finditer(text):
        word = m.group(0)
        if word in ("I", "I'm", "I've", "I'd", "I'll"):
            continue
        if _starts_sentence(text, m.start()):
            continue
        found.update(terms(word))
    return found


def salient_term_edges(
    ids: Sequence[str],
    texts: Sequence[str],
    n_stored: int,
    postings: dict[str, tuple[int, list[str]]],
    max_df_share: float,
    lo: float,
    hi: float,
    per_memory: int,
    text_terms: Sequence[Sequence[str]] | None = None,
) -> list[EdgeProposal]:
    """Edges between memories sharing rare terms or names.

    ``postings`` maps each term of the batch to its document frequency among the ``n_stored``
    memories already in the scope and some of their ids. A term qualifies when its frequency
    over stored + batch memories is at most ``max(2, max_df_share * N)``. ``text_terms``:
    ``terms(text)`` of each text, when the caller has them.
    """
    if text_terms is None:
        text_terms = [terms(t) for t in texts]
    batch_terms = [set(found) for found in text_terms]
    batch_df: dict[str, list[int]] = {}
    for i, ts in enumerate(batch_terms):
        for term in ts:
            batch_df.setdefault(term, []).append(i)
    n_total = n_stored + len(ids)
    max_df = max(2.0, max_df_share * n_total)
    # Each term's IDF, or None where it does not qualify: the same for every memory holding it.
    idfs: dict[str, float | None] = {}
    for term, holders in batch_df.items():
        df = postings.get(term, (0, []))[0] + len(holders)
        idfs[term] = None if df < 2 or df > max_df else math.log(1.0 + n_total / df)
    out: list[EdgeProposal] = []
    for i, ts in enumerate(batch_terms):
        me = ids[i]
        names: set[str] | None = None
        scores: dict[str, float] = {}
        for term in ts:
            idf = idfs[term]
            if idf is None:
                continue
            if names is None:
                names = entities(texts[i])
            if term in names:
                idf *= _ENTITY_BOOST
            for j in batch_df[term]:
                if j != i and (other := ids[j]) != me:
                    scores[other] = scores.get(other, 0.0) + idf
            for other in postings.get(term, (0, []))[1]:
                if other != me:
                    scores[other] = scores.get(other, 0.0) + idf
        best = heapq.nsmallest(per_memory, scores.items(), key=lambda kv: -kv[1])
        for other, score in best:
            w = _clamp(1.0 - math.exp(-score / _TERM_SCALE), lo, hi)
            out.append(EdgeProposal(me, other, "entity", w))
            out.append(EdgeProposal(other, me, "entity", w))
    return out


def cap_edges(
    proposals: Iterable[EdgeProposal],
    new_ids: set[str],
    existing_out_degree: dict[str, int],
    cap: int,
) -> list[EdgeProposal]:
    """At most ``cap`` outgoing edges per memory: one edge per (src, dst, kind) at its highest
    weight, contradictions and sequence first, then by weight. A memory already stored keeps
    the edges it has; it always takes its link to the next message of its conversation, and
    other new edges (contradictions first) only while under the cap."""
    best: dict[tuple[str, str, str], EdgeProposal] = {}
    for p in proposals:
        if p.src == p.dst:
            continue
        key = (p.src, p.dst, p.kind)
        if key not in best or best[key].weight < p.weight:
            best[key] = p
    by_src: dict[str, list[EdgeProposal]] = {}
    for p in best.values():
        by_src.setdefault(p.src, []).append(p)
    out: list[EdgeProposal] = []
    for src, props in by_src.items():
        props.sort(key=lambda p: (_PRIORITY.get(p.kind, 3), -p.weight, p.dst))
        if src in new_ids:
            out.extend(props[:cap])
            continue
        room = cap - existing_out_degree.get(src, 0)
        for p in props:
            if p.kind == "sequence":
                out.append(p)
            elif room > 0:
                out.append(p)
                room -= 1
    return out


@dataclass
class Walk:
    """A path being followed at recall time."""

    nodes: list[str]
    weights: list[float] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    score: float = 0.0

    def to_path(self) -> Path:
        return Path(list(self.nodes), list(self.weights), list(self.kinds), round(self.score, 6))


def expand(frontier: Sequence[Walk], edges: Sequence[Edge], fanout: int) -> list[Walk]:
    """One hop: each walk follows the ``fanout`` strongest edges leaving its last node to nodes
    it has not visited. Parallel edges of different kinds count once, at the strongest."""
    strongest: dict[tuple[str, str], Edge] = {}
    for e in edges:
        key = (e.src, e.dst)
        if key not in strongest or strongest[key].weight < e.weight:
            strongest[key] = e
    by_src: dict[str, list[Edge]] = {}
    for e in strongest.values():
        by_src.setdefault(e.src, []).append(e)
    for outs in by_src.values():
        outs.sort(key=lambda e: (-e.weight, e.dst))
    out: list[Walk] = []
    for walk in frontier:
        taken = 0
        for e in by_src.get(walk.nodes[-1], []):
            if taken >= fanout:
                break
            if e.dst in walk.nodes:
                continue
            out.append(
                Walk(
                    [*walk.nodes, e.dst],
                    [*walk.weights, e.weight],
                    [*walk.kinds, e.kind],
                    walk.score * e.weight,
                )
            )
            taken += 1
    return out


def best_walks(walks: Sequence[Walk]) -> list[Walk]:
    """The best walk per end node (the frontier of the next hop)."""
    best: dict[str, Walk] = {}
    for w in walks:
        end = w.nodes[-1]
        if end not in best or best[end].score < w.score:
            best[end] = w
    return sorted(best.values(), key=lambda w: -w.score)


def best_support(walks: Sequence[Walk]) -> dict[str, Walk]:
    """Per memory, the best walk of at least one hop that reaches it (its graph support)."""
    return {w.nodes[-1]: w for w in best_walks([w for w in walks if len(w.nodes) > 1])}
