"""The ranking's weights in one object: :class:`RankingProfile`.

A profile is what ranking decides with; ``Config.ranking`` holds the default one and any call
of ``recall``, ``search`` or ``explain`` may pass its own (``profile=``). Every weight says
what it does; the measurements behind the defaults are in bench/results/ranking.md.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationError

__all__ = ["RankingProfile"]


def _w(default: Any, doc: str, low: float = 0.0, high: float | None = None) -> Any:
    return field(default=default, metadata={"doc": doc, "low": low, "high": high})


@dataclass(frozen=True)
class RankingProfile:
    """The weights of each ranking stage (see docs/recall.md, "How recall ranks")."""

    keyword_weight: float = _w(
        0.45,
        "Share of the full-text (BM25) score in a candidate's relevance; the rest is its best "
        "vector match (the message's own vector or one of its windows). Each score is first "
        "divided by the best of its list.",
        high=1.0,
    )
    session_weight: float = _w(
        0.2,
        "Relevance + this x the best relevance of any candidate of the same session: the "
        "turns of a conversation that matches the query strongly rise together. 0 = off.",
    )
    neighbour_weight: float = _w(
        0.0,
        "Relevance + this x (the best adjacent message's relevance - half the memory's own, "
        "never below 0) x the sequence edge's weight: a reply that means little alone gains "
        "from the message it answers. 0 = off.",
    )
    time_weight: float = _w(
        1.0,
        "Relevance x (1 + this) for a memory dated within a few days of the date or period the "
        "query names ('in May 2023', 'two weeks ago'); half that within a month after it.",
    )
    graph_weight: float = _w(
        0.0,
        "Score + this x graph support (a seed's relevance x the edge weights along the best "
        "walk that reaches the memory). 0 (the default) ranks without it; the walks still run, "
        "so recall returns its paths and feedback learns on their edges.",
    )
    graph_depth: int = _w(2, "Hops a walk follows from its seed; 0 switches the graph off.", high=4)
    graph_fanout: int = _w(3, "Strongest edges followed from each node per hop.", low=1)
    graph_seeds: int = _w(5, "Best candidates the walks start from.", low=1)
    graph_min_edge_weight: float = _w(0.2, "Edges weaker than this are not followed.", high=1.0)
    superseded_factor: float = _w(
        0.5,
        "Share of its score a replaced memory keeps for a question about the present (its "
        "score passes to the memory that replaced it); 1 ranks it as if current.",
        high=1.0,
    )
    recency_similarity: float = _w(
        1.0,
        "For a question about the asker's own present, a later memory at least this similar "
        "(cosine) to an earlier one ranked above it moves above it: a restated, updated fact. "
        "1 = off (the default; 0.3 turns it on).",
        high=1.0,
    )
    recency_term_share: float = _w(
        0.75,
        "A later memory restates an earlier one only if it holds at least this share of the "
        "query terms the earlier one holds (a new figure for the same count halves it).",
        high=1.0,
    )
    recency_min_ratio: float = _w(
        0.5,
        "Least share of the earlier memory's score a restatement needs to move above it.",
        high=1.0,
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            name = f"ranking.{f.name}"
            if f.type in ("int", int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValidationError(name, f"must be an integer, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValidationError(name, f"must be a number, got {value!r}")
            elif not math.isfinite(value):
                raise ValidationError(name, f"must be a finite number, got {value!r}")
            low, high = f.metadata["low"], f.metadata["high"]
            if value < low:
                raise ValidationError(name, f"must be >= {low:g}, got {value!r}")
            if high is not None and value > high:
                raise ValidationError(name, f"must be <= {high:g}, got {value!r}")

    @classmethod
    def describe(cls) -> dict[str, tuple[Any, str]]:
        """Every weight with its default and a one-line description."""
        return {f.name: (f.default, f.metadata["doc"]) for f in dataclasses.fields(cls)}

    def replace(self, **changes: Any) -> RankingProfile:
        """A copy with some weights changed (validated like a new profile)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def of(cls, value: Any, name: str = "profile") -> RankingProfile:
        """``value`` as a profile: a profile, a mapping of weights (the rest default), or a
        JSON object; ``None`` is the default profile."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValidationError(name, "must be a JSON object of ranking weights") from None
        if not isinstance(value, dict):
            raise ValidationError(name, f"must be an object of ranking weights, got {value!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValidationError(name, f"unknown ranking weights {unknown}; known: {sorted(known)}")
        ints = {f.name for f in dataclasses.fields(cls) if f.type in ("int", int)}
        fixed = {
            k: (int(v) if k in ints and isinstance(v, float) and v.is_integer() else v)
            for k, v in value.items()
        }
        return cls(**fixed)
