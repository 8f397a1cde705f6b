"""Input checks shared by every entry point; each failure names the field and the problem."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from ..errors import ValidationError
from ..models import KINDS, Scope
from . import transcript

_MAX_ID = 256
_MAX_DEPTH = 64


def _unicode(name: str, value: str) -> None:
    # Lone surrogates survive in Python strings but cannot be stored (UTF-8) or hashed.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            name, f"must be valid Unicode; lone surrogate at position {exc.start}"
        ) from None


def depth_ok(value: Any, limit: int) -> bool:
    """Whether ``value`` nests no deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth >= limit:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def scope_id(name: str, value: Any, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise ValidationError(name, "is required")
        return None
    return text(name, value, _MAX_ID)


def scope(
    user_id: Any,
    agent_id: Any,
    session_id: Any,
    workspace: Any,
    default_workspace: str,
    *,
    need_one: bool = True,
) -> Scope:
    """The scope of a call, in ``default_workspace`` unless it names one; with ``need_one``
    at least one of ``user_id``, ``agent_id`` and ``session_id`` is required."""
    ws = scope_id("workspace", workspace) if workspace is not None else default_workspace
    checked = Scope(
        workspace=ws or default_workspace,
        user_id=scope_id("user_id", user_id),
        agent_id=scope_id("agent_id", agent_id),
        session_id=scope_id("session_id", session_id),
    )
    if (
        need_one
        and checked.user_id is None
        and checked.agent_id is None
        and checked.session_id is None
    ):
        raise ValidationError("user_id", "one of user_id, agent_id or session_id is required")
    return checked


def text(name: str, value: Any, max_chars: int) -> str:
    if not isinstance(value, str):
        raise ValidationError(name, f"must be a string, got {shown(value)}")
    if not value.strip():
        raise ValidationError(name, "must not be empty")
    if len(value) > max_chars:
        raise ValidationError(name, f"is {len(value)} characters; the limit is {max_chars}")
    if "\x00" in value:
        raise ValidationError(name, "must not contain NUL characters")
    _unicode(name, value)
    return value


def optional_text(name: str, value: Any, max_chars: int) -> str | None:
    return None if value is None else text(name, value, max_chars)


def positive_int(name: str, value: Any, *, maximum: int | None = None, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(name, f"must be an integer, got {shown(value)}")
    if value < minimum:
        raise ValidationError(name, f"must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValidationError(name, f"must be <= {maximum}, got {value}")
    return value


def non_negative_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(name, f"must be an integer, got {shown(value)}")
    if value < 0:
        raise ValidationError(name, f"must be >= 0, got {value}")
    return value


def unit_float(name: str, value: Any, lo: float = 0.0, hi: float = 1.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(name, f"must be a number, got {shown(value)}")
    number = float(value)
    if not math.isfinite(number) or not lo <= number <= hi:
        raise ValidationError(name, f"must be a number in [{lo}, {hi}], got {value!r}")
    return number


def metadata(name: str, value: Any, max_bytes: int = 65_536) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(name, f"must be an object (dict), got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise ValidationError(name, f"keys must be strings, got {quote(key)}")
    if not depth_ok(value, _MAX_DEPTH):
        raise ValidationError(name, f"is nested deeper than {_MAX_DEPTH} levels")
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(name, f"must be JSON-serialisable: {exc}") from None
    _unicode(name, encoded)
    if len(encoded.encode()) > max_bytes:
        raise ValidationError(name, f"is larger than {max_bytes} bytes as JSON")
    if "\x00" in encoded or "\\u0000" in encoded:
        raise ValidationError(name, "must not contain NUL characters")
    result: dict[str, Any] = json.loads(encoded)
    return result


#: The one range every accepted time falls in, on every interface (epoch seconds, UTC):
#: 1970-01-01 up to, not including, 3000-01-01.
TIME_MIN = 0.0
TIME_MAX = 32_503_680_000.0
_TIME_RANGE = "between 1970-01-01 and 3000-01-01 (UTC)"


def timestamp(name: str, value: Any) -> float | None:
    """Seconds since the epoch from a datetime, an ISO-8601 string or a number, in the one
    supported range (:data:`TIME_MIN` to :data:`TIME_MAX`) whatever form it came in."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValidationError(name, "must be a datetime, an ISO-8601 string or epoch seconds")
    if isinstance(value, datetime):
        seconds = _epoch(name, value)
    elif isinstance(value, int | float):
        if not math.isfinite(value) or not TIME_MIN <= value < TIME_MAX:
            raise ValidationError(name, f"must be epoch seconds {_TIME_RANGE}, got {quote(value)}")
        return float(value)
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(
                name, f"is not an ISO-8601 date/time: {quote(value[:60])}"
            ) from None
        seconds = _epoch(name, parsed)
    else:
        raise ValidationError(name, "must be a datetime, an ISO-8601 string or epoch seconds")
    if not TIME_MIN <= seconds < TIME_MAX:
        raise ValidationError(name, f"must be a time {_TIME_RANGE}, got {quote(str(value)[:60])}")
    return seconds


def _epoch(name: str, dt: datetime) -> float:
    try:
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    except (OverflowError, ValueError, OSError):
        raise ValidationError(name, f"must be a time {_TIME_RANGE}") from None


def shown(value: Any) -> str:
    """``value`` as a type error shows it, on every interface: its repr, cut to 60 characters
    (``limit: must be an integer, got 'x'``)."""
    text = quote(value)
    return text if len(text) <= 60 else text[:59] + "…"


def quote(value: Any) -> str:
    """``value`` as an error message may show it: its repr, with anything UTF-8 cannot carry
    (lone surrogates) escaped, so the message itself can always be encoded and sent."""
    return repr(value).encode("utf-8", "backslashreplace").decode("utf-8")


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValidationError(name, f"must be one of {', '.join(allowed)}; got {quote(value)}")
    return value


class Message(NamedTuple):
    """One message of ``add``, checked: who said what, of which kind, when."""

    role: str
    content: str
    kind: str
    created_at: float
    metadata: dict[str, Any]


class Checked(NamedTuple):
    """The messages of ``add`` to store, their positions in the call, and the skipped ones
    as ``(position, reason)`` (see ``models.SKIP_REASONS``)."""

    messages: list[Message]
    positions: list[int]
    skipped: list[tuple[int, str]]


def messages(
    value: Any,
    *,
    default_kind: str,
    base_metadata: dict[str, Any],
    default_time: float,
    max_messages: int,
    max_chars: int,
) -> Checked:
    """The messages of ``add`` (a string, or a list of strings, message dicts and SDK message
    objects: see :mod:`.transcript`), each of ``default_kind`` at ``default_time`` unless it says
    otherwise, its metadata over ``base_metadata``. A message with nothing to remember is
    skipped; if every one is, that is an error."""
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    if value is None:
        raise ValidationError("messages", "is required (a string or a list of messages)")
    if isinstance(value, dict) or not isinstance(value, Sequence):
        raise ValidationError("messages", "must be a string or a list of {role, content} dicts")
    if not value:
        raise ValidationError("messages", "must not be empty")
    if len(value) > max_messages:
        raise ValidationError("messages", f"has {len(value)} items; the limit is {max_messages}")
    out: list[Message] = []
    positions: list[int] = []
    skipped: list[tuple[int, str]] = []
    tool_names: dict[str, str] = {}
    for i, msg in enumerate(value):
        field = f"messages[{i}]"
        given, msg = msg, transcript.plain(msg, field)
        item = isinstance(msg, dict) and transcript.is_item(msg)
        known = transcript.item_keys(msg) if item else transcript.MESSAGE_KEYS
        if given is not msg and isinstance(msg, dict):
            # An SDK object: its fields are its package's, not typos; read those we know.
            msg = {k: val for k, val in msg.items() if k in known}
        if isinstance(msg, str):
            msg = {"role": "user", "content": msg}
        if not isinstance(msg, dict):
            raise ValidationError(
                field, f"must be a dict with role and content, got {type(msg).__name__}"
            )
        unknown = set(msg) - known
        if unknown:
            raise ValidationError(field, f"unknown keys {sorted(unknown)}")
        if item:
            read = transcript.read_item(msg, field, tool_names)
        else:
            read = transcript.read_message(msg, field, tool_names)
        msg_kind = choice(f"{field}.kind", msg.get("kind", read.kind or default_kind), KINDS)
        when = timestamp(f"{field}.timestamp", msg.get("timestamp"))
        own = metadata(f"{field}.metadata", msg.get("metadata"))
        if read.skip is not None:
            skipped.append((i, read.skip))
            continue
        if len(read.text) > max_chars:
            raise ValidationError(
                f"{field}.content",
                f"is {len(read.text)} characters; the limit is {max_chars} (max_content_chars)",
            )
        meta = {**base_metadata, **read.notes, **own}
        name = None if item else msg.get("name")  # an item's name is its tool's
        if name is not None and read.role != "tool":
            meta["speaker"] = text(f"{field}.name", name, 256)
        elif name is not None:
            meta.setdefault("tool_name", text(f"{field}.name", name, 256))
        out.append(Message(read.role, read.text, msg_kind, when or default_time, meta))
        positions.append(i)
    if not out:
        _nothing_to_store(skipped)
    return Checked(out, positions, skipped)


def _nothing_to_store(skipped: list[tuple[int, str]]) -> None:
    why = {"empty": "must not be empty", "no_text": "holds no text to remember"}
    if len(skipped) == 1:
        i, reason = skipped[0]
        raise ValidationError(f"messages[{i}].content", why[reason])
    listed = ", ".join(f"messages[{i}]: {reason}" for i, reason in skipped[:5])
    more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
    raise ValidationError(
        "messages", f"has nothing to store; every message was skipped ({listed}{more})"
    )
