"""The OpenAPI 3.1 document of the REST API.

Its paths are generated from the operation table (:mod:`.operations`), the same table the
routes are; the request and record schemas are written here, and their limits (content length,
messages per add) are read from the :class:`~engrammar.config.Config` being served."""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from functools import cache
from typing import Any

from .. import __version__, models
from ..config import Config
from .operations import OPERATIONS, Operation, Param

__all__ = ["openapi_document"]

# What the library accepts for ids and texts: not blank, no NUL character.
_PATTERN = "^[^\\x00]*\\S[^\\x00]*$"
# A message's content may be blank (the message is then skipped), never hold NUL.
_CONTENT_PATTERN = "^[^\\x00]*$"
_ID = {"type": "string", "minLength": 1, "maxLength": 256, "pattern": _PATTERN}
# Ids in a URL path also exclude '/' and the dot segments a client would normalise away.
_PATH_PATTERN = "^(?!\\.{1,2}$)[^\\x00/]*\\S[^\\x00/]*$"
_PATH_SCHEMA = {**_ID, "pattern": _PATH_PATTERN}
#: The text schema; ``maxLength`` is set from ``Config.max_content_chars`` per document.
_TEXT: dict[str, Any] = {"type": "string", "minLength": 1, "pattern": _PATTERN}
_TIME = {
    "description": "ISO-8601 date-time or epoch seconds.",
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "number", "minimum": 0, "exclusiveMaximum": 32_503_680_000},
        {"type": "null"},
    ],
}
_METADATA = {"anyOf": [{"$ref": "#/components/schemas/JSONObject"}, {"type": "null"}]}
#: The largest integer a query parameter may carry (SQLite's integers are 64-bit).
MAX_INT = 2**62
_SCOPE_DOC = {
    "user_id": "The end user the memories belong to.",
    "agent_id": "The agent that acts.",
    "session_id": "A conversation or task id.",
    "workspace": "Workspace (tenant); an API key reaches only its own.",
}
_NULLABLE_STR = {"type": ["string", "null"]}
# Fields of SDK messages (OpenAI, a whole Anthropic response) read or kept as they come.
_LOOSE_MESSAGE_KEYS = (
    "audio", "annotations", "id", "model", "stop_reason", "stop_sequence", "stop_details",
    "usage", "container", "diagnostics", "context_management", "status",
)  # fmt: skip


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _opt(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema, or null (the library reads an explicit null as "not given")."""
    return {**schema, "type": [schema["type"], "null"]}


def _given(*names: str) -> dict[str, Any]:
    """At least one of ``names`` is present and not null."""
    return {
        "anyOf": [{"required": [n], "properties": {n: {"not": {"type": "null"}}}} for n in names]
    }


_NEED_SCOPE = _given("user_id", "agent_id", "session_id")


def _scope_props() -> dict[str, Any]:
    return {k: {**_opt(_ID), "description": d} for k, d in _SCOPE_DOC.items()}


def _query(name: str, schema: dict[str, Any], doc: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": doc}


def _page_query(default_limit: int = 100) -> list[dict[str, Any]]:
    return [
        _query(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": 10_000},
            f"Page size (default {default_limit}).",
        ),
        _query("offset", {"type": "integer", "minimum": 0, "maximum": MAX_INT}, "Items to skip."),
    ]


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "The body is not a JSON object (malformed JSON).",
        401: "Missing, unknown or revoked API key.",
        403: "The key is not bound to the workspace or user asked for.",
        404: "No such memory in the key's reach.",
        409: "Conflicts with what is stored.",
        413: "The request body is larger than `max_request_bytes`.",
        422: "Invalid input; `error.field` names the field.",
        429: "Too many requests for this API key (`rate_limit_per_s`); see `Retry-After`.",
    }
    return {str(c): {"description": text[c], **_json(_ref("Error"))} for c in codes}


def _op(
    summary: str,
    ok: tuple[int, str, dict[str, Any]],
    *,
    body: dict[str, Any] | None = None,
    params: list[dict[str, Any]] | None = None,
    errors: tuple[int, ...] = (401, 403, 422),
    op_id: str,
) -> dict[str, Any]:
    status, doc, schema = ok
    # Every authenticated operation can be rate limited; every one with a body size limited.
    errors = (
        *((400,) if body is not None else ()),
        *errors,
        *((413,) if body is not None else ()),
        429,
    )
    out: dict[str, Any] = {
        "summary": summary,
        "operationId": op_id,
        "security": [{"bearer": []}],
        "responses": {str(status): {"description": doc, **_json(schema)}, **_errors(*errors)},
    }
    if params:
        out["parameters"] = params
    if body is not None:
        out["requestBody"] = {"required": True, **_json(body)}
    return out


def _schemas(max_messages: int) -> dict[str, Any]:
    memory = {
        "type": "object",
        "required": [
            "id",
            "content",
            "role",
            "kind",
            "workspace",
            "user_id",
            "agent_id",
            "session_id",
            "created_at",
            "updated_at",
            "status",
            "metadata",
            "valid_until",
            "superseded_by",
            "created_at_iso",
        ],
        "properties": {
            "id": {"type": "string"},
            "content": {"type": "string"},
            "role": {"type": "string", "enum": list(models.ROLES)},
            "kind": {"type": "string"},
            "workspace": {"type": "string"},
            "user_id": _NULLABLE_STR,
            "agent_id": _NULLABLE_STR,
            "session_id": _NULLABLE_STR,
            "created_at": {"type": "number"},
            "updated_at": {"type": "number"},
            "status": {"type": "string"},
            "metadata": {"type": "object"},
            "valid_until": {
                "type": ["number", "null"],
                "description": "When a newer memory replaced this one (null while current).",
            },
            "superseded_by": {
                "type": ["string", "null"],
                "description": "The id of the memory that replaced this one.",
            },
            "created_at_iso": {"type": "string"},
        },
    }
    scored = {
        "type": "object",
        "required": ["memory", "score", "components", "via", "note", "excerpt"],
        "properties": {
            "memory": _ref("Memory"),
            "score": {"type": "number"},
            "components": {"type": "object", "additionalProperties": {"type": "number"}},
            "via": {"type": "string"},
            "note": _NULLABLE_STR,
            "excerpt": _NULLABLE_STR,
        },
    }
    part = {
        "anyOf": [
            {"type": "string", "pattern": _CONTENT_PATTERN},
            {
                "type": "object",
                "description": "A content part (OpenAI) or block (Anthropic): text, image_url, "
                "tool_use, tool_result, document, ...; parts without text are noted in metadata.",
                "required": ["type"],
                "properties": {"type": {"type": "string", "minLength": 1}},
            },
        ]
    }
    anything: dict[str, Any] = {}
    message = {
        "type": "object",
        "required": ["role"],
        "additionalProperties": False,
        "description": "engrammar's {role, content}, or a message as the OpenAI chat and "
        "Anthropic messages APIs write it. A message with nothing to remember (empty content, "
        "only images) is skipped and listed in the answer's `skipped`.",
        "properties": {
            "role": {"type": "string", "enum": [*models.ROLES, "developer", "function"]},
            "content": {
                "anyOf": [
                    {"type": "string", "pattern": _CONTENT_PATTERN},
                    {"type": "array", "items": part},
                    {"type": "null"},
                ]
            },
            "name": _opt(_ID),
            "timestamp": _TIME,
            "kind": {"$ref": "#/components/schemas/Kind"},
            "metadata": _METADATA,
            "tool_calls": {
                "type": ["array", "null"],
                "items": {"type": "object"},
                "description": "OpenAI assistant tool calls; stored as readable text.",
            },
            "tool_call_id": _NULLABLE_STR,
            "function_call": {"type": ["object", "null"]},
            "refusal": _NULLABLE_STR,
            "type": {"const": "message"},
            **dict.fromkeys(_LOOSE_MESSAGE_KEYS, anything),
        },
    }
    json_value = {
        "anyOf": [
            {"type": "string", "pattern": "^[^\\x00]*$"},
            {"type": ["number", "boolean", "null"]},
            {"type": "array", "items": _ref("JSONValue"), "maxItems": 100},
            _ref("JSONObject"),
        ]
    }
    json_object = {
        "type": "object",
        "description": "Any JSON object without NUL characters, at most 64 KiB as JSON.",
        "propertyNames": {"pattern": "^[^\\x00]*$"},
        "additionalProperties": _ref("JSONValue"),
        "maxProperties": 100,
    }
    return {
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["type", "message"],
                    "properties": {
                        "type": {"type": "string"},
                        "message": {"type": "string"},
                        "field": {"type": "string"},
                    },
                }
            },
        },
        "JSONValue": json_value,
        "JSONObject": json_object,
        "Kind": {"type": "string", "enum": list(models.KINDS)},
        "Memory": memory,
        "ScoredMemory": scored,
        "Message": message,
        "AddRequest": {
            "type": "object",
            "additionalProperties": False,
            "description": "Give `content` (one user message) or `messages`, not both, and "
            "at least one of user_id, agent_id, session_id.",
            "allOf": [{"oneOf": [_given("content"), _given("messages")]}, _NEED_SCOPE],
            "properties": {
                "content": _opt(_TEXT),
                "messages": {
                    "type": ["array", "null"],
                    "items": _ref("Message"),
                    "minItems": 1,
                    "maxItems": max_messages,
                },
                **_scope_props(),
                "metadata": _METADATA,
                "timestamp": _TIME,
                "kind": _ref("Kind"),
            },
        },
        "AddResult": {
            "type": "object",
            "required": ["ids", "skipped", "workspace"],
            "properties": {
                "ids": {
                    "type": "array",
                    "description": "One per message, in order: its id, or null if skipped.",
                    "items": {"type": ["string", "null"]},
                },
                "skipped": {
                    "type": "array",
                    "description": "The messages not stored: position and reason (`empty`: "
                    "no text and no tool call or result; `no_text`: only images, audio, files "
                    "or other parts without text).",
                    "items": {
                        "type": "object",
                        "required": ["index", "reason"],
                        "properties": {
                            "index": {"type": "integer", "minimum": 0},
                            "reason": {"type": "string", "enum": ["empty", "no_text"]},
                        },
                    },
                },
                "workspace": {"type": "string"},
            },
        },
        "SearchRequest": {
            "type": "object",
            "additionalProperties": False,
            "required": ["query"],
            "description": "Name at least one of user_id, agent_id, session_id.",
            "allOf": [_NEED_SCOPE],
            "properties": {
                "query": _TEXT,
                **_scope_props(),
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000},
                "min_score": {"type": ["number", "null"], "minimum": 0, "maximum": 10},
                "as_of": _TIME,
            },
        },
        "RecallRequest": {
            "type": "object",
            "additionalProperties": False,
            "required": ["query"],
            "description": "Name at least one of user_id, agent_id, session_id. `as_of`: when "
            "the question is asked; relative times in the query are read against it and what "
            "was current then ranks first.",
            "allOf": [_NEED_SCOPE],
            "properties": {
                "query": _TEXT,
                **_scope_props(),
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000},
                "as_of": _TIME,
            },
        },
        "RecallResult": {
            "type": "object",
            "required": ["recall_id", "query", "memories", "paths", "tensions", "formatted"],
            "properties": {
                "recall_id": {"type": "string"},
                "query": {"type": "string"},
                "memories": {"type": "array", "items": _ref("ScoredMemory")},
                "paths": {"type": "array", "items": {"type": "object"}},
                "tensions": {"type": "array", "items": {"type": "object"}},
                "formatted": {"type": "string"},
                "knowledge": {"type": "array", "items": _ref("KnowledgeChunk")},
                "preferences": {
                    "type": "array",
                    "items": _ref("ScoredMemory"),
                    "description": "Standing preferences of the scope that bear on the query.",
                },
            },
        },
        "SearchResult": {
            "type": "object",
            "required": ["query", "results"],
            "properties": {
                "query": {"type": "string"},
                "results": {"type": "array", "items": _ref("ScoredMemory")},
            },
        },
        "MemoryList": {
            "type": "object",
            "required": ["memories", "total"],
            "properties": {
                "memories": {"type": "array", "items": _ref("Memory")},
                "total": {"type": "integer", "minimum": 0, "description": "Matches in all."},
            },
        },
        **_inspector_schemas(),
        "UpdateRequest": {
            "type": "object",
            "additionalProperties": False,
            "description": "Give `content` and/or `metadata`.",
            "allOf": [_given("content", "metadata")],
            "properties": {
                "content": _opt(_TEXT),
                "metadata": _METADATA,
                "reason": {
                    "type": ["string", "null"],
                    "maxLength": 2000,
                    "pattern": f"^$|{_PATTERN}",
                    "description": "Why, kept in the memory's history.",
                },
                "workspace": {**_opt(_ID), "description": _SCOPE_DOC["workspace"]},
            },
        },
        "ForgetRequest": {
            "type": "object",
            "additionalProperties": False,
            "description": "Give `memory_id` (one or a list) or at least one of user_id, "
            "agent_id, session_id to delete a whole scope.",
            "allOf": [_given("memory_id", "user_id", "agent_id", "session_id")],
            "properties": {
                "memory_id": {
                    "anyOf": [
                        _ID,
                        {"type": "array", "items": _ID, "minItems": 1, "maxItems": 1000},
                        {"type": "null"},
                    ],
                },
                **_scope_props(),
            },
        },
        "ForgetResult": {
            "type": "object",
            "required": ["deleted"],
            "properties": {"deleted": {"type": "integer", "minimum": 0}},
        },
        "History": {
            "type": "object",
            "required": ["memory_id", "history"],
            "properties": {
                "memory_id": {"type": "string"},
                "history": {"type": "array", "items": {"type": "object"}},
            },
        },
        "FeedbackRequest": {
            "type": "object",
            "additionalProperties": False,
            "required": ["response"],
            "description": "The reply produced after a recall; acts on `recall_id` or on the "
            "scope's newest unconsumed recall. Name at least one of user_id, agent_id, "
            "session_id.",
            "allOf": [_NEED_SCOPE],
            "properties": {
                "response": _TEXT,
                "recall_id": {**_opt(_ID), "description": "The recall to act on."},
                **_scope_props(),
            },
        },
        "FeedbackResult": {
            "type": "object",
            "required": ["strengthened", "weakened"],
            "properties": {
                "strengthened": {"type": "integer", "minimum": 0},
                "weakened": {"type": "integer", "minimum": 0},
                "recall_id": _NULLABLE_STR,
                "consumed": {"type": "boolean"},
            },
        },
        "ExplainRequest": {
            "type": "object",
            "additionalProperties": False,
            "required": ["query", "memory_id"],
            "description": "Name at least one of user_id, agent_id, session_id.",
            "allOf": [_NEED_SCOPE],
            "properties": {
                "query": _TEXT,
                "memory_id": _ID,
                **_scope_props(),
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000},
            },
        },
        "Explanation": {
            "type": "object",
            "required": ["memory_id", "query", "components"],
            "properties": {
                "memory_id": {"type": "string"},
                "query": {"type": "string"},
                "rank": {"type": ["integer", "null"]},
                "score": {"type": ["number", "null"]},
                "components": {"type": "object"},
            },
        },
        **_record_requests(),
        **{name: _record_schema(getattr(models, name)) for name in _RECORDS},
        **{f"{name}List": _listing(name) for name in _RECORDS},
        "Stats": {
            "type": "object",
            "required": ["memories"],
            "properties": {"memories": {"type": "integer"}},
        },
        "KnowledgeBase": _record_schema(models.KnowledgeBase),
        "KnowledgeChunk": _record_schema(models.KnowledgeChunk),
        "KnowledgeBaseList": {
            "type": "object",
            "required": ["knowledge_bases"],
            "properties": {"knowledge_bases": {"type": "array", "items": _ref("KnowledgeBase")}},
        },
        "KnowledgeAddRequest": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "description": "Give `chunks` (passages as given) or `text` (a document to split), "
            "and at least one of user_id, agent_id, session_id.",
            "allOf": [{"oneOf": [_given("chunks"), _given("text")]}, _NEED_SCOPE],
            "properties": {
                "name": {**_TEXT, "maxLength": 500},
                "chunks": {
                    "type": ["array", "null"],
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["content"],
                        "additionalProperties": False,
                        "properties": {"content": _TEXT, "metadata": _METADATA},
                    },
                },
                "text": {"type": ["string", "null"]},
                **_scope_props(),
                "metadata": _METADATA,
                "chunk_chars": {"type": "integer", "minimum": 1, "maximum": 100000},
                "chunk_overlap": {"type": "integer", "minimum": 0},
            },
        },
        "KnowledgeSearchRequest": {
            "type": "object",
            "additionalProperties": False,
            "required": ["query"],
            "description": "Name at least one of user_id, agent_id, session_id.",
            "allOf": [_NEED_SCOPE],
            "properties": {
                "query": _TEXT,
                **_scope_props(),
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
            },
        },
        "KnowledgeSearchResult": {
            "type": "object",
            "required": ["query", "results"],
            "properties": {
                "query": {"type": "string"},
                "results": {"type": "array", "items": _ref("KnowledgeChunk")},
            },
        },
        "KnowledgeDeleted": {
            "type": "object",
            "required": ["kb_id", "deleted"],
            "properties": {"kb_id": {"type": "string"}, "deleted": {"type": "integer"}},
        },
    }


def _json_type(hint: Any) -> dict[str, Any]:
    names = {str: "string", float: "number", int: "integer", bool: "boolean", dict: "object"}
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) and len(args) == 1:
        return {"type": [names[typing.get_origin(args[0]) or args[0]], "null"]}
    return {"type": names[typing.get_origin(hint) or hint]}


def _record_schema(cls: type) -> dict[str, Any]:
    """The schema of a feedback record, derived from its dataclass so the two cannot drift."""
    hints = typing.get_type_hints(cls)
    return {
        "type": "object",
        "required": [f.name for f in dataclasses.fields(cls)],
        "properties": {f.name: _json_type(hints[f.name]) for f in dataclasses.fields(cls)},
    }


def _text(doc: str) -> dict[str, Any]:
    return {**_TEXT, "description": doc}


def _record_requests() -> dict[str, Any]:
    states = {"type": "string", "enum": list(models.FEEDBACK_STATES)}
    weight = {"type": "number", "exclusiveMinimum": 0, "maximum": 10}

    def request(
        required: list[str], props: dict[str, Any], doc: str, *rules: dict[str, Any]
    ) -> dict[str, Any]:
        out = {
            "type": "object",
            "additionalProperties": False,
            "required": required,
            "description": doc,
            "properties": props,
        }
        if rules:
            out["allOf"] = list(rules)
        return out

    return {
        "FeedbackEventRequest": request(
            ["input_context", "ai_output", "state"],
            {
                "input_context": _text("What the agent was asked or working on."),
                "ai_output": _text("What the agent produced."),
                "state": states,
                "user_reaction": _opt(_TEXT),
                "user_correction": _opt(_TEXT),
                "corrected_output": _opt(_TEXT),
                "reason": _opt(_TEXT),
                "source_event_id": {**_opt(_ID), "description": "Idempotency key per workspace."},
                **_scope_props(),
                "metadata": _METADATA,
                "timestamp": _TIME,
            },
            "Name at least one of user_id, agent_id, session_id. A `corrected` event needs "
            "`corrected_output` or `user_correction`.",
            _NEED_SCOPE,
            {
                "if": {"properties": {"state": {"const": "corrected"}}},
                "then": _given("corrected_output", "user_correction"),
            },
        ),
        "DecisionReviewRequest": request(
            ["event_id", "final_decision"],
            {
                "event_id": _ID,
                "final_decision": states,
                "outcome": {"type": "string", "enum": list(models.REVIEW_OUTCOMES)},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "reason": _opt(_TEXT),
                "user_id": _opt(_ID),
                "agent_id": _opt(_ID),
                "workspace": _opt(_ID),
                "timestamp": _TIME,
            },
            "A later look at a feedback event; a different final_decision reverses it. "
            "Reviewing to `corrected` needs an event that carries a correction.",
        ),
        "PreferencePairRequest": request(
            ["context", "accepted_output", "rejected_output"],
            {
                "context": _text("The situation both outputs answered."),
                "accepted_output": _text("The preferred output."),
                "rejected_output": _text("The output turned down."),
                "weight": weight,
                **_scope_props(),
                "timestamp": _TIME,
            },
            "One output preferred over another for the same context; `accepted_output` and "
            "`rejected_output` must differ (a rule JSON Schema cannot state); name at least one "
            "of user_id, agent_id, session_id.",
            _NEED_SCOPE,
        ),
        "LogEventRequest": request(
            ["kind"],
            {
                "kind": {**_ID, "description": "What happened, e.g. checkpoint."},
                "payload": _METADATA,
                **_scope_props(),
                "timestamp": _TIME,
            },
            "Any other event on record; name at least one of user_id, agent_id, session_id.",
            _NEED_SCOPE,
        ),
        "RatingRequest": request(
            ["memory_id", "verdict"],
            {
                "memory_id": _ID,
                "verdict": {"type": "string", "enum": list(models.RATING_VERDICTS)},
                "correction": _opt(_TEXT),
                "recall_id": _opt(_ID),
                "context": _opt(_TEXT),
                "weight": weight,
                **_scope_props(),
                "timestamp": _TIME,
            },
            "Whether a memory helped (MCP memory_feedback). Give recall_id or context, not both.",
            {"not": {"allOf": [_given("recall_id"), _given("context")]}},
        ),
    }


_RECORDS = ("FeedbackEvent", "DecisionReview", "PreferencePair", "LoggedEvent", "MemoryRating")


def _listing(record: str) -> dict[str, Any]:
    key = {"LoggedEvent": "logged_events", "MemoryRating": "memory_ratings"}.get(
        record, "".join("_" + c.lower() if c.isupper() else c for c in record)[1:] + "s"
    )
    return {
        "type": "object",
        "required": [key],
        "properties": {key: {"type": "array", "items": _ref(record)}},
    }


_ARRAY_OF_OBJECTS = {"type": "array", "items": {"type": "object"}}


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": list(props), "properties": props}


def _inspector_schemas() -> dict[str, Any]:
    """The answers of the web inspector's reads."""
    scope_row = _obj(
        {
            "user_id": _NULLABLE_STR,
            "agent_id": _NULLABLE_STR,
            "session_id": _NULLABLE_STR,
            "memories": {"type": "integer", "minimum": 1},
        }
    )
    return {
        "ScopeList": _obj(
            {
                "workspace": {"type": "string"},
                "scopes": {"type": "array", "items": scope_row},
                "truncated": {"type": "boolean"},
            }
        ),
        "Neighbourhood": _obj(
            {
                "memory_id": {"type": "string"},
                "depth": {"type": "integer"},
                "nodes": {"type": "array", "items": _ref("Memory")},
                "edges": _ARRAY_OF_OBJECTS,
                "changes": _ARRAY_OF_OBJECTS,
            }
        ),
        "MemoryLearning": _obj({"memory_id": {"type": "string"}, "signals": _ARRAY_OF_OBJECTS}),
        "Timeline": _obj({"items": _ARRAY_OF_OBJECTS, "counts": {"type": "object"}}),
        "RankShifts": _obj({"shifts": _ARRAY_OF_OBJECTS}),
        "Tensions": _obj({"tensions": _ARRAY_OF_OBJECTS}),
    }


def _parameter(param: Param, where: str) -> dict[str, Any]:
    if where == "path":
        schema = {"name": param.name, "in": "path", "required": True, "schema": _PATH_SCHEMA}
        return {**schema, "description": param.doc}
    if param.name in _SCOPE_DOC:
        return _query(param.name, _ID, _SCOPE_DOC[param.name])
    if param.high is not None and (param.name == "depth" or param.default is None):
        # The inspector's reads: each limit with its own bound, default in its doc.
        bounds = {"type": "integer", "minimum": int(param.low or 1), "maximum": int(param.high)}
        return _query(param.name, bounds, param.doc)
    if param.choices is not None:
        return _query(param.name, {"type": "string", "enum": list(param.choices)}, param.doc)
    if param.name in ("status", "text"):
        text = {"type": "string", "minLength": 1, "maxLength": 1_000, "pattern": _PATTERN}
        return _query(param.name, _ID if param.name == "status" else text, param.doc)
    if param.name in ("since", "until"):
        moment = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": _PATTERN}
        return _query(param.name, moment, param.doc)
    if param.name == "limit":
        return _page_query(param.default)[0]
    if param.name == "offset":
        return _page_query()[1]
    raise AssertionError(f"no query schema for {param.name}")  # pragma: no cover


def _operation(op: Operation, method: str, path: str, status: int, op_id: str) -> dict[str, Any]:
    body, answer = op.schemas
    in_body = method in ("POST", "PATCH")
    params = [_parameter(p, "path") for p in op.params if "{" + p.name + "}" in path]
    if not in_body:
        params += [_parameter(p, "query") for p in op.params if "{" + p.name + "}" not in path]
    return _op(
        op.summary,
        (status, f"{op.summary}: the answer.", _ref(answer or "")),
        body=_ref(body) if in_body and body else None,
        params=params,
        errors=op.errors,
        op_id=op_id or op.name,
    )


def _document(max_chars: int, max_messages: int) -> dict[str, Any]:
    paths: dict[str, Any] = {"/healthz": _HEALTHZ}
    for op in OPERATIONS:
        for route in op.http:
            paths.setdefault(route.path, {})[route.method.lower()] = _operation(op, *route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "engrammar",
            "version": __version__,
            "description": "Long-term memory for AI agents that learns from feedback. "
            "MCP (streamable HTTP) is served at /mcp by the same process.",
        },
        "paths": paths,
        "components": {
            "schemas": _limited(_schemas(max_messages), max_chars),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API key from `engrammar keys create`.",
                }
            },
        },
    }


def _limited(value: Any, max_chars: int) -> Any:
    """``value`` with every text schema's ``maxLength`` set to ``max_chars``."""
    if isinstance(value, dict):
        out = {k: _limited(v, max_chars) for k, v in value.items()}
        if value.get("pattern") in (_PATTERN, _CONTENT_PATTERN) and "maxLength" not in value:
            out["maxLength"] = max_chars
        return out
    if isinstance(value, list):
        return [_limited(v, max_chars) for v in value]
    return value


_HEALTHZ = {
    "get": {
        "summary": "Liveness check (no key needed)",
        "operationId": "healthz",
        "security": [],
        "responses": {
            "200": {
                "description": "The server is up.",
                **_json(
                    {
                        "type": "object",
                        "required": ["status", "version"],
                        "properties": {
                            "status": {"type": "string"},
                            "version": {"type": "string"},
                        },
                    }
                ),
            }
        },
    }
}


@cache
def _cached(max_chars: int, max_messages: int) -> dict[str, Any]:
    return _document(max_chars, max_messages)


def openapi_document(config: Config | None = None) -> dict[str, Any]:
    """The OpenAPI document for ``config``'s limits (default: the defaults), a fresh copy."""
    if config is None:
        defaults = Config.describe()
        limits = defaults["max_content_chars"][0], defaults["max_messages_per_add"][0]
    else:
        limits = config.max_content_chars, config.max_messages_per_add
    return copy.deepcopy(_cached(*limits))
