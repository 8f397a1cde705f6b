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
    text = item.excerpt if item.excerpt is not None else mem.content
    return f"- [{day}] {who}: {text}{mark}{note}"


def format_memories(items: list[ScoredMemory], tensions: list[Tension], max_chars: int) -> str:
    """Best-first lines ``- [date] speaker: content`` (a long memory's excerpt instead of its
    content); conflicts flagged and explained."""
    flagged = {t.a for t in tensions} | {t.b for t in tensions}
    lines: list[str] = []
    used = 0
    for item in items:
        line = _line(item, flagged)
        if used + len(line) + 1 > max_chars:
            if not lines:
                lines.append(line[: max(0, max_chars - 1)] + "…")
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
