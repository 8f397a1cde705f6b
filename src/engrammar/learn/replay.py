"""Taking a reply's edge changes back exactly: replay the edge's log without them.

Subtracting what a change moved is not exact: clamping to ``[edge_weight_min,
edge_weight_max]`` makes later changes depend on earlier ones (a +0.1 that met the ceiling
moved nothing, and moves something once the change that lifted the weight there is gone). So
an undo starts from the weight the edge had before the first undone change and replays every
later logged delta, clamped, as :meth:`~engrammar.store.base.Store.adjust_edges` applied it.
The result is the weight the edge would have had if the undone changes had never been made,
and the log's later rows are rewritten to that history (so undoing another record afterwards
is exact too).

The only other writer of an edge's weight is ingest, which raises it to at least a new
link's weight (``max(weight, base)``). A logged ``before`` above the previous row's ``weight``
shows such a raise, and the replay applies it the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LoggedChange", "replay_edge"]


@dataclass(frozen=True)
class LoggedChange:
    """One row of an edge's ``edge_changes`` log, oldest first."""

    seq: int
    delta: float  # as asked, before clamping
    before: float | None  # the weight before (None in rows logged before it was kept)
    weight: float  # the weight after
    undone: bool  # whether this change is being taken back


def _clamp(value: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, value))


def replay_edge(
    rows: Sequence[LoggedChange], current: float, lo: float, hi: float
) -> tuple[float, list[tuple[int, float, float]]]:
    """The edge's weight without the ``undone`` rows, and the kept rows after the first undone
    one rewritten as ``(seq, before, weight)``. ``current`` is the edge's weight now."""
    first = next((i for i, r in enumerate(rows) if r.undone), None)
    if first is None:
        return current, []
    previous: float | None = rows[first - 1].weight if first else None

    def logged_before(i: int) -> float:
        row = rows[i]
        if row.before is not None:
            return row.before
        if i:
            return rows[i - 1].weight
        return row.weight - row.delta  # an unclamped first change; exact in all other cases

    weight = logged_before(first)
    rewritten: list[tuple[int, float, float]] = []
    for i in range(first, len(rows)):
        row = rows[i]
        seen = logged_before(i)
        if previous is not None and seen > previous:
            weight = max(weight, seen)  # ingest raised the edge between two changes
        previous = row.weight
        if row.undone:
            continue
        start = weight
        weight = _clamp(weight + row.delta, lo, hi)
        rewritten.append((row.seq, start, weight))
    if previous is not None and current > previous:
        weight = max(weight, current)
    return weight, rewritten
