"""Export and import of memories and their graph edges as JSON Lines.

The first line is a header (``{"type": "engrammar-export", "version": 1, ...}``); then one
``{"type": "memory", ...}`` line per memory and one ``{"type": "edge", ...}`` line per edge
between exported memories. Vectors are not exported: they belong to an embedding model, and
import embeds the content again with the importing store's model, so an export is also the
way to move a store to another embedder.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

from . import _validate as v
from .errors import ValidationError
from .models import EDGE_KINDS, KINDS, ROLES, Scope
from .store import NewEdge, NewMemory

if TYPE_CHECKING:
    from .memory import Memory

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
    memory: Memory, destination: Target, scope: Scope, progress: Progress | None
) -> int:
    total = memory.store.stats(scope)["memories"]
    written = 0
    ids: set[str] = set()
    with _open(destination, "w") as out:
        header = {
            "type": "engrammar-export",
            "version": FORMAT_VERSION,
            "scope": scope.to_dict(),
            "embedder": memory.embedder.name,
        }
        out.write(json.dumps(header, ensure_ascii=False) + "\n")
        offset = 0
        while True:
            page = memory.store.list_memories(scope, _PAGE, offset)
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
            for edge in memory.store.edges_from(scope.workspace, ordered[start : start + _PAGE]):
                if edge.dst in ids:
                    out.write(json.dumps({"type": "edge", **edge.to_dict()}) + "\n")
    return written


def _memory_row(
    memory: Memory, line: int, data: dict[str, Any], workspace: str | None
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
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValidationError(f(unknown[0]), "unknown field")
    source_ws = v.scope_id(f("workspace"), data.get("workspace"), required=True)
    return {
        "id": v.scope_id(f("id"), data.get("id"), required=True),
        "source_workspace": source_ws,
        "workspace": workspace or source_ws,
        "user_id": v.scope_id(f("user_id"), data.get("user_id")),
        "agent_id": v.scope_id(f("agent_id"), data.get("agent_id")),
        "session_id": v.scope_id(f("session_id"), data.get("session_id")),
        "role": v.choice(f("role"), data.get("role", "user"), ROLES),
        "content": v.text(f("content"), data.get("content"), memory.config.max_content_chars),
        "kind": v.choice(f("kind"), data.get("kind", "message"), KINDS),
        "status": v.choice(f("status"), data.get("status", "active"), STATUSES),
        "created_at": v.timestamp(f("created_at"), data.get("created_at")),
        "metadata": v.metadata(f("metadata"), data.get("metadata")),
    }


def _edge_row(line: int, data: dict[str, Any]) -> NewEdge:
    def f(name: str) -> str:
        return f"line {line}: {name}"

    src = v.scope_id(f("src"), data.get("src"), required=True)
    dst = v.scope_id(f("dst"), data.get("dst"), required=True)
    kind = v.choice(f("kind"), data.get("kind"), EDGE_KINDS)
    weight = data.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise ValidationError(f("weight"), "must be a number")
    assert src is not None and dst is not None
    return NewEdge(src=src, dst=dst, kind=kind, weight=float(weight))


def import_jsonl(
    memory: Memory, source: Target, workspace: str | None, progress: Progress | None
) -> dict[str, int]:
    from .memory import _dedup_key

    ws = v.scope_id("workspace", workspace)
    rows: list[dict[str, Any]] = []
    edges: list[NewEdge] = []
    # Everything is read and checked before anything is written: a bad line loses nothing.
    with _open(source, "r") as handle:
        for number, raw in enumerate(handle, 1):
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
                rows.append(_memory_row(memory, number, data, ws))
            elif kind == "edge":
                edges.append(_edge_row(number, data))
            else:
                raise ValidationError(f"line {number}: type", f"unknown record type {kind!r}")
    # A memory moved into another workspace gets a new id: ids are unique across a store.
    rename = {
        r["id"]: (uuid.uuid4().hex if r["workspace"] != r["source_workspace"] else r["id"])
        for r in rows
    }
    total = len(rows)
    new_rows: list[NewMemory] = []
    for start in range(0, total, _EMBED_CHUNK):
        chunk = rows[start : start + _EMBED_CHUNK]
        vectors = memory._embed([r["content"] for r in chunk])
        for r, vector in zip(chunk, vectors, strict=True):
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
                    dedup_key=_dedup_key(scope, r["role"], r["content"]),
                    embedding=vector,
                    status=r["status"],
                )
            )
        if progress:
            progress(len(new_rows), total)
    kept_edges = [
        NewEdge(rename[e.src], rename[e.dst], e.kind, e.weight)
        for e in edges
        if e.src in rename and e.dst in rename
    ]
    workspaces = {r.workspace for r in new_rows}
    if len(workspaces) > 1 and kept_edges:
        raise ValidationError("workspace", "an import with edges must hold one workspace")
    results = memory.store.add_memories(new_rows, kept_edges)
    created = sum(1 for _, made in results if made)
    return {"memories": created, "duplicates": total - created, "edges": len(kept_edges)}
