"""The SQL both stores share: one :class:`SQLStore` over a small :class:`~.dialect.Dialect`.

Every statement here (and in :mod:`.feedback`, the feedback-record half) is written once
with ``?`` for a parameter and ``?v`` for a vector parameter; the dialect turns them into its
own placeholders (``%s`` / ``%b`` for psycopg). What a backend adds is what is truly its own: how a call gets a connection and a transaction
(:meth:`SQLStore._run`), how a memory row is inserted and indexed for search, and the SQL that
only one database can run (see :mod:`..sqlite` and :mod:`..postgres`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

from ...errors import ConflictError, EmbedderError, NotFoundError
from ...models import Edge, HistoryEntry, MemoryRecord, Scope, StoreFacts, StoreStats
from ..base import ApiKeyRecord, MemoryUpdate, NewEdge, RecallRecord, rebuilt_edges
from ..tables import FEEDBACK_TABLES, MEMORY_COLUMNS
from .dialect import Dialect, memory_record, scope_where
from .inspect import SQLInspect
from .knowledge import SQLKnowledge
from .undo import SQLUndo

__all__ = [
    "KEY_COLUMNS",
    "RECALL_COLUMNS",
    "Dialect",
    "SQLStore",
    "apply_migrations",
    "memory_record",
    "recall_values",
    "scope_where",
    "supersessions",
]

RECALL_COLUMNS = (
    "id, workspace, user_id, agent_id, session_id, query, created_at, memory_ids, paths, "
    "tensions, consumed_at"
)


def recall_values(record: RecallRecord, json: Callable[[Any], Any]) -> tuple[Any, ...]:
    """A recall record's row in ``RECALL_COLUMNS`` order, its lists written by ``json``."""
    return (
        record.recall_id,
        record.workspace,
        record.user_id,
        record.agent_id,
        record.session_id,
        record.query,
        record.created_at,
        json(record.memory_ids),
        json(record.paths),
        json(record.tensions),
        record.consumed_at,
    )


KEY_COLUMNS = "key_id, key_hash, workspace, user_id, name, created_at, revoked_at"


class SQLStore(SQLInspect, SQLUndo, SQLKnowledge):
    """The logic of :class:`~..base.Store` that is the same in every SQL database.

    A backend sets :attr:`dialect` and implements :meth:`_run` and the hooks below
    (``_insert_linked_memory``, ``_insert_edges``, ``_link_decision``, ``_store_facts``,
    ``_location``); it may override any method with SQL of its own.
    """

    dialect: ClassVar[Dialect]
    _dim: int | None

    # -- what a backend provides -------------------------------------------------------------
    def _insert_edges(
        self,
        conn: Any,
        workspace: str,
        edges: Sequence[NewEdge],
        rename: dict[str, str],
        now: float,
    ) -> None:
        """Insert ``edges`` (ids renamed by ``rename``); each backend writes its own SQL
        (``SQLiteStore`` and ``PostgresStore`` both provide it)."""
        raise NotImplementedError

    def _store_facts(self, conn: Any) -> StoreFacts:
        """The backend's part of :meth:`stats` (its name, where it lives, its size)."""
        raise NotImplementedError

    def _location(self) -> str:
        """Where the store lives, for messages."""
        raise NotImplementedError

    def _lock_meta(self, conn: Any) -> None:
        """Serialise embedder checks across processes (a no-op where writes are serial)."""

    def _first_embedder(self, conn: Any, dim: int) -> None:
        """Prepare the store for vectors of ``dim`` (the first embedder it meets)."""

    # -- meta ----------------------------------------------------------------------------------
    def check_embedder(self, name: str, dim: int) -> None:
        value = json.dumps({"name": name, "dim": dim})

        def run(conn: Any) -> None:
            self._lock_meta(conn)
            row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if row is None:
                conn.execute(
                    self._q("INSERT INTO meta (key, value) VALUES ('embedder', ?)"), (value,)
                )
                self._first_embedder(conn, dim)
                return
            known = json.loads(row[0])
            if known["dim"] != dim:
                raise EmbedderError(
                    f"the store at {self._location()} holds {known['dim']}-dimensional vectors "
                    f"from {known['name']!r}; the embedder {name!r} makes {dim}. Use the same "
                    "embedder, or export and re-import into a new store."
                )
            if known["name"] != name:
                conn.execute(self._q("UPDATE meta SET value = ? WHERE key = 'embedder'"), (value,))

        self._run("checking the embedder", run)
        self._dim = dim

    # -- memories ------------------------------------------------------------------------------
    def _record(self, row: Sequence[Any]) -> MemoryRecord:
        return memory_record(row, self.dialect.from_json(row[11]))

    def _memories(self, what: str, scope: Scope, tail: str, args: list[Any]) -> list[MemoryRecord]:
        """The memories of ``scope`` that ``tail`` (conditions, order and limit) selects."""
        where, params = scope_where(scope)
        sql = self._q(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} {tail}")
        rows = self._run(what, lambda c: c.execute(sql, [*params, *args]).fetchall(), write=False)
        return [self._record(r) for r in rows]

    def list_memories(self, scope: Scope, limit: int, offset: int) -> list[MemoryRecord]:
        tail = "ORDER BY created_at, seq LIMIT ? OFFSET ?"
        return self._memories("listing memories", scope, tail, [limit, offset])

    def latest_memories(self, scope: Scope, limit: int) -> list[MemoryRecord]:
        tail = "AND status = 'active' ORDER BY seq DESC LIMIT ?"
        return self._memories("reading memories", scope, tail, [limit])

    def memories_of_kind(self, scope: Scope, kind: str, limit: int) -> list[MemoryRecord]:
        tail = "AND status = 'active' AND kind = ? ORDER BY seq DESC LIMIT ?"
        return self._memories("reading memories", scope, tail, [kind, limit])

    def history(self, workspace: str, memory_id: str) -> list[HistoryEntry]:
        sql = self._q(
            "SELECT rev, op, before, after, reason, created_at FROM memory_changes "
            "WHERE workspace = ? AND memory_id = ? ORDER BY rev"
        )
        rows = self._run(
            "reading the history",
            lambda c: c.execute(sql, (workspace, memory_id)).fetchall(),
            write=False,
        )
        if not rows:
            raise NotFoundError(f"memory {memory_id!r} not found in workspace {workspace!r}")
        return [
            {"rev": r[0], "op": r[1], "before": r[2], "after": r[3], "reason": r[4], "at": r[5]}
            for r in rows
        ]

    def stats(self, scope: Scope) -> StoreStats:
        where, params = scope_where(scope)
        where_m, params_m = scope_where(scope, "m")
        q = self._q

        def count(conn: Any, sql: str, args: Sequence[Any]) -> int:
            row = conn.execute(q(sql), args).fetchone()
            return int(row[0]) if row else 0

        def run(conn: Any) -> StoreStats:
            feedback = {}
            for kind, (table, _, has_session) in FEEDBACK_TABLES.items():
                narrowed = (
                    scope if has_session else Scope(scope.workspace, scope.user_id, scope.agent_id)
                )
                w, p = scope_where(narrowed)
                feedback[kind] = count(conn, f"SELECT count(*) FROM {table} WHERE {w}", p)
            # A reply's feedback is no row of its own: the recall it consumed (undo frees it).
            feedback["reply"] = count(
                conn,
                f"SELECT count(*) FROM recalls WHERE {where} AND consumed_at IS NOT NULL",
                params,
            )
            by_kind = q(f"SELECT kind, count(*) FROM memories WHERE {where} GROUP BY kind")
            return {
                "memories": count(conn, f"SELECT count(*) FROM memories WHERE {where}", params),
                "memories_by_kind": dict(conn.execute(by_kind, params).fetchall()),
                "edges": count(
                    conn,
                    "SELECT count(*) FROM edges e JOIN memories m ON m.workspace = e.workspace "
                    f"AND m.id = e.src WHERE {where_m}",
                    params_m,
                ),
                "recalls": count(conn, f"SELECT count(*) FROM recalls WHERE {where}", params),
                "feedback_records": feedback,
                **self._store_facts(conn),
            }

        return self._run("stats", run, write=False)

    def _updated(self, conn: Any, old: MemoryRecord, change: MemoryUpdate) -> None:
        """After ``update_memory`` changed ``old``: its history line (op ``update``, ``status``
        or ``metadata``) and, when given, its new content-derived edges."""
        content, metadata, status = change.content, change.metadata, change.status
        op = "update" if content is not None else ("status" if status else "metadata")
        after = content if content is not None else (status or json.dumps(metadata))
        before = old.content if content is not None else (old.status if status else None)
        self._log(conn, old.id, old.workspace, old.user_id, op, before, after, change.reason)
        if change.edges is not None:
            self._replace_edges(conn, old.workspace, old.id, change.edges)

    def _replace_edges(
        self, conn: Any, workspace: str, memory_id: str, edges: Sequence[NewEdge]
    ) -> None:
        where = "workspace = ? AND (src = ? OR dst = ?) AND kind <> 'sequence'"
        args = (workspace, memory_id, memory_id)
        learned = {
            (r[0], r[1], r[2]): r[3]
            for r in conn.execute(
                self._q(f"SELECT src, dst, kind, weight FROM edges WHERE {where}"), args
            ).fetchall()
        }
        conn.execute(self._q(f"DELETE FROM edges WHERE {where}"), args)
        self._insert_edges(conn, workspace, rebuilt_edges(edges, learned), {}, time.time())

    # -- facts that change ---------------------------------------------------------------------
    def insertion_order(self, workspace: str, ids: Sequence[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        # By id alone (ids are unique), the workspace checked here: with both in the WHERE,
        # SQLite's planner took the workspace's index and read every memory of the workspace
        # (~190 ms at 130,000 memories, against well under 1 ms by id).
        rows = self._fetch(
            "reading the insertion order",
            f"SELECT id, seq, workspace FROM memories WHERE id IN ({marks})",
            ids,
        )
        return {r[0]: int(r[1]) for r in rows if r[2] == workspace}

    def _supersede(
        self, conn: Any, workspace: str, edges: Sequence[NewEdge], rename: dict[str, str]
    ) -> None:
        """Mark the memories that ``supersedes`` edges point at as no longer current: their
        ``valid_until`` becomes the replacing memory's time and ``superseded_by`` its id. A
        memory replaced before keeps its earliest replacement (it stopped being current
        then); each change is recorded in the memory's history (op ``supersede``)."""
        for new, old in supersessions(edges, rename):
            found = conn.execute(
                self._q("SELECT created_at FROM memories WHERE workspace = ? AND id = ?"),
                (workspace, new),
            ).fetchone()
            row = conn.execute(
                self._q("SELECT user_id, valid_until FROM memories WHERE workspace = ? AND id = ?"),
                (workspace, old),
            ).fetchone()
            if found is None or row is None or (row[1] is not None and row[1] <= found[0]):
                continue
            conn.execute(
                self._q(
                    "UPDATE memories SET valid_until = ?, superseded_by = ? "
                    "WHERE workspace = ? AND id = ?"
                ),
                (found[0], new, workspace, old),
            )
            after = json.dumps({"superseded_by": new, "valid_until": found[0]})
            self._log(conn, old, workspace, row[0], "supersede", None, after)

    def _restore_superseded(self, conn: Any, workspace: str, gone: Sequence[str]) -> None:
        """Make current again what forgotten memories had replaced (op ``restore``)."""
        for memory_id in gone:
            rows = conn.execute(
                self._q(
                    "SELECT id, user_id FROM memories WHERE workspace = ? AND superseded_by = ?"
                ),
                (workspace, memory_id),
            ).fetchall()
            for old, user_id in rows:
                conn.execute(
                    self._q(
                        "UPDATE memories SET valid_until = NULL, superseded_by = NULL "
                        "WHERE workspace = ? AND id = ?"
                    ),
                    (workspace, old),
                )
                self._log(conn, old, workspace, user_id, "restore", memory_id, None)

    # -- graph ---------------------------------------------------------------------------------
    def edges_from(
        self, workspace: str, ids: Sequence[str], min_weight: float = 0.0, kind: str | None = None
    ) -> list[Edge]:
        return self._edges(workspace, ids, min_weight, "src", "dst", kind)

    def edges_to(self, workspace: str, ids: Sequence[str], min_weight: float = 0.0) -> list[Edge]:
        return self._edges(workspace, ids, min_weight, "dst", "src")

    def _edges(
        self,
        workspace: str,
        ids: Sequence[str],
        min_weight: float,
        end: str,
        other: str,
        kind: str | None = None,
    ) -> list[Edge]:
        """Edges whose ``end`` column ("src" or "dst") is one of ``ids`` (of ``kind`` only,
        if set)."""
        of_kind = "" if kind is None else " AND kind = ?"
        order = f" ORDER BY {end}, {other}, kind" if self.dialect.ordered else ""
        out: list[Edge] = []
        for cond, chunk in self.dialect.in_list(end, list(dict.fromkeys(ids))):
            out += [
                Edge(*r)
                for r in self._fetch(
                    "reading edges",
                    "SELECT src, dst, kind, weight, updated_at FROM edges WHERE workspace = ? "
                    f"AND {cond} AND weight >= ?{of_kind}{order}",
                    [workspace, *chunk, min_weight, *([] if kind is None else [kind])],
                )
            ]
        return out

    def edge_counts(self, workspace: str, ids: Sequence[str]) -> dict[str, int]:
        ids = list(dict.fromkeys(ids))
        out = dict.fromkeys(ids, 0)
        for cond, chunk in self.dialect.in_list("src", ids):
            rows = self._fetch(
                "counting edges",
                f"SELECT src, count(*) FROM edges WHERE workspace = ? AND {cond} GROUP BY src",
                [workspace, *chunk],
            )
            out.update({src: int(n) for src, n in rows})
        return out

    # -- recalls -------------------------------------------------------------------------------
    def save_recall(self, record: RecallRecord) -> None:
        sql = self._q(f"INSERT INTO recalls ({RECALL_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)")
        args = recall_values(record, self.dialect.json)
        self._run("saving the recall", lambda c: c.execute(sql, args), single=True)

    def get_recall(self, scope: Scope, recall_id: str | None) -> RecallRecord | None:
        sql, params = self._recall_query(scope, recall_id)
        row = self._run(
            "reading the recall", lambda c: c.execute(sql, params).fetchone(), write=False
        )
        return self._recall_record(row)

    def _recall_query(self, scope: Scope, recall_id: str | None) -> tuple[str, list[Any]]:
        """The statement of ``get_recall`` (one row of ``RECALL_COLUMNS`` or none)."""
        where, params = scope_where(scope)
        if recall_id is not None:
            sql = f"SELECT {RECALL_COLUMNS} FROM recalls WHERE {where} AND id = ?"
            params = [*params, recall_id]
        else:
            sql = (
                f"SELECT {RECALL_COLUMNS} FROM recalls WHERE {where} "
                f"ORDER BY created_at DESC, {self.dialect.recall_order} DESC LIMIT 1"
            )
        return self._q(sql), params

    def _recall_record(self, row: Any) -> RecallRecord | None:
        if row is None:
            return None
        values = list(row)  # RECALL_COLUMNS is in field order
        values[7:10] = [self.dialect.from_json(v) for v in values[7:10]]  # the JSON lists
        return RecallRecord(*values)

    # -- API keys ------------------------------------------------------------------------------
    def create_api_key(self, record: ApiKeyRecord) -> None:
        sql = self._q(
            f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (?,?,?,?,?,?,?) "
            "ON CONFLICT (key_id) DO NOTHING RETURNING key_id"
        )
        args = (
            record.key_id,
            record.key_hash,
            record.workspace,
            record.user_id,
            record.name,
            record.created_at,
            record.revoked_at,
        )

        def run(conn: Any) -> None:
            if conn.execute(sql, args).fetchone() is None:
                raise ConflictError(f"API key {record.key_id!r} already exists")

        self._run("creating the API key", run)

    def get_api_key(self, key_id: str) -> ApiKeyRecord | None:
        sql = self._q(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_id = ?")
        row = self._run(
            "reading the API key", lambda c: c.execute(sql, (key_id,)).fetchone(), write=False
        )
        return ApiKeyRecord(*row) if row else None

    def list_api_keys(self, workspace: str | None) -> list[ApiKeyRecord]:
        if workspace is None:
            sql, args = f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_at", []
        else:
            sql = f"SELECT {KEY_COLUMNS} FROM api_keys WHERE workspace = ? ORDER BY created_at"
            args = [workspace]
        sql = self._q(sql + self.dialect.key_order)
        rows = self._run("listing API keys", lambda c: c.execute(sql, args).fetchall(), write=False)
        return [ApiKeyRecord(*r) for r in rows]

    def revoke_api_key(self, key_id: str) -> bool:
        q = self._q

        def run(conn: Any) -> bool:
            row = conn.execute(
                q(f"SELECT revoked_at FROM api_keys WHERE key_id = ?{self.dialect.for_update}"),
                (key_id,),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"API key {key_id!r} not found")
            if row[0] is not None:
                return False
            conn.execute(
                q("UPDATE api_keys SET revoked_at = ? WHERE key_id = ?"), (time.time(), key_id)
            )
            return True

        return self._run("revoking the API key", run)


def supersessions(edges: Sequence[NewEdge], rename: dict[str, str]) -> Iterator[tuple[str, str]]:
    """The ``(newer, older)`` ids of the ``supersedes`` edges among ``edges``, in order, each
    id as ``rename`` maps it (a memory merged into another is the other); none where both
    name the same memory."""
    for edge in edges:
        if edge.kind != "supersedes":
            continue
        new, old = rename.get(edge.src, edge.src), rename.get(edge.dst, edge.dst)
        if new != old:
            yield new, old


def apply_migrations(
    conn: Any, migrations: Sequence[Callable[[Any], None]], dialect: Dialect, time_type: str
) -> None:
    """Run, in order, each of ``migrations`` the store's ``migrations`` table does not list,
    and list it there (``time_type``: the SQL type of the time it was applied)."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at {time_type})"
    )
    done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
    insert = dialect.sql("INSERT INTO migrations (name, applied_at) VALUES (?, ?)")
    for migration in migrations:
        if migration.__name__ not in done:
            migration(conn)
            conn.execute(insert, (migration.__name__, time.time()))
