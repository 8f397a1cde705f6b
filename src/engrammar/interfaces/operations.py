"""The one operation table: every operation the CLI, MCP and REST serve, declared once.

Each :class:`Operation` names its ``Memory`` method (the handler), its parameters (type, one-line
doc, default), its guards, its HTTP method and path, its MCP tool and its CLI verb. REST routes,
the OpenAPI paths, the MCP tools and the CLI commands are generated from :data:`OPERATIONS`;
:func:`dispatch` runs one of them for a :class:`Principal`. Who may reach what (the principal,
the guards) lives in :mod:`.access`; the table's shapes in :mod:`.spec`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import ValidationError
from ..memory import Memory
from ..models import (
    FEEDBACK_STATES,
    KINDS,
    RATING_VERDICTS,
    REVIEW_OUTCOMES,
    ROLES,
    AddAnswer,
    AddResult,
    ForgetResult,
    History,
    HistoryEntry,
    KnowledgeChunk,
    KnowledgeDeleted,
    KnowledgeSearchResult,
    ScoredMemory,
    SearchResult,
    iso,
)
from .access import (
    Call,
    Principal,
    attribute,
    feedback_source,
    hide_other_keys,
    narrow_ids,
    own_event,
    own_recall,
    own_record,
    readable_memory,
    resolve,
)
from .texts import feedback_summary, plural, recall_tool_text, recalled_text, short

__all__ = [
    "FEEDBACK_WRITES",
    "NOT_EXPOSED",
    "OPERATIONS",
    "HttpRoute",
    "Operation",
    "Param",
    "Principal",
    "dispatch",
    "operation",
]
from .op_params import (
    AGENT,
    MEMORY_ID,
    METADATA,
    OWNED,
    PAGE,
    QUERY,
    READ,
    REASON,
    RECALL_MIN_SCORE,
    SCOPE,
    SCOPED,
    SEARCH_MIN_SCORE,
    SESSION,
    SOURCE,
    TIMESTAMP,
    USER,
    WEIGHT,
    WORKSPACE,
    added_lines,
    added_text,
    explain_text,
    handler_params,
    listed,
    mcp_listing,
    memory_lines,
    param,
    ranked,
    record_lines,
)
from .spec import ORDERS, REQUIRED, HttpRoute, Operation, Param


# -- the REST envelopes around what a ``Memory`` method returns ------------------------------
def _added(out: AddResult, args: dict[str, Any]) -> AddAnswer:
    return {**out.to_dict(), "workspace": args["workspace"]}


def _history(out: list[HistoryEntry], args: dict[str, Any]) -> History:
    return {"memory_id": args["memory_id"], "history": out}


def _searched(out: list[ScoredMemory], args: dict[str, Any]) -> SearchResult:
    return {"query": args["query"], "results": [h.to_dict() for h in out]}


def _forgot(out: int, args: dict[str, Any]) -> ForgetResult:
    return {"deleted": out}


def _knowledge_found(out: list[KnowledgeChunk], args: dict[str, Any]) -> KnowledgeSearchResult:
    return {"query": args["query"], "results": [c.to_dict() for c in out]}


def _knowledge_deleted(out: int, args: dict[str, Any]) -> KnowledgeDeleted:
    return {"kb_id": args["kb_id"], "deleted": out}


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "add",
        "add",
        (
            param(
                "messages",
                list[dict[str, Any]] | None,
                "Several messages, in order: {role, content} or as the OpenAI and Anthropic "
                "SDKs write them (content parts / blocks, tool calls and results).",
                cli=None,
            ),
            param("content", str | None, "One thing to remember (a user message).", cli=None),
            *SCOPE,
            param(
                "metadata",
                dict[str, Any] | None,
                "Extra JSON data kept with each memory.",
                json=True,
            ),
            TIMESTAMP,
            param("kind", str, "What the memory is.", "message", choices=KINDS),
        ),
        "Remember messages",
        http=(HttpRoute("POST", "/v1/memories", 201),),
        mcp="memory_add",
        mcp_doc="Remember what was said: give `content` (one message) or `messages` (a "
        "conversation).\n\nScope it with user_id (and agent_id / session_id). Messages may be "
        "given as the OpenAI or Anthropic APIs write them (content parts or blocks, tool calls, "
        "tool results). Returns the ids of the stored memories, one per message (an exact "
        "duplicate in the same scope returns the id it already has); a message with nothing to "
        "remember (empty, only images) is skipped and listed with the reason.",
        cli=("add",),
        cli_doc="Remember something: each CONTENT argument is one message ('-' reads one from "
        'stdin).\n\n\b\n  engrammar add "I prefer tea to coffee." --user-id alice\n  engrammar '
        'add "Ship on Fridays is fine." "No, never on Fridays." -u bob --role user\n  engrammar '
        "add --messages chat.json -u alice   # a transcript (OpenAI / Anthropic messages)\nPrints "
        "one line per message: the memory's id (an exact duplicate prints the id it already "
        "has), or why it was skipped.",
        guards=SCOPED,
        shape=_added,
        text=lambda d: "\n".join(added_lines(d)),
        mcp_text=added_text,
        schemas=("AddRequest", "AddResult"),
        hints={"destructiveHint": False, "idempotentHint": True},
    ),
    Operation(
        "list",
        "list",
        handler_params(Memory.list, *PAGE),
        "List memories of a scope, oldest first",
        cli=("list",),
        cli_doc="List memories of a scope, oldest first.",
        guards=SCOPED,
        shape=listed("memories"),
        text=lambda d: (
            "\n".join(
                f"{m['id']}  {m['created_at_iso'][:19]}  {m['user_id'] or '-'}  "
                f"{short(m['content'])}"
                for m in d["memories"]
            )
            or "No memories."
        ),
        schemas=(None, "MemoryList"),
    ),
    Operation(
        "get",
        "get",
        handler_params(Memory.get),
        "One memory",
        http=(HttpRoute("GET", "/v1/memories/{memory_id}", 200),),
        cli=("get",),
        cli_doc="Show one memory.",
        guards=READ,
        text=memory_lines,
        schemas=(None, "Memory"),
        errors=(401, 403, 404, 422),
    ),
    Operation(
        "update",
        "update",
        (
            MEMORY_ID,
            param("content", str | None, "The new content."),
            param("metadata", dict[str, Any] | None, "Metadata to merge in.", json=True),
            param("reason", Any, "Why, kept in the memory's history.", ""),
            WORKSPACE,
        ),
        "Change a memory's content and/or metadata",
        http=(HttpRoute("PATCH", "/v1/memories/{memory_id}", 200),),
        guards=OWNED,
        schemas=("UpdateRequest", "Memory"),
        errors=(401, 403, 404, 409, 422),
    ),
    Operation(
        "history",
        "history",
        handler_params(Memory.history),
        "What changed a memory and why",
        http=(HttpRoute("GET", "/v1/memories/{memory_id}/history", 200),),
        cli=("history",),
        cli_doc="Show what changed a memory, and why, oldest first.",
        guards=READ,
        shape=_history,
        text=lambda d: "\n".join(
            f"{h['rev']}  {iso(h['at'])[:19]}  {h['op']:<8} {h['reason'] or ''}".rstrip()
            for h in d["history"]
        ),
        schemas=(None, "History"),
        errors=(401, 403, 404, 422),
    ),
    Operation(
        "recall",
        "recall",
        handler_params(Memory.recall, RECALL_MIN_SCORE, python_only=("profile",)),
        "Recall what matters for the next turn (recorded for feedback)",
        http=(HttpRoute("POST", "/v1/recall", 200),),
        mcp="memory_recall",
        mcp_doc="Recall what matters before you answer: ranked memories, graph paths, conflicts."
        "\n\nPut the returned text (`formatted`) into your context. Keep `recall_id`: pass your "
        "final answer to memory_feedback (argument `response`) to teach engrammar what helped.",
        cli=("recall",),
        cli_doc="Recall what matters for QUERY: ranked memories, paths and conflicts, as a text "
        "block.\n\nThe recall is recorded with an id (printed last) that 'engrammar feedback' "
        "can act on.",
        guards=SCOPED,
        text=recalled_text,
        mcp_text=recall_tool_text,
        schemas=("RecallRequest", "RecallResult"),
        hints={"readOnlyHint": True},
    ),
    Operation(
        "search",
        "search",
        handler_params(Memory.search, SEARCH_MIN_SCORE, python_only=("profile",)),
        "Hybrid search without the graph",
        http=(HttpRoute("POST", "/v1/search", 200),),
        mcp="memory_search",
        mcp_doc="Search memories by meaning and keywords; a ranked list with scores and ids.\n\n"
        "Unlike memory_recall this records nothing and follows no graph paths: use it to find "
        "a memory's id (to forget it or rate it) or to browse.",
        cli=("search",),
        cli_doc="Search memories by meaning and keywords: score, id and content, best first.",
        guards=SCOPED,
        shape=_searched,
        text=lambda d: ranked(d["results"]),
        mcp_text=lambda d: mcp_listing(d["results"]) or "No memories matched.",
        schemas=("SearchRequest", "SearchResult"),
        hints={"readOnlyHint": True},
    ),
    Operation(
        "forget",
        "forget",
        (
            param(
                "memory_id",
                str | list[str] | None,
                "The id (or ids) to delete. Omit to delete a whole scope.",
                cli="args",
            ),
            *SCOPE,
        ),
        "Delete memories by id or a whole scope",
        http=(
            HttpRoute("POST", "/v1/forget"),
            HttpRoute("DELETE", "/v1/memories/{memory_id}", op_id="forget_one"),
        ),
        mcp="memory_forget",
        mcp_doc="Delete memories for good, with the graph links they own.\n\nGive memory_id "
        "(from memory_search) to delete specific memories, or only scope keys (e.g. user_id) to "
        "delete everything of that scope. Returns how many were deleted.",
        cli=("forget",),
        cli_doc="Delete memories for good: the given MEMORY_IDs, or with no id a whole scope.\n\n"
        "\b\n  engrammar forget 3f2a…                # one memory\n  engrammar forget --user-id "
        "alice      # everything of alice",
        guards=(resolve, narrow_ids),
        shape=_forgot,
        text=lambda d: f"deleted {plural(d['deleted'], 'memory', 'memories')}",
        mcp_text=lambda d: f"Deleted {plural(d['deleted'], 'memory', 'memories')}.",
        schemas=("ForgetRequest", "ForgetResult"),
        errors=(401, 403, 404, 422),
        hints={"destructiveHint": True, "idempotentHint": True},
    ),
    Operation(
        "stats",
        "stats",
        handler_params(Memory.stats),
        "Counts of a scope",
        http=(HttpRoute("GET", "/v1/stats", 200),),
        cli=("stats",),
        cli_doc="Counts of memories, edges, recalls and feedback in a scope.",
        guards=SCOPED,
        text=lambda d: "\n".join(
            f"{k}: {json.dumps(val) if isinstance(val, dict) else val}" for k, val in d.items()
        ),
        schemas=(None, "Stats"),
    ),
    Operation(
        "feedback",
        "feedback",
        (
            param(
                "response",
                str,
                "Your final reply after a recall: recalled paths that agree with it are "
                "strengthened, the others weakened (once per recall).",
                REQUIRED,
                cli="arg",
            ),
            param(
                "recall_id",
                str | None,
                "The recall to act on (default: the scope's newest, if it has had no reply "
                "and is within feedback_recall_window_s).",
            ),
            *SCOPE,
            SOURCE,
        ),
        "Learn from the reply to a recall (MemWire alignment feedback)",
        http=(HttpRoute("POST", "/v1/feedback", 200),),
        cli=("feedback",),
        cli_doc="Teach engrammar from RESPONSE, the reply you produced after a recall ('-': "
        "stdin).\n\nGraph links along recalled paths that the reply agreed with are "
        "strengthened; those it ignored are weakened. A recall is used once.\n\n\b\n  engrammar "
        'recall "How do you approach projects?" -u alice\n  engrammar feedback "You write the '
        'docs first, then code." -u alice',
        guards=(*SCOPED, attribute),
        text=feedback_summary,
        schemas=("FeedbackRequest", "FeedbackResult"),
        errors=(401, 403, 404, 422),
    ),
    Operation(
        "explain",
        "explain",
        handler_params(
            Memory.explain,
            param("memory_id", str, "The memory whose rank is explained.", cli="arg"),
            param(
                "limit", int | None, "The result size ranked against.", short="n", low=1, high=1000
            ),
            python_only=("profile",),
        ),
        "Why a memory ranks where it does for a query",
        http=(HttpRoute("POST", "/v1/explain", 200),),
        cli=("explain",),
        cli_doc="Explain why MEMORY_ID ranks where it does for QUERY: every part of its score.",
        guards=READ,
        text=explain_text,
        schemas=("ExplainRequest", "Explanation"),
        errors=(401, 403, 404, 422),
    ),
    Operation(
        "undo",
        "undo",
        (
            param(
                "record_id",
                str,
                "The feedback record to take back: a feedback event, decision review, "
                "preference pair, rating or logged event id, or the recall_id of a reply.",
                REQUIRED,
                cli="arg",
            ),
            param("user_id", str | None, "Only a record of this user.", short="u"),
            WORKSPACE,
        ),
        "Take a feedback record back",
        http=(HttpRoute("POST", "/v1/undo", 200),),
        mcp="memory_undo",
        mcp_doc="Take back a feedback record you gave (a rating, event, review, preference pair, "
        "logged event, or the reply sent to memory_feedback for a recall_id): every memory's "
        "score returns to what it would be had it never been given.",
        hints={"destructiveHint": True},
        cli=("undo",),
        cli_doc="Take back the feedback record RECORD_ID: scores return to what they would be "
        "had it never been given.",
        guards=SCOPED,
        text=lambda d: (
            f"undid {d['kind'].replace('_', ' ')} {d['record_id']}"
            + (f" (+{len(d['undone']) - 1} reviews)" if len(d["undone"]) > 1 else "")
            + (f"; removed {len(d['memories_removed'])} memories" if d["memories_removed"] else "")
            + (f"; restored {d['edges_restored']} edges" if d["edges_restored"] else "")
        ),
        schemas=("UndoRequest", "UndoResult"),
        errors=(401, 403, 404, 422),
    ),
)


def _text_p(name: str, doc: str, required: bool = False) -> Param:
    return param(name, str if required else str | None, doc, REQUIRED if required else None)


def _record_ops(
    path: str,
    title: str,
    id_name: str,
    key: str,
    group: str,
    create: Operation,
    summary: Callable[[dict[str, Any]], str],
) -> tuple[Operation, ...]:
    """A kind of feedback record: its create operation, then list and get."""
    record = "".join(w.title() for w in title.split())
    lister = Operation(
        f"list_{key}",
        f"list_{key}",
        handler_params(getattr(Memory, f"list_{key}"), *PAGE),
        f"List {title}s of a scope, oldest first",
        http=(HttpRoute("GET", f"/v1/{path}", 200, f"list_{key}"),),
        cli=(group, "list"),
        cli_doc=f"List {title}s of a scope, oldest first.",
        guards=SCOPED,
        shape=listed(key),
        text=lambda d: (
            "\n".join(f"{r['id']}  {summary(r)}" for r in d[key]) or f"No {title}s in this scope."
        ),
        schemas=(None, f"{record}List"),
    )
    getter = Operation(
        f"get_{key[:-1]}",
        f"get_{key[:-1]}",
        handler_params(
            getattr(Memory, f"get_{key[:-1]}"),
            param(id_name, str, f"The {title}'s id.", cli="arg"),
        ),
        f"One {title}",
        http=(HttpRoute("GET", f"/v1/{path}/{{{id_name}}}", 200, f"get_{key}"),),
        cli=(group, "get"),
        cli_doc=f"Show one {title}.",
        guards=SCOPED,
        owned_as=title,
        text=record_lines,
        schemas=(None, record),
        errors=(401, 403, 404, 422),
    )
    return (create, lister, getter)


_STATE = "What the user did with the output."
_RECORDS = (
    *_record_ops(
        "feedback-events",
        "feedback event",
        "event_id",
        "feedback_events",
        "event",
        Operation(
            "create_feedback_event",
            "create_feedback_event",
            (
                _text_p("input_context", "What you were asked or working on (the context).", True),
                _text_p("ai_output", "What you (the agent) produced.", True),
                param("state", str, _STATE, REQUIRED, choices=FEEDBACK_STATES),
                _text_p("user_reaction", "How the user reacted, in their words or yours."),
                _text_p("user_correction", "The user's correction, as they said it."),
                _text_p("corrected_output", "The corrected version of your output."),
                _text_p("reason", "Why the user decided so."),
                AGENT,
                USER,
                SESSION,
                WORKSPACE,
                _text_p(
                    "source_event_id",
                    "Your own id for this event: resending the same value for the same user "
                    "(or, without a user, in the same workspace) returns the existing event "
                    "instead of a duplicate. Each user has a key space of their own.",
                ),
                METADATA,
                TIMESTAMP,
                SOURCE,
            ),
            "Create a feedback event",
            http=(HttpRoute("POST", "/v1/feedback-events", 201, "create_feedback_events"),),
            mcp="memory_create_feedback_event",
            hints={"destructiveHint": False},
            mcp_doc="Record what happened to your output: the user corrected, adopted or "
            "rejected it.\n\nCall this whenever the user changes or judges what you produced. The "
            "corrected (or adopted) version becomes the standing decision: the next memory_recall "
            "for a similar context surfaces it first, with the reason; a rejected output is "
            "demoted. A `corrected` event needs corrected_output or user_correction.",
            cli=("event", "create"),
            cli_doc="Record what happened to an agent's output: corrected, adopted or rejected."
            "\n\n\b\n  engrammar event create --agent-id codex -w payments-api \\\n    "
            '--input-context "Add retries to the webhook sender" \\\n    --ai-output "Retry '
            'every 30 seconds until it succeeds." --state corrected \\\n    --corrected-output '
            '"Exponential backoff, max 5 attempts, skip 4xx." \\\n    --reason "A 4xx means the '
            "request is wrong; sending it again won't fix it.\"",
            guards=(*SCOPED, attribute),
            text=lambda d: f"recorded feedback event {d['id']} ({d['state']})",
            mcp_text=lambda d: f"Recorded feedback event {d['id']} ({d['state']}).",
            schemas=("FeedbackEventRequest", "FeedbackEvent"),
            errors=(401, 403, 404, 409, 422),
        ),
        lambda r: f"{r['state']:<9} {short(r['input_context'], 70)}",
    ),
    *_record_ops(
        "decision-reviews",
        "decision review",
        "review_id",
        "decision_reviews",
        "review",
        Operation(
            "create_decision_review",
            "create_decision_review",
            (
                param("event_id", str, "The feedback event reviewed.", REQUIRED, cli="arg"),
                param(
                    "final_decision",
                    str,
                    "The verdict now. If it differs from the event's state, the review marks "
                    "the event reversed and the other output stands from now on.",
                    REQUIRED,
                    choices=FEEDBACK_STATES,
                ),
                param(
                    "outcome",
                    str,
                    "How the decision turned out.",
                    "unknown",
                    choices=REVIEW_OUTCOMES,
                ),
                param("confidence", float, "How sure the review is, 0 to 1.", 1.0, low=0, high=1),
                REASON,
                param("user_id", str | None, "Who reviews.", short="u"),
                param("agent_id", str | None, "The agent that reviews.", short="a"),
                WORKSPACE,
                TIMESTAMP,
                SOURCE,
            ),
            "Create a decision review",
            http=(HttpRoute("POST", "/v1/decision-reviews", 201, "create_decision_reviews"),),
            mcp="memory_create_decision_review",
            hints={"destructiveHint": False},
            mcp_doc="Review an earlier feedback event: the final decision, its outcome, your "
            "confidence.\n\nUse it when a decision is revisited later (it worked, it failed, the "
            "user changed their mind). A different final_decision reverses the event's effect on "
            "recall.",
            cli=("review", "create"),
            cli_doc="Review the feedback event EVENT_ID: final decision, outcome, confidence.",
            guards=(resolve, own_event, attribute),
            text=lambda d: (
                f"recorded decision review {d['id']}" + (" (reversed)" if d["reversed"] else "")
            ),
            mcp_text=lambda d: (
                f"Recorded decision review {d['id']} "
                f"({'reversed' if d['reversed'] else 'confirmed'})."
            ),
            schemas=("DecisionReviewRequest", "DecisionReview"),
            errors=(401, 403, 404, 409, 422),
        ),
        lambda r: (
            f"event {r['event_id']} -> {r['final_decision']} ({r['outcome']})"
            + (" REVERSED" if r["reversed"] else "")
        ),
    ),
    *_record_ops(
        "preference-pairs",
        "preference pair",
        "pair_id",
        "preference_pairs",
        "pair",
        Operation(
            "create_preference_pair",
            "create_preference_pair",
            (
                _text_p("context", "The situation both outputs answered.", True),
                _text_p("accepted_output", "The output that was preferred.", True),
                _text_p("rejected_output", "The output that was turned down.", True),
                WEIGHT,
                *SCOPE,
                TIMESTAMP,
                SOURCE,
            ),
            "Create a preference pair",
            http=(HttpRoute("POST", "/v1/preference-pairs", 201, "create_preference_pairs"),),
            mcp="memory_create_preference_pair",
            hints={"destructiveHint": False},
            mcp_doc="Record that one output was preferred over another for the same context.\n\n"
            "For similar contexts the accepted output is surfaced and lifted, and memories that "
            "repeat the rejected output are lowered.",
            cli=("pair", "create"),
            cli_doc="Record that one output was preferred over another for the same context.",
            guards=(*SCOPED, attribute),
            text=lambda d: f"recorded preference pair {d['id']}",
            mcp_text=lambda d: f"Recorded preference pair {d['id']}.",
            schemas=("PreferencePairRequest", "PreferencePair"),
            errors=(401, 403, 404, 409, 422),
        ),
        lambda r: f"{short(r['accepted_output'], 40)}  >  {short(r['rejected_output'], 40)}",
    ),
    *_record_ops(
        "events",
        "logged event",
        "event_id",
        "logged_events",
        "log",
        Operation(
            "log_event",
            "log_event",
            (
                param(
                    "kind",
                    str,
                    "What happened, as a short name: 'checkpoint', 'tool_run'.",
                    REQUIRED,
                    cli="arg",
                ),
                param(
                    "payload", dict[str, Any] | None, "Any JSON data about the event.", json=True
                ),
                *SCOPE,
                TIMESTAMP,
                SOURCE,
            ),
            "Create a logged event",
            http=(HttpRoute("POST", "/v1/events", 201, "create_logged_events"),),
            mcp="memory_log_event",
            hints={"destructiveHint": False},
            mcp_doc="Put any other event on record (a checkpoint, a tool run, a milestone).",
            cli=("log", "create"),
            cli_doc="Put any other event of KIND on record (a checkpoint, a tool run).",
            guards=(*SCOPED, attribute),
            text=lambda d: f"logged event {d['id']} ({d['kind']})",
            mcp_text=lambda d: f"Logged event {d['id']} ({d['kind']}).",
            schemas=("LogEventRequest", "LoggedEvent"),
            errors=(401, 403, 404, 409, 422),
        ),
        lambda r: f"{r['kind']}  {json.dumps(r['payload'], ensure_ascii=False)[:70]}",
    ),
    *_record_ops(
        "ratings",
        "memory rating",
        "rating_id",
        "memory_ratings",
        "rate",
        Operation(
            "rate_memory",
            "rate_memory",
            (
                MEMORY_ID,
                param(
                    "verdict", str, "Whether the memory helped.", REQUIRED, choices=RATING_VERDICTS
                ),
                _text_p("correction", "With 'corrected': the right content (stored as a fact)."),
                _text_p(
                    "recall_id", "The recall the memory came from (counts for similar queries)."
                ),
                _text_p("context", "The query the rating applies to, instead of recall_id."),
                WEIGHT,
                *SCOPE,
                TIMESTAMP,
                SOURCE,
            ),
            "Create a memory rating",
            http=(HttpRoute("POST", "/v1/ratings", 201, "create_memory_ratings"),),
            cli=("rate", "create"),
            cli_doc="Rate MEMORY_ID: accepted, rejected or corrected (MCP memory_feedback).",
            guards=(resolve, readable_memory, own_recall, attribute),
            text=lambda d: f"rated memory {d['memory_id']}: {d['verdict']} ({d['id']})",
            schemas=("RatingRequest", "MemoryRating"),
            errors=(401, 403, 404, 409, 422),
        ),
        lambda r: f"{r['verdict']:<9} memory {r['memory_id']}",
    ),
)


# -- the web inspector's reads and the knowledge bases ---------------------------------------
def _limit(default: int, high: int) -> Param:
    return param("limit", int | None, f"At most this many (default {default}).", low=1, high=high)


#: The reads of the web inspector (``/ui``): REST only.
INSPECTOR_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "find_memories",
        "find_memories",
        (
            *SCOPE,
            *PAGE,
            param("kind", str | None, "Only memories of this kind.", choices=KINDS),
            param("role", str | None, "Only memories of this role.", choices=ROLES),
            param("status", str | None, "Only memories of this status (active, ...)."),
            param("since", str | float | None, "Created at or after (epoch seconds or ISO-8601)."),
            param("until", str | float | None, "Created before (epoch seconds or ISO-8601)."),
            param("text", str | None, "Content contains this text (any case)."),
            param("order", str | None, "oldest (default) or newest first.", choices=ORDERS),
        ),
        "List memories of a scope (oldest first unless order=newest), with filters",
        http=(HttpRoute("GET", "/v1/memories", 200, "list"),),
        guards=SCOPED,
        schemas=(None, "MemoryList"),
    ),
    Operation(
        "scopes",
        "scopes",
        handler_params(Memory.scopes, _limit(2_000, 10_000)),
        "The users, agents and sessions of the key's workspace, with memory counts",
        http=(HttpRoute("GET", "/v1/scopes", 200),),
        guards=SCOPED,
        schemas=(None, "ScopeList"),
    ),
    Operation(
        "memory_edges",
        "memory_edges",
        (
            MEMORY_ID,
            param("user_id", str | None, "Only neighbours of this user."),
            WORKSPACE,
            param("depth", int | None, "Hops from the memory, 1 (default) or 2.", low=1, high=2),
            _limit(200, 1_000),
        ),
        "A memory's graph neighbourhood, with every weight change feedback made",
        http=(HttpRoute("GET", "/v1/memories/{memory_id}/edges", 200),),
        guards=OWNED,
        schemas=(None, "Neighbourhood"),
        errors=(401, 403, 404, 422),
    ),
    Operation(
        "memory_learning",
        "memory_learning",
        handler_params(Memory.memory_learning),
        "The feedback signals on a memory and its learned multiplier after each",
        http=(HttpRoute("GET", "/v1/memories/{memory_id}/learning", 200),),
        guards=OWNED,
        schemas=(None, "MemoryLearning"),
        errors=(401, 403, 404, 422),
    ),
    Operation(
        "timeline",
        "timeline",
        handler_params(Memory.timeline, _limit(200, 2_000)),
        "A scope's feedback of every kind on one time line, newest first",
        http=(HttpRoute("GET", "/v1/timeline", 200),),
        guards=SCOPED,
        schemas=(None, "Timeline"),
    ),
    Operation(
        "rank_shifts",
        "rank_shifts",
        handler_params(Memory.rank_shifts, _limit(10, 50)),
        "Ranks of memories that feedback touched: in the recall rated, and now",
        http=(HttpRoute("GET", "/v1/rank-shifts", 200),),
        guards=SCOPED,
        schemas=(None, "RankShifts"),
    ),
    Operation(
        "tensions",
        "tensions",
        handler_params(Memory.tensions, _limit(100, 1_000)),
        "Contradictions between a scope's memories, with the ratings of each side",
        http=(HttpRoute("GET", "/v1/tensions", 200),),
        guards=SCOPED,
        schemas=(None, "Tensions"),
    ),
)

KB_ID = param("kb_id", str, "The knowledge base's id (from add_knowledge).", REQUIRED, cli="arg")


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
            param("name", str, "What the knowledge base is called.", REQUIRED, cli="arg"),
            param(
                "chunks",
                list[dict[str, Any]] | None,
                "Passages as given: {content, metadata} objects.",
                cli=None,
            ),
            param("text", str | None, "A whole document, split into passages."),
            *SCOPE,
            METADATA,
            param(
                "chunk_chars",
                int,
                "Most characters of one passage of `text` (at least 100).",
                1000,
                low=100,
                high=100_000,
            ),
            param("chunk_overlap", int, "Characters repeated where a sentence is cut.", 100, low=0),
        ),
        "Store a document as a knowledge base",
        http=(HttpRoute("POST", "/v1/knowledge", 201),),
        mcp="memory_add_knowledge",
        mcp_doc="Store a document (or passages) as a knowledge base of the scope: it is "
        "chunked and embedded, and every memory_recall of the scope searches it beside the "
        "conversation memories.",
        cli=("knowledge", "add"),
        cli_doc="Store --text (a document, split into passages) as knowledge base NAME.",
        guards=SCOPED,
        text=lambda d: f"stored knowledge base {d['id']} ({d['chunk_count']} chunks)",
        schemas=("KnowledgeAddRequest", "KnowledgeBase"),
    ),
    Operation(
        "search_knowledge",
        "search_knowledge",
        (
            QUERY,
            *SCOPE,
            param("limit", int, "How many chunks to return.", 5, short="n", low=1, high=1000),
        ),
        "Search the knowledge bases of a scope",
        http=(HttpRoute("POST", "/v1/knowledge/search", 200),),
        mcp="memory_search_knowledge",
        mcp_doc="Search the scope's knowledge bases (documents) by meaning; chunks with scores "
        "in [0, 1], best first.",
        cli=("knowledge", "search"),
        cli_doc="Search the knowledge bases of a scope for QUERY.",
        guards=SCOPED,
        shape=_knowledge_found,
        text=lambda d: _chunk_lines(d["results"]),
        schemas=("KnowledgeSearchRequest", "KnowledgeSearchResult"),
        hints={"readOnlyHint": True},
    ),
    Operation(
        "list_knowledge",
        "list_knowledge",
        handler_params(Memory.list_knowledge),
        "List the knowledge bases of a scope",
        http=(HttpRoute("GET", "/v1/knowledge", 200),),
        cli=("knowledge", "list"),
        cli_doc="List the knowledge bases of a scope, oldest first.",
        guards=SCOPED,
        shape=listed("knowledge_bases"),
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
        guards=SCOPED,
        shape=_knowledge_deleted,
        text=lambda d: f"deleted knowledge base {d['kb_id']} ({d['deleted']} chunks)",
        schemas=(None, "KnowledgeDeleted"),
        errors=(401, 403, 404, 422),
        hints={"destructiveHint": True},
    ),
)


OPERATIONS = (*OPERATIONS, *_RECORDS, *INSPECTOR_OPERATIONS, *KNOWLEDGE_OPERATIONS)
_BY_NAME = {op.name: op for op in OPERATIONS}

#: The operations that write feedback: limited per source over HTTP (feedback_rate_limit_per_s).
FEEDBACK_WRITES = frozenset(
    {
        "feedback",
        "create_feedback_event",
        "create_decision_review",
        "create_preference_pair",
        "log_event",
        "rate_memory",
        "undo",
    }
)


class Budget(Protocol):
    """Per-client token buckets (``limits.TokenBucket``)."""

    def take(self, client: str, now: float) -> float: ...


def feedback_over_budget(
    bucket: Budget | None, principal: Principal, name: str, args: dict[str, Any], address: str
) -> tuple[str, float] | None:
    """``(source, seconds to wait)`` when a feedback write over HTTP (REST or MCP) is over
    its source's budget, else ``None``. A source is the API key, else the ``source`` or
    ``agent_id`` the write names, else the caller's address; it may make
    ``feedback_rate_limit_per_s`` feedback writes a second, ``feedback_rate_limit_burst`` at
    once."""
    if bucket is None or name not in FEEDBACK_WRITES:
        return None
    source = feedback_source(principal, args) or f"address:{address}"
    wait = bucket.take(source, time.monotonic())
    return (source, wait) if wait else None


#: Public ``Memory`` methods no operation serves, and why.
NOT_EXPOSED = {
    "close": "the process owns the memory's lifetime",
    "export": "a file transfer: the CLI's export command, not a request",
    "import_": "a file transfer: the CLI's import command, not a request",
    "has_recall": "a guard's question, asked by dispatch",
}


def operation(name: str) -> Operation:
    """The operation called ``name``."""
    return _BY_NAME[name]


def dispatch(
    memory: Memory, principal: Principal, name: str, args: dict[str, Any]
) -> dict[str, Any]:
    """Run the operation ``name`` with a JSON object of arguments for ``principal``.

    Unknown and missing fields are refused by name; the guards resolve the scope and check that
    every id named is within the principal's reach; the answer is JSON-ready.
    """
    op = _BY_NAME[name]
    fields = op.fields
    unknown = sorted(set(args) - set(fields))
    if unknown:
        raise ValidationError(unknown[0], f"unknown field; accepted: {', '.join(fields)}")
    for declared in op.params:
        if declared.required and declared.name not in args:
            raise ValidationError(declared.name, "is required")
    full = {p.name: (None if p.required else p.default) for p in op.params}
    call = Call(memory, principal, {**full, **args})
    for guard in op.guards:
        guard(call)
    out = getattr(memory, op.handler)(**call.args)
    data: dict[str, Any]
    if op.shape is not None:
        data = dict(op.shape(out, call.args))
    elif hasattr(out, "to_dict"):
        data = out.to_dict()
    else:
        data = dict(out)
    if op.owned_as is not None:
        own_record(call, op.owned_as, data, call.args[op.fields[0]])
    if name == "explain":
        hide_other_keys(principal, data)
    if name == "stats" and principal.fixed:
        # Where the store lives on the server, and how big it is with every other tenant's
        # data in it, is none of a remote client's business (the local user still sees both).
        data.pop("file", None)
        data.pop("bytes_on_disk", None)
    return data
