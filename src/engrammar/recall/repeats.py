"""One place for a text said several times (pure functions, no I/O).

The same message often reaches a store more than once: a transcript imported again, a
conversation that starts with the same pasted request, a user who repeats what they told the
agent last week. Ingest keeps one copy per conversation (a repeat elsewhere is a separate
event); recall, though, showed every copy, each taking a place in the list and a share of the
budget of ``formatted`` to say nothing new, and the graph's ``similar`` edges between the
copies lifted the older ones above the newest.

Recall now shows such a text once, at the best place any copy earned, as its newest copy (what
the user said last is what holds now; it carries the component ``repeats``, the number of
copies left out).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["collapse_repeats", "repeat_key"]

_SPACE = re.compile(r"\s+")


def repeat_key(content: str) -> str:
    """What two texts share when they say the same: case and runs of white space aside."""
    return _SPACE.sub(" ", content).strip().casefold()


def collapse_repeats(
    items: Sequence[tuple[str, str, float]],
) -> tuple[list[str], dict[str, int]]:
    """``items`` are ``(id, content, said_at)`` best first. Returns the ids to show, best
    first: one per text (by :func:`repeat_key`), the newest copy (latest ``said_at``; the
    better ranked of equally dated ones) in the place of the best ranked copy; and how many
    other copies each id shown stands for (only ids that stand for some)."""
    newest: dict[str, tuple[float, int]] = {}
    keys = []
    for position, (_id, content, said_at) in enumerate(items):
        key = repeat_key(content)
        keys.append(key)
        seen = newest.get(key)
        if seen is None or said_at > seen[0]:
            newest[key] = (said_at, position)
    copies: dict[str, int] = {}
    for key in keys:
        copies[key] = copies.get(key, 0) + 1
    order: list[str] = []
    repeats: dict[str, int] = {}
    shown: set[str] = set()
    for key in keys:
        if key in shown:
            continue
        shown.add(key)
        memory_id = items[newest[key][1]][0]
        order.append(memory_id)
        if copies[key] > 1:
            repeats[memory_id] = copies[key] - 1
    return order, repeats
