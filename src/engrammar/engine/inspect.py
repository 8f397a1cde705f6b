"""The reads of the web inspector (``/ui``), over an :class:`Engine`: no principal.

Who may see what is decided before these are called (the REST layer resolves the API key's
workspace and user into the scope, and checks that a memory asked for is within reach); here
every argument is checked as JSON gives it, each error naming its field.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Sequence
from typing import Any

from ..errors import NotFoundError, ValidationError
from ..learn.rates import Signal, aggregate
from ..learn.scoring import VERDICT_VALUE
from ..models import (
    KINDS,
    RECORD_KINDS,
    ROLES,
    LearningPoint,
    MemoryLearning,
    MemoryList,
    MemoryRecord,
    Neighbourhood,
    RankShift,
    RankShifts,
    Scope,
    ScopeList,
    SignalGiven,
    TensionRating,
    TensionRow,
    Tensions,
    Timeline,
    TimelineItem,
)
from ..store import MemoryFilter
from . import ranking
from . import validate as v
from .base import Engine, in_scope

__all__ = ["TIMELINE_TYPES", "Inspector"]

#: What the learning timeline lists, by the record kinds of the store.
TIMELINE_TYPES = {kind: kind for kind in RECORD_KINDS}
_MAX_PAGE = 10_000
#: Rank shifts re-rank each touched memory with ``explain``; at most this many per request.
_MAX_EXPLAINS = 30


def _time_arg(name: str, value: Any) -> float | None:
    """Epoch seconds from a number, a numeric string (a query parameter) or ISO-8601 text."""
    if isinstance(value, str):
        if len(value) > 64:
            raise ValidationError(name, "must be at most 64 characters")
        with contextlib.suppress(ValueError):
            value = float(value)
    return v.timestamp(name, value)


def _int_arg(name: str, value: Any, default: int, maximum: int) -> int:
    return v.positive_int(name, default if value is None else value, maximum=maximum)


class Inspector:
    """Reads for the inspector over one store: scopes with counts, filtered memory pages, a
    memory's graph neighbourhood with its weight history, learning timelines, rank shifts and
    tensions. Scopes come resolved (the caller decides who may see what); arguments come as
    JSON gives them and are checked here, each error naming its field.

    Args:
        engine: the store, embedder and settings (rank shifts re-rank with ``explain``).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store = engine.store
        self.config = engine.config

    # -- scopes and memories ------------------------------------------------------------------
    def scopes(self, scope: Scope, limit: Any = None) -> ScopeList:
        """One row per distinct (user_id, agent_id, session_id) within ``scope``."""
        limit = _int_arg("limit", limit, 2_000, _MAX_PAGE)
        rows = self.store.scope_counts(scope, limit + 1)
        return {
            "workspace": scope.workspace,
            "scopes": [
                {
                    "user_id": u,
                    "agent_id": a,
                    "session_id": s,
                    "memories": n,
                }
                for u, a, s, n in rows[:limit]
            ],
            "truncated": len(rows) > limit,
        }

    def find_memories(
        self,
        scope: Scope,
        *,
        limit: Any = 100,
        offset: Any = 0,
        kind: Any = None,
        role: Any = None,
        status: Any = None,
        since: Any = None,
        until: Any = None,
        text: Any = None,
        order: Any = None,
    ) -> MemoryList:
        """A page of a scope's memories with the list filters, and how many match in all."""
        limit = v.positive_int("limit", limit, maximum=_MAX_PAGE)
        offset = v.non_negative_int("offset", offset)
        where = MemoryFilter(
            kind=None if kind is None else v.choice("kind", kind, KINDS),
            role=None if role is None else v.choice("role", role, ROLES),
            status=None if status is None else v.scope_id("status", status),
            since=_time_arg("since", since),
            until=_time_arg("until", until),
            text=None if text is None else v.text("text", text, 1_000),
            newest_first=v.choice("order", order or "oldest", ("oldest", "newest")) == "newest",
        )
        records, total = self.store.find_memories(scope, where, limit, offset)
        return {"memories": [r.to_dict() for r in records], "total": total}

    # -- graph --------------------------------------------------------------------------------
    def memory_edges(
        self,
        center: MemoryRecord,
        *,
        depth: Any = None,
        limit: Any = None,
        only_user: str | None = None,
    ) -> Neighbourhood:
        """The neighbourhood of a memory: its edges (both directions) out to ``depth`` hops,
        the memories at their ends (of ``only_user`` only, when given), and every weight change
        feedback made to those edges."""
        ws = center.workspace
        depth = _int_arg("depth", depth, 1, 2)
        limit = _int_arg("limit", limit, 200, 1_000)
        bound = only_user
        nodes: dict[str, MemoryRecord] = {center.id: center}
        edges: dict[tuple[str, str, str], Any] = {}
        frontier = [center.id]
        for _ in range(depth):
            found = [
                *self.store.edges_from(ws, frontier),
                *self.store.edges_to(ws, frontier),
            ]
            found.sort(key=lambda e: (-e.weight, e.src, e.dst, e.kind))
            ends = {e.src for e in found} | {e.dst for e in found}
            records = self.store.get_memories(ws, sorted(ends - set(nodes)))
            # A key bound to a user sees the edges to that user's memories only.
            visible = {i: r for i, r in records.items() if bound is None or r.user_id == bound}
            nodes.update(visible)
            frontier = []
            for e in found:
                if len(edges) >= limit:
                    break
                key = (e.src, e.dst, e.kind)
                if e.src in nodes and e.dst in nodes and key not in edges:
                    edges[key] = e
                    frontier += [n for n in (e.src, e.dst) if n in visible]
            frontier = sorted(set(frontier))
            if not frontier:
                break
        kept = {n for e in edges.values() for n in (e.src, e.dst)} | {center.id}
        changes = [
            c
            for c in self.store.edge_changes(ws, sorted(kept), 5_000)
            if (c["src"], c["dst"], c["kind"]) in edges
        ]
        return {
            "memory_id": center.id,
            "depth": depth,
            "nodes": [nodes[n].to_dict() for n in sorted(kept, key=lambda n: n != center.id)],
            "edges": [e.to_dict() for e in edges.values()],
            "changes": changes,
        }

    # -- learning -----------------------------------------------------------------------------
    def timeline(self, scope: Scope, limit: Any = None) -> Timeline:
        """The newest feedback of a scope, every kind on one time line, newest first."""
        limit = _int_arg("limit", limit, 200, 2_000)
        store = self.store
        counts = store.stats(scope)["feedback_records"]
        items: list[TimelineItem] = []
        for kind in TIMELINE_TYPES:
            narrowed = (
                Scope(scope.workspace, scope.user_id, scope.agent_id)
                if kind == "decision_review"
                else scope
            )
            total = int(counts.get(kind, 0))
            if not total:
                continue
            records = store.list_feedback_records(kind, narrowed, limit, max(0, total - limit))
            for record in records:
                data = record.to_dict()
                items.append(
                    {
                        "type": kind,
                        "id": data["id"],
                        "at": data["created_at"],
                        "user_id": data.get("user_id"),
                        "agent_id": data.get("agent_id"),
                        "session_id": data.get("session_id"),
                        "record": data,
                    }
                )
        replies = store.reply_signal_rows(scope, None, limit)
        for row in replies:
            items.append(
                {
                    "type": "reply_signal",
                    "id": f"{row['recall_id']}:{row['memory_id']}",
                    "at": row["created_at"],
                    "user_id": row["user_id"],
                    "agent_id": row["agent_id"],
                    "session_id": row["session_id"],
                    "record": row,
                }
            )
        items.sort(key=lambda i: (-i["at"], i["type"], i["id"]))
        # Reply signals are counted as far as they were read (at most ``limit``).
        return {"items": items[:limit], "counts": {**counts, "reply_signal": len(replies)}}

    def memory_learning(self, record: MemoryRecord) -> MemoryLearning:
        """The signals feedback left on one memory and its learned multiplier after each;
        ``given_by`` is each signal's source (see docs/learning.md), ``id`` the record to undo.

        The multiplier is ``1 + adjustment`` for a query that fully matches the signals'
        contexts (ratings without a context match every query), computed with the store's
        learning settings as of each signal's time; feedback events act through the texts
        of their outputs and are not part of it.
        """
        ws = record.workspace
        scope = Scope(ws, record.user_id)
        cfg = self.config
        _, pairs, ratings = self.store.learning_facts(scope, [record.id])
        signals: list[tuple[Signal, SignalGiven]] = []
        for r in ratings:
            if r.memory_id != record.id:
                continue
            value = VERDICT_VALUE.get(r.verdict, 0.0)
            signals.append(
                (
                    Signal(value, r.weight, r.created_at, "rating", origin=r.source),
                    {
                        "source": "rating",
                        "id": r.rating_id,
                        "verdict": r.verdict,
                        "given_by": r.source,
                    },
                )
            )
        for p in pairs:
            if p.memory_id == record.id:
                signals.append(
                    (
                        Signal(1.0, p.weight, p.created_at, "pair", origin=p.source),
                        {
                            "source": "pair",
                            "id": p.pair_id,
                            "verdict": "accepted",
                            "given_by": p.source,
                        },
                    )
                )
        for row in self.store.reply_signal_rows(Scope(ws), record.id, cfg.feedback_records_limit):
            signals.append(
                (
                    Signal(
                        row["value"],
                        cfg.feedback_reply_weight,
                        row["created_at"],
                        "reply",
                        origin=row["source"],
                    ),
                    {
                        "source": "reply",
                        "id": row["recall_id"],
                        "verdict": "drawn_on" if row["value"] > 0 else "left",
                        "given_by": row["source"],
                    },
                )
            )
        signals.sort(key=lambda s: s[0].created_at)
        points: list[LearningPoint] = []
        for i, (signal, info) in enumerate(signals):
            adj = aggregate(
                [s for s, _ in signals[: i + 1]],
                now=signal.created_at,
                half_life_days=cfg.feedback_half_life_days,
                min_samples=cfg.feedback_min_samples,
                max_adjustment=cfg.feedback_max_adjustment,
                source_window_s=cfg.feedback_source_window_s,
            )
            points.append(
                {
                    **info,
                    "at": signal.created_at,
                    "value": signal.value,
                    "weight": signal.weight,
                    "multiplier": round(1.0 + adj.value, 6),
                }
            )
        return {"memory_id": record.id, "signals": points}

    def rank_shifts(self, scope: Scope, limit: Any = None) -> RankShifts:
        """For the newest recalls that got feedback: each touched memory's rank in that
        recall (before) and its rank for the same query now (after, as ``explain`` ranks it)."""
        limit = _int_arg("limit", limit, 10, 50)
        store = self.store
        # recall_id -> memory_id -> (order, signal): ratings first, then what replies drew
        # on, then what they left out; a rating replaces the reply's word on its memory.
        touched: dict[str, dict[str, tuple[int, float]]] = {}
        for row in store.reply_signal_rows(scope, None, 2_000):
            order = 1 if row["value"] > 0 else 2
            touched.setdefault(row["recall_id"], {})[row["memory_id"]] = (order, row["value"])
        rated: set[tuple[str, str]] = set()
        for recall_id, memory_id, verdict in store.rating_rows(scope, 500):  # newest first
            if (recall_id, memory_id) not in rated:  # a later rating replaces an earlier one
                rated.add((recall_id, memory_id))
                touched.setdefault(recall_id, {})[memory_id] = (0, VERDICT_VALUE.get(verdict, 0.0))
        recalls = []
        for recall_id in touched:
            record = store.get_recall(scope, recall_id)
            if record is not None:
                recalls.append(record)
        recalls.sort(key=lambda r: -r.created_at)
        shifts: list[RankShift] = []
        budget = _MAX_EXPLAINS
        for record in recalls[:limit]:
            # Each rank "now" is an explain: spend the budget on explicit verdicts first.
            ranked = sorted(touched[record.recall_id].items(), key=lambda kv: (kv[1][0], kv[0]))
            wanted = []
            for memory_id, (_, value) in ranked:
                if memory_id in record.memory_ids and budget > 0:
                    budget -= 1
                    wanted.append((memory_id, value))
            if not wanted:
                continue
            here = Scope(scope.workspace, record.user_id, record.agent_id, record.session_id)
            now = self._ranks_now(here, record.query, [m for m, _ in wanted], record.memory_ids)
            for memory_id, value in wanted:
                if memory_id not in now:
                    continue  # forgotten since, or out of the scope asked for
                shifts.append(
                    {
                        "recall_id": record.recall_id,
                        "query": record.query,
                        "recalled_at": record.created_at,
                        "memory_id": memory_id,
                        "signal": value,
                        "rank_before": record.memory_ids.index(memory_id) + 1,
                        "rank_after": now[memory_id],
                    }
                )
        return {"shifts": shifts}

    def _ranks_now(
        self, scope: Scope, query: str, memory_ids: Sequence[str], recalled: Sequence[str]
    ) -> dict[str, int | None]:
        """Each memory's rank for ``query`` now, as ``explain`` gives it (memories forgotten
        or out of ``scope`` left out). One ranking serves every memory it holds: where a
        memory is in the list anyway, ``explain``'s focus on it changes nothing, and one the
        cut left below the list is what ``explain`` puts right after it; only those that are
        no candidate at all are explained one by one."""
        engine, limit = self.engine, len(recalled)
        records = engine.store.get_memories(scope.workspace, list(memory_ids))
        ids = [m for m in memory_ids if m in records and in_scope(records[m], scope)]
        if not ids:
            return {}
        with ranking.session(engine, query, whole=False):
            listed = ranking.rank(engine, scope, ranking.query_at(query, None),
                                  engine.config.ranking, limit)  # fmt: skip
        at = {e.id: k for k, e in enumerate(listed.items, 1)}
        out: dict[str, int | None] = {}
        for memory_id in ids:
            if memory_id in at:
                out[memory_id] = at[memory_id]
                continue
            if memory_id in listed.beyond:
                out[memory_id] = len(listed.items) + 1
                continue
            with contextlib.suppress(NotFoundError, ValidationError):
                out[memory_id] = ranking.explain(engine, scope, query, memory_id, limit)["rank"]
        return out

    # -- tensions -----------------------------------------------------------------------------
    def tensions(self, scope: Scope, limit: Any = None) -> Tensions:
        """Contradictions found between the scope's memories (``contradicts`` edges, judged
        again for kind, reason and which side is newer), with the ratings each side has had."""
        limit = _int_arg("limit", limit, 100, 1_000)
        store = self.store
        edges = store.scope_edges(scope, "contradicts", limit * 2)
        pairs: list[tuple[str, str]] = []
        for e in edges:
            pair = (min(e.src, e.dst), max(e.src, e.dst))
            if pair not in pairs:
                pairs.append(pair)
        pairs = pairs[:limit]
        ids = sorted({i for p in pairs for i in p})
        records = store.get_memories(scope.workspace, ids)
        judged = {
            (min(t.a, t.b), max(t.a, t.b)): t
            for t in ranking.recall_tensions(self.engine, scope.workspace, _in_order(records, ids))
        }
        _, _, ratings = store.learning_facts(scope, ids)
        by_memory: dict[str, builtins.list[TensionRating]] = {}
        for r in sorted(ratings, key=lambda r: r.created_at):
            by_memory.setdefault(r.memory_id, []).append(
                {"rating_id": r.rating_id, "verdict": r.verdict, "at": r.created_at}
            )
        out: list[TensionRow] = []
        for a, b in pairs:
            if a not in records or b not in records:
                continue
            t = judged.get((a, b))
            newer = t.newer if t is not None else None
            if newer is None:
                newer = a if records[a].created_at >= records[b].created_at else b
            out.append(
                {
                    "a": records[a].to_dict(),
                    "b": records[b].to_dict(),
                    "kind": t.kind if t is not None else "contradicts",
                    "confidence": t.confidence if t is not None else None,
                    "reason": t.reason if t is not None else "",
                    "newer": newer,
                    "ratings": {a: by_memory.get(a, []), b: by_memory.get(b, [])},
                }
            )
        return {"tensions": out}


def _in_order(records: dict[str, MemoryRecord], ids: Sequence[str]) -> list[MemoryRecord]:
    return [records[i] for i in ids if i in records]
