"""Learning-rate management (seed 002): decay by age, shrinkage, a bounded total adjustment.

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
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Adjustment", "Signal", "aggregate", "context_match", "decay"]

_DAY = 86_400.0


@dataclass(frozen=True)
class Signal:
    """One piece of evidence about a memory."""

    value: float  # in [-1, 1]
    weight: float  # >= 0, before decay
    created_at: float  # epoch seconds
    source: str  # "rating", "decision", "review", "pair", "rejected_output", "reply", ...
    corroborated: float = 0.0  # in [0, 1]: how far an independent signal of the same event agrees


@dataclass
class Adjustment:
    """The aggregated effect of a memory's signals on its score."""

    value: float = 0.0  # in [-max_adjustment, max_adjustment]; score × (1 + value)
    evidence: float = 0.0  # sum of decayed weights
    mean: float = 0.0  # shrunk mean in [-1, 1]
    by_source: dict[str, float] = field(default_factory=dict)  # share of ``value`` per source


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
) -> Adjustment:
    """Combine signals into one bounded adjustment (see the module docstring)."""
    total = 0.0
    weight = 0.0
    agreeing = 0.0
    per_source: dict[str, float] = {}
    for s in signals:
        if s.weight <= 0:
            continue
        w = s.weight * decay(now - s.created_at, half_life_days)
        v = max(-1.0, min(1.0, s.value))
        total += w * v
        weight += w
        agreeing += w * max(0.0, min(1.0, s.corroborated))
        per_source[s.source] = per_source.get(s.source, 0.0) + w * v
    if weight == 0.0:
        return Adjustment()
    denominator = weight + min_samples / (1.0 + agreeing)
    mean = total / denominator
    value = max(-max_adjustment, min(max_adjustment, max_adjustment * mean))
    return Adjustment(
        value=value,
        evidence=weight,
        mean=mean,
        by_source={k: max_adjustment * v / denominator for k, v in per_source.items()},
    )
