"""What a reply taught an edge counts near the recall it answered.

MemWire's rule (``engine.feedback``) raises the edges of the paths a reply aligned with and
lowers the others, for every later query alike. A reply answers one question, though: after a
round of feedback on one topic many of its edges sit at the ceiling, and every neighbour of a
seed on that topic gains graph support, also for questions the replies never answered.

With ``Config.feedback_edge_context`` the walk reads each edge as its weight before feedback
plus every logged change (``edge_changes``, after clamping) times how well the query matches
the query of the recall whose reply made it: the reply signals' ramp
(``feedback_reply_context_min`` to ``feedback_reply_context_full``), read through
``Store.reply_facts``. The rule itself, its parameters and what it writes are unchanged; the
same question asked again sees the edges as the replies left them, and undoing a reply takes
its changes (and its signals) back, so the reading follows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..learn.rates import context_match
from ..models import Edge, Scope
from ..store import ReplyQuery
from .base import Engine

__all__ = ["EdgeReader", "edge_reader", "reads_edge_parts"]

# The matching recalls read to weigh the changes (as many as the learned ranking reads).
_RECALLS = 200


class EdgeReader:
    """``edges_from`` with each edge's learned part weighed by the query's match with the
    recalls that earned it (see the module)."""

    def __init__(self, engine: Engine, workspace: str, matches: dict[str, float]) -> None:
        self.engine = engine
        self.workspace = workspace
        self.matches = matches
        self._parts: dict[tuple[str, str | None], list[tuple[str, str, str, str | None, float]]]
        self._parts = {}

    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        store, config = self.engine.store, self.engine.config
        offsets = self._offsets(ids, kind)
        if not offsets:
            return store.edges_from(workspace, ids, min_weight, kind)
        out = []
        for e in store.edges_from(workspace, ids, 0.0, kind):
            off = offsets.get((e.src, e.dst, e.kind), 0.0)
            if off:
                weight = min(max(e.weight - off, config.edge_weight_min), config.edge_weight_max)
                e = Edge(e.src, e.dst, e.kind, weight, e.updated_at)
            if e.weight >= min_weight:
                out.append(e)
        return out

    def _offsets(self, ids: Sequence[str], kind: str | None) -> dict[tuple[str, str, str], float]:
        """Per edge leaving ``ids``: the part of its weight that does not count for this
        query (the changes times one less their recall's match)."""
        wanted = [i for i in dict.fromkeys(ids) if (i, kind) not in self._parts]
        if wanted:
            rows = self.engine.store.learned_edge_parts(self.workspace, wanted, kind)
            for i in wanted:
                self._parts[(i, kind)] = []
            for row in rows:
                self._parts[(row[0], kind)].append(row)
        out: dict[tuple[str, str, str], float] = {}
        for i in dict.fromkeys(ids):
            for src, dst, edge_kind, recall_id, applied in self._parts[(i, kind)]:
                # A change without a recall (none is logged so today) counts everywhere.
                share = 1.0 if recall_id is None else self.matches.get(recall_id, 0.0)
                if share < 1.0:
                    key = (src, dst, edge_kind)
                    out[key] = out.get(key, 0.0) + applied * (1.0 - share)
        return {k: v for k, v in out.items() if abs(v) > 1e-12}


def edge_reader(engine: Engine, scope: Scope, qvec: np.ndarray, since: float) -> EdgeReader | None:
    """The reader of edges for one recall, or ``None`` (read the store's weights as they
    are) when the setting is off or the scope has no recall with feedback: then no edge of
    the scope was changed by a reply, and no more is read."""
    config = engine.config
    if not reads_edge_parts(engine):
        return None
    asked = []

    def context() -> np.ndarray:
        asked.append(True)
        return qvec

    facts = engine.store.reply_facts(
        scope, ReplyQuery(context, config.feedback_reply_context_min, since, _RECALLS)
    )
    if not asked:
        return None
    matches: dict[str, float] = {}
    for f in facts:
        if f.recall_id not in matches:
            matches[f.recall_id] = context_match(
                float(qvec @ f.context_vec),
                config.feedback_reply_context_min,
                config.feedback_reply_context_full,
            )
    return EdgeReader(engine, scope.workspace, matches)


def reads_edge_parts(engine: Engine) -> bool:
    """Whether a recall reads what feedback moved its edges by (the setting is on and the
    recall reads edges: it walks the graph or links neighbours), so that the store can read
    it ahead (``LearningAhead.edge_parts``)."""
    config = engine.config
    profile = config.ranking
    return config.feedback_edge_context and (
        profile.graph_depth > 0 or profile.neighbour_weight > 0
    )
