"""The refinement step of recall: fused candidates -> query-aware, neighbour-supported ranking.

Reads what the pure scoring in :mod:`engrammar.recall.query` needs (speakers, dates, sequence
edges) from the store for the head of the candidate list; every other recall path (plain
search, the graph ranking) calls this after fusing, so all of them rank alike.
"""

from __future__ import annotations

from .config import Config
from .models import Scope
from .recall.fusion import Candidate
from .recall.query import rescore, sequence_support
from .recall.text import speaker_of
from .store import Store

__all__ = ["REFINE_DEPTH", "refine_candidates"]

# Only the head can reach the results: a bounded boost never lifts a candidate from far down
# the fused list, and fetching the whole pool would cost more than the searches themselves.
REFINE_DEPTH = 60


def refine_candidates(
    store: Store, config: Config, scope: Scope, query: str, cands: list[Candidate]
) -> list[Candidate]:
    """Speaker and time boosts, then support from conversation neighbours; best first."""
    head, tail = cands[:REFINE_DEPTH], cands[REFINE_DEPTH:]
    if not head:
        return cands
    if config.speaker_boost > 0 or config.time_boost > 0:
        records = store.get_memories(scope.workspace, [c.id for c in head])
        head = rescore(
            head,
            query,
            {i: speaker_of(r.metadata) for i, r in records.items()},
            {i: r.created_at for i, r in records.items()},
            speaker_boost=config.speaker_boost,
            time_boost=config.time_boost,
        )
    if config.neighbour_weight > 0:
        neighbours: dict[str, list[tuple[str, float]]] = {}
        for edge in store.edges_from(scope.workspace, [c.id for c in head]):
            if edge.kind == "sequence":
                neighbours.setdefault(edge.src, []).append((edge.dst, edge.weight))
        head = sequence_support(head, neighbours, config.neighbour_weight)
    # Neighbour support can pull a memory from the tail into the head: keep one entry per id.
    in_head = {c.id for c in head}
    return sorted(head + [c for c in tail if c.id not in in_head], key=lambda c: -c.relevance)
