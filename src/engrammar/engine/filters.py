"""The ``filters`` of ``recall`` and ``search``, checked: a JSON object in, a
:class:`~engrammar.models.RecallFilter` out, every failure naming the exact field
(``filters.metadata.topic.in: must be a list``).

The shape (docs/recall.md, "Filters")::

    {"metadata": {"topic": "billing", "team": {"in": ["a", "b"]}},
     "kind": "fact" | ["fact", "decision"],
     "role": "user" | ["user", "assistant"],
     "since": <time>, "until": <time>}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import ValidationError
from ..models import KINDS, ROLES, RecallFilter
from . import validate as v

__all__ = ["FILTER_KEYS", "parse_filters"]

FILTER_KEYS = ("metadata", "kind", "role", "since", "until")
# Bounds that keep one request's conditions small (each is a term of every search).
_MAX_KEYS = 32
_MAX_VALUES = 1_000
_SCALAR = "must be a string, number, boolean or null"


def parse_filters(value: Any, name: str = "filters") -> RecallFilter | None:
    """``value`` (a dict as above, a :class:`RecallFilter`, or ``None``) checked; ``None``
    when it sets no condition."""
    if value is None or isinstance(value, RecallFilter):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError(name, f"must be an object (dict), got {type(value).__name__}")
    for key in value:
        if key not in FILTER_KEYS:
            raise ValidationError(
                f"{name}.{key}", f"unknown filter; accepted: {', '.join(FILTER_KEYS)}"
            )
    since = v.timestamp(f"{name}.since", value.get("since"))
    until = v.timestamp(f"{name}.until", value.get("until"))
    if since is not None and until is not None and until <= since:
        raise ValidationError(f"{name}.until", "must be later than since")
    found = RecallFilter(
        metadata=_metadata(f"{name}.metadata", value.get("metadata")),
        kinds=_choices(f"{name}.kind", value.get("kind"), KINDS),
        roles=_choices(f"{name}.role", value.get("role"), ROLES),
        since=since,
        until=until,
    )
    return None if found == RecallFilter() else found


def _choices(name: str, value: Any, allowed: tuple[str, ...]) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (v.choice(name, value, allowed),)
    if not isinstance(value, list | tuple):
        raise ValidationError(name, f"must be one of {', '.join(allowed)}, or a list of them")
    if not value:
        raise ValidationError(name, "must list at least one value")
    return tuple(dict.fromkeys(v.choice(f"{name}[{i}]", x, allowed) for i, x in enumerate(value)))


def _metadata(name: str, value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValidationError(name, f"must be an object (dict), got {type(value).__name__}")
    if len(value) > _MAX_KEYS:
        raise ValidationError(name, f"must name at most {_MAX_KEYS} keys")
    out = []
    for key, condition in value.items():
        where = f"{name}.{key}"
        if not isinstance(key, str) or not key:
            raise ValidationError(name, f"keys must be non-empty strings, got {v.quote(key)}")
        _text(where, key)
        if isinstance(condition, Mapping):
            extra = sorted(set(condition) - {"in"})
            if extra or "in" not in condition:
                raise ValidationError(
                    where,
                    f'unknown operator {extra[0]!r}; give a value (equality) or {{"in": [values]}}'
                    if extra
                    else 'give a value (equality) or {"in": [values]}',
                )
            values = condition["in"]
            if not isinstance(values, list | tuple):
                raise ValidationError(f"{where}.in", "must be a list")
            if not values:
                raise ValidationError(f"{where}.in", "must list at least one value")
            if len(values) > _MAX_VALUES:
                raise ValidationError(f"{where}.in", f"must list at most {_MAX_VALUES} values")
            out.append((key, tuple(_scalar(f"{where}.in[{i}]", x) for i, x in enumerate(values))))
        elif isinstance(condition, list | tuple):
            raise ValidationError(
                where, f'{_SCALAR}; for one of several values use {{"in": [values]}}'
            )
        else:
            out.append((key, (_scalar(where, condition),)))
    return tuple(out)


def _scalar(name: str, value: Any) -> Any:
    if isinstance(value, str):
        _text(name, value)
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(name, "must be a finite number")
        return value
    raise ValidationError(name, f"{_SCALAR}, got {type(value).__name__}")


def _text(name: str, value: str) -> None:
    # What no stored metadata can hold (nor PostgreSQL's jsonb carry) matches nothing: refused.
    if "\x00" in value:
        raise ValidationError(name, "must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(name, "must be valid Unicode (no lone surrogates)") from None
