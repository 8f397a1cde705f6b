"""The tables ``engrammar migrate`` copies between stores, and the fields of their rows.

Every backend's ``export_rows`` / ``import_rows`` speak this format, so a store of one backend
can be copied into a store of another (see :mod:`.migrate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from ..models import DecisionReview, FeedbackEvent, LoggedEvent, MemoryRating, PreferencePair
from .schema import TABLES

__all__ = [
    "COPY_BOOL_FIELDS",
    "COPY_JSON_FIELDS",
    "COPY_TABLES",
    "COPY_VECTOR_FIELDS",
    "EDGE_CHANGE_KNOWN",
    "RECORD_TABLES",
    "SOURCED_TABLES",
    "rename_memory_refs",
    "write_records",
]

# Feedback records (and the decision memories events link to), after the memories, in the
# order they are written (a record comes after what it points at).
_FEEDBACK = (
    "feedback_events",
    "decision_memories",
    "decision_reviews",
    "preference_pairs",
    "logged_events",
    "memory_ratings",
    "reply_signals",
)
#: What ``engrammar migrate`` copies, in this order: table -> the fields of one exported row
#: (the columns of the logical schema, :mod:`.schema`, less row numbers).
#: ``metadata``, ``memory_ids``, ``paths`` and ``tensions`` are JSON values, ``embedding`` a
#: float32 vector; everything else is a string, a number or ``None``. Internal sequence
#: numbers are not copied (the destination numbers rows in the same order).
COPY_TABLES: dict[str, tuple[str, ...]] = {
    name: TABLES[name].copy_columns
    for name in (
        "meta",
        "memories",
        "memory_chunks",
        "memory_changes",
        "edges",
        "edge_changes",
        "recalls",
        *_FEEDBACK,
        "api_keys",
        "knowledge_bases",
        "knowledge_chunks",
    )
}
#: The feedback tables whose records carry their ``source`` (SQLite m010, PostgreSQL m009).
SOURCED_TABLES = (
    "feedback_events",
    "decision_reviews",
    "preference_pairs",
    "logged_events",
    "memory_ratings",
    "reply_signals",
)
#: Exported fields holding JSON values / float32 vectors (or ``None``), whatever their table.
COPY_JSON_FIELDS = frozenset({"metadata", "memory_ids", "paths", "tensions", "payload"})
COPY_VECTOR_FIELDS = frozenset(
    {
        "embedding",
        "context_embedding",
        "ai_output_embedding",
        "corrected_embedding",
        "accepted_embedding",
        "rejected_embedding",
    }
)
#: Exported fields holding booleans (SQLite stores them as 0 / 1).
COPY_BOOL_FIELDS = frozenset({"reversed"})

#: Columns of a memory row, in the order both stores select them and read them into a
#: MemoryRecord (``store.sql.dialect``).
MEMORY_COLUMNS = (
    "id, workspace, user_id, agent_id, session_id, role, content, kind, status, created_at, "
    "updated_at, metadata, valid_until, superseded_by"
)


def _filling(record: type, leave_out: tuple[str, ...] = ()) -> str:
    """The columns whose values fill ``record`` in place: its fields, in order (``leave_out``:
    the fields read from elsewhere)."""
    return ", ".join(f.name for f in dataclasses.fields(record) if f.name not in leave_out)


#: A feedback event's columns: every field of the record but its decision memory (read from
#: ``decision_memories``).
EVENT_COLUMNS = _filling(FeedbackEvent, ("decision_memory_id",))

# kind -> (table, the columns that fill its record, whether the table has a session_id column)
FEEDBACK_TABLES: dict[str, tuple[str, str, bool]] = {
    "feedback_event": ("feedback_events", EVENT_COLUMNS, True),
    "decision_review": ("decision_reviews", _filling(DecisionReview), False),
    "preference_pair": ("preference_pairs", _filling(PreferencePair), True),
    "logged_event": ("logged_events", _filling(LoggedEvent), True),
    "memory_rating": ("memory_ratings", _filling(MemoryRating), True),
}

#: The tables an export (``Memory.export``) carries besides memories and edges, in the order
#: an import writes them (a record comes after what it points at). Not exported: ``meta``
#: (the store's own settings), ``api_keys`` (credentials of the store they were made in),
#: ``memory_changes`` (the history of this store's writes; an import writes its own) and
#: ``memory_chunks`` (vectors, made again from the texts).
RECORD_TABLES = (
    "recalls",
    *_FEEDBACK,
    # The log of the edge changes replies made: what undo replays (learn.replay).
    "edge_changes",
    # Knowledge bases, each before its passages.
    "knowledge_bases",
    "knowledge_chunks",
)
#: Fields of those tables that hold one memory id.
MEMORY_REF_FIELDS = frozenset(
    {"memory_id", "correction_memory_id", "decision_memory_id", "src", "dst"}
)
#: Whether an imported ``edge_changes`` row is already in the store (rows have no id of
#: their own): the same edge, time and recall. Placeholders: workspace, src, dst, kind, at,
#: recall_id.
EDGE_CHANGE_KNOWN = (
    "SELECT 1 FROM edge_changes WHERE workspace = ? AND src = ? AND dst = ? AND kind = ? "
    "AND at = ? AND recall_id IS NOT DISTINCT FROM ?"
)


def rename_memory_refs(table: str, row: dict[str, Any], rename: dict[str, str]) -> dict[str, Any]:
    """A copy of an exported ``row`` of ``table`` whose memory ids follow ``rename``
    (memories that got another id on import: moved workspace, or an identical one existed)."""
    if not rename:
        return row
    out = dict(row)
    for name in MEMORY_REF_FIELDS & set(out):
        if out[name] is not None:
            out[name] = rename.get(out[name], out[name])
    if table == "recalls":
        out["memory_ids"] = [rename.get(i, i) for i in out["memory_ids"] or []]
        out["paths"] = [
            {**p, "nodes": [rename.get(n, n) for n in p.get("nodes", [])]}
            for p in out["paths"] or []
        ]
        out["tensions"] = [
            {**t, **{k: rename.get(t[k], t[k]) for k in ("a", "b", "newer") if t.get(k)}}
            for t in out["tensions"] or []
        ]
    return out


def write_records(
    records: Sequence[tuple[str, dict[str, Any]]],
    rename: dict[str, str],
    insert: Callable[[str, list[dict[str, Any]]], None],
    stored_event: Callable[[str, str], str | None],
) -> None:
    """Write an import's records table by table, in :data:`RECORD_TABLES` order, through
    ``insert(table, rows)`` (which skips rows the store already has).

    Memory ids follow ``rename``. An event skipped because the store holds its
    ``source_event_id`` under another id (``stored_event(workspace, source_event_id)``) hands
    its reviews to the stored event: they are about the same decision.
    """
    known: dict[str, str] = {}
    for table in RECORD_TABLES:
        mine = [rename_memory_refs(t, row, rename) for t, row in records if t == table]
        if not mine:
            continue
        if table == "decision_reviews" and known:
            mine = [{**r, "event_id": known.get(r["event_id"], r["event_id"])} for r in mine]
        insert(table, mine)
        if table == "feedback_events":
            for row in mine:
                if row.get("source_event_id") is None:
                    continue
                found = stored_event(row["workspace"], row["source_event_id"])
                if found is not None and found != row["id"]:
                    known[row["id"]] = found
