"""The MemWire feedback rule: align a reply with the recalled paths (pure functions).

For each path of a recall, alignment = the mean cosine between the reply's embedding and the
embeddings of the path's nodes. A path aligned above ``feedback_align_strengthen`` has its
edges strengthened by ``feedback_strengthen_rate x alignment``; one below
``feedback_align_weaken`` has them weakened by ``feedback_weaken_rate``; the band between is
left alone. An edge on several paths is strengthened if any aligned path holds it (by the
largest amount), otherwise weakened once. Clamping to ``[edge_weight_min, edge_weight_max]``
happens in the store, atomically.

Tensions: when the recall flagged two memories as contradicting each other, the side the reply
agreed with has the recalled edges arriving at it strengthened, and the other side's weakened,
so the graph settles a contradiction from use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..models import Edge

__all__ = ["EdgeKey", "PathAlignment", "alignment_deltas", "path_alignment", "tension_deltas"]

EdgeKey = tuple[str, str, str]  # (src, dst, kind)


@dataclass
class PathAlignment:
    """How one recalled path lined up with the reply."""

    nodes: list[str]
    alignment: float
    action: str  # "strengthen", "weaken" or "keep"


def path_alignment(reply: np.ndarray, node_vectors: Sequence[np.ndarray]) -> float:
    """Mean cosine between the reply and the nodes (vectors are unit length)."""
    if not node_vectors:
        return 0.0
    return float(np.mean(np.stack(node_vectors) @ reply))


def alignment_deltas(
    paths: Sequence[Mapping[str, Any]],
    vectors: Mapping[str, np.ndarray],
    reply: np.ndarray,
    *,
    strengthen_rate: float,
    weaken_rate: float,
    align_strengthen: float,
    align_weaken: float,
) -> tuple[dict[EdgeKey, float], list[PathAlignment]]:
    """Per edge, the weight change the reply asks for; and each path's alignment.

    ``paths`` are recall paths as stored (``nodes``, ``kinds``); nodes without a vector (since
    forgotten) are left out of the mean, and their edges are skipped.
    """
    up: dict[EdgeKey, float] = {}
    down: set[EdgeKey] = set()
    report: list[PathAlignment] = []
    for path in paths:
        nodes: list[str] = list(path["nodes"])
        kinds: list[str] = list(path["kinds"])
        present = [vectors[n] for n in nodes if n in vectors]
        if len(present) < 2:
            continue
        alignment = path_alignment(reply, present)
        edges = [
            (a, b, kind)
            for a, b, kind in zip(nodes, nodes[1:], kinds, strict=False)
            if a in vectors and b in vectors
        ]
        if alignment > align_strengthen:
            amount = strengthen_rate * alignment
            for key in edges:
                up[key] = max(up.get(key, 0.0), amount)
            action = "strengthen"
        elif alignment < align_weaken:
            down.update(edges)
            action = "weaken"
        else:
            action = "keep"
        report.append(PathAlignment(nodes, round(alignment, 6), action))
    deltas: dict[EdgeKey, float] = {k: -weaken_rate for k in down if k not in up}
    deltas.update(up)
    return deltas, report


def tension_deltas(
    sides: Sequence[tuple[str, str]],
    incoming: Sequence[Edge],
    reply: np.ndarray,
    vectors: Mapping[str, np.ndarray],
    *,
    strengthen_rate: float,
    weaken_rate: float,
) -> dict[EdgeKey, float]:
    """For each ``(agreed, other)`` tension side, raise the edges arriving at ``agreed`` by
    ``strengthen_rate x cosine(reply, agreed)`` (at least a tenth of the rate) and lower those
    arriving at ``other`` by ``weaken_rate``; ``incoming`` holds the candidate edges."""
    deltas: dict[EdgeKey, float] = {}
    by_dst: dict[str, list[Edge]] = {}
    for e in incoming:
        by_dst.setdefault(e.dst, []).append(e)
    for agreed, other in sides:
        cos = float(vectors[agreed] @ reply) if agreed in vectors else 0.0
        amount = strengthen_rate * max(cos, 0.1)
        for e in by_dst.get(agreed, []):
            key = (e.src, e.dst, e.kind)
            deltas[key] = max(deltas.get(key, 0.0), amount)
        for e in by_dst.get(other, []):
            deltas[(e.src, e.dst, e.kind)] = -weaken_rate
    return deltas
