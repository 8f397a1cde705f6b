"""How the CLI and MCP put a few results into words (counts, recall lines, feedback)."""

from __future__ import annotations

from typing import Any

from ..recall.format import score_breakdown

__all__ = ["feedback_summary", "plural", "recall_tool_text", "recalled_text", "short"]


def short(text: str, width: int = 100) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def plural(count: int, one: str, many: str) -> str:
    """``1 memory``, ``2 memories``."""
    return f"{count} {one if count == 1 else many}"


def recalled_text(d: dict[str, Any]) -> str:
    """Recall in the shell: ranked lines with scores and ids (for explain, forget, rate), the
    tensions among them, and the recall's id (for feedback)."""
    lines = [
        f"{i}. {m['score']:.3f}  {m['memory']['id']}  {short(m['memory']['content'])}\n"
        f"   {score_breakdown(m['score'], m['components'])}"
        for i, m in enumerate(d["memories"], 1)
    ]
    for k in d.get("knowledge") or ():
        lines.append(f"knowledge {k['score']:.3f}  {k['kb_id']}  {short(k['content'])}")
    if not lines:
        lines.append("No memories matched.")
    for t in d.get("tensions") or ():
        lines.append(f"tension: {t['a']} vs {t['b']} ({t.get('reason') or t.get('kind', '')})")
    return "\n".join([*lines, "", f"recall_id: {d['recall_id']}"])


def recall_tool_text(d: dict[str, Any]) -> str:
    """Recall for an agent (MCP): ``formatted`` to put into its context, then each memory's id
    (what memory_feedback rates by) and the recall's id (what a reply acts on)."""
    if not d["memories"]:
        body = d["formatted"] or "No memories matched."
        return f"{body}\n\n(recall_id {d['recall_id']})"
    ids = [
        f"{i}. {m['memory']['id']}  {short(m['memory']['content'], 80)}"
        for i, m in enumerate(d["memories"], 1)
    ]
    return "\n".join(
        [
            d["formatted"],
            "",
            "Memory ids (to rate one: memory_feedback with memory_id and verdict):",
            *ids,
            "",
            f"(recall_id {d['recall_id']})",
        ]
    )


def feedback_summary(out: dict[str, Any]) -> str:
    """One line saying everything a feedback call changed: graph links and learned signals."""
    if not out.get("consumed"):
        return str(out.get("message") or "nothing changed")
    # Which recall the reply went to, first: without a recall_id it is the scope's newest.
    used = f"recall {out['recall_id']} ({short(out.get('query') or '', 60)!r}): "
    if out.get("message"):
        return used + str(out["message"])
    return used + (
        f"strengthened {out['strengthened']} and weakened {out['weakened']} graph links; "
        f"learned from the reply: up for {plural(len(out.get('drawn_on', ())), 'memory', 'memories')}"
        f" it drew on, down for {len(out.get('left', ()))} it left"
    )
