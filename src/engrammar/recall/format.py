"""The text block recall hands to a system prompt, within a character budget."""

from __future__ import annotations

from datetime import UTC, datetime

from ..models import ScoredMemory, Tension

__all__ = ["format_memories"]


def _line(item: ScoredMemory, flagged: set[str]) -> str:
    mem = item.memory
    day = datetime.fromtimestamp(mem.created_at, tz=UTC).strftime("%Y-%m-%d")
    who = mem.metadata.get("speaker") or mem.role
    mark = " [conflict]" if mem.id in flagged else ""
    note = f" ({item.note})" if item.note else ""
    return f"- [{day}] {who}: {mem.content}{mark}{note}"


def format_memories(
    items: list[ScoredMemory],
    tensions: list[Tension],
    max_chars: int,
    preferences: list[ScoredMemory] | None = None,
) -> str:
    """Best-first lines ``- [date] speaker: content``; conflicts flagged and explained.

    With ``preferences``, a section ``Standing preferences:`` comes first (at most half the
    budget), then ``Memories:`` with the other items; the whole stays within ``max_chars``.
    """
    flagged = {t.a for t in tensions} | {t.b for t in tensions}
    lines: list[str] = []
    used = 0
    header = "Standing preferences:"
    if preferences and max_chars // 2 > len(header) + 2:
        lines.append(header)
        used = len(header) + 1
        for item in preferences:
            line = _line(item, flagged)
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
    for item in items:
        line = _line(item, flagged)
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
