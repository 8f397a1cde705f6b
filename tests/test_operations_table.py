"""The operation table holds against ``Memory``'s real signatures, and covers its public API."""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any

import pytest

from engrammar import Config, models
from engrammar.interfaces.op_params import QUERY, handler_params
from engrammar.interfaces.openapi import openapi_document
from engrammar.interfaces.operations import NOT_EXPOSED, OPERATIONS, Operation
from engrammar.interfaces.spec import REQUIRED
from engrammar.memory import Memory


def _names(hint: Any) -> set[Any]:
    """The plain types a hint admits (``str | None`` -> {str, None})."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return set().union(*(_names(a) for a in typing.get_args(hint)))
    if hint is type(None) or hint is None:
        return {None}
    return {typing.get_origin(hint) or hint}


def _admits(accepted: Any, kind: Any) -> bool:
    if accepted is kind or accepted is object:
        return True
    return isinstance(accepted, type) and isinstance(kind, type) and issubclass(kind, accepted)


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_every_parameter_exists_on_the_handler_with_a_compatible_type(op: Operation) -> None:
    handler = getattr(Memory, op.handler)
    signature = inspect.signature(handler)
    hints = typing.get_type_hints(handler)
    for param in op.params:
        assert param.name in signature.parameters, f"{op.name}: {param.name} not on Memory"
        real = signature.parameters[param.name]
        if param.required:
            assert real.default is inspect.Parameter.empty or real.default is None, param.name
        elif real.default is not inspect.Parameter.empty:
            assert param.default == real.default, f"{op.name}.{param.name}: default differs"
        hint = hints[param.name]
        if hint is Any or param.type is Any:
            continue
        accepted = _names(hint)
        # What an interface passes must be something the handler accepts.
        for kind in _names(param.type):
            assert any(_admits(a, kind) for a in accepted), (
                f"{op.name}.{param.name}: {param.type} vs {hint}"
            )
    required = {
        name
        for name, real in signature.parameters.items()
        if name != "self" and real.default is inspect.Parameter.empty
    }
    assert required <= set(op.fields), f"{op.name}: the table misses {required - set(op.fields)}"


def test_every_public_memory_method_is_served_or_listed_as_not_exposed() -> None:
    public = {n for n, _ in inspect.getmembers(Memory, inspect.isfunction) if n[0] != "_"}
    public.add("import_")
    served = {op.handler for op in OPERATIONS}
    assert public - served == set(NOT_EXPOSED)
    assert not served - public


def test_names_and_verbs_are_unique() -> None:
    for attr in ("name", "mcp", "cli"):
        values = [getattr(op, attr) for op in OPERATIONS if getattr(op, attr)]
        assert len(values) == len(set(values)), attr
    routes = [(r.method, r.path) for op in OPERATIONS for r in op.http]
    assert len(routes) == len(set(routes))


def test_the_openapi_limits_follow_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    small = Config(max_content_chars=500, max_messages_per_add=7)
    doc = openapi_document(small)
    add = doc["components"]["schemas"]["AddRequest"]["properties"]
    assert add["content"]["maxLength"] == 500
    assert add["messages"]["maxItems"] == 7
    default = openapi_document()["components"]["schemas"]["AddRequest"]["properties"]
    assert default["content"]["maxLength"] == Config.describe()["max_content_chars"][0]


def test_every_request_body_is_its_operations_parameters() -> None:
    schemas = openapi_document()["components"]["schemas"]
    bodies = 0
    for op in OPERATIONS:
        for route in op.http:
            if route.method not in ("POST", "PATCH") or not op.schemas[0]:
                continue
            bodies += 1
            body = schemas[op.schemas[0]]
            params = [p for p in op.params if "{" + p.name + "}" not in route.path]
            assert list(body["properties"]) == [p.name for p in params], op.name
            assert body.get("required", []) == [p.name for p in params if p.required], op.name
            for p in params:
                assert body["properties"][p.name]["description"] == p.doc, (op.name, p.name)
    assert bodies == 15


def test_the_answer_schemas_of_records_are_their_models() -> None:
    schemas = openapi_document()["components"]["schemas"]
    memory = models.MemoryRecord("m", "text", "user", "message", "w", "u", None, None, 1.0, 1.0)
    scored = models.ScoredMemory(memory, 0.5)
    recalled = models.RecallResult("r", "q", [scored])
    for name, record in (("Memory", memory), ("ScoredMemory", scored), ("RecallResult", recalled)):
        schema = schemas[name]
        assert set(schema["properties"]) == set(record.to_dict()), name
        assert set(schema["required"]) == set(record.to_dict()), name


# The handler parameters no interface serves: Python objects, or an alias kept for MemWire.
PYTHON_ONLY = {
    "add": {"dedup"},
    "feedback": {"assistant_response"},
    "recall": {"profile"},
    "search": {"profile"},
    "explain": {"profile"},
}


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_every_handler_parameter_is_served_or_known_as_python_only(op: Operation) -> None:
    handler = inspect.signature(getattr(Memory, op.handler)).parameters
    served = {p.name for p in op.params}
    assert set(handler) - {"self"} - served == PYTHON_ONLY.get(op.name, set()), op.name


# The operations whose parameters the table reads off Memory's signatures (handler_params).
FROM_SIGNATURE = [
    *("recall", "search", "explain", "get", "history", "stats", "memory_learning", "list"),
    *("list_knowledge", "timeline", "rank_shifts", "tensions", "scopes"),
    *("list_feedback_events", "list_decision_reviews", "list_preference_pairs"),
    *("list_logged_events", "list_memory_ratings"),
    *("get_feedback_event", "get_decision_review", "get_preference_pair"),
    *("get_logged_event", "get_memory_rating"),
]


@pytest.mark.parametrize("name", FROM_SIGNATURE)
def test_operations_take_names_order_and_defaults_from_memory(name: str) -> None:
    op = next(o for o in OPERATIONS if o.name == name)
    handler = inspect.signature(getattr(Memory, op.handler)).parameters
    expected = [
        (n, REQUIRED if p.default is inspect.Parameter.empty else p.default)
        for n, p in handler.items()
        if n != "self" and n not in PYTHON_ONLY.get(name, set())
    ]
    assert [(p.name, p.default) for p in op.params] == expected


def test_handler_params_follow_a_changed_signature_and_refuse_what_they_cannot_show() -> None:
    def recall(self: Any, query: str, *, user_id: str | None = None, limit: int = 5) -> None:
        """A handler whose signature moved on."""

    got = handler_params(recall)
    assert [(p.name, p.default) for p in got] == [
        ("query", REQUIRED),
        ("user_id", None),
        ("limit", 5),
    ]
    assert got[0].doc == QUERY.doc

    def unknown(self: Any, query: str, shade: str = "blue") -> None:
        """A handler with a parameter no interface spec covers."""

    with pytest.raises(ValueError, match="'shade'"):
        handler_params(unknown)
    assert [p.name for p in handler_params(unknown, python_only=("shade",))] == ["query"]
    with pytest.raises(ValueError, match="no parameter profile"):
        handler_params(recall, python_only=("profile",))
