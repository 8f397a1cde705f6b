"""Reading a message as chat SDKs write it: engrammar's own shape, OpenAI chat, Anthropic.

A message of ``add`` is a dict, or an SDK object with ``model_dump`` (a pydantic model of the
``openai`` or ``anthropic`` package), in one of these shapes:

- engrammar: ``{role, content, name, kind, timestamp, metadata}``;
- OpenAI chat: ``content`` a string, a list of parts (``text``, ``image_url``, ``input_audio``,
  ``file``, ``refusal``) or null; assistant ``tool_calls`` (and the older ``function_call``);
  ``tool`` messages with ``tool_call_id``; roles ``developer`` (read as ``system``) and
  ``function`` (read as ``tool``);
- OpenAI Responses items (a Responses ``output``, the Agents SDK's ``to_input_list()``):
  ``message`` items as above; ``function_call`` / ``custom_tool_call`` / ``mcp_call`` and
  ``function_call_output`` / ``custom_tool_call_output`` as tool calls and results;
  ``reasoning`` and hosted tools' items skipped;
- Anthropic: ``content`` a string or a list of blocks (``text``, ``tool_use``, ``tool_result``,
  ``document``, ``search_result``, ``image``, ``thinking``, ...); the fields of a whole
  response ``Message``.

Each is read into the text to remember and notes for its metadata: text parts are joined;
a tool call becomes the line ``called tool NAME with {ARGS}``, a tool result ``tool NAME
returned: TEXT``; other parts (images, audio, files, thinking) are noted in
``metadata["non_text_parts"]`` as ``{index, type}``; calls in ``metadata["tool_calls"]``
(``{id, name}``), results in ``metadata["tool_results"]`` (``{tool_call_id, name}``). A
message of only tool traffic is of kind ``event``; one of only tool results has the role
``tool``. A message with nothing to remember gets a skip reason (:data:`SKIP_REASONS`)
instead of an error; a malformed one raises ``ValidationError`` naming the field, e.g.
``messages[3].content[1].type``.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from ..errors import ValidationError
from ..models import RESPONSES_ITEM_TYPES, ROLES, SKIP_REASONS

__all__ = [
    "MESSAGE_KEYS",
    "SKIP_REASONS",
    "Read",
    "is_item",
    "item_keys",
    "plain",
    "read_content",
    "read_item",
    "read_message",
]

_OWN_KEYS = frozenset({"role", "content", "metadata", "timestamp", "kind", "name"})
_OPENAI_KEYS = frozenset(
    {"tool_calls", "tool_call_id", "function_call", "refusal", "audio", "annotations"}
)
# A whole Anthropic response ``Message`` (or an OpenAI Responses ``message`` item).
_RESPONSE_KEYS = frozenset(
    {
        "id", "type", "model", "stop_reason", "stop_sequence", "stop_details", "usage",
        "container", "diagnostics", "context_management", "status",
    }
)  # fmt: skip
#: Every key a message dict may hold; others are refused (a misspelt key is a mistake).
MESSAGE_KEYS = _OWN_KEYS | _OPENAI_KEYS | _RESPONSE_KEYS
# OpenAI Responses items other than messages (what ``to_input_list()`` of the Agents SDK and
# a Responses ``output`` hold), by type: the keys each may hold besides engrammar's own.
_ITEM_COMMON = frozenset({"type", "id", "status", "caller", "namespace", "async", "async_"})
_ITEM_KEYS = {
    "function_call": _ITEM_COMMON | {"call_id", "name", "arguments"},
    "custom_tool_call": _ITEM_COMMON | {"call_id", "name", "input"},
    "function_call_output": _ITEM_COMMON | {"call_id", "name", "output"},
    "custom_tool_call_output": _ITEM_COMMON | {"call_id", "name", "output"},
    "mcp_call": _ITEM_COMMON
    | {"server_label", "name", "arguments", "output", "error", "approval_request_id"},
    "reasoning": _ITEM_COMMON | {"summary", "content", "encrypted_content"},
}
_ITEM_OWN_KEYS = frozenset({"metadata", "timestamp", "kind"})
# Items of hosted tools and bookkeeping, read for nothing: skipped as holding no text (a
# generated image or a computer action is no conversation), whatever keys they carry.
_SKIPPED_ITEMS = frozenset(RESPONSES_ITEM_TYPES) - set(_ITEM_KEYS)
_ROLE_ALIASES = {"developer": "system", "function": "tool"}
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_CALL_PARTS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_RESULT_PARTS = frozenset({"tool_result", "mcp_tool_result"})


class Read(NamedTuple):
    """A message read: role, text to remember ("" if none), kind if its shape says one, the
    notes for its metadata, and why it is skipped (None if it is stored)."""

    role: str
    text: str
    kind: str | None
    notes: dict[str, Any]
    skip: str | None


class _Parts:
    """What the parts of one message hold, in order."""

    def __init__(self) -> None:
        self.pieces: list[tuple[str, str]] = []  # (field, text) in the message's order
        self.said = False  # any plain text (not tool traffic)
        self.calls: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []
        self.other: list[dict[str, Any]] = []

    def call(self, where: str, name: str, call_id: Any, args: Any, names: dict[str, str]) -> None:
        """A tool call: its line, and its id kept in ``names`` so a result can name the tool."""
        known = call_id if isinstance(call_id, str) else None
        if known is not None:
            names[known] = name
        self.calls.append({"id": known, "name": name})
        self.pieces.append((where, _call_line(name, args)))

    def result(
        self, where: str, call_id: str | None, name: str | None, text: str, error: bool = False
    ) -> None:
        """A tool's result: which call it answers, and its line when it holds text."""
        self.results.append({"tool_call_id": call_id, "name": name})
        if text:
            self.pieces.append((where, _result_line(name, text, error)))

    def notes(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The metadata these parts (and the message's ``id``) give the memory."""
        notes: dict[str, Any] = {}
        if isinstance(msg.get("id"), str):
            notes["message_id"] = msg["id"]
        if self.calls:
            notes["tool_calls"] = self.calls
        if self.results:
            notes["tool_results"] = self.results
        if self.other:
            notes["non_text_parts"] = self.other
        return notes


def plain(value: Any, field: str) -> Any:
    """``value`` as JSON data: an SDK model object (``model_dump``) becomes its dict."""
    dump = getattr(value, "model_dump", None)
    if dump is None or isinstance(value, dict | list | str):
        return value
    try:
        return dump(mode="json", exclude_none=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(field, f"could not be read as JSON: {exc}") from None


def _string(field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string, got {type(value).__name__}")
    return value


def _args(value: Any) -> str:
    """Tool arguments as compact readable JSON (OpenAI gives them as a JSON string)."""
    if isinstance(value, str):
        given: str = value
        try:
            value = json.loads(given)
        except ValueError:
            return given
    if value in ({}, None, ""):
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        return str(value)


def _call_line(name: str, args: Any) -> str:
    rendered = _args(args)
    return f"called tool {name} with {rendered}" if rendered else f"called tool {name}"


def _result_line(name: str | None, text: str, error: bool) -> str:
    who = f"tool {name}" if name else "tool"
    return f"{who} {'failed' if error else 'returned'}: {text}"


def read_content(value: Any, field: str, tool_names: dict[str, str]) -> _Parts:
    """The parts of a ``content`` value: null, a string, or a list of parts / blocks."""
    parts = _Parts()
    if value is None:
        return parts
    if isinstance(value, str):
        parts.pieces.append((field, value))
        parts.said = True
        return parts
    if isinstance(value, dict) or not isinstance(value, list | tuple):
        raise ValidationError(
            field, f"must be a string, a list of parts or null, got {type(value).__name__}"
        )
    for j, raw in enumerate(value):
        _read_part(plain(raw, f"{field}[{j}]"), f"{field}[{j}]", j, parts, tool_names)
    return parts


def _read_part(part: Any, field: str, index: int, parts: _Parts, names: dict[str, str]) -> None:
    if isinstance(part, str):
        parts.pieces.append((field, part))
        parts.said = True
        return
    if not isinstance(part, dict):
        raise ValidationError(field, f"must be an object with a type, got {type(part).__name__}")
    kind = part.get("type")
    if not isinstance(kind, str) or not kind:
        raise ValidationError(f"{field}.type", "must be a string naming the part's type")
    if kind in _TEXT_PARTS:
        parts.pieces.append((f"{field}.text", _string(f"{field}.text", part.get("text"))))
        parts.said = True
    elif kind == "refusal":
        parts.pieces.append((f"{field}.refusal", _string(f"{field}.refusal", part.get("refusal"))))
        parts.said = True
    elif kind in _CALL_PARTS:
        name = _string(f"{field}.name", part.get("name"))
        parts.call(f"{field}.input", name, part.get("id"), part.get("input"), names)
    elif kind in _RESULT_PARTS:
        call_id = _string(f"{field}.tool_use_id", part.get("tool_use_id"))
        inner = read_content(part.get("content"), f"{field}.content", names)
        parts.other += inner.other
        text = "\n".join(t for _, t in inner.pieces).strip()
        error = part.get("is_error") is True
        parts.result(f"{field}.content", call_id, names.get(call_id), text, error)
    elif kind == "document" and isinstance(part.get("source"), dict):
        _document(part, field, index, parts, names)
    elif kind == "search_result":
        _search_result(part, field, parts, names)
    else:
        parts.other.append({"index": index, "type": kind})


def _document(
    part: dict[str, Any], field: str, index: int, parts: _Parts, names: dict[str, str]
) -> None:
    """An Anthropic document block: plain text or content blocks are text; a PDF is not."""
    source = part["source"]
    title = part.get("title") if isinstance(part.get("title"), str) else None
    if source.get("type") == "text":
        body = _string(f"{field}.source.data", source.get("data"))
    elif source.get("type") == "content":
        inner = read_content(source.get("content"), f"{field}.source.content", names)
        parts.other += inner.other
        body = "\n".join(t for _, t in inner.pieces)
    else:
        parts.other.append({"index": index, "type": "document"})
        return
    parts.pieces.append((f"{field}.source", f"{title}\n{body}" if title else body))
    parts.said = True


def _search_result(part: dict[str, Any], field: str, parts: _Parts, names: dict[str, str]) -> None:
    """An Anthropic search result handed to the model: its title, where it came from and its
    text blocks, as the text the model was given."""
    inner = read_content(part.get("content"), f"{field}.content", names)
    parts.other += inner.other
    head = " - ".join(
        v for k in ("title", "source") if isinstance(v := part.get(k), str) and v.strip()
    )
    body = "\n".join(t for _, t in inner.pieces)
    text = "\n".join(x for x in (head, body) if x)
    if text:
        parts.pieces.append((f"{field}.content", text))
        parts.said = True


def _openai_calls(msg: dict[str, Any], field: str, parts: _Parts, names: dict[str, str]) -> None:
    """Assistant ``tool_calls`` (and the older single ``function_call``) as readable lines."""
    calls = msg.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list | tuple):
            raise ValidationError(f"{field}.tool_calls", "must be a list of tool calls")
        for k, raw in enumerate(calls):
            where = f"{field}.tool_calls[{k}]"
            call = plain(raw, where)
            if not isinstance(call, dict):
                raise ValidationError(where, f"must be an object, got {type(call).__name__}")
            kind = call.get("type", "function")
            body = call.get(kind) if isinstance(kind, str) else None
            if not isinstance(body, dict):
                raise ValidationError(f"{where}.{kind}", "must be an object with a name")
            name = _string(f"{where}.{kind}.name", body.get("name"))
            args = body.get("arguments", body.get("input"))
            parts.call(f"{where}.{kind}", name, call.get("id"), args, names)
    legacy = plain(msg.get("function_call"), f"{field}.function_call")
    if legacy is not None:
        if not isinstance(legacy, dict):
            raise ValidationError(f"{field}.function_call", "must be an object with a name")
        name = _string(f"{field}.function_call.name", legacy.get("name"))
        parts.call(f"{field}.function_call", name, None, legacy.get("arguments"), names)


def read_message(msg: dict[str, Any], field: str, tool_names: dict[str, str]) -> Read:
    """Read one message dict (already :func:`plain`); ``tool_names`` maps the tool call ids
    seen so far in the batch to their tool, so that a result can name what returned it."""
    raw_role = msg.get("role")
    if not isinstance(raw_role, str) or (raw_role not in ROLES and raw_role not in _ROLE_ALIASES):
        allowed = ", ".join((*ROLES, *_ROLE_ALIASES))
        raise ValidationError(f"{field}.role", f"must be one of {allowed}; got {raw_role!r}")
    role = _ROLE_ALIASES.get(raw_role, raw_role)
    if msg.get("type", "message") != "message":
        raise ValidationError(f"{field}.type", f"must be 'message'; got {msg.get('type')!r}")
    for key in ("tool_call_id", "refusal"):
        if msg.get(key) is not None:
            _string(f"{field}.{key}", msg[key])
    parts = read_content(msg.get("content"), f"{field}.content", tool_names)
    if not parts.said and msg.get("refusal") is not None:
        parts.pieces.append((f"{field}.refusal", msg["refusal"]))
        parts.said = True
    _openai_calls(msg, field, parts, tool_names)
    if role == "tool" and (msg.get("tool_call_id") is not None or raw_role == "function"):
        # An OpenAI tool result: say which tool returned it.
        call_id = msg.get("tool_call_id")
        name = msg.get("name") if isinstance(msg.get("name"), str) else None
        name = name or (tool_names.get(call_id) if call_id else None)
        text = "\n".join(t for _, t in parts.pieces).strip()
        parts.pieces = []
        parts.result(f"{field}.content", call_id, name, text)
        parts.said = False
    notes = parts.notes(msg)
    text = "\n".join(t for _, t in parts.pieces)
    if not text.strip():
        reason = "no_text" if parts.other else "empty"
        return Read(role, "", None, notes, reason)
    _check_pieces(parts.pieces)
    tool_only = not parts.said
    if tool_only and parts.results and not parts.calls:
        role = "tool"
    return Read(role, text, "event" if tool_only else None, notes, None)


def is_item(msg: dict[str, Any]) -> bool:
    """Whether ``msg`` is an OpenAI Responses item other than a message: a function call, its
    output, an MCP call or a reasoning item (no ``role``; its ``type`` says what it is)."""
    kind = msg.get("type")
    return "role" not in msg and (kind in _ITEM_KEYS or kind in _SKIPPED_ITEMS)


def item_keys(msg: dict[str, Any]) -> frozenset[str]:
    """The keys an item of ``msg``'s type may hold (see :func:`is_item`); an item that is
    skipped unread may hold any."""
    if msg["type"] in _SKIPPED_ITEMS:
        return frozenset(msg)
    return _ITEM_KEYS[msg["type"]] | _ITEM_OWN_KEYS


def read_item(msg: dict[str, Any], field: str, tool_names: dict[str, str]) -> Read:
    """Read an OpenAI Responses item (:func:`is_item`) as the chat message it stands for: a
    call is the assistant's ``called tool NAME with {ARGS}``, an output the tool's ``tool NAME
    returned: TEXT`` (NAME from the call earlier in the batch), both of kind ``event``; a
    reasoning item is the model's thinking, skipped like a thinking block, and so are the
    items of hosted tools (web search, computer use, image generation, ...)."""
    kind = msg["type"]
    if kind == "reasoning" or kind in _SKIPPED_ITEMS:
        return Read("assistant", "", None, _Parts().notes(msg), "no_text")
    if kind in ("function_call", "custom_tool_call", "mcp_call"):
        return _call_item(msg, field, tool_names)
    return _output_item(msg, field, tool_names)


def _call_item(msg: dict[str, Any], field: str, tool_names: dict[str, str]) -> Read:
    """A function, custom tool or MCP call item; an MCP call carries its output (or error)."""
    kind = msg["type"]
    name = _string(f"{field}.name", msg.get("name"))
    key = "id" if kind == "mcp_call" else "call_id"
    call_id = msg.get(key)
    if call_id is not None:
        _string(f"{field}.{key}", call_id)
    args = msg.get("input") if kind == "custom_tool_call" else msg.get("arguments")
    parts = _Parts()
    parts.call(f"{field}.arguments", name, call_id, args, tool_names)
    notes = parts.notes(msg)
    if kind == "mcp_call":
        for part, error in (("output", False), ("error", True)):
            if msg.get(part) is not None:
                said = _string(f"{field}.{part}", msg[part])
                if said.strip():
                    parts.pieces.append((f"{field}.{part}", _result_line(name, said, error)))
        if isinstance(msg.get("server_label"), str):
            notes["mcp_server"] = msg["server_label"]
    _check_pieces(parts.pieces)
    return Read("assistant", "\n".join(t for _, t in parts.pieces), "event", notes, None)


def _output_item(msg: dict[str, Any], field: str, tool_names: dict[str, str]) -> Read:
    """A function or custom tool call's output item: a string or a list of content parts."""
    call_id = _string(f"{field}.call_id", msg.get("call_id"))
    given = msg.get("name") if isinstance(msg.get("name"), str) else None
    parts = read_content(msg.get("output"), f"{field}.output", tool_names)
    text = "\n".join(t for _, t in parts.pieces).strip()
    parts.pieces = []
    parts.result(f"{field}.output", call_id, given or tool_names.get(call_id), text)
    notes = parts.notes(msg)
    if not text:
        return Read("tool", "", None, notes, "no_text" if parts.other else "empty")
    _check_pieces(parts.pieces)
    return Read("tool", parts.pieces[0][1], "event", notes, None)


def _check_pieces(pieces: list[tuple[str, str]]) -> None:
    """Refuse text that cannot be stored, naming the part it came from."""
    for where, text in pieces:
        if "\x00" in text:
            raise ValidationError(where, "must not contain NUL characters")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(
                where, f"must be valid Unicode; lone surrogate at position {exc.start}"
            ) from None
