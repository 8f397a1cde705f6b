"""The OpenAPI 3.1 document of the REST API.

Its paths are generated from the operation table (:mod:`.operations`), the same table the
routes are; the request and record schemas are written here, and their limits (content length,
messages per add) are read from the :class:`~engrammar.config.Config` being served."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from .. import __version__, models
from ..config import Config
from .openapi_parts import (
    _CONTENT_PATTERN,
    _ID,
    _LOOSE_MESSAGE_KEYS,
    _METADATA,
    _NEED_SCOPE,
    _NULLABLE_STR,
    _PATH_SCHEMA,
    _PATTERN,
    _RECORDS,
    _SCOPE_DOC,
    _TEXT,
    _TIME,
    _errors,
    _given,
    _inspector_schemas,
    _json,
    _listing,
    _opt,
    _page_query,
    _query,
    _record_requests,
    _record_schema,
    _ref,
    _scope_props,
    filters_schema,
)
from .operations import OPERATIONS, Operation, Param

__all__ = ["openapi_document"]


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
    responses_item = {
        "type": "object",
        "required": ["type"],
        "not": {"required": ["role"]},
        "description": "An OpenAI Responses item other than a message, as a Responses "
        "`output` or the Agents SDK's `to_input_list()` holds it: `function_call`, "
        "`custom_tool_call` and `mcp_call` are stored as the assistant's tool calls, "
        "`function_call_output` and `custom_tool_call_output` as the tool's results (kind "
        "`event`); `reasoning` and hosted tools' items (`web_search_call`, ...) are skipped "
        "and listed in the answer's `skipped`.",
        "properties": {
            "type": {"type": "string", "enum": list(models.RESPONSES_ITEM_TYPES)},
            "id": {"type": "string"},
            "call_id": {"type": "string"},
            "name": {"type": "string"},
            "arguments": anything,
            "input": anything,
            "output": anything,
            "error": _NULLABLE_STR,
            "server_label": {"type": "string"},
            "timestamp": _TIME,
            "kind": {"$ref": "#/components/schemas/Kind"},
            "metadata": _METADATA,
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
        "ResponsesItem": responses_item,
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
                    "items": {"anyOf": [_ref("Message"), _ref("ResponsesItem")]},
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
                "filters": {"anyOf": [_ref("Filters"), {"type": "null"}]},
            },
        },
        "Filters": filters_schema(),
        "RecallRequest": {
            "type": "object",
            "additionalProperties": False,
            "required": ["query"],
            "description": "Name at least one of user_id, agent_id, session_id. `as_of`: when "
            "the question is asked; relative times in the query are read against it and what "
            "was current then ranks first. `min_score`: leave out memories whose absolute "
            "score (components.absolute, the scale search returns) is below it.",
            "allOf": [_NEED_SCOPE],
            "properties": {
                "query": _TEXT,
                **_scope_props(),
                "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000},
                "as_of": _TIME,
                "filters": {"anyOf": [_ref("Filters"), {"type": "null"}]},
                "min_score": {"type": ["number", "null"], "minimum": 0, "maximum": 10},
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
            "scope's newest recall (refused, with `consumed: false` and a `message` naming it, "
            "when it has had its reply or is older than feedback_recall_window_s). Name at "
            "least one of user_id, agent_id, session_id.",
            "allOf": [_NEED_SCOPE],
            "properties": {
                "response": _TEXT,
                "recall_id": {**_opt(_ID), "description": "The recall to act on."},
                **_scope_props(),
                "source": {
                    "type": ["string", "null"],
                    "description": "Who sends the reply; with an API key, the key's id.",
                },
            },
        },
        "UndoRequest": {
            "type": "object",
            "additionalProperties": False,
            "required": ["record_id"],
            "properties": {
                "record_id": _ID,
                "user_id": _opt(_ID),
                "workspace": _opt(_ID),
            },
        },
        "UndoResult": {
            "type": "object",
            "required": ["record_id", "kind", "undone", "memories_removed", "edges_restored"],
            "properties": {
                "record_id": {"type": "string"},
                "kind": {
                    "type": "string",
                    "enum": [
                        "feedback_event",
                        "decision_review",
                        "preference_pair",
                        "memory_rating",
                        "logged_event",
                        "reply",
                    ],
                },
                "user_id": _NULLABLE_STR,
                "source": _NULLABLE_STR,
                "undone": {"type": "array", "items": {"type": "string"}},
                "memories_removed": {"type": "array", "items": {"type": "string"}},
                "edges_restored": {"type": "integer", "minimum": 0},
            },
        },
        "FeedbackResult": {
            "type": "object",
            "required": ["strengthened", "weakened"],
            "properties": {
                "strengthened": {"type": "integer", "minimum": 0},
                "weakened": {"type": "integer", "minimum": 0},
                "recall_id": _NULLABLE_STR,
                "query": {
                    "type": ["string", "null"],
                    "description": "The query of the recall the reply was applied to (or "
                    "refused for).",
                },
                "consumed": {"type": "boolean"},
                "message": {
                    "type": "string",
                    "description": "Why nothing changed (or that no graph link did).",
                },
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
                "records": {
                    "type": "array",
                    "description": "Each feedback record that moved the memory for this query, "
                    "with its share of `learned` now (after decay); `record_id` can be undone.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "record_id": {"type": "string"},
                            "signal": {"type": "string"},
                            "source": _NULLABLE_STR,
                            "contribution": {"type": "number"},
                        },
                    },
                },
                "sources": {
                    "type": "array",
                    "description": "The contributions summed per source.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "source": _NULLABLE_STR,
                            "contribution": {"type": "number"},
                        },
                    },
                },
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
                "chunk_chars": {"type": "integer", "minimum": 100, "maximum": 100000},
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
