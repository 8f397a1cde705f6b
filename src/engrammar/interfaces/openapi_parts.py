"""The building blocks of the OpenAPI document (:mod:`.openapi`): the shapes of ids, texts and
times, the error answers, and the schemas of feedback records and of the inspector's reads."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from .. import models

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
_SCALAR = {"type": ["string", "number", "boolean", "null"]}


def _one_or_more(values: tuple[str, ...]) -> dict[str, Any]:
    one = {"type": "string", "enum": list(values)}
    return {"anyOf": [one, {"type": "array", "minItems": 1, "items": one}, {"type": "null"}]}


def filters_schema() -> dict[str, Any]:
    """The ``filters`` of recall and search (engine/filters.py checks them)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "Only memories that match every condition given, filtered before the "
        "top `limit` are cut. `metadata`: per top-level key, a value (equality; null also "
        'matches a memory without the key) or {"in": [values]}; JSON equality (true is not 1, '
        "1 equals 1.0). `since` (inclusive) and `until` (exclusive) bound created_at.",
        "properties": {
            "metadata": {
                "type": ["object", "null"],
                "maxProperties": 32,
                "propertyNames": {"minLength": 1},
                "additionalProperties": {
                    "anyOf": [
                        _SCALAR,
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["in"],
                            "properties": {
                                "in": {
                                    "type": "array",
                                    "minItems": 1,
                                    "maxItems": 1000,
                                    "items": _SCALAR,
                                }
                            },
                        },
                    ]
                },
            },
            "kind": _one_or_more(models.KINDS),
            "role": _one_or_more(models.ROLES),
            "since": _TIME,
            "until": _TIME,
        },
    }


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


_SOURCE = {
    "type": ["string", "null"],
    "description": "Who gives this feedback; with an API key, the key's id replaces it.",
}


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
                "source": _SOURCE,
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
                "source": _SOURCE,
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
                "source": _SOURCE,
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
                "source": _SOURCE,
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
                "source": _SOURCE,
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
