"""Bulk copy of the PostgreSQL store (``engrammar migrate``): export and import rows by table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from ...errors import ValidationError
from ..tables import COPY_JSON_FIELDS, COPY_TABLES, COPY_VECTOR_FIELDS
from .connection import Conn, Connected
from .search import COPY_KEYS, Vector, analysed, jsonb

__all__ = ["PostgresCopy"]

T = TypeVar("T")


class PostgresCopy(Connected):
    """The bulk-copy half of :class:`~.store.PostgresStore`."""

    # -- bulk copy (engrammar migrate) -----------------------------------------------------------
    _COPY_KEYS = COPY_KEYS

    def _copy_spec(self, table: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if table not in self._COPY_KEYS or table not in COPY_TABLES:
            raise ValidationError("table", f"cannot copy {table!r}; known: {sorted(COPY_TABLES)}")
        return COPY_TABLES[table], self._COPY_KEYS[table]

    def export_rows(self, table: str, after: Any, limit: int) -> tuple[list[dict[str, Any]], Any]:
        fields, keys = self._copy_spec(table)
        key_sql = ", ".join(keys)
        where = f"WHERE ({key_sql}) > ({', '.join(['%s'] * len(keys))})" if after else ""

        def run(conn: Conn) -> list[Any]:
            with conn.cursor(binary=True) as cur:
                cur.execute(
                    f"SELECT {key_sql}, {', '.join(fields)} FROM {table} {where} "
                    f"ORDER BY {key_sql} LIMIT %s",
                    [*(after or ()), limit],
                )
                return cur.fetchall()

        rows = self._read(f"exporting {table}", run)
        n = len(keys)
        out = [dict(zip(fields, row[n:], strict=True)) for row in rows]
        return out, (tuple(rows[-1][:n]) if len(rows) == limit else None)

    def import_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        sql, params = self._copy_insert(table, rows)
        if table == "meta":
            sql += " ON CONFLICT (key) DO UPDATE SET value = excluded.value"

        def run(conn: Conn) -> None:
            with conn.cursor() as cur:
                cur.executemany(sql, params)

        self._tx(f"importing {table}", run)

    def _copy_insert(
        self, table: str, rows: Sequence[dict[str, Any]]
    ) -> tuple[str, list[Sequence[Any]]]:
        """The INSERT statement and its parameters for exported rows of ``table``."""
        fields, _ = self._copy_spec(table)
        if table == "decision_memories":
            # The embedded store keys these by event alone; here they carry the event's
            # workspace (a distribution key), looked up from the event copied before them.
            sql = (
                "INSERT INTO decision_memories (workspace, event_id, answer, memory_id, "
                "created_at) SELECT e.workspace, %s, %s, %s, %s FROM feedback_events e "
                "WHERE e.id = %s"
            )
            links = [
                (r["event_id"], r["answer"], r["memory_id"], r["created_at"], r["event_id"])
                for r in rows
            ]
            return sql, list(links)
        columns = list(fields)
        marks = ["%b" if f in COPY_VECTOR_FIELDS else "%s" for f in fields]
        if table == "memories":
            columns += ["terms", "doc_len"]
            marks += ["%s::tsvector", "%s"]
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(marks)})"
        params: list[Sequence[Any]] = []
        for item in rows:
            values = []
            for name in fields:
                value = item[name]
                if value is not None and name in COPY_JSON_FIELDS:
                    value = jsonb(value)
                elif value is not None and name in COPY_VECTOR_FIELDS:
                    value = Vector(value)
                values.append(value)
            if table == "memories":
                values += list(analysed(item["content"], item["metadata"]))
            params.append(values)
        return sql, params
