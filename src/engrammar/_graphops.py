"""The graph steps of ``Memory``: edges at add time, paths at recall, feedback, explain.

Orchestration only: reads and writes go through the :class:`~engrammar.store.Store`, every
decision is a pure function of ``recall.graph``, ``recall.tensions`` or ``learn.alignment``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._refine import in_scope, refine_candidates, search_hits
from .config import Config
from .errors import NotFoundError
from .learn.alignment import alignment_deltas, tension_deltas
from .models import Edge, MemoryRecord, Path, Scope, Tension
from .recall.fusion import Candidate, fuse
from .recall.graph import (
    EdgeProposal,
    Walk,
    best_support,
    best_walks,
    cap_edges,
    expand,
    salient_term_edges,
    semantic_edges,
    sequence_edges,
)
from .recall.roles import role_discount
from .recall.tensions import Statement, agreed_side, detect_tension
from .recall.text import terms
from .store import EdgeDelta, NewEdge, NewMemory, RecallRecord, ReplySignal, Store

# Initial weight of the edges recording a contradiction.
_TENSION_EDGE_WEIGHT = 0.5


def graph_scope(scope: Scope) -> Scope:
    """The scope a memory's edges live in: its owner (user / agent), across sessions."""
    if scope.user_id is None and scope.agent_id is None:
        return scope
    return Scope(scope.workspace, scope.user_id, scope.agent_id, None)


def _speaker(metadata: dict[str, Any], role: str) -> str:
    return str(metadata.get("speaker") or role)


def _statement(record: MemoryRecord) -> Statement:
    return Statement(
        record.id, record.content, record.created_at, _speaker(record.metadata, record.role)
    )


# -- add ------------------------------------------------------------------------------------
def build_edges(
    store: Store,
    config: Config,
    scope: Scope,
    rows: Sequence[NewMemory],
    *,
    replacing: bool = False,
) -> list[NewEdge]:
    """The edges a batch of new memories gets (see ``recall.graph``).

    ``replacing``: the rows are stored memories whose content changes; they are left out of
    their own neighbourhoods and keep their sequence edges (the conversation order did not
    change), so the result replaces only their content-derived edges.
    """
    if not rows:
        return []
    lo, hi = config.edge_weight_min, config.edge_weight_max
    cap = config.graph_max_edges_per_memory
    gscope = graph_scope(scope)
    ids = [r.id for r in rows]
    texts = [r.content for r in rows]
    vectors = np.stack([np.asarray(r.embedding, dtype=np.float32) for r in rows])
    look = min(config.graph_semantic_threshold, config.tension_min_similarity)
    own = set(ids)
    found = store.vector_searches(gscope, vectors, cap + (len(own) if replacing else 0))
    hits = [
        [(mid, cos) for mid, cos in row if cos >= look and mid not in own][:cap] for row in found
    ]
    proposals = semantic_edges(
        ids,
        vectors,
        [[h for h in row if h[1] >= config.graph_semantic_threshold] for row in hits],
        config.graph_semantic_threshold,
        lo,
        hi,
        per_memory=cap,
    )
    previous = None
    if scope.session_id is not None and not replacing:
        latest = store.latest_memories(scope, 1)
        previous = latest[0].id if latest else None
    if not replacing:
        proposals += sequence_edges(ids, previous, config.graph_sequence_weight)
    batch_terms = sorted({t for text in texts for t in terms(text)})
    n_stored, postings = store.term_postings(gscope, batch_terms, cap)
    proposals += salient_term_edges(
        ids, texts, n_stored, postings, config.graph_term_max_df, lo, hi, cap
    )
    proposals += _tension_edges(store, config, rows, vectors, hits)
    if replacing:
        # The stored memories still carry their old text in the term postings.
        proposals = [p for p in proposals if p.src != p.dst]
    existing = {p.src for p in proposals} - set(ids)
    degrees = store.edge_counts(scope.workspace, sorted(existing)) if existing else {}
    kept = cap_edges(proposals, set(ids), degrees, cap)
    return [NewEdge(p.src, p.dst, p.kind, p.weight) for p in kept]


def _tension_edges(
    store: Store,
    config: Config,
    rows: Sequence[NewMemory],
    vectors: np.ndarray,
    hits: list[list[tuple[str, float]]],
) -> list[EdgeProposal]:
    lo, hi = config.edge_weight_min, config.edge_weight_max
    weight = min(hi, max(lo, _TENSION_EDGE_WEIGHT))
    tmin = config.tension_min_similarity
    stored = store.get_memories(rows[0].workspace, sorted({m for row in hits for m, _ in row}))
    # Messages of one batch share a timestamp; their order says which came later.
    new = [
        Statement(r.id, r.content, r.created_at + i * 1e-6, _speaker(r.metadata, r.role))
        for i, r in enumerate(rows)
    ]
    pairs: list[tuple[Statement, Statement, float]] = []
    for i, row in enumerate(hits):
        for other, cos in row:
            rec = stored.get(other)
            if rec is not None and cos >= tmin and other != rows[i].id:
                pairs.append((_statement(rec), new[i], cos))
    cap = config.graph_max_edges_per_memory
    for start in range(0, len(rows), 512):
        block = vectors[start : start + 512] @ vectors.T
        for r in range(block.shape[0]):
            i = start + r
            row = block[r]
            order = np.argpartition(-row, cap)[: cap + 1] if len(row) > cap + 1 else range(len(row))
            for j in map(int, order):
                if j > i and row[j] >= tmin:
                    pairs.append((new[i], new[j], float(row[j])))
    out: list[EdgeProposal] = []
    for older, newer, cos in pairs:
        found = detect_tension(older, newer, cos, tmin)
        if found is None:
            continue
        out.append(EdgeProposal(found.a, found.b, "contradicts", weight))
        out.append(EdgeProposal(found.b, found.a, "contradicts", weight))
        if found.newer is not None:
            old = found.a if found.newer == found.b else found.b
            out.append(EdgeProposal(found.newer, old, "supersedes", weight))
    return out


# -- recall ---------------------------------------------------------------------------------
@dataclass
class Ranked:
    """One memory's place in a graph-aware ranking, with every component of its score."""

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


def graph_rank(
    store: Store,
    config: Config,
    scope: Scope,
    query: str,
    embed: Callable[[str], np.ndarray],
    focus: str | None = None,
    as_of: float | None = None,
) -> Ranking:
    """Fused candidates, walks from the best of them, and the combined ranking, best first.

    ``embed`` turns the text to search with into the query vector (see
    :func:`~engrammar._refine.search_hits`).
    ``focus`` (explain) is scored even when neither search nor the graph found it.
    """
    qvec, vector_hits, keyword_hits = search_hits(store, config, scope, query, embed)
    cands = fuse(
        vector_hits, keyword_hits, keyword_weight=config.keyword_weight, mode=config.fusion
    )
    cands = refine_candidates(store, config, scope, query, cands, qvec, as_of)
    by_id: dict[str, Candidate] = {c.id: c for c in cands}
    seeds = [c.id for c in cands[: config.graph_seeds]]
    walks: list[Walk] = []
    if config.graph_depth > 0 and seeds:
        frontier = [Walk([c.id], score=c.relevance) for c in cands[: config.graph_seeds]]
        for _ in range(config.graph_depth):
            edges = store.edges_from(
                scope.workspace, [w.nodes[-1] for w in frontier], config.graph_min_edge_weight
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
        valid = {n for n, r in records.items() if in_scope(r, scope)}
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
        roles = {n: records[n].role for n in valid}
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
    return Ranking(entries, walks, seeds)


def result_paths(walks: Sequence[Walk], shown: set[str], limit: int) -> list[Path]:
    """The walks that brought up a shown memory, strongest first."""
    best: dict[tuple[str, ...], Walk] = {}
    for w in walks:
        if w.nodes[-1] in shown:
            best[tuple(w.nodes)] = w
    ordered = sorted(best.values(), key=lambda w: (-w.score, w.nodes))
    return [w.to_path() for w in ordered[:limit]]


def recall_tensions(
    store: Store, config: Config, workspace: str, records: Sequence[MemoryRecord]
) -> list[Tension]:
    """Contradictions among the recalled memories.

    They were found when the memories were added (``contradicts`` edges), so recall reads the
    edges between its results instead of judging every pair again: one query, then the rules
    re-run only on the few linked pairs (for the kind, the reason and which side is newer).
    """
    if len(records) < 2:
        return []
    by_id = {r.id: r for r in records}
    pairs = {
        tuple(sorted((e.src, e.dst)))
        for e in store.edges_from(workspace, list(by_id), kind="contradicts")
        if e.kind == "contradicts" and e.dst in by_id
    }
    if not pairs:
        return []
    vecs = store.vectors(workspace, sorted({i for pair in pairs for i in pair}))
    out = []
    for a, b in sorted(pairs):
        if a not in vecs or b not in vecs:
            continue
        found = detect_tension(
            _statement(by_id[a]),
            _statement(by_id[b]),
            float(vecs[a] @ vecs[b]),
            config.tension_min_similarity,
        )
        if found is not None:
            out.append(found)
    return sorted(out, key=lambda t: -t.confidence)


# -- feedback -------------------------------------------------------------------------------
def apply_feedback(
    store: Store,
    config: Config,
    scope: Scope,
    reply: str,
    embed: Callable[[Sequence[str]], np.ndarray],
    recall_id: str | None,
    drawn_on: Callable[[Scope, str, np.ndarray], list[tuple[str, float]]] | None = None,
) -> dict[str, Any]:
    """The MemWire rule on the scope's last unconsumed recall (or ``recall_id``), once; and
    the reply's signals on memories (what it drew on, what it left) for the learned ranking."""
    record = store.get_recall(scope, recall_id)
    if record is None:
        if recall_id is not None:
            raise NotFoundError(f"recall {recall_id!r} not found in this scope")
        return _nothing(None, "no unconsumed recall in this scope; nothing changed")
    if record.consumed_at is not None:
        return _nothing(record.recall_id, "this recall already received feedback; nothing changed")
    reply_vec = embed([reply])[0]
    tensions = record.tensions
    nodes = {n for p in record.paths for n in p["nodes"]}
    nodes |= {t["a"] for t in tensions} | {t["b"] for t in tensions}
    vectors = store.vectors(record.workspace, sorted(nodes))
    deltas, report = alignment_deltas(
        record.paths,
        vectors,
        reply_vec,
        strengthen_rate=config.feedback_strengthen_rate,
        weaken_rate=config.feedback_weaken_rate,
        align_strengthen=config.feedback_align_strengthen,
        align_weaken=config.feedback_align_weaken,
    )
    resolved = []
    if tensions:
        sides = _tension_sides(store, record.workspace, tensions, reply, reply_vec, vectors)
        if sides:
            recalled = set(record.memory_ids) | nodes
            incoming = [
                e
                for e in store.edges_to(
                    record.workspace, sorted({s for pair in sides for s in pair})
                )
                if e.src in recalled
            ]
            # What the reply said about a contradiction outranks the path it sat on.
            deltas.update(
                tension_deltas(
                    sides,
                    incoming,
                    reply_vec,
                    vectors,
                    strengthen_rate=config.feedback_strengthen_rate,
                    weaken_rate=config.feedback_weaken_rate,
                )
            )
            resolved = [{"agreed": a, "other": b} for a, b in sides]
    signals = (
        reply_signals(store, config, record, reply, reply_vec, embed, drawn_on)
        if drawn_on is not None
        else []
    )
    changed = store.adjust_edges(
        record.workspace,
        [EdgeDelta(src, dst, kind, d) for (src, dst, kind), d in sorted(deltas.items()) if d],
        config.edge_weight_min,
        config.edge_weight_max,
        consume_recall=record.recall_id,
        reply_signals=signals,
    )
    if changed is None:
        return _nothing(record.recall_id, "this recall already received feedback; nothing changed")
    up = sum(1 for e in changed if deltas.get((e.src, e.dst, e.kind), 0) > 0)
    down = sum(1 for e in changed if deltas.get((e.src, e.dst, e.kind), 0) < 0)
    out: dict[str, Any] = {
        "strengthened": up,
        "weakened": down,
        "recall_id": record.recall_id,
        "consumed": True,
        "paths": [{"nodes": p.nodes, "alignment": p.alignment, "action": p.action} for p in report],
        "tensions": resolved,
        "drawn_on": [r.memory_id for r in signals if r.value > 0],
        "left": [r.memory_id for r in signals if r.value < 0],
    }
    if not record.paths and not resolved:
        out["message"] = "the recall had no graph paths; no edge changed"
    return out


def reply_signals(
    store: Store,
    config: Config,
    record: RecallRecord,
    reply: str,
    reply_vec: np.ndarray,
    embed: Callable[[Sequence[str]], np.ndarray],
    drawn_on: Callable[[Scope, str, np.ndarray], list[tuple[str, float]]],
) -> list[ReplySignal]:
    """What the reply says about memories, for the learned ranking (``learn.scoring``): +1 for
    each memory it drew on (its best matches in the recall's scope, aligned at least
    ``feedback_align_weaken``), -1 for each recalled memory it did not draw on. Tied to the
    recall's query as context, so they count for similar queries only."""
    if config.feedback_reply_weight == 0:
        return []
    scope = Scope(record.workspace, record.user_id, record.agent_id, record.session_id)
    used = {m: a for m, a in drawn_on(scope, reply, reply_vec) if a >= config.feedback_align_weaken}
    recalled = [m for m in record.memory_ids if m not in used]
    vectors = store.vectors(record.workspace, recalled)
    context = embed([record.query])[0]
    now = time.time()

    def signal(memory_id: str, value: float, alignment: float) -> ReplySignal:
        return ReplySignal(
            record.workspace,
            record.user_id,
            record.agent_id,
            record.session_id,
            record.recall_id,
            memory_id,
            value,
            round(alignment, 6),
            now,
            context,
        )

    out = [signal(m, 1.0, a) for m, a in used.items()]
    out += [signal(m, -1.0, float(vectors[m] @ reply_vec)) for m in recalled if m in vectors]
    return out


def _nothing(recall_id: str | None, message: str) -> dict[str, Any]:
    return {
        "strengthened": 0,
        "weakened": 0,
        "recall_id": recall_id,
        "consumed": False,
        "message": message,
    }


def _tension_sides(
    store: Store,
    workspace: str,
    tensions: Sequence[dict[str, Any]],
    reply: str,
    reply_vec: np.ndarray,
    vectors: dict[str, np.ndarray],
) -> list[tuple[str, str]]:
    ids = sorted({t["a"] for t in tensions} | {t["b"] for t in tensions})
    records = store.get_memories(workspace, ids)
    sides: list[tuple[str, str]] = []
    for t in tensions:
        a, b = records.get(t["a"]), records.get(t["b"])
        if a is None or b is None or a.id not in vectors or b.id not in vectors:
            continue
        side = agreed_side(
            reply,
            a.content,
            b.content,
            float(vectors[a.id] @ reply_vec),
            float(vectors[b.id] @ reply_vec),
        )
        if side == 0:
            sides.append((a.id, b.id))
        elif side == 1:
            sides.append((b.id, a.id))
    return sides


# -- explain --------------------------------------------------------------------------------
def explain(
    store: Store,
    config: Config,
    scope: Scope,
    query: str,
    embed: Callable[[str], np.ndarray],
    memory_id: str,
    limit: int,
) -> dict[str, Any]:
    """Every component of ``memory_id``'s score for ``query``, and where it ranked."""
    found = store.get_memories(scope.workspace, [memory_id]).get(memory_id)
    if found is None or not in_scope(found, scope):
        raise NotFoundError(f"memory {memory_id!r} not found in this scope")
    ranking = graph_rank(store, config, scope, query, embed, focus=memory_id)
    entry = next(e for e in ranking.entries if e.id == memory_id)
    rank = int(entry.components["rank"])
    paths = [
        w.to_path().to_dict()
        for w in sorted(ranking.walks, key=lambda w: -w.score)
        if w.nodes[-1] == memory_id
    ]
    edges_out = store.edges_from(scope.workspace, [memory_id])
    edges_in = store.edges_to(scope.workspace, [memory_id])
    above = ranking.entries[rank - 2] if rank > 1 else None
    return {
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
        "best_path": entry.walk.to_path().to_dict() if entry.walk is not None else None,
        "paths": paths,
        "edges": {
            "out": [_edge_dict(e) for e in sorted(edges_out, key=lambda e: -e.weight)],
            "in": [_edge_dict(e) for e in sorted(edges_in, key=lambda e: -e.weight)],
        },
        "score_to_beat": round(above.final, 6) if above is not None else None,
        "formula": "final = relevance + graph_weight * graph; relevance = fused vector and "
        "keyword score; graph = seed relevance x product of edge weights along the best path",
    }


def _edge_dict(e: Edge) -> dict[str, Any]:
    return {"src": e.src, "dst": e.dst, "kind": e.kind, "weight": round(e.weight, 6)}
