"""The one logical schema both stores' migrations build: tables, columns and keys.

The two databases store it differently where they must (SQLite numbers rows with an
``INTEGER PRIMARY KEY``, PostgreSQL keys rows by workspace first so a table can be distributed
by it; FTS5 tables against a ``tsvector`` column), and :func:`differences` allows exactly those
differences. ``tests/test_store_schema.py`` introspects a freshly migrated store of each kind
and holds it to this module, so a migration that drifts from the other backend fails a test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["BACKEND_TABLES", "TABLES", "Table", "differences", "row_order"]


@dataclass(frozen=True)
class Table:
    """A table of the logical schema.

    Args:
        columns: its columns (in both stores).
        key: the columns that identify a row.
        unique: further column sets that no two rows share.
        order: the column that numbers rows in insertion order, if any (a store may key on it).
        only: columns one backend adds (``{"postgresql": ("terms",)}``).
        uncopied: columns a copied row leaves out (the destination fills them).
    """

    columns: tuple[str, ...]
    key: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...] = ()
    order: str | None = None
    only: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uncopied: tuple[str, ...] = ()

    @property
    def copy_columns(self) -> tuple[str, ...]:
        """The fields of one copied row: every shared column but the row numbers and
        :attr:`uncopied` (the destination numbers rows in the same order)."""
        return tuple(c for c in self.columns if c != self.order and c not in self.uncopied)


_SCOPE = ("workspace", "user_id", "agent_id", "session_id")

TABLES: dict[str, Table] = {
    "migrations": Table(("name", "applied_at"), key=("name",)),
    "meta": Table(("key", "value"), key=("key",)),
    "memories": Table(
        ("seq", "id", *_SCOPE, "role", "content", "kind", "status", "created_at", "updated_at",
         "metadata", "dedup_key", "embedding", "valid_until", "superseded_by"),
        key=("workspace", "id"),
        unique=(("workspace", "dedup_key"),),
        order="seq",
        # The keyword index (SQLite: memories_fts, and each memory's terms for its in-process index).
        only={"postgresql": ("terms", "doc_len"), "sqlite": ("index_terms",)},
    ),
    "memory_changes": Table(
        ("rev", "memory_id", "workspace", "user_id", "op", "before", "after", "reason",
         "created_at"),
        key=("workspace", "rev"),
        order="rev",
    ),
    "edges": Table(
        ("workspace", "src", "dst", "kind", "weight", "updated_at"),
        key=("workspace", "src", "dst", "kind"),
    ),
    "recalls": Table(
        ("id", *_SCOPE, "query", "created_at", "memory_ids", "paths", "tensions", "consumed_at"),
        key=("workspace", "id"),
        only={"postgresql": ("seq",)},  # SQLite orders recalls by rowid
    ),
    "feedback_events": Table(
        ("seq", "id", *_SCOPE, "input_context", "ai_output", "user_reaction", "user_correction",
         "corrected_output", "state", "reason", "source_event_id", "payload_hash", "metadata",
         "created_at", "context_embedding", "ai_output_embedding", "corrected_embedding", "source"),
        key=("workspace", "id"),
        unique=(("workspace", "source_event_id"),),
        order="seq",
    ),
    "decision_memories": Table(
        ("workspace", "event_id", "answer", "memory_id", "created_at"),
        key=("workspace", "event_id", "answer"),
        # A copied link takes its workspace from its memory's (the rows predate the column).
        uncopied=("workspace",),
    ),
    "decision_reviews": Table(
        ("seq", "id", "workspace", "user_id", "agent_id", "event_id", "final_decision",
         "outcome", "confidence", "reversed", "reason", "decision_memory_id", "created_at",
         "source"),
        key=("workspace", "id"),
        order="seq",
    ),
    "preference_pairs": Table(
        ("seq", "id", *_SCOPE, "context", "accepted_output", "rejected_output", "weight",
         "memory_id", "created_at", "context_embedding", "accepted_embedding",
         "rejected_embedding", "source"),
        key=("workspace", "id"),
        order="seq",
    ),
    "logged_events": Table(
        ("seq", "id", *_SCOPE, "kind", "payload", "created_at", "source"),
        key=("workspace", "id"),
        order="seq",
    ),
    "memory_ratings": Table(
        ("seq", "id", *_SCOPE, "memory_id", "verdict", "correction", "correction_memory_id",
         "weight", "recall_id", "context", "context_embedding", "created_at", "source"),
        key=("workspace", "id"),
        order="seq",
    ),
    "edge_changes": Table(
        ("seq", "workspace", "src", "dst", "kind", "delta", "weight", "recall_id", "at",
         "before"),
        key=("workspace", "seq"),
        order="seq",
    ),
    "reply_signals": Table(
        ("seq", *_SCOPE, "recall_id", "memory_id", "value", "alignment", "context_embedding",
         "created_at", "source"),
        key=("workspace", "recall_id", "memory_id"),
        order="seq",
    ),
    "api_keys": Table(
        ("key_id", "key_hash", "workspace", "user_id", "name", "created_at", "revoked_at"),
        key=("key_id",),
    ),
    "knowledge_bases": Table(
        ("seq", "id", *_SCOPE, "name", "metadata", "chunk_count", "created_at"),
        key=("workspace", "id"),
        order="seq",
    ),
    "knowledge_chunks": Table(
        ("seq", "id", "workspace", "kb_id", "position", "user_id", "agent_id", "session_id",
         "content", "metadata", "created_at", "embedding"),
        key=("workspace", "id"),
        order="seq",
    ),
    "memory_chunks": Table(
        ("seq", "workspace", "memory_id", "position", "user_id", "agent_id", "session_id",
         "start_char", "end_char", "embedding"),
        key=("workspace", "memory_id", "position"),
        order="seq",
    ),
}  # fmt: skip

#: Tables only one backend has: its keyword index's own (FTS5's shadow tables and SQLite's
#: AUTOINCREMENT counters; PostgreSQL's per-partition BM25 statistics and postings) and
#: PostgreSQL's change log of recent writes (what a process's scope graphs refresh from).
BACKEND_TABLES: dict[str, frozenset[str]] = {
    "sqlite": frozenset(
        {
            "memories_fts",
            "memories_fts_config",
            "memories_fts_data",
            "memories_fts_docsize",
            "memories_fts_idx",
            "sqlite_sequence",
        }
    ),
    "postgresql": frozenset({"change_log", "keyword_postings", "keyword_stats", "keyword_terms"}),
}


def row_order(name: str, backend: str) -> tuple[str, ...]:
    """The columns that order the rows of table ``name`` in ``backend`` (the cursor of
    ``export_rows``): its row number, else SQLite's ``rowid`` or the table's key."""
    table = TABLES[name]
    if table.order is not None:
        return (table.order,)
    if "seq" in table.only.get(backend, ()):
        return ("seq",)
    return ("rowid",) if backend == "sqlite" else table.key


def _enforces(unique: Sequence[str], wanted: Sequence[str]) -> bool:
    # A store may enforce a workspace-scoped key across all workspaces (stricter, same rows).
    return set(unique) in (set(wanted), set(wanted) - {"workspace"})


def differences(
    backend: str, found: Mapping[str, tuple[Sequence[str], Sequence[Sequence[str]]]]
) -> list[str]:
    """How a migrated store of ``backend`` differs from :data:`TABLES`.

    ``found`` maps each table of the store to its columns and its unique column sets (the
    primary key and every unique constraint or index). Empty when they agree.
    """
    out: list[str] = []
    extra_tables = BACKEND_TABLES.get(backend, frozenset())
    for name in sorted(set(found) - set(TABLES) - extra_tables):
        out.append(f"{name}: a table the logical schema does not know")
    for name in sorted(set(TABLES) - set(found)):
        out.append(f"{name}: missing")
    for name, table in TABLES.items():
        if name not in found:
            continue
        columns, uniques = found[name]
        expected = {*table.columns, *table.only.get(backend, ())}
        if set(columns) != expected:
            out.append(
                f"{name}: columns {sorted(set(columns) - expected)} unexpected, "
                f"{sorted(expected - set(columns))} missing"
            )
        wanted = [table.key, *table.unique]
        for key in wanted:
            if not any(_enforces(u, key) for u in uniques):
                out.append(f"{name}: nothing keeps {list(key)} unique")
        if table.order is not None:
            wanted.append(("workspace", table.order))
        for u in uniques:
            if not any(_enforces(u, key) for key in wanted):
                out.append(f"{name}: {list(u)} is unique, which the logical schema does not say")
    return out
