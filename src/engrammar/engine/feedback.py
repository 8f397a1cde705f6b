"""Learning from the LLM's reply to a recall (the MemWire feedback loop).

The reply is aligned with each path of the recall (``learn.alignment``): well-aligned paths
have their edges raised, poorly aligned ones lowered; for each tension of the recall the side
the reply agreed with is strengthened (``recall.tensions.agreed_side``). The reply also leaves
signals for the learned ranking: the memories it drew on (+1) and the recalled ones it left
(-1), tied to the recall's query. Everything is written in one transaction that also marks the
recall consumed, so a recall learns from one reply only.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import NotFoundError
from ..learn.alignment import alignment_deltas, tension_deltas
from ..models import FeedbackResult, Scope, TakenSide
from ..recall.tensions import agreed_side
from ..store import EdgeAdjustment, EdgeBounds, EdgeDelta, RecallRecord, ReplySignal, read_ahead
from .base import Engine, reading
from .ranking import candidates, query_at, vector_text

__all__ = ["apply_feedback", "drawn_on", "reply_signals"]


def apply_feedback(
    engine: Engine, scope: Scope, reply: str, recall_id: str | None, source: str | None = None
) -> FeedbackResult:
    """The MemWire rule on the scope's newest recall (or ``recall_id``), once; and
    the reply's signals on memories (what it drew on, what it left) for the learned ranking."""
    # One read session (without a graph walk): what two steps both read is read once.
    with reading(engine.store, neighbourhood=False):
        return _apply(engine, scope, reply, recall_id, source)


def _apply(
    engine: Engine, scope: Scope, reply: str, recall_id: str | None, source: str | None
) -> FeedbackResult:
    store, config = engine.store, engine.config
    embedded: list[np.ndarray] = []

    def reply_vector() -> np.ndarray:
        if not embedded:
            embedded.append(engine.embed_one(reply))
        return embedded[0]

    # The reply's searches (``drawn_on``, in the recall's scope, usually this one) travel
    # with the recall's read on a server store, which embeds the reply while the server
    # answers.
    ahead = read_ahead(store)
    if ahead is not None and config.feedback_reply_weight != 0 and config.feedback_reply_top > 0:
        ahead.reply_ahead(scope, reply, reply_vector, config.candidate_pool)
    record = store.get_recall(scope, recall_id)
    reply_vec = reply_vector()
    if record is None:
        if recall_id is not None:
            raise NotFoundError(f"recall {recall_id!r} not found in this scope")
        return _nothing(None, "no recall in this scope to act on; nothing changed")
    refused = _refused(record, recall_id is None, config.feedback_recall_window_s)
    if refused is not None:
        return _nothing(record, refused)
    tensions = record.tensions
    nodes = {n for p in record.paths for n in p["nodes"]}
    nodes |= {t["a"] for t in tensions} | {t["b"] for t in tensions}
    # The recalled memories' vectors too: the reply's signals weigh the ones it left.
    read = store.vectors(record.workspace, sorted(nodes | set(record.memory_ids)))
    vectors = {i: v for i, v in read.items() if i in nodes}
    deltas, report = alignment_deltas(
        record.paths,
        vectors,
        reply_vec,
        strengthen_rate=config.feedback_strengthen_rate,
        weaken_rate=config.feedback_weaken_rate,
        align_strengthen=config.feedback_align_strengthen,
        align_weaken=config.feedback_align_weaken,
    )
    resolved: list[TakenSide] = []
    if tensions:
        sides = _tension_sides(engine, record.workspace, tensions, reply, reply_vec, vectors)
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
    signals = reply_signals(engine, record, reply, reply_vec, source)
    changed = store.adjust_edges(
        record.workspace,
        EdgeAdjustment(
            [EdgeDelta(src, dst, kind, d) for (src, dst, kind), d in sorted(deltas.items()) if d],
            EdgeBounds(config.edge_weight_min, config.edge_weight_max),
            consume_recall=record.recall_id,
            reply_signals=signals,
        ),
    )
    if changed is None:  # another reply consumed it in the meantime
        return _nothing(record, _refused(record, False, 0) or "")
    up = sum(1 for e in changed if deltas.get((e.src, e.dst, e.kind), 0) > 0)
    down = sum(1 for e in changed if deltas.get((e.src, e.dst, e.kind), 0) < 0)
    out: FeedbackResult = {
        "strengthened": up,
        "weakened": down,
        "recall_id": record.recall_id,
        "query": record.query,
        "consumed": True,
        "paths": [{"nodes": p.nodes, "alignment": p.alignment, "action": p.action} for p in report],
        "tensions": resolved,
        "drawn_on": [r.memory_id for r in signals if r.value > 0],
        "left": [r.memory_id for r in signals if r.value < 0],
    }
    if not record.paths and not resolved:
        out["message"] = (
            f"the recall had no graph paths, so no link changed; {_learned_summary(out)}"
        )
    return out


def _learned_summary(out: FeedbackResult) -> str:
    """What the reply taught the learned ranking (see ``reply_signals``)."""
    up, down = len(out.get("drawn_on", [])), len(out.get("left", []))
    return (
        f"learned from the reply: up for {up} {'memory' if up == 1 else 'memories'} it drew "
        f"on, down for {down} it left"
    )


def drawn_on(
    engine: Engine, scope: Scope, reply: str, reply_vec: np.ndarray
) -> list[tuple[str, float]]:
    """The memories a reply drew on: its best hybrid matches in the recall's scope, as
    (id, cosine with the reply), at most ``feedback_reply_top``."""
    top = engine.config.feedback_reply_top
    if top == 0:
        return []
    ranked = candidates(engine, scope, query_at(reply, None), engine.config.ranking, reply_vec)
    ids = [c.id for c in ranked[:top]]
    vecs = engine.store.vectors(scope.workspace, ids)
    return [(i, float(vecs[i] @ reply_vec)) for i in ids if i in vecs]


def reply_signals(
    engine: Engine,
    record: RecallRecord,
    reply: str,
    reply_vec: np.ndarray,
    source: str | None = None,
) -> list[ReplySignal]:
    """What the reply says about memories, for the learned ranking (``learn.scoring``): +1 for
    each memory it drew on (its best matches in the recall's scope, aligned at least
    ``feedback_align_weaken``), -1 for each recalled memory it did not draw on. Tied to the
    recall's query as context, so they count for similar queries only."""
    config = engine.config
    if config.feedback_reply_weight == 0:
        return []
    scope = Scope(record.workspace, record.user_id, record.agent_id, record.session_id)
    used = {
        m: a
        for m, a in drawn_on(engine, scope, reply, reply_vec)
        if a >= config.feedback_align_weaken
    }
    recalled = [m for m in record.memory_ids if m not in used]
    vectors = engine.store.vectors(record.workspace, recalled)
    context = engine.embed_one(vector_text(record.query, config.ranking))
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
            source,
        )

    out = [signal(m, 1.0, a) for m, a in used.items()]
    out += [signal(m, -1.0, float(vectors[m] @ reply_vec)) for m in recalled if m in vectors]
    return out


def _refused(record: RecallRecord, newest: bool, window_s: float) -> str | None:
    """Why a reply may not act on ``record`` (``newest``: it was not named, but taken as the
    scope's newest recall), or ``None``."""
    query = record.query if len(record.query) <= 60 else record.query[:59] + "…"
    named = f"recall {record.recall_id} ({query!r})"
    if record.consumed_at is not None:
        if not newest:
            return f"{named} already received feedback; nothing changed"
        return (
            f"the newest recall of this scope, {named}, already received feedback; nothing "
            "changed (recall again first, or pass recall_id to act on an earlier recall)"
        )
    age = time.time() - record.created_at
    if newest and window_s and age > window_s:
        return (
            f"the newest recall of this scope, {named}, was made {_ago(age)} ago, more than "
            f"feedback_recall_window_s ({window_s:g} s); nothing changed (pass recall_id to act "
            "on it)"
        )
    return None


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} minutes"
    if seconds < 172_800:
        return f"{seconds / 3600:.0f} hours"
    return f"{seconds / 86_400:.0f} days"


def _nothing(record: RecallRecord | None, message: str) -> FeedbackResult:
    return {
        "strengthened": 0,
        "weakened": 0,
        "recall_id": None if record is None else record.recall_id,
        "query": None if record is None else record.query,
        "consumed": False,
        "message": message,
    }


def _tension_sides(
    engine: Engine,
    workspace: str,
    tensions: Sequence[dict[str, Any]],
    reply: str,
    reply_vec: np.ndarray,
    vectors: dict[str, np.ndarray],
) -> list[tuple[str, str]]:
    """For each tension the reply took a side in: (the side it agreed with, the other)."""
    ids = sorted({t["a"] for t in tensions} | {t["b"] for t in tensions})
    records = engine.store.get_memories(workspace, ids)
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
