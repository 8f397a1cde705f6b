"""The shapes of the operation table: :class:`Param`, :class:`HttpRoute`, :class:`Operation`.

The table itself, built from these, is :mod:`.operations`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .access import Call

__all__ = ["ORDERS", "REQUIRED", "HttpRoute", "Operation", "Param"]

REQUIRED: Any = object()
ORDERS = ("oldest", "newest")


@dataclass(frozen=True)
class Param:
    """One parameter of an operation, as every interface shows it.

    ``type`` is the JSON-level Python type (what MCP and the CLI accept); ``choices`` come from
    the enums of :mod:`engrammar.models`; ``cli`` is ``"arg"`` (positional), ``"args"``
    (positional, any number), ``"opt"`` or ``None`` (not on the command line); ``mcp`` says
    whether the MCP tool takes it; ``low``/``high`` bound numbers (``gt`` makes ``low`` strict).
    """

    name: str
    type: Any
    doc: str
    default: Any = None
    choices: tuple[str, ...] | None = None
    cli: str | None = "opt"
    short: str | None = None
    mcp: bool = True
    low: float | None = None
    high: float | None = None
    gt: bool = False
    json: bool = False  # a JSON object given as text on the command line

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


class HttpRoute(NamedTuple):
    """Where REST serves an operation; ``op_id`` is its OpenAPI operationId (default: its name)."""

    method: str
    path: str
    status: int = 200
    op_id: str = ""


@dataclass(frozen=True)
class Operation:
    """One operation: its handler, parameters, guards, and how each interface serves it."""

    name: str
    handler: str
    params: tuple[Param, ...]
    summary: str
    http: tuple[HttpRoute, ...] = ()
    mcp: str | None = None
    mcp_doc: str = ""
    cli: tuple[str, ...] = ()  # the verb, e.g. ("add",) or ("event", "create")
    cli_doc: str = ""
    guards: tuple[Callable[[Call], None], ...] = ()
    shape: Callable[[Any, dict[str, Any]], Mapping[str, Any]] | None = None
    owned_as: str | None = None  # a record getter: the kind named when another user's is asked
    text: Callable[[dict[str, Any]], str] = lambda d: json.dumps(d, ensure_ascii=False)
    mcp_text: Callable[[dict[str, Any]], str] | None = None
    #: The openapi request schema (body) or the schema of the answer, by component name.
    schemas: tuple[str | None, str | None] = (None, None)
    errors: tuple[int, ...] = (401, 403, 422)
    hints: dict[str, bool] = field(default_factory=dict)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)
