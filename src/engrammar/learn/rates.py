"""Learning-rate management: decay by age, shrinkage, a bounded total adjustment.

A memory's learned adjustment is built from signals, each a value in [-1, 1] (+1 "this helped",
-1 "this was wrong") with a weight (how much the signal counts, already scaled by how well its
context matches the current query). Three rules keep one outlier from reshaping a ranking while
a sustained pattern does:

* **Decay.** A signal's weight halves every ``half_life_days``.
* **Shrinkage.** The mean is taken as ``sum(w·v) / (sum(w) + min_samples)``: a prior of
  ``min_samples`` neutral signals. One fresh signal reaches ``1 / (1 + min_samples)`` of the full
  effect, ``min_samples`` consistent signals half of it, many consistent signals nearly all.
* **Consistency.** Signals corroborated by an independent one about the same event (a rating
  and the reply of the same recall saying the same) are consistent samples: the prior becomes
  ``min_samples / (1 + corroborated weight)``, so a rating the reply confirms applies with
  more of its effect (two agreeing signals reach 2/3 with ``min_samples`` = 3, not 2/5), while
  a lone outlier still reaches only ``1 / (1 + min_samples)``.
* **Bound.** The adjustment is ``max_adjustment × mean``, so a score moves by at most
  ``± max_adjustment`` of itself, whatever the number or weight of signals.
* **One voice per source and burst.** Signals carry their *origin* (who gave them: an API key,
  an agent; ``None`` is the unattributed local caller). Within each ``source_window_s`` (a
  fixed grid of windows), one origin's signals of one kind on one memory count together as
  much as the heaviest of them alone: a source flooding a memory with a thousand ratings in a
  minute weighs what one rating weighs. A sustained pattern, spread over time, still adds up.

Every signal's share of the adjustment is kept (``by_record``, ``by_origin``): the shares of a
memory's signals add up to its adjustment, so ``explain`` can say what each record and each
source contributes now (after decay).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..models import LearnedRecord, LearnedSource

__all__ = ["Adjustment", "Signal", "aggregate", "context_match", "decay", "learned_records"]

_DAY = 86_400.0


@dataclass(frozen=True)
class Signal:
    """One piece of evidence about a memory."""

    value: float  # in [-1, 1]
    weight: float  # >= 0, before decay
    created_at: float  # epoch seconds
    source: str  # "rating", "decision", "review", "pair", "rejected_output", "reply", ...
    corroborated: float = 0.0  # in [0, 1]: how far an independent signal of the same event agrees
    record: str | None = None  # the id of the feedback record that gave it
    origin: str | None = None  # who gave it (an API key, an agent); None: unattributed


@dataclass
class Adjustment:
    """The aggregated effect of a memory's signals on its score."""

    value: float = 0.0  # in [-max_adjustment, max_adjustment]; score × (1 + value)
    evidence: float = 0.0  # sum of decayed weights
    mean: float = 0.0  # shrunk mean in [-1, 1]
    by_source: dict[str, float] = field(default_factory=dict)  # share of ``value`` per source
    by_record: dict[str, float] = field(default_factory=dict)  # share of ``value`` per record
    by_origin: dict[str | None, float] = field(default_factory=dict)  # share per origin
    record_info: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # kind, origin
    # How far each origin's placement (an accepted rating's or a reply's anchor, see
    # ``learn.scoring``) lifted the memory's relevance: the factor above 1 (0.3 = +30 %).
    placed_by: dict[str | None, float] = field(default_factory=dict)


def decay(age_seconds: float, half_life_days: float) -> float:
    """Weight factor of a signal ``age_seconds`` old: 1 when fresh, 0.5 at one half-life."""
    if age_seconds <= 0:
        return 1.0
    return math.pow(0.5, age_seconds / (half_life_days * _DAY))


def context_match(cosine: float, lo: float, full: float) -> float:
    """How much a past context applies to the current query: 0 below ``lo``, 1 from ``full``."""
    if cosine <= lo:
        return 0.0
    if cosine >= full:
        return 1.0
    return (cosine - lo) / (full - lo)


def aggregate(
    signals: Iterable[Signal],
    *,
    now: float,
    half_life_days: float,
    min_samples: float,
    max_adjustment: float,
    source_window_s: float = 0.0,
) -> Adjustment:
    """Combine signals into one bounded adjustment (see the module docstring)."""
    kept = [s for s in signals if s.weight > 0]
    decayed = [s.weight * decay(now - s.created_at, half_life_days) for s in kept]
    if source_window_s > 0:
        # One voice per (origin, kind, window): the group weighs what its heaviest signal does.
        groups: dict[tuple[str | None, str, int], list[int]] = {}
        for i, s in enumerate(kept):
            key = (s.origin, s.source, math.floor(s.created_at / source_window_s))
            groups.setdefault(key, []).append(i)
        for members in groups.values():
            if len(members) > 1:
                total_w = sum(decayed[i] for i in members)
                top = max(decayed[i] for i in members)
                if total_w > top:
                    for i in members:
                        decayed[i] *= top / total_w
    total = 0.0
    weight = 0.0
    agreeing = 0.0
    per_source: dict[str, float] = {}
    per_record: dict[str, float] = {}
    per_origin: dict[str | None, float] = {}
    info: dict[str, tuple[str, str | None]] = {}
    for s, w in zip(kept, decayed, strict=True):
        v = max(-1.0, min(1.0, s.value))
        total += w * v
        weight += w
        agreeing += w * max(0.0, min(1.0, s.corroborated))
        per_source[s.source] = per_source.get(s.source, 0.0) + w * v
        if s.record is not None:
            per_record[s.record] = per_record.get(s.record, 0.0) + w * v
            info.setdefault(s.record, (s.source, s.origin))
        per_origin[s.origin] = per_origin.get(s.origin, 0.0) + w * v
    if weight == 0.0:
        return Adjustment()
    denominator = weight + min_samples / (1.0 + agreeing)
    mean = total / denominator
    value = max(-max_adjustment, min(max_adjustment, max_adjustment * mean))

    def share(part: float) -> float:
        return max_adjustment * part / denominator

    return Adjustment(
        value=value,
        evidence=weight,
        mean=mean,
        by_source={k: share(v) for k, v in per_source.items()},
        by_record={k: share(v) for k, v in per_record.items()},
        by_origin={k: share(v) for k, v in per_origin.items()},
        record_info=info,
    )


def learned_records(
    adjustment: Adjustment | None,
) -> tuple[list[LearnedRecord], list[LearnedSource]]:
    """The records that moved a memory and the sources they came from, each with its share
    of the adjustment now (after decay), largest first (``explain``'s ``records`` and
    ``sources``); a source whose acceptance or reply placed the memory among a question's
    best also has its ``placement`` (how far it lifted the relevance: 0.3 = +30 %)."""
    if adjustment is None:
        return [], []
    records: list[LearnedRecord] = [
        {
            "record_id": record,
            "signal": adjustment.record_info[record][0],
            "source": adjustment.record_info[record][1],
            "contribution": round(share, 6),
        }
        for record, share in sorted(adjustment.by_record.items(), key=lambda kv: -abs(kv[1]))
    ]
    sources: list[LearnedSource] = []
    placed = adjustment.placed_by
    by_origin = sorted(adjustment.by_origin.items(), key=lambda kv: -abs(kv[1]))
    for origin, share in [*by_origin, *((o, 0.0) for o in placed if o not in adjustment.by_origin)]:
        row: LearnedSource = {"source": origin, "contribution": round(share, 6)}
        if placed.get(origin):
            row["placement"] = round(placed[origin], 6)
        sources.append(row)
    return records, sources
