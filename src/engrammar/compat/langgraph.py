"""LangGraph's long-term store backed by engrammar: ``EngrammarStore`` is a
``langgraph.store.base.BaseStore`` (``pip install 'engrammar[langgraph]'``).

    from engrammar import Config, Memory
    from engrammar.compat.langgraph import EngrammarStore

    store = EngrammarStore(Memory(Config(path="./memory")))
    graph = builder.compile(store=store)        # nodes get it as `store` / `runtime.store`

    store.put(("memories", "alice"), "food", {"text": "Alice likes spicy ramen."})
    store.search(("memories", "alice"), query="what does alice eat?", limit=3)

How LangGraph's items live in engrammar (one memory per item):

* **namespace → user_id.** The labels joined with ``.`` (LangGraph forbids ``.`` in a label,
  so the join is reversible): ``("memories", "alice")`` is ``user_id="memories.alice"``.
* **key → session_id.** So an item is found, replaced and deleted by its scope alone.
* **agent_id** is the store's ``agent_id`` (default ``"langgraph"``) and **workspace** its
  ``workspace`` (default: the ``Memory``'s): the store reads and writes only inside them, so
  other memories of the workspace never come back as items.
* **value** is kept whole in the memory's metadata (``metadata["langgraph"]["value"]``), and
  comes back as given. The memory's **content**, the text engrammar embeds, indexes and shows
  in a recall's ``formatted`` block, is taken from the value: the ``index`` fields of ``put``
  (LangGraph's path syntax: ``"text"``, ``"a.b"``, ``"items[*].name"``), else the store's
  ``fields``, else the whole value (its string field as is when it has only one, else
  ``key: value`` lines). With ``index=False`` the content is the key and a query search
  skips the item.
* **search** with a ``query`` is engrammar's ``recall`` (hybrid ranking, graph, what feedback
  learned; the recall is recorded, so ``memory.feedback(reply, user_id="memories.alice",
  agent_id="langgraph")`` learns from the answer). A prefix that covers several namespaces
  recalls in each and merges by score. Without a query, items come oldest first. ``filter``
  matches value fields exactly or with ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``;
  with a filter, a query looks at the best 1,000 of each namespace.
* ``ttl`` is not supported (``supports_ttl`` is false), as in LangGraph's own in-memory store.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ..errors import ValidationError, require_extra
from ..memory import Memory
from ..models import MemoryRecord

require_extra("engrammar.compat.langgraph", "langgraph", "langgraph.store.base")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    validate_op_namespace,
)

__all__ = ["EngrammarStore", "namespace_of", "user_id_of"]

#: The metadata key holding what LangGraph gave (namespace, key, value, whether it is indexed).
META = "langgraph"
#: How many memories a query with a filter, or a listing, reads per call.
_PAGE = 1000


def user_id_of(namespace: Sequence[str]) -> str:
    """The engrammar ``user_id`` of a LangGraph namespace: its labels joined with ``.``."""
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    return ".".join(namespace)


def namespace_of(user_id: str) -> tuple[str, ...]:
    """The LangGraph namespace of an engrammar ``user_id`` written by :class:`EngrammarStore`."""
    return tuple(user_id.split("."))


def _time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: equal, nested dicts field by field, or operators."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), w) for k, w in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValidationError("filter", f"unsupported operator {op!r}")
    try:
        a, b = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(want == "*" or have == want for have, want in pairs)


class EngrammarStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are engrammar memories (see the module's text
    for the mapping).

    Args:
        memory: the engrammar ``Memory`` to keep items in (the store does not close it).
        agent_id: the engrammar agent every item belongs to.
        workspace: the workspace (default: the ``Memory``'s).
        fields: which value fields make a memory's text when ``put`` gives no ``index``
            (LangGraph path syntax; default: the whole value).
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory,
        *,
        agent_id: str = "langgraph",
        workspace: str | None = None,
        fields: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise ValidationError("memory", f"must be an engrammar Memory, got {memory!r}")
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise ValidationError("agent_id", "must be a non-empty string")
        self.memory = memory
        self.agent_id = agent_id
        self.workspace = workspace or memory.config.workspace
        self.fields = list(fields) if fields is not None else None
        self._writes = threading.Lock()

    # -- BaseStore ------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; each result is in the place of its op. Every op is checked
        before any runs, so a bad one (a namespace, key or value LangGraph or engrammar
        refuses) fails the batch before anything is written."""
        ops = list(ops)
        for op in ops:
            self._check(op)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            else:
                results.append(self._list_namespaces(op))
        return results

    @staticmethod
    def _check(op: Op) -> None:
        if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
            raise ValidationError("op", f"unknown operation {type(op).__name__}")
        validate_op_namespace(op)
        if isinstance(op, GetOp | PutOp):
            user_id_of(op.namespace)  # not empty
            if not isinstance(op.key, str) or not op.key.strip():
                raise ValidationError("key", f"must be a non-empty string, got {op.key!r}")
        if isinstance(op, PutOp) and op.value is not None:
            if op.namespace[0] == "langgraph":
                raise InvalidNamespaceError(
                    f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
                )
            if not isinstance(op.value, Mapping):
                raise ValidationError("value", f"must be a mapping, got {type(op.value).__name__}")
            try:
                json.dumps(dict(op.value), allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValidationError("value", f"must be JSON-serializable: {exc}") from exc
        if isinstance(op, SearchOp) and (op.limit < 0 or op.offset < 0):
            raise ValidationError("limit", "limit and offset must not be negative")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread, so the event loop keeps running."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- the operations ---------------------------------------------------------------------------
    def _scope(self, namespace: Sequence[str], key: str | None = None) -> dict[str, Any]:
        scope = {"user_id": user_id_of(namespace), "agent_id": self.agent_id}
        scope["workspace"] = self.workspace
        if key is not None:
            scope["session_id"] = key
        return scope

    def _records(self, namespace: Sequence[str], key: str) -> list[MemoryRecord]:
        return self.memory.list(**self._scope(namespace, key), limit=_PAGE)

    def _item(self, record: MemoryRecord) -> Item:
        meta = record.metadata.get(META) or {}
        return Item(
            value=dict(meta.get("value") or {}),
            key=str(meta.get("key", record.session_id)),
            namespace=tuple(meta.get("namespace") or namespace_of(record.user_id or "")),
            created_at=_time(record.created_at),
            updated_at=_time(record.updated_at),
        )

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        found = self._records(namespace, key)
        return self._item(found[-1]) if found else None

    def _text(self, key: str, value: Mapping[str, Any], index: Any) -> str:
        fields = index if isinstance(index, list) else self.fields
        if fields:
            texts = [t for path in fields for t in get_text_at_path(dict(value), path)]
            text = "\n".join(t for t in texts if t.strip())
            if text.strip():
                return text
        strings = [v for v in value.values() if isinstance(v, str) and v.strip()]
        if len(strings) == 1:  # {"text": ..., "stars": 5}: the text alone is what it says
            return strings[0]
        lines = [f"{k}: {v if isinstance(v, str) else json.dumps(v)}" for k, v in value.items()]
        return "\n".join(lines) if value else key

    def _put(self, op: PutOp) -> None:
        if op.value is None:
            with self._writes:
                self.memory.forget(**self._scope(op.namespace, op.key))
            return
        indexed = op.index is not False
        content = self._text(op.key, op.value, op.index) if indexed else op.key
        meta = {
            META: {
                "namespace": list(op.namespace),
                "key": op.key,
                "value": dict(op.value),
                "indexed": indexed,
            }
        }
        with self._writes:
            found = self._records(op.namespace, op.key)
            if not found:
                self.memory.add(content, **self._scope(op.namespace, op.key), metadata=meta)
                return
            *stale, current = found
            new_content = None if current.content == content else content
            self.memory.update(
                current.id, new_content, metadata=meta, workspace=self.workspace, reason="put"
            )
            if stale:  # two writers created the same key at once: keep the newest
                self.memory.forget([r.id for r in stale], workspace=self.workspace)

    def _namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding an item, sorted."""
        listing = self.memory.scopes(agent_id=self.agent_id, workspace=self.workspace, limit=10_000)
        users = {row["user_id"] for row in listing["scopes"] if row["user_id"]}
        offset = 0
        while listing["truncated"]:  # more items than one listing: read them page by page
            page = self.memory.list(
                agent_id=self.agent_id, workspace=self.workspace, limit=_PAGE, offset=offset
            )
            users.update(r.user_id for r in page if r.user_id)
            if len(page) < _PAGE:
                break
            offset += _PAGE
        return sorted(namespace_of(u) for u in users)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        namespaces = [ns for ns in self._namespaces() if ns[: len(prefix)] == prefix]
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        for namespace in namespaces:
            scored: list[tuple[MemoryRecord, float | None]]
            if op.query:
                limit = _PAGE if op.filter else max(1, min(wanted, _PAGE))
                result = self.memory.recall(op.query, **self._scope(namespace), limit=limit)
                scored = [(s.memory, s.score) for s in result.memories]
                scored = [(r, s) for r, s in scored if r.metadata.get(META, {}).get("indexed")]
            else:
                scored = [(r, None) for r in self._all(namespace)]
            for record, score in scored:
                item = self._search_item(record, score)
                if op.filter and not all(
                    _matches(item.value.get(k), w) for k, w in op.filter.items()
                ):
                    continue
                found.append(item)
            if not op.query and len(found) >= wanted:  # oldest first: the page is complete
                break
        if op.query:
            found.sort(key=lambda i: -(i.score or 0.0))
        return found[op.offset : wanted]

    def _all(self, namespace: tuple[str, ...]) -> list[MemoryRecord]:
        records: list[MemoryRecord] = []
        while True:
            page = self.memory.list(**self._scope(namespace), limit=_PAGE, offset=len(records))
            records.extend(page)
            if len(page) < _PAGE:
                return records

    def _search_item(self, record: MemoryRecord, score: float | None) -> SearchItem:
        item = self._item(record)
        return SearchItem(
            item.namespace, item.key, item.value, item.created_at, item.updated_at, score
        )

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = self._namespaces()
        for condition in op.match_conditions or ():
            namespaces = [ns for ns in namespaces if _matches_condition(condition, ns)]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        return namespaces[op.offset : op.offset + op.limit]
