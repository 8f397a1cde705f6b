"""The shared parameters, renderings and guards of the operation table (:mod:`.operations`):
one declaration of ``user_id``, ``query``, ``as_of`` ... for every interface, and
:func:`param`, which declares one more."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable
from typing import Any

from ..recall.format import score_breakdown
from .access import own_memory, readable_memory, resolve
from .spec import REQUIRED, Param
from .texts import plural, short


# -- the shared parameters ---------------------------------------------------------------------
def param(name: str, type_: Any, doc: str, default: Any = None, **kw: Any) -> Param:
    """One parameter of an operation (:class:`.spec.Param`), positionally: name, type, doc."""
    return Param(name, type_, doc, default, **kw)


USER = param(
    "user_id", str | None, "The end user the memories belong to (e.g. 'alice').", short="u"
)
AGENT = param("agent_id", str | None, "The agent that acts (e.g. 'codex').", short="a")
SESSION = param("session_id", str | None, "A conversation or task id.", short="s")
WORKSPACE = param(
    "workspace",
    str | None,
    "Workspace (tenant); default 'default'. Over HTTP an API key reaches only its own.",
    short="w",
)
SCOPE = (USER, AGENT, SESSION, WORKSPACE)
LIMIT = param(
    "limit", int | None, "How many memories to return (default 10).", short="n", low=1, high=1000
)
PAGE = (
    param("limit", int, "Page size.", 100, short="n", low=1, high=10_000),
    param("offset", int, "Items to skip.", 0, low=0),
)
QUERY = param("query", str, "What you need to know, in plain words.", REQUIRED, cli="arg")
MEMORY_ID = param("memory_id", str, "The memory's id.", REQUIRED, cli="arg")
TIMESTAMP = param(
    "timestamp", str | float | None, "When (ISO-8601 or epoch seconds); default now.", mcp=False
)
AS_OF = param(
    "as_of",
    str | float | None,
    "When the question is asked (ISO-8601 or epoch seconds; default now): relative times in "
    'the query ("two weeks ago", "in May") are read against it, and what was current then '
    "ranks first (later memories are left out).",
)
METADATA = param("metadata", dict[str, Any] | None, "Extra JSON data.", json=True)
WEIGHT = param(
    "weight", float, "How much this counts, above 0 up to 10.", 1.0, low=0, high=10, gt=True
)
REASON = param("reason", str | None, "Why.")
FILTERS = param(
    "filters",
    dict[str, Any] | None,
    "Only memories that match, filtered before the top `limit` are cut: "
    '{"metadata": {"key": value, "key2": {"in": [values]}}, "kind": kind or [kinds], '
    '"role": role or [roles], "since": time, "until": time} (times ISO-8601 or epoch seconds '
    "on created_at; since inclusive, until exclusive). Every condition given must hold.",
    cli=None,  # the CLI builds it from --kind, --role, --since, --until, --meta
)


def min_score(doc: str) -> Param:
    """The ``min_score`` parameter (recall's or search's ``doc``)."""
    return param("min_score", float | None, doc, low=0, high=10)


SEARCH_MIN_SCORE = min_score(
    "Leave out results scoring below this. Search scores are absolute (comparable across "
    "queries): a query nothing matches scores low."
)
RECALL_MIN_SCORE = min_score(
    "Leave out memories whose absolute score is below this: components.absolute, the "
    "ranking's score times the best cosine any candidate has with the query (search's "
    "query_match), the scale search returns, so a query nothing matches brings back little."
)
SOURCE = param(
    "source",
    str | None,
    "Who gives this feedback (default: agent:<agent_id>); over HTTP with an API key, the "
    "key's id. One source's burst counts as one signal.",
    mcp=False,
)


#: The shared parameters by name: what :func:`handler_params` shows for a handler's parameter
#: of that name unless told otherwise.
SHARED: dict[str, Param] = {
    p.name: p for p in (QUERY, *SCOPE, LIMIT, AS_OF, FILTERS, MEMORY_ID, METADATA, REASON)
}


def handler_params(
    handler: Callable[..., Any], *own: Param, python_only: tuple[str, ...] = ()
) -> tuple[Param, ...]:
    """The parameters of ``handler`` (a ``Memory`` method) as the interfaces show them.

    The handler's signature is the one declaration of their names, order and defaults (no
    default: required); each is shown as the parameter of its name among ``own``, else as the
    shared one (:data:`SHARED`). ``python_only``: the handler's parameters no interface
    serves (Python objects such as a ``RankingProfile``).

    Raises:
        ValueError: a parameter with no way to show it, or a ``python_only`` or ``own`` name
            the handler does not take.
    """
    signature = inspect.signature(handler)
    names = [n for n in signature.parameters if n != "self"]
    shown = {p.name: p for p in own}
    unknown = sorted((set(python_only) | set(shown)) - set(names))
    if unknown:
        raise ValueError(f"{handler.__qualname__} takes no parameter {', '.join(unknown)}")
    out: list[Param] = []
    for name in names:
        if name in python_only:
            continue
        spec = shown.get(name) or SHARED.get(name)
        if spec is None:
            raise ValueError(f"{handler.__qualname__}: no interface spec for parameter {name!r}")
        real = signature.parameters[name].default
        default = REQUIRED if real is inspect.Parameter.empty else real
        out.append(dataclasses.replace(spec, default=default))
    return tuple(out)


# -- rendering -----------------------------------------------------------------------------------
def memory_lines(record: dict[str, Any]) -> str:
    keys = (
        "id content role kind status workspace user_id agent_id session_id created_at_iso"
    ).split()
    lines = [f"{k}: {record[k]}" for k in keys if record.get(k) is not None]
    if record.get("metadata"):
        lines.append(f"metadata: {json.dumps(record['metadata'], ensure_ascii=False)}")
    return "\n".join(lines)


def ranked(items: list[dict[str, Any]]) -> str:
    if not items:
        return "No memories matched."
    return "\n".join(
        f"{i}. {item['score']:.3f}  {item['memory']['id']}  {short(item['memory']['content'])}"
        f"\n   {score_breakdown(item['score'], item['components'])}"
        for i, item in enumerate(items, 1)
    )


def mcp_listing(items: list[dict[str, Any]]) -> str:
    lines = []
    for i, item in enumerate(items, 1):
        memory = item["memory"]
        lines.append(f"{i}. [{item['score']:.3f}] {memory['content']}  (id {memory['id']})")
    return "\n".join(lines)


def record_lines(record: dict[str, Any]) -> str:
    """A feedback record, one ``key: value`` line per set field."""
    return "\n".join(
        f"{k}: {json.dumps(val, ensure_ascii=False) if isinstance(val, dict) else val}"
        for k, val in record.items()
        if val is not None and val != {}
    )


def explain_text(d: dict[str, Any]) -> str:
    lines = [f"memory {d['memory_id']}: rank {d.get('rank')}, score {d.get('score')}"]
    if d.get("score") is not None:
        lines.append(f"  {score_breakdown(d['score'], d.get('components', {}))}")
    lines += [f"  {k}: {val}" for k, val in d.get("components", {}).items()]
    if d.get("best_path"):
        lines.append(f"best path: {' -> '.join(d['best_path']['nodes'])}")
    if d.get("formula"):
        lines.append(d["formula"])
    return "\n".join(lines)


def added_lines(d: dict[str, Any]) -> list[str]:
    """One line per message: its id, or why it was skipped."""
    why = {s["index"]: s["reason"] for s in d.get("skipped", [])}
    return [i if i is not None else f"skipped ({why.get(n, '?')})" for n, i in enumerate(d["ids"])]


def added_text(d: dict[str, Any]) -> str:
    stored = [i for i in d["ids"] if i is not None]
    text = f"Stored {plural(len(stored), 'memory', 'memories')}: {', '.join(stored)}"
    if d.get("skipped"):
        skipped = ", ".join(f"messages[{s['index']}] ({s['reason']})" for s in d["skipped"])
        text += f"\nSkipped, nothing to remember: {skipped}"
    return text


def listed(key: str) -> Callable[[Any, dict[str, Any]], dict[str, Any]]:
    return lambda out, args: {key: [r.to_dict() for r in out]}


# -- the operations ------------------------------------------------------------------------------
SCOPED = (resolve,)
OWNED = (resolve, own_memory)
READ = (resolve, readable_memory)
