"""The read-only operations of the web inspector and the knowledge-base operations: parts of
the one operation table (:data:`.operations.OPERATIONS`), kept in their own file."""

from __future__ import annotations

from typing import Any

from ..models import KINDS, ROLES
from .op_params import (
    _OWNED,
    _SCOPED,
    AGENT,
    MEMORY_ID,
    METADATA,
    PAGE,
    QUERY,
    SCOPE,
    USER,
    WORKSPACE,
    _listed,
    _p,
)
from .spec import ORDERS, REQUIRED, HttpRoute, Operation, Param
from .texts import short

__all__ = ["INSPECTOR_OPERATIONS", "KNOWLEDGE_OPERATIONS"]


def _limit(default: int, high: int) -> Param:
    return _p("limit", int | None, f"At most this many (default {default}).", low=1, high=high)


#: The reads of the web inspector (``/ui``): REST only.
INSPECTOR_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "find_memories",
        "find_memories",
        (
            *SCOPE,
            *PAGE,
            _p("kind", str | None, "Only memories of this kind.", choices=KINDS),
            _p("role", str | None, "Only memories of this role.", choices=ROLES),
            _p("status", str | None, "Only memories of this status (active, ...)."),
            _p("since", str | float | None, "Created at or after (epoch seconds or ISO-8601)."),
            _p("until", str | float | None, "Created before (epoch seconds or ISO-8601)."),
            _p("text", str | None, "Content contains this text (any case)."),
            _p("order", str | None, "oldest (default) or newest first.", choices=ORDERS),
        ),
        "List memories of a scope (oldest first unless order=newest), with filters",
        http=(HttpRoute("GET", "/v1/memories", 200, "list"),),
        guards=_SCOPED,
        schemas=(None, "MemoryList"),
    ),
    Operation(
        "scopes",
        "scopes",
        (USER, AGENT, WORKSPACE, _limit(2_000, 10_000)),
        "The users, agents and sessions of the key's workspace, with memory counts",
        http=(HttpRoute("GET", "/v1/scopes", 200),),
        guards=_SCOPED,
        schemas=(None, "ScopeList"),
    ),
    Operation(
        "memory_edges",
        "memory_edges",
        (
            MEMORY_ID,
            _p("user_id", str | None, "Only neighbours of this user."),
            WORKSPACE,
            _p("depth", int | None, "Hops from the memory, 1 (default) or 2.", low=1, high=2),
            _limit(200, 1_000),
        ),
        "A memory's graph neighbourhood, with every weight change feedback made",
        http=(HttpRoute("GET", "/v1/memories/{memory_id}/edges", 200),),
        guards=_OWNED,
        schemas=(None, "Neighbourhood"),
        errors=(401, 403, 404, 422),
    ),
    Operation(
        "memory_learning",
        "memory_learning",
        (MEMORY_ID, WORKSPACE),
        "The feedback signals on a memory and its learned multiplier after each",
        http=(HttpRoute("GET", "/v1/memories/{memory_id}/learning", 200),),
        guards=_OWNED,
        schemas=(None, "MemoryLearning"),
        errors=(401, 403, 404, 422),
    ),
    Operation(
        "timeline",
        "timeline",
        (*SCOPE, _limit(200, 2_000)),
        "A scope's feedback of every kind on one time line, newest first",
        http=(HttpRoute("GET", "/v1/timeline", 200),),
        guards=_SCOPED,
        schemas=(None, "Timeline"),
    ),
    Operation(
        "rank_shifts",
        "rank_shifts",
        (*SCOPE, _limit(10, 50)),
        "Ranks of memories that feedback touched: in the recall rated, and now",
        http=(HttpRoute("GET", "/v1/rank-shifts", 200),),
        guards=_SCOPED,
        schemas=(None, "RankShifts"),
    ),
    Operation(
        "tensions",
        "tensions",
        (*SCOPE, _limit(100, 1_000)),
        "Contradictions between a scope's memories, with the ratings of each side",
        http=(HttpRoute("GET", "/v1/tensions", 200),),
        guards=_SCOPED,
        schemas=(None, "Tensions"),
    ),
)

KB_ID = _p("kb_id", str, "The knowledge base's id (from add_knowledge).", REQUIRED, cli="arg")


def _chunk_lines(items: list[dict[str, Any]]) -> str:
    if not items:
        return "No knowledge matched."
    return "\n".join(
        f"{i}. {c['score']:.3f}  {c['kb_id']}  {short(c['content'])}"
        for i, c in enumerate(items, 1)
    )


KNOWLEDGE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "add_knowledge",
        "add_knowledge",
        (
            _p("name", str, "What the knowledge base is called.", REQUIRED, cli="arg"),
            _p(
                "chunks",
                list[dict[str, Any]] | None,
                "Passages as given: {content, metadata} objects.",
                cli=None,
            ),
            _p("text", str | None, "A whole document, split into passages."),
            *SCOPE,
            METADATA,
            _p(
                "chunk_chars",
                int,
                "Most characters of one passage of `text` (at least 100).",
                1000,
                low=100,
                high=100_000,
            ),
            _p("chunk_overlap", int, "Characters repeated where a sentence is cut.", 100, low=0),
        ),
        "Store a document as a knowledge base",
        http=(HttpRoute("POST", "/v1/knowledge", 201),),
        mcp="memory_add_knowledge",
        mcp_doc="Store a document (or passages) as a knowledge base of the scope: it is "
        "chunked and embedded, and every memory_recall of the scope searches it beside the "
        "conversation memories.",
        cli=("knowledge", "add"),
        cli_doc="Store --text (a document, split into passages) as knowledge base NAME.",
        guards=_SCOPED,
        text=lambda d: f"stored knowledge base {d['id']} ({d['chunk_count']} chunks)",
        schemas=("KnowledgeAddRequest", "KnowledgeBase"),
    ),
    Operation(
        "search_knowledge",
        "search_knowledge",
        (
            QUERY,
            *SCOPE,
            _p("limit", int, "How many chunks to return.", 5, short="n", low=1, high=1000),
        ),
        "Search the knowledge bases of a scope",
        http=(HttpRoute("POST", "/v1/knowledge/search", 200),),
        mcp="memory_search_knowledge",
        mcp_doc="Search the scope's knowledge bases (documents) by meaning; chunks with scores "
        "in [0, 1], best first.",
        cli=("knowledge", "search"),
        cli_doc="Search the knowledge bases of a scope for QUERY.",
        guards=_SCOPED,
        shape=lambda out, args: {"query": args["query"], "results": [c.to_dict() for c in out]},
        text=lambda d: _chunk_lines(d["results"]),
        schemas=("KnowledgeSearchRequest", "KnowledgeSearchResult"),
        hints={"readOnlyHint": True},
    ),
    Operation(
        "list_knowledge",
        "list_knowledge",
        SCOPE,
        "List the knowledge bases of a scope",
        http=(HttpRoute("GET", "/v1/knowledge", 200),),
        cli=("knowledge", "list"),
        cli_doc="List the knowledge bases of a scope, oldest first.",
        guards=_SCOPED,
        shape=_listed("knowledge_bases"),
        text=lambda d: (
            "\n".join(
                f"{k['id']}  {k['chunk_count']:>5} chunks  {k['name']}"
                for k in d["knowledge_bases"]
            )
            or "No knowledge bases in this scope."
        ),
        schemas=(None, "KnowledgeBaseList"),
    ),
    Operation(
        "delete_knowledge",
        "delete_knowledge",
        (KB_ID, *SCOPE),
        "Delete a knowledge base and its chunks",
        http=(HttpRoute("DELETE", "/v1/knowledge/{kb_id}", 200),),
        mcp="memory_delete_knowledge",
        mcp_doc="Delete a knowledge base of the scope, with all its chunks.",
        cli=("knowledge", "delete"),
        cli_doc="Delete knowledge base KB_ID and its chunks.",
        guards=_SCOPED,
        shape=lambda out, args: {"kb_id": args["kb_id"], "deleted": out},
        text=lambda d: f"deleted knowledge base {d['kb_id']} ({d['deleted']} chunks)",
        schemas=(None, "KnowledgeDeleted"),
        errors=(401, 403, 404, 422),
        hints={"destructiveHint": True},
    ),
)
