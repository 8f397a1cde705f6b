"""Export and import of memories and their graph edges as JSON Lines.

The first line is a header (``{"type": "engrammar-export", "version": 1, ...}``); then one
``{"type": "memory", ...}`` line per memory, one ``{"type": "edge", ...}`` line per edge
between exported memories, and one ``{"type": "record", "table": ..., ...}`` line per record
of the scope: recalls, feedback events (with the links to their decision memories), decision
reviews, preference pairs, logged events, memory ratings, the signals of replies sent
through ``feedback`` (their context vector is the embedding of their recall's query), the log
of the edge changes replies made, and knowledge bases with their passages, in the fields of
:data:`~engrammar.store.tables.COPY_TABLES`. Vectors are not exported: they belong to an
embedding model, and import embeds the texts again with the importing store's model, so an
export is also the way to move a store to another embedder. Not exported: API keys
(credentials of the store they were made in; ``backup`` and ``migrate`` keep them) and the
history of each memory's changes (an import records its own ``add``).

Export -> import into an empty store -> export gives the same lines (the round trip is tested).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

import numpy as np

from ..embed.base import blend_context
from ..errors import ValidationError
from ..models import (
    EDGE_KINDS,
    FEEDBACK_STATES,
    KINDS,
    RATING_VERDICTS,
    REVIEW_OUTCOMES,
    ROLES,
    Scope,
)
from ..recall.text import context_sources, speaker_of
from ..store import ChunkVector, ImportBundle, NewEdge, NewMemory
from ..store.tables import (
    COPY_JSON_FIELDS,
    COPY_TABLES,
    COPY_VECTOR_FIELDS,
    RECORD_TABLES,
    rename_memory_refs,
)
from . import transcript
from . import validate as v
from .base import Engine, dedup_key, embed_memories
from .ids import new_id
from .ingest import build_edges

__all__ = ["FORMAT_VERSION", "export_jsonl", "import_jsonl"]

FORMAT_VERSION = 1
_PAGE = 1000
_EMBED_CHUNK = 256
STATUSES = ("active", "superseded", "forgotten")

Progress = Callable[[int, int], None]
Target = str | os.PathLike[str] | IO[str]


@contextlib.contextmanager
def _open(target: Target, mode: str) -> Iterator[IO[str]]:
    if isinstance(target, str | os.PathLike):
        with open(target, mode, encoding="utf-8") as handle:
            yield handle
    else:
        yield target


def export_jsonl(
    engine: Engine, destination: Target, scope: Scope, progress: Progress | None
) -> int:
    """Write the memories of ``scope``, their edges and the scope's records; how many
    memories were written."""
    total = engine.store.stats(scope)["memories"]
    written = 0
    ids: set[str] = set()
    with _open(destination, "w") as out:
        header = {
            "type": "engrammar-export",
            "version": FORMAT_VERSION,
            "scope": scope.to_dict(),
            "embedder": engine.embedder.name,
        }
        out.write(json.dumps(header, ensure_ascii=False) + "\n")
        offset = 0
        while True:
            page = engine.store.list_memories(scope, _PAGE, offset)
            if not page:
                break
            offset += len(page)
            for record in page:
                line = {"type": "memory", **record.to_dict()}
                line.pop("created_at_iso", None)
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                ids.add(record.id)
                written += 1
            if progress:
                progress(written, max(total, written))
        ordered = sorted(ids)
        for start in range(0, len(ordered), _PAGE):
            for edge in engine.store.edges_from(scope.workspace, ordered[start : start + _PAGE]):
                if edge.dst in ids:
                    out.write(json.dumps({"type": "edge", **edge.to_dict()}) + "\n")
        for table, row in _scope_records(engine, scope, ids):
            line = {"type": "record", "table": table, **row}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return written


def _scope_records(
    engine: Engine, scope: Scope, ids: set[str]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The scope's records whose memories are all exported, without vectors, in table order."""
    events: set[str] = set()
    bases: set[str] = set()
    for table in RECORD_TABLES:
        after = None
        while True:
            rows, after = engine.store.export_rows(table, after, _PAGE)
            for row in rows:
                if table == "decision_memories":
                    keep = row["event_id"] in events and row["memory_id"] in ids
                else:
                    keep = row["workspace"] == scope.workspace and all(
                        row.get(key, value) == value
                        for key, value in (
                            ("user_id", scope.user_id),
                            ("agent_id", scope.agent_id),
                            ("session_id", scope.session_id),
                        )
                        if value is not None
                    )
                    keep = keep and all(
                        row.get(name) is None or row[name] in ids
                        for name in (
                            "memory_id",
                            "correction_memory_id",
                            "decision_memory_id",
                            "src",
                            "dst",
                        )
                    )
                    if table == "decision_reviews":
                        keep = keep and row["event_id"] in events
                    elif table == "knowledge_chunks":
                        keep = keep and row["kb_id"] in bases
                if not keep:
                    continue
                if table == "feedback_events":
                    events.add(row["id"])
                elif table == "knowledge_bases":
                    bases.add(row["id"])
                yield table, {k: v for k, v in row.items() if k not in COPY_VECTOR_FIELDS}
            if after is None:
                break


def _memory_row(
    engine: Engine, line: int, data: dict[str, Any], workspace: str | None
) -> dict[str, Any]:
    def f(name: str) -> str:
        return f"line {line}: {name}"

    known = {
        "type",
        "id",
        "workspace",
        "user_id",
        "agent_id",
        "session_id",
        "role",
        "content",
        "kind",
        "status",
        "created_at",
        "updated_at",
        "metadata",
        "valid_until",
        "superseded_by",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValidationError(f(unknown[0]), "unknown field")
    source_ws = v.scope_id(f("workspace"), data.get("workspace"), required=True)
    content, skipped = _content(engine, f("content"), data.get("content"))
    return {
        "id": v.scope_id(f("id"), data.get("id"), required=True),
        "source_workspace": source_ws,
        "workspace": workspace or source_ws,
        "user_id": v.scope_id(f("user_id"), data.get("user_id")),
        "agent_id": v.scope_id(f("agent_id"), data.get("agent_id")),
        "session_id": v.scope_id(f("session_id"), data.get("session_id")),
        "role": v.choice(f("role"), data.get("role", "user"), ROLES),
        "content": content,
        "skipped": skipped,
        "kind": v.choice(f("kind"), data.get("kind", "message"), KINDS),
        "status": v.choice(f("status"), data.get("status", "active"), STATUSES),
        "created_at": v.timestamp(f("created_at"), data.get("created_at")),
        "updated_at": v.timestamp(f("updated_at"), data.get("updated_at")),
        "metadata": v.metadata(f("metadata"), data.get("metadata")),
        "valid_until": v.timestamp(f("valid_until"), data.get("valid_until")),
        "superseded_by": v.scope_id(f("superseded_by"), data.get("superseded_by")),
    }


def _content(engine: Engine, name: str, value: Any) -> tuple[str | None, str | None]:
    """A memory line's content: a string or a list of parts / blocks as ``add`` reads them;
    (None, why) when it holds nothing to remember (the line is skipped, as ``add`` skips it)."""
    reason = "empty"
    if isinstance(value, list):
        parts = transcript.read_content(value, name, {})
        value = "\n".join(text for _, text in parts.pieces)
        reason = "no_text" if parts.other else "empty"
    if isinstance(value, str) and not value.strip():
        return None, reason
    return v.text(name, value, engine.config.max_content_chars), None


def _edge_row(line: int, data: dict[str, Any]) -> NewEdge:
    def f(name: str) -> str:
        return f"line {line}: {name}"

    src = v.scope_id(f("src"), data.get("src"), required=True)
    dst = v.scope_id(f("dst"), data.get("dst"), required=True)
    kind = v.choice(f("kind"), data.get("kind"), EDGE_KINDS)
    weight = data.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight != weight:
        raise ValidationError(f("weight"), "must be a number")
    unknown = sorted(set(data) - {"type", "src", "dst", "kind", "weight", "updated_at"})
    if unknown:
        raise ValidationError(f(unknown[0]), "unknown field")
    assert src is not None and dst is not None
    updated = v.timestamp(f("updated_at"), data.get("updated_at"))
    return NewEdge(src=src, dst=dst, kind=kind, weight=float(weight), updated_at=updated)


#: Record fields that may be null (the others are required), and those with fixed values.
_NULLABLE = frozenset(
    {
        "user_id", "agent_id", "session_id", "user_reaction", "user_correction",
        "corrected_output", "reason", "source_event_id", "correction", "correction_memory_id",
        "recall_id", "context", "decision_memory_id", "consumed_at", "memory_id", "source",
        "before",
    }
)  # fmt: skip
_NUMBERS = frozenset(
    {"created_at", "consumed_at", "weight", "confidence", "value", "alignment", "delta", "at",
     "before"}
)  # fmt: skip
_COUNTS = frozenset({"chunk_count", "position"})
#: Tables whose rows have no id of their own.
_NO_ID = frozenset({"decision_memories", "reply_signals", "edge_changes"})
_CHOICES: dict[str, tuple[str, ...]] = {
    "state": FEEDBACK_STATES,
    "final_decision": FEEDBACK_STATES,
    "outcome": REVIEW_OUTCOMES,
    "verdict": RATING_VERDICTS,
    "answer": ("corrected", "ai_output"),
}
_IDS = frozenset({"id", "workspace", "event_id", "memory_id", "correction_memory_id",
                  "decision_memory_id", "recall_id", "source_event_id", "user_id", "agent_id",
                  "session_id", "source", "src", "dst", "kb_id"})  # fmt: skip


def _record_row(engine: Engine, line: int, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    def f(name: str) -> str:
        return f"line {line}: {name}"

    table = v.choice(f("table"), data.get("table"), RECORD_TABLES)
    fields = [name for name in COPY_TABLES[table] if name not in COPY_VECTOR_FIELDS]
    unknown = sorted(set(data) - {"type", "table", *fields})
    if unknown:
        raise ValidationError(f(unknown[0]), "unknown field")
    row: dict[str, Any] = {}
    for name in fields:
        value = data.get(name)
        if value is None:
            if name not in _NULLABLE:
                raise ValidationError(f(name), "is required")
            row[name] = None
        elif name in _IDS:
            row[name] = v.scope_id(f(name), value, required=True)
        elif name == "kind" and table == "edge_changes":
            row[name] = v.choice(f(name), value, EDGE_KINDS)
        elif name in _CHOICES:
            row[name] = v.choice(f(name), value, _CHOICES[name])
        elif name in _COUNTS:
            row[name] = v.non_negative_int(f(name), value)
        elif name in _NUMBERS:
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                raise ValidationError(f(name), "must be a number")
            row[name] = float(value)
        elif name == "reversed":
            if not isinstance(value, bool):
                raise ValidationError(f(name), "must be true or false")
            row[name] = value
        elif name in ("metadata", "payload"):
            row[name] = v.metadata(f(name), value)
        elif name in COPY_JSON_FIELDS:  # memory_ids, paths, tensions: lists
            if not isinstance(value, list) or not v.depth_ok(value, 8):
                raise ValidationError(f(name), "must be a list")
            row[name] = value
        else:
            row[name] = v.text(f(name), value, engine.config.max_content_chars)
    if table in ("memory_ratings", "reply_signals") and row["memory_id"] is None:
        raise ValidationError(f("memory_id"), "is required")
    if table == "reply_signals":
        if row["recall_id"] is None:
            raise ValidationError(f("recall_id"), "is required")
        if not -1.0 <= row["value"] <= 1.0:
            raise ValidationError(f("value"), "must be between -1 and 1")
    return table, row


def _record_vectors(engine: Engine, records: list[tuple[str, dict[str, Any]]]) -> None:
    """Embed the texts whose vectors a record keeps, as the call that wrote it did."""
    wanted: list[tuple[dict[str, Any], str, str]] = []  # (row, vector field, text)
    queries = {row["id"]: row["query"] for table, row in records if table == "recalls"}
    for table, row in records:
        if table == "feedback_events":
            wanted.append((row, "context_embedding", row["input_context"]))
            wanted.append((row, "ai_output_embedding", row["ai_output"]))
            corrected = row["corrected_output"] or row["user_correction"]
            row["corrected_embedding"] = None
            if corrected:
                wanted.append((row, "corrected_embedding", corrected))
        elif table == "preference_pairs":
            wanted.append((row, "context_embedding", row["context"]))
            wanted.append((row, "accepted_embedding", row["accepted_output"]))
            wanted.append((row, "rejected_embedding", row["rejected_output"]))
        elif table == "memory_ratings":
            row["context_embedding"] = None
            if row["context"] is not None:
                wanted.append((row, "context_embedding", row["context"]))
        elif table == "reply_signals":
            # A reply's signals count for questions like its recall's: that query's vector.
            if row["recall_id"] not in queries:
                raise ValidationError(
                    "reply_signals: recall_id",
                    f"the recall {row['recall_id']!r} is not in the import",
                )
            wanted.append((row, "context_embedding", queries[row["recall_id"]]))
        elif table == "knowledge_chunks":
            wanted.append((row, "embedding", row["content"]))
    for start in range(0, len(wanted), _EMBED_CHUNK):
        chunk = wanted[start : start + _EMBED_CHUNK]
        vectors = engine.embed([text for _, _, text in chunk])
        for (row, name, _), vector in zip(chunk, vectors, strict=True):
            row[name] = vector


def _move_records(
    records: list[tuple[str, dict[str, Any]]], workspace: str, rename: dict[str, str]
) -> list[tuple[str, dict[str, Any]]]:
    """Records imported into another workspace: new record ids, the memories' new ids."""
    new_ids: dict[str, str] = {}
    for table, row in records:
        if table not in _NO_ID:
            new_ids[row["id"]] = new_id()
    out = []
    for table, row in records:
        moved = rename_memory_refs(table, row, rename)
        if table not in _NO_ID:
            moved["id"] = new_ids[row["id"]]
        if table != "decision_memories":
            moved["workspace"] = workspace
        for name in ("event_id", "recall_id", "kb_id"):
            if moved.get(name) is not None:
                moved[name] = new_ids.get(moved[name], moved[name])
        out.append((table, moved))
    return out


def _replies_to(rows: list[dict[str, Any]]) -> list[int | None]:
    """For each imported memory (in the export's order, the order they were stored), the row
    it answers within its session, as ``add`` blends a reply's vector with it
    (``Config.embed_context``); None outside a session. Messages added in one batch without
    a session were blended within their batch, which the export does not record."""
    out: list[int | None] = [None] * len(rows)
    sessions: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(rows):
        if r["session_id"] is not None:
            key = (r["workspace"], r["user_id"], r["agent_id"], r["session_id"])
            sessions.setdefault(key, []).append(i)
    for members in sessions.values():
        said = [(speaker_of(rows[i]["metadata"]), rows[i]["role"]) for i in members]
        for i, source in zip(members, context_sources(said), strict=True):
            out[i] = None if source is None else members[source]
    return out


def import_jsonl(
    engine: Engine, source: Target, workspace: str | None, progress: Progress | None
) -> dict[str, Any]:
    """Read an export into the store in one transaction (see ``Memory.import_``)."""
    ws = v.scope_id("workspace", workspace)
    rows: list[dict[str, Any]] = []
    edges: list[NewEdge] = []
    records: list[tuple[str, dict[str, Any]]] = []
    skipped: list[dict[str, Any]] = []
    # Everything is read and checked before anything is written: a bad line loses nothing.
    with _open(source, "r") as handle:
        for number, raw in _numbered_lines(handle):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except ValueError:
                raise ValidationError(f"line {number}", "is not valid JSON") from None
            if not isinstance(data, dict):
                raise ValidationError(f"line {number}", "must be a JSON object")
            kind = data.get("type")
            if kind == "engrammar-export":
                if data.get("version") != FORMAT_VERSION:
                    raise ValidationError(
                        f"line {number}: version",
                        f"unsupported export version {data.get('version')!r}",
                    )
            elif kind == "memory":
                row = _memory_row(engine, number, data, ws)
                if row["content"] is None:
                    skipped.append({"line": number, "reason": row["skipped"]})
                else:
                    rows.append(row)
            elif kind == "edge":
                edges.append(_edge_row(number, data))
            elif kind == "record":
                records.append(_record_row(engine, number, data))
            else:
                raise ValidationError(f"line {number}: type", f"unknown record type {kind!r}")
    # A memory moved into another workspace gets a new id: ids are unique across a store. New
    # ids are made in the order of the old ones, so equal scores rank as they did in the source.
    rename = {
        r["id"]: (new_id() if r["workspace"] != r["source_workspace"] else r["id"])
        for r in sorted(rows, key=lambda r: r["id"])
    }
    total = len(rows)
    parts: list[np.ndarray] = []
    chunks: list[tuple[ChunkVector, ...]] = []  # a long text's windows are embedded again too
    for start in range(0, total, _EMBED_CHUNK):
        chunk = rows[start : start + _EMBED_CHUNK]
        found, windows = embed_memories(
            engine, [(r["content"], speaker_of(r["metadata"]), r["role"]) for r in chunk]
        )
        parts.append(found)
        chunks += windows
        if progress:
            progress(sum(len(p) for p in parts), total)
    vectors = np.concatenate(parts) if parts else np.zeros((0, engine.embedder.dim), np.float32)
    if engine.config.embed_context:
        vectors = blend_context(vectors, _replies_to(rows), engine.config.context_weight)
    new_rows: list[NewMemory] = []
    for r, vector, own in zip(rows, vectors, chunks, strict=True):
        scope = Scope(r["workspace"], r["user_id"], r["agent_id"], r["session_id"])
        new_rows.append(
            NewMemory(
                id=rename[r["id"]],
                workspace=r["workspace"],
                user_id=r["user_id"],
                agent_id=r["agent_id"],
                session_id=r["session_id"],
                role=r["role"],
                content=r["content"],
                kind=r["kind"],
                created_at=r["created_at"] or time.time(),
                metadata=r["metadata"],
                dedup_key=dedup_key(scope, r["role"], r["content"]),
                embedding=vector,
                status=r["status"],
                updated_at=r["updated_at"],
                # What replaced it, if it came along (else the import's supersedes edges,
                # if any, tell again).
                valid_until=r["valid_until"] if r["superseded_by"] in rename else None,
                superseded_by=rename.get(r["superseded_by"] or ""),
                chunks=own,
            )
        )
    kept_edges = [
        NewEdge(rename[e.src], rename[e.dst], e.kind, e.weight, e.updated_at)
        for e in edges
        if e.src in rename and e.dst in rename
    ]
    workspaces = {r.workspace for r in new_rows}
    if len(workspaces) > 1 and (kept_edges or records):
        raise ValidationError(
            "workspace", "an import with edges or records must hold one workspace"
        )
    if records:
        target = ws or (workspaces.pop() if workspaces else records[0][1].get("workspace"))
        if ws is not None:
            records = _move_records(records, ws, rename)
        elif any(row.get("workspace", target) != target for _, row in records):
            raise ValidationError("workspace", "an import with records must hold one workspace")
        _record_vectors(engine, records)
    built = 0
    if not edges and new_rows:
        # An export without links (hand-written, or from another tool): give the memories the
        # links `add` would have given them, or recall could never walk between them.
        kept_edges = _link(engine, new_rows)
        built = len(kept_edges)
    # What is written is told apart from what was read: a second import of the same file
    # adds nothing, and says so.
    targets = {r.workspace for r in new_rows}
    before = _written(engine, targets, records)
    known = _knowledge(engine, targets, records)
    # One transaction: every memory, edge and record, or nothing.
    results = engine.store.import_bundle(ImportBundle(new_rows, kept_edges, records))
    created = sum(1 for _, made in results if made)
    after = _written(engine, targets, records)
    bases, passages = _knowledge(engine, targets, records)
    return {
        "memories": created,
        "duplicates": total - created,
        "edges": after[0] - before[0],
        "records": after[1] - before[1],
        "knowledge_bases": bases - known[0],
        "knowledge_chunks": passages - known[1],
        "edges_built": built,
        "skipped": skipped,
    }


def _knowledge(
    engine: Engine, workspaces: set[str], records: list[tuple[str, dict[str, Any]]]
) -> tuple[int, int]:
    """(knowledge bases, their passages) stored in the workspaces an import writes to."""
    names = {row["workspace"] for table, row in records if table == "knowledge_bases"}
    bases = [b for ws in sorted(names | workspaces) for b in engine.store.list_knowledge(Scope(ws))]
    return len(bases), sum(b.chunk_count for b in bases)


def _numbered_lines(handle: IO[str]) -> Iterator[tuple[int, str]]:
    """The lines of ``handle`` with their numbers; text that is not UTF-8 is a
    ``ValidationError`` naming the line, not a traceback."""
    number = 0
    try:
        for number, raw in enumerate(handle, 1):
            yield number, raw
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"line {number + 1}", f"is not UTF-8 text (byte {exc.object[exc.start]:#04x})"
        ) from None


def _link(engine: Engine, rows: list[NewMemory]) -> list[NewEdge]:
    """The graph links of imported ``rows``, built as ``add`` builds them: per conversation
    (workspace, user, agent, session), in the file's order."""
    groups: dict[tuple[str, str | None, str | None, str | None], list[NewMemory]] = {}
    present: set[str] = set()
    for ws in {r.workspace for r in rows}:
        present |= set(engine.store.get_memories(ws, [r.id for r in rows if r.workspace == ws]))
    for row in rows:
        if row.id in present:
            continue  # imported before: it has its links

        key = (row.workspace, row.user_id, row.agent_id, row.session_id)
        groups.setdefault(key, []).append(row)
    out: list[NewEdge] = []
    for (ws, user, agent, session), group in groups.items():
        out += build_edges(engine, Scope(ws, user, agent, session), group)
    return out


def _written(
    engine: Engine, workspaces: set[str], records: list[tuple[str, dict[str, Any]]]
) -> tuple[int, int]:
    """(edges, feedback and recall records) stored in the workspaces an import writes to."""
    names = set(workspaces) | {row.get("workspace") for _, row in records if row.get("workspace")}
    edges = count = 0
    for ws in sorted(n for n in names if isinstance(n, str)):
        stats = engine.store.stats(Scope(ws))
        edges += int(stats["edges"])
        # "reply" counts consumed recalls, rows already in "recalls".
        kinds = stats["feedback_records"]
        count += int(stats["recalls"]) + sum(int(n) for k, n in kinds.items() if k != "reply")
    # Two record tables have no count in stats: count their rows when the import has some.
    for table in sorted({t for t, _ in records} & _UNCOUNTED):
        after: Any = None
        while True:
            rows, after = engine.store.export_rows(table, after, 10_000)
            count += sum(1 for r in rows if r.get("workspace", next(iter(names), None)) in names)
            if not rows or after is None:
                break
    return edges, count


_UNCOUNTED = frozenset({"decision_memories", "reply_signals", "edge_changes"})
