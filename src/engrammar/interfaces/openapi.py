"""The OpenAPI 3.1 document of the REST API, generated.

Its paths come from the operation table (:mod:`.operations`), the same table the routes are
served from; each request body is the schema of its operation's parameters (:func:`_body`:
one property per :class:`~.spec.Param`, typed by its type, bounds and choices, described by
its doc); every answer is derived from its type in :mod:`engrammar.models`, a dataclass or
a ``TypedDict`` (:func:`model_schema`; :data:`ANSWERS` names the ``TypedDict`` ones). Written
here by hand: the shapes of ids, texts and times, the rules that tie several fields of a
body together, chat messages, filters and the error envelope. Limits (content length, messages per add) are read from the
:class:`~engrammar.config.Config` being served."""

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
from .spec import REQUIRED

__all__ = ["ANSWERS", "MAX_INT", "filters_schema", "model_schema", "openapi_document"]

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


# -- the shapes no parameter type states ---------------------------------------------------
_SHAPES: dict[str, dict[str, Any]] = {
    "filters": {"anyOf": [_ref("Filters"), {"type": "null"}]},
    # ``maxItems`` is ``Config.max_messages_per_add``, set per document.
    "messages": {
        "type": ["array", "null"],
        "items": {"anyOf": [_ref("Message"), _ref("ResponsesItem")]},
        "minItems": 1,
    },
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
}
_REASON = {"type": ["string", "null"], "maxLength": 2000, "pattern": f"^$|{_PATTERN}"}


# -- derived from the models ---------------------------------------------------------------
#: The models that are components of their own, by the name the document gives them.
_COMPONENTS: dict[type, str] = {
    models.MemoryRecord: "Memory",
    models.ScoredMemory: "ScoredMemory",
    models.KnowledgeChunk: "KnowledgeChunk",
    models.KnowledgeBase: "KnowledgeBase",
}
#: The answers that are plain JSON objects, by the name the document gives them.
ANSWERS: dict[str, type] = {
    "AddResult": models.AddAnswer,
    "SearchResult": models.SearchResult,
    "MemoryList": models.MemoryList,
    "ScopeList": models.ScopeList,
    "Neighbourhood": models.Neighbourhood,
    "MemoryLearning": models.MemoryLearning,
    "Timeline": models.Timeline,
    "RankShifts": models.RankShifts,
    "Tensions": models.Tensions,
    "ForgetResult": models.ForgetResult,
    "History": models.History,
    "UndoResult": models.UndoResult,
    "FeedbackResult": models.FeedbackResult,
    "Explanation": models.Explanation,
    "Stats": models.Stats,
    "KnowledgeBaseList": models.KnowledgeBaseList,
    "KnowledgeSearchResult": models.KnowledgeSearchResult,
    "KnowledgeDeleted": models.KnowledgeDeleted,
}
_JSON_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean", dict: "object"}


def _documented(schema: dict[str, Any], doc: models.Doc) -> dict[str, Any]:
    """``schema`` with what ``doc`` says of the field: description, least value, values."""
    out = dict(schema)
    if doc.text:
        out["description"] = doc.text
    if doc.minimum is not None:
        out["minimum"] = doc.minimum
    if doc.choices is not None:
        out["enum"] = list(doc.choices)
    return out


def _json_type(hint: Any) -> dict[str, Any]:
    """The schema of one field of a model or an answer, from its type hint: ``Annotated``
    with a :class:`~engrammar.models.Doc` adds what it says; with a model, the field holds
    that model's ``to_dict()``."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        base, *extras = args
        models_of = [x for x in extras if isinstance(x, type)]
        schema = _json_type(models_of[0] if models_of else base)
        for doc in extras:
            if isinstance(doc, models.Doc):
                schema = _documented(schema, doc)
        return schema
    if origin in (typing.NotRequired, typing.Required):
        return _json_type(args[0])
    if isinstance(hint, types.UnionType) or origin is typing.Union:
        kept = [a for a in args if a is not type(None)]
        if len(kept) == 1:
            inner = _json_type(kept[0])
            if "type" in inner:
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
    if hint is Any:
        return {}
    if hint in _COMPONENTS:
        return _ref(_COMPONENTS[hint])
    if dataclasses.is_dataclass(hint) or typing.is_typeddict(hint):
        return model_schema(typing.cast(type, hint))
    origin = origin or hint
    if origin is list:
        return {"type": "array", "items": _json_type(args[0])}
    if origin is dict and args and args[1] is not Any:
        return {"type": "object", "additionalProperties": _json_type(args[1])}
    return {"type": _JSON_TYPES[origin]}


def model_schema(cls: type, **fields: dict[str, Any]) -> dict[str, Any]:
    """The schema of a dataclass's ``to_dict`` (every field, all present) or of a
    ``TypedDict`` (its keys; the ``NotRequired`` ones optional), each typed by its hint;
    ``fields`` replace the schemas of the fields they name, or add fields ``to_dict`` adds."""
    hints = typing.get_type_hints(cls, include_extras=True)
    typed = not dataclasses.is_dataclass(cls)
    names = list(hints) if typed else [f.name for f in dataclasses.fields(cls)]
    props = {n: _json_type(hints[n]) for n in names}
    props.update(fields)
    # ``__required_keys__`` misses ``NotRequired`` written as a string annotation.
    optional = [n for n in names if typed and typing.get_origin(hints[n]) is typing.NotRequired]
    required = [n for n in props if n not in optional]
    return {"type": "object", "required": required, "properties": props}


# -- derived from the operation table ------------------------------------------------------
_SCOPE_NAMES = frozenset({"user_id", "agent_id", "session_id", "workspace"})


def _kinds(hint: Any) -> set[Any]:
    """The plain types a parameter's type admits (``str | None`` -> {str, NoneType})."""
    if isinstance(hint, types.UnionType):
        return set().union(*(_kinds(a) for a in typing.get_args(hint)))
    return {typing.get_origin(hint) or hint}


def _number(param: Param, kinds: set[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer" if int in kinds else "number"}
    if param.low is not None:
        schema["exclusiveMinimum" if param.gt else "minimum"] = param.low
    if param.high is not None:
        schema["maximum"] = param.high
    return _opt(schema) if type(None) in kinds else schema


def _text_schema(param: Param) -> dict[str, Any]:
    if param.name in _SCOPE_NAMES or param.name.endswith("_id") or param.name == "kind":
        return _ID
    if param.name == "name":
        return {**_TEXT, "maxLength": 500}
    if param.name in ("text", "source"):  # a document to split; a name the server may replace
        return {"type": "string"}
    return _TEXT


def _param_schema(param: Param, max_messages: int) -> dict[str, Any]:
    """The JSON Schema of a parameter in a request body, from its type, bounds and choices."""
    kinds = _kinds(param.type)
    if param.name in _SHAPES:
        shape = _SHAPES[param.name]
        return {**shape, "maxItems": max_messages} if param.name == "messages" else shape
    if param.type is Any:  # a reason that may be blank
        return _REASON
    if dict in kinds:
        return _METADATA
    if str in kinds and float in kinds:
        return _TIME
    if list in kinds:  # one id or several
        many = {"type": "array", "items": _ID, "minItems": 1, "maxItems": 1000}
        return {"anyOf": [_ID, many, {"type": "null"}]}
    if param.choices == models.KINDS:
        return _ref("Kind")
    if param.choices is not None:
        return {"type": "string", "enum": list(param.choices)}
    if kinds & {int, float}:
        return _number(param, kinds)
    schema = _text_schema(param)
    return _opt(schema) if type(None) in kinds else schema


def _body(op: Operation, path: str, max_messages: int) -> dict[str, Any]:
    """The request body of ``op`` served at ``path``: its parameters but the path's, each
    described by its doc, with the rules :data:`_BODY_RULES` adds."""
    params = [p for p in op.params if "{" + p.name + "}" not in path]
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    required = [p.name for p in params if p.default is REQUIRED]
    if required:
        out["required"] = required
    doc, rules = _BODY_RULES.get(op.name, ("", ()))
    if doc:
        out["description"] = doc
    if rules:
        out["allOf"] = list(rules)
    out["properties"] = {
        p.name: {**_param_schema(p, max_messages), "description": p.doc} for p in params
    }
    return out


def _bodies(max_messages: int) -> dict[str, Any]:
    """The request schema of every operation with a body, by its component name."""
    out: dict[str, Any] = {}
    for op in OPERATIONS:
        name = op.schemas[0]
        for route in op.http:
            if name and route.method in ("POST", "PATCH"):
                out[name] = _body(op, route.path, max_messages)
    return out


_NEEDS_SCOPE = "Name at least one of user_id, agent_id, session_id."
#: What a body says besides its fields, and the rules that tie its fields together.
_BODY_RULES: dict[str, tuple[str, tuple[dict[str, Any], ...]]] = {
    "add": (
        "Give `content` (one user message) or `messages`, not both, and at least one of "
        "user_id, agent_id, session_id.",
        ({"oneOf": [_given("content"), _given("messages")]}, _NEED_SCOPE),
    ),
    "update": ("Give `content` and/or `metadata`.", (_given("content", "metadata"),)),
    "search": (_NEEDS_SCOPE, (_NEED_SCOPE,)),
    "recall": (
        f"{_NEEDS_SCOPE} `as_of`: when the question is asked; relative times in the query are "
        "read against it and what was current then ranks first. `min_score`: leave out "
        "memories whose absolute score (components.absolute, the scale search returns) is "
        "below it.",
        (_NEED_SCOPE,),
    ),
    "forget": (
        "Give `memory_id` (one or a list) or at least one of user_id, agent_id, session_id "
        "to delete a whole scope.",
        (_given("memory_id", "user_id", "agent_id", "session_id"),),
    ),
    "feedback": (
        "The reply produced after a recall; acts on `recall_id` or on the scope's newest "
        "recall (refused, with `consumed: false` and a `message` naming it, when it has had "
        f"its reply or is older than feedback_recall_window_s). {_NEEDS_SCOPE}",
        (_NEED_SCOPE,),
    ),
    "explain": (_NEEDS_SCOPE, (_NEED_SCOPE,)),
    "create_feedback_event": (
        f"{_NEEDS_SCOPE} A `corrected` event needs `corrected_output` or `user_correction`.",
        (
            _NEED_SCOPE,
            {
                "if": {"properties": {"state": {"const": "corrected"}}},
                "then": _given("corrected_output", "user_correction"),
            },
        ),
    ),
    "create_decision_review": (
        "A later look at a feedback event; a different final_decision reverses it. "
        "Reviewing to `corrected` needs an event that carries a correction.",
        (),
    ),
    "create_preference_pair": (
        "One output preferred over another for the same context; `accepted_output` and "
        "`rejected_output` must differ (a rule JSON Schema cannot state); name at least one "
        "of user_id, agent_id, session_id.",
        (_NEED_SCOPE,),
    ),
    "log_event": (
        "Any other event on record; name at least one of user_id, agent_id, session_id.",
        (_NEED_SCOPE,),
    ),
    "rate_memory": (
        "Whether a memory helped (MCP memory_feedback). Give recall_id or context, not both.",
        ({"not": {"allOf": [_given("recall_id"), _given("context")]}},),
    ),
    "add_knowledge": (
        "Give `chunks` (passages as given) or `text` (a document to split), and at least one "
        "of user_id, agent_id, session_id.",
        ({"oneOf": [_given("chunks"), _given("text")]}, _NEED_SCOPE),
    ),
    "search_knowledge": (_NEEDS_SCOPE, (_NEED_SCOPE,)),
}


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
        "Memory": model_schema(
            models.MemoryRecord,
            role={"type": "string", "enum": list(models.ROLES)},
            valid_until={
                "type": ["number", "null"],
                "description": "When a newer memory replaced this one (null while current).",
            },
            superseded_by={
                "type": ["string", "null"],
                "description": "The id of the memory that replaced this one.",
            },
            created_at_iso={"type": "string"},
        ),
        "ScoredMemory": model_schema(models.ScoredMemory),
        "RecallResult": model_schema(
            models.RecallResult,
            preferences={
                "type": "array",
                "items": _ref("ScoredMemory"),
                "description": "Standing preferences of the scope that bear on the query.",
            },
        ),
        "Message": message,
        "ResponsesItem": responses_item,
        "Filters": filters_schema(),
        **{name: model_schema(answer) for name, answer in ANSWERS.items()},
        **_bodies(max_messages),
        **{name: model_schema(getattr(models, name)) for name in _RECORDS},
        **{f"{name}List": _listing(name) for name in _RECORDS},
        "KnowledgeBase": model_schema(models.KnowledgeBase),
        "KnowledgeChunk": model_schema(models.KnowledgeChunk),
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
