"""Hostile input over the Python API, property-based (hypothesis).

Every call with generated arguments either succeeds or raises a clear ``ValidationError``
(``NotFoundError`` for ids that name nothing): never another exception. A call that fails
leaves the database byte-for-byte as it was (a checksum over every table is compared).
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engrammar import Memory, NotFoundError, ValidationError

pytestmark = pytest.mark.slow

# The `mem` fixture is shared across the examples of one test on purpose: data accumulates,
# and each failing example is checked against the store as it stands.
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

FULL_TEXT_SYNTAX = [
    '"foo" OR *',
    '"unbalanced',
    "foo AND",
    "NEAR(a b",
    "a:b",
    "^start",
    "-x",
    "*",
    "(",
    ")",
    "OR",
    "NOT NOT",
    "col:*",
    "a' OR '1'='1",
    "'; DROP TABLE memories; --",
    "%_%",
    "\\",
]
ODD = [
    "",
    "   ",
    "\t\n",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\u202e\u200b\ufeff",
    "🧠" * 50,
    "e\u0301" * 20,
    "x" * 200_001,
]


def lone_surrogate_text() -> st.SearchStrategy[str]:
    return st.text(
        alphabet=st.characters(codec=None, categories=["Cs", "Lu", "Ll", "Zs", "Cc"]),
        min_size=1,
        max_size=20,
    )


def hostile_str() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(FULL_TEXT_SYNTAX + ODD),
        st.text(max_size=40),
        lone_surrogate_text(),
    )


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
    lone_surrogate_text(),
)
json_like = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


def deep(depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(depth):
        out = {"k": out}
    return out


def hostile_any() -> st.SearchStrategy[Any]:
    return st.one_of(
        hostile_str(),
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.binary(max_size=10),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=5), json_leaf, max_size=3),
        st.just(object()),
    )


def hostile_metadata() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.dictionaries(st.text(max_size=8), json_like, max_size=4),
        st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=2),
        st.just(deep(50)),
        st.just(deep(70)),
        st.just({"big": "x" * 70_000}),
        st.just({"nan": math.nan}),
        st.just({"s": "\ud800"}),
        st.just({"\udc00": 1}),
        st.just({"nul": "\x00"}),
        st.just({"set": {1, 2}}),
        hostile_any(),
    )


def checksum(mem: Memory) -> str:
    """A digest of every row of every table, read through a separate connection."""
    path = mem.config.sqlite_file
    digest = hashlib.sha256()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
                "'CREATE VIRTUAL%' ORDER BY name"
            )
        ]
        for table in tables:
            digest.update(table.encode())
            rows = sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{table}"'))
            for row in rows:
                digest.update(row.encode("utf-8", "backslashreplace"))
    finally:
        conn.close()
    return digest.hexdigest()


def expect_clean(mem: Memory, call: Callable[[], Any]) -> Any:
    """Run ``call``: success, or a ValidationError/NotFoundError that changed nothing."""
    before = checksum(mem)
    try:
        return call()
    except ValidationError as exc:
        assert exc.field, "a ValidationError must name the field"
        assert exc.problem
    except NotFoundError:
        pass
    assert checksum(mem) == before, "a refused call changed stored data"
    return None


def seed(mem: Memory) -> tuple[str, str]:
    ids = mem.add(
        [
            {"role": "user", "content": "I prefer tea over coffee in the morning."},
            {"role": "assistant", "content": "Noted: tea in the morning."},
        ],
        user_id="u",
    )
    recall = mem.recall("what does the user drink", user_id="u")
    return ids[0], recall.recall_id


def test_db_path_exists(mem: Memory) -> None:
    seed(mem)
    assert len(checksum(mem)) == 64


@SETTINGS
@given(
    messages=st.one_of(hostile_any(), st.lists(st.one_of(hostile_str(), hostile_any()))),
    user_id=hostile_any(),
    metadata=hostile_metadata(),
    timestamp=hostile_any(),
    kind=hostile_any(),
)
def test_add(
    mem: Memory, messages: Any, user_id: Any, metadata: Any, timestamp: Any, kind: Any
) -> None:
    out = expect_clean(
        mem,
        lambda: mem.add(
            messages, user_id=user_id, metadata=metadata, timestamp=timestamp, kind=kind
        ),
    )
    if out is not None:
        assert all(isinstance(i, str) for i in out)
        for memory_id in out:
            assert mem.get(memory_id).id == memory_id


@SETTINGS
@given(
    message=st.fixed_dictionaries(
        {"role": hostile_any(), "content": hostile_str()},
        optional={
            "metadata": hostile_metadata(),
            "timestamp": hostile_any(),
            "kind": hostile_any(),
            "name": hostile_any(),
            "extra": hostile_any(),
        },
    )
)
def test_add_message_dicts(mem: Memory, message: dict[str, Any]) -> None:
    expect_clean(mem, lambda: mem.add([message], user_id="u"))


@SETTINGS
@given(query=hostile_any(), user_id=hostile_any(), limit=hostile_any())
def test_recall_and_search(mem: Memory, query: Any, user_id: Any, limit: Any) -> None:
    if not mem.list(user_id="u", limit=1):
        seed(mem)
    # A recall is a write (it is recorded); a refused one must record nothing.
    result = expect_clean(mem, lambda: mem.recall(query, user_id=user_id, limit=limit))
    if result is not None:
        assert result.recall_id
    found = expect_clean(mem, lambda: mem.search(query, user_id=user_id, limit=limit))
    if found is not None:
        assert all(m.memory.user_id == user_id for m in found)


@SETTINGS
@given(query=st.sampled_from(FULL_TEXT_SYNTAX))
def test_full_text_syntax_is_plain_text(mem: Memory, query: str) -> None:
    """Full-text operators in a query are searched as text, never parsed (no error)."""
    if not mem.list(user_id="u", limit=1):
        seed(mem)
    mem.add(f"note mentioning {query}", user_id="u")
    assert isinstance(mem.search(query, user_id="u"), list)
    assert mem.recall(query, user_id="u").recall_id


@SETTINGS
@given(content=hostile_any(), metadata=hostile_metadata(), reason=hostile_any(), pick=st.booleans())
def test_update(mem: Memory, content: Any, metadata: Any, reason: Any, pick: bool) -> None:
    memory_id, _ = seed(mem) if not mem.list(user_id="u", limit=1) else (None, None)
    memory_id = memory_id or mem.list(user_id="u", limit=1)[0].id
    expect_clean(
        mem,
        lambda: mem.update(
            memory_id if pick else content,
            content,
            metadata=metadata if not pick else None,
            reason=reason,
        ),
    )


@SETTINGS
@given(memory_id=hostile_any(), user_id=hostile_any(), workspace=hostile_any())
def test_forget(mem: Memory, memory_id: Any, user_id: Any, workspace: Any) -> None:
    if not mem.list(user_id="u", limit=1):
        seed(mem)
    # Never pass a real scope here: this property is about refusals and no-ops.
    if user_id == "u":
        user_id = None
    expect_clean(mem, lambda: mem.forget(memory_id, user_id=user_id, workspace=workspace))


@SETTINGS
@given(response=hostile_any(), recall_id=hostile_any(), user_id=hostile_any(), alias=st.booleans())
def test_feedback(mem: Memory, response: Any, recall_id: Any, user_id: Any, alias: Any) -> None:
    if not mem.list(user_id="u", limit=1):
        seed(mem)
    if alias:
        call = lambda: mem.feedback(  # noqa: E731
            assistant_response=response, recall_id=recall_id, user_id=user_id
        )
    else:
        call = lambda: mem.feedback(response, recall_id=recall_id, user_id=user_id)  # noqa: E731
    out = expect_clean(mem, call)
    if out is not None:
        assert {"strengthened", "weakened"} <= set(out)


@SETTINGS
@given(
    input_context=hostile_any(),
    ai_output=hostile_any(),
    state=st.one_of(st.sampled_from(["corrected", "adopted", "rejected"]), hostile_any()),
    user_correction=hostile_any(),
    reason=hostile_any(),
    agent_id=hostile_any(),
    metadata=hostile_metadata(),
    timestamp=hostile_any(),
    source_event_id=hostile_any(),
)
def test_create_feedback_event(
    mem: Memory,
    input_context: Any,
    ai_output: Any,
    state: Any,
    user_correction: Any,
    reason: Any,
    agent_id: Any,
    metadata: Any,
    timestamp: Any,
    source_event_id: Any,
) -> None:
    expect_clean(
        mem,
        lambda: mem.create_feedback_event(
            input_context,
            ai_output,
            state,
            user_correction=user_correction,
            reason=reason,
            agent_id=agent_id,
            metadata=metadata,
            timestamp=timestamp,
            source_event_id=source_event_id,
        ),
    )


@SETTINGS
@given(
    verdict=st.one_of(st.sampled_from(["accepted", "rejected", "corrected"]), hostile_any()),
    correction=hostile_any(),
    context=hostile_any(),
    weight=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 20), hostile_any()
    ),
    recall_id=hostile_any(),
    bad_id=st.one_of(st.none(), hostile_any()),
)
def test_rate_memory(
    mem: Memory,
    verdict: Any,
    correction: Any,
    context: Any,
    weight: Any,
    recall_id: Any,
    bad_id: Any,
) -> None:
    if not mem.list(user_id="u", limit=1):
        seed(mem)
    memory_id = mem.list(user_id="u", limit=1)[0].id if bad_id is None else bad_id
    expect_clean(
        mem,
        lambda: mem.rate_memory(
            memory_id,
            verdict,
            correction,
            recall_id=recall_id,
            context=context,
            weight=weight,
        ),
    )


@SETTINGS
@given(limit=hostile_any(), offset=hostile_any(), user_id=hostile_any(), memory_id=hostile_any())
def test_reads(mem: Memory, limit: Any, offset: Any, user_id: Any, memory_id: Any) -> None:
    expect_clean(mem, lambda: mem.list(user_id=user_id, limit=limit, offset=offset))
    expect_clean(mem, lambda: mem.get(memory_id))
    expect_clean(mem, lambda: mem.history(memory_id))
    expect_clean(mem, lambda: mem.stats(user_id=user_id))


@pytest.mark.parametrize("text", ["\ud800", "tea\udfff", "\x00"])
def test_unencodable_text_is_a_validation_error(mem: Memory, text: str) -> None:
    with pytest.raises(ValidationError) as info:
        mem.add(text, user_id="u")
    assert info.value.field == "messages[0].content"


@pytest.mark.parametrize("depth", [65, 1_000, 100_000])
def test_deep_metadata_is_a_validation_error(mem: Memory, depth: int) -> None:
    """Nesting that would exhaust the recursion limit is refused up front, not a crash.

    (Kept out of the hypothesis strategies: its failure printer recurses on such values.)
    """
    before = checksum(mem)
    with pytest.raises(ValidationError) as info:
        mem.add("tea", user_id="u", metadata=deep(depth))
    assert info.value.field == "metadata"
    assert "nested" in info.value.problem
    assert checksum(mem) == before


def test_self_referencing_metadata_is_a_validation_error(mem: Memory) -> None:
    loop: dict[str, Any] = {}
    loop["me"] = loop
    with pytest.raises(ValidationError):
        mem.add("tea", user_id="u", metadata=loop)


@pytest.mark.parametrize("limit", ["", 0, False, -1, "5", 2.5])
def test_a_falsy_or_wrong_limit_is_refused_not_defaulted(mem: Memory, limit: object) -> None:
    # Found by schemathesis: `"limit": ""` fell back to the default through `limit or default`.
    mem.add("We deploy on Tuesdays.", user_id="u")
    for call in (mem.recall, mem.search):
        with pytest.raises(ValidationError) as info:
            call("deploy", user_id="u", limit=limit)  # type: ignore[operator]
        assert info.value.field == "limit"
