"""The text block recall hands to a system prompt, within a character budget."""

from __future__ import annotations

import re
from functools import lru_cache

from ..models import MemoryRecord, ScoredMemory, Tension, iso
from .repeats import repeat_key

__all__ = ["NOTHING_MATCHED", "format_memories", "pair_choice", "score_breakdown", "score_parts"]


def _quoted(text: str) -> str:
    return '"' + text.replace('"', "'") + '"'


def pair_choice(memory: MemoryRecord) -> str | None:
    """How a preference pair's memory reads: the context and the choice made for it
    (``For "Summarise the incident": prefer "Three bullets" over "An essay"``); ``None`` for
    any other memory. A pair stored before its memory kept the rejected output reads without
    the ``over ...`` part."""
    meta = memory.metadata
    context = meta.get("context")
    if memory.kind != "preference" or "pair_id" not in meta or not isinstance(context, str):
        return None
    text = f"For {_quoted(context)}: prefer {_quoted(memory.content)}"
    rejected = meta.get("rejected_output")
    return f"{text} over {_quoted(rejected)}" if isinstance(rejected, str) else text


_ID = re.compile(r"\b[0-9a-f]{32}\b")


def _readable(note: str, said: dict[str, str]) -> str:
    """A note with the memory ids it names ("replaces <id>") as what those memories say, or
    as "a memory not shown" when the block does not hold them: an id means nothing to a
    model reading the block."""

    def named(found: re.Match[str]) -> str:
        content = said.get(found.group(0))
        if content is None:
            return "a memory not shown"
        short = " ".join(content.split())
        return _quoted(short if len(short) <= 60 else short[:59] + "…")

    return _ID.sub(named, note)


@lru_cache(maxsize=4096)
def _day(created_at: float) -> str:
    """The day (UTC, ``YYYY-MM-DD``) of ``created_at``, or "date unknown"; kept for the next
    block that shows the same memory."""
    stamp = iso(created_at)
    return stamp[:10] if not stamp.startswith("invalid") else "date unknown"


def _line(item: ScoredMemory, flagged: set[str], said: dict[str, str] | None = None) -> str:
    mem = item.memory
    day = _day(mem.created_at)
    mark = " [conflict]" if mem.id in flagged else ""
    note = f" ({_readable(item.note, said or {})})" if item.note else ""
    choice = pair_choice(mem)
    if choice is not None:
        return f"- [{day}] {choice}{mark}{note}"
    who = mem.metadata.get("speaker") or mem.role
    text = item.excerpt if item.excerpt is not None else mem.content
    return f"- [{day}] {who}: {text}{mark}{note}"


# What ``formatted`` says when no memory matched the query by words or by meaning.
NOTHING_MATCHED = "No memories matched."


def format_memories(
    items: list[ScoredMemory],
    tensions: list[Tension],
    max_chars: int,
    preferences: list[ScoredMemory] | None = None,
) -> str:
    """Best-first lines ``- [date] speaker: content`` (a long memory's excerpt instead of its
    content); conflicts flagged and explained.

    With ``preferences``, a section ``Standing preferences:`` comes first (at most half the
    budget), then ``Memories:`` with the other items; the whole stays within ``max_chars``.
    A text said several times (``recall.repeats``) takes one line, its first copy's.
    """
    if not items and not preferences:
        return NOTHING_MATCHED[: max(0, max_chars)]
    flagged = {t.a for t in tensions} | {t.b for t in tensions}
    contents = {i.memory.id: i.memory.content for i in [*(preferences or []), *items]}
    lines: list[str] = []
    used = 0
    header = "Standing preferences:"
    if preferences and max_chars // 2 > len(header) + 2:
        lines.append(header)
        used = len(header) + 1
        for item in preferences:
            line = _line(item, flagged, contents)
            if used + len(line) + 1 > max_chars // 2:
                if len(lines) == 1:
                    line = line[: max(0, max_chars // 2 - used - 2)] + "…"
                    lines.append(line)
                    used += len(line) + 1
                break
            lines.append(line)
            used += len(line) + 1
        shown = {p.memory.id for p in preferences}
        items = [i for i in items if i.memory.id not in shown]
        if items and used + len("Memories:") + 1 <= max_chars:
            lines.append("Memories:")
            used += len("Memories:") + 1
    start = len(lines)
    said = {repeat_key(p.memory.content) for p in preferences or []}
    for item in items:
        key = repeat_key(item.memory.content)
        if key in said:
            continue
        said.add(key)
        line = _line(item, flagged, contents)
        if used + len(line) + 1 > max_chars:
            if len(lines) == start:
                lines.append(line[: max(0, max_chars - used - 1)] + "…")
            break
        lines.append(line)
        used += len(line) + 1
    shown = {i.memory.id for i in items}
    for t in tensions:
        if t.a in shown and t.b in shown:
            note = f"! conflict ({t.kind}): {t.reason}" if t.reason else f"! conflict ({t.kind})"
            if used + len(note) + 1 > max_chars:
                break
            lines.append(note)
            used += len(note) + 1
    return "\n".join(lines)


def score_parts(score: float, components: dict[str, float]) -> list[tuple[str, float]]:
    """A score as named parts, rounded to 3 decimals so that the printed parts add up to the
    printed score exactly: relevance, graph (``graph_weight`` × graph support; recall only)
    and learned (what feedback records added or took). A search score is these parts times
    ``query_match`` (see :func:`score_breakdown`); they then add up to ``ranking``."""
    total = components.get("ranking", score)
    raw = [("relevance", components.get("relevance", 0.0))]
    if "graph" in components:
        raw.append(("graph", components.get("graph_weight", 0.0) * components["graph"]))
    raw.append(("learned", total - sum(v for _, v in raw)))
    # Each part is the step between rounded running totals: the parts add up to the rounded
    # score exactly and each is within 0.001 of its true value (no phantom 0.001 parts).
    parts, before, running = [], 0.0, 0.0
    for name, value in raw:
        running += value
        parts.append((name, round(round(running, 3) - before, 3)))
        before = round(running, 3)
    return parts


def score_breakdown(score: float, components: dict[str, float]) -> str:
    """``1.152 = relevance 1.000 + graph 0.024 + learned 0.128`` (recall), or
    ``0.495 = (relevance 1.000 + learned 0.125) × query_match 0.440`` (search)."""
    parts = score_parts(score, components)
    text = parts[0][0] + f" {parts[0][1]:.3f}"
    for name, value in parts[1:]:
        text += f" {'+' if value >= 0 else '-'} {name} {abs(value):.3f}"
    if "query_match" in components:
        text = f"({text}) × query_match {components['query_match']:.3f}"
    return f"{score:.3f} = {text}"
