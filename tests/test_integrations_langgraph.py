"""engrammar.compat.langgraph.EngrammarStore against the real LangGraph: BaseStore's own methods
(sync and async) and a compiled StateGraph whose nodes use the injected store. No LLM."""

from __future__ import annotations

import asyncio
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    PutOp,
    SearchItem,
    SearchOp,
)

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.compat.langgraph import EngrammarStore, namespace_of, user_id_of


@pytest.fixture
def store(mem: Memory) -> EngrammarStore:
    return EngrammarStore(mem)


@pytest.mark.every_store
def test_put_get_replace_delete(store: EngrammarStore, mem: Memory) -> None:
    assert isinstance(store, BaseStore)
    ns = ("memories", "alice")
    assert store.get(ns, "food") is None
    store.put(ns, "food", {"text": "Alice likes spicy ramen.", "stars": 5})
    item = store.get(ns, "food")
    assert isinstance(item, Item)
    assert (item.namespace, item.key) == (ns, "food")
    assert item.value == {"text": "Alice likes spicy ramen.", "stars": 5}
    assert item.created_at.tzinfo is not None and item.created_at <= item.updated_at
    # What engrammar holds: one memory, scoped as the module's text says.
    (record,) = mem.list(user_id="memories.alice", agent_id="langgraph")
    assert record.session_id == "food" and record.content == "Alice likes spicy ramen."
    store.put(ns, "food", {"text": "Alice now prefers mild udon.", "stars": 4})
    replaced = store.get(ns, "food")
    assert replaced is not None and replaced.value["stars"] == 4
    assert replaced.created_at == item.created_at and replaced.updated_at >= item.updated_at
    (record,) = mem.list(user_id="memories.alice", agent_id="langgraph")
    assert record.content == "Alice now prefers mild udon."
    assert [h["reason"] for h in mem.history(record.id)][-1:] == ["put"]
    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    assert mem.list(user_id="memories.alice") == []
    store.delete(ns, "never-there")  # deleting a missing key is not an error, as in LangGraph


@pytest.mark.every_store
def test_search_recalls_lists_and_filters(store: EngrammarStore) -> None:
    alice, bob = ("memories", "alice"), ("memories", "bob")
    store.put(alice, "food", {"text": "Alice likes spicy ramen.", "kind": "food", "n": 1})
    store.put(alice, "pet", {"text": "Alice has a cat named Miso.", "kind": "pet", "n": 2})
    store.put(alice, "job", {"text": "Alice writes compilers.", "kind": "work", "n": 3})
    store.put(bob, "pet", {"text": "Bob has a dog named Rex.", "kind": "pet", "n": 4})
    store.put(("notes",), "hidden", {"text": "Not indexed cat note."}, index=False)

    found = store.search(alice, query="Alice's cat Miso")
    assert found and all(isinstance(i, SearchItem) for i in found)
    assert found[0].key == "pet" and found[0].namespace == alice
    assert found[0].score is not None and all(i.namespace == alice for i in found)

    both = store.search(("memories",), query="pet cat dog named", limit=10)
    assert {(i.namespace, i.key) for i in both} >= {(alice, "pet"), (bob, "pet")}
    scores = [i.score or 0.0 for i in both]
    assert scores == sorted(scores, reverse=True)

    assert store.search(("notes",), query="cat note") == []  # index=False: never ranked
    (hidden,) = store.search(("notes",))  # but listed
    assert hidden.value == {"text": "Not indexed cat note."}

    listed = store.search(alice)
    assert [i.key for i in listed] == ["food", "pet", "job"] and listed[0].score is None
    assert [i.key for i in store.search(alice, limit=1, offset=1)] == ["pet"]
    assert [i.key for i in store.search(("memories",), filter={"kind": "pet"})] == ["pet", "pet"]
    assert [i.key for i in store.search(alice, filter={"n": {"$gte": 2}})] == ["pet", "job"]
    assert [i.key for i in store.search(alice, filter={"kind": {"$ne": "pet"}})] == [
        "food",
        "job",
    ]
    ranked = store.search(alice, query="compilers", filter={"kind": "work"})
    assert [i.key for i in ranked] == ["job"]
    # A query search is a recorded recall: engrammar's feedback learns from the agent's reply.
    store.search(alice, query="What pet does Alice have?")
    learned = store.memory.feedback(
        "Alice has a cat named Miso.", user_id=user_id_of(alice), agent_id="langgraph"
    )
    assert learned["consumed"] is True and learned["recall_id"]


@pytest.mark.every_store
def test_list_namespaces(store: EngrammarStore) -> None:
    for ns in [("a", "x", "1"), ("a", "y"), ("b", "x"), ("b", "z", "1")]:
        store.put(ns, "k", {"text": f"item of {'/'.join(ns)}"})
    assert store.list_namespaces() == [("a", "x", "1"), ("a", "y"), ("b", "x"), ("b", "z", "1")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "x", "1"), ("a", "y")]
    assert store.list_namespaces(suffix=("1",)) == [("a", "x", "1"), ("b", "z", "1")]
    assert store.list_namespaces(prefix=("*", "x")) == [("a", "x", "1"), ("b", "x")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "y"), ("b", "x")]


def test_the_async_methods(tmp_path: Path) -> None:
    async def run() -> None:
        with Memory(Config(path=str(tmp_path)), embedder=HashEmbedder()) as mem:
            store = EngrammarStore(mem)
            ns = ("users", "carol")
            await asyncio.gather(
                *(store.aput(ns, f"k{i}", {"text": f"Carol fact number {i}."}) for i in range(8))
            )
            got = await store.aget(ns, "k3")
            assert got is not None and got.value == {"text": "Carol fact number 3."}
            hits = await store.asearch(ns, query="fact number 5", limit=3)
            assert hits[0].key == "k5"
            assert await store.alist_namespaces() == [ns]
            await store.adelete(ns, "k3")
            assert await store.aget(ns, "k3") is None
            assert len(await store.asearch(ns, limit=100)) == 7

    asyncio.run(run())


def test_bad_input_is_refused_by_name(tmp_path: Path) -> None:
    with Memory(Config(path=str(tmp_path)), embedder=HashEmbedder()) as mem:
        store = EngrammarStore(mem)
        with pytest.raises(InvalidNamespaceError):
            store.put(("a.b",), "k", {"text": "x"})
        with pytest.raises(InvalidNamespaceError):
            store.put(("langgraph",), "k", {"text": "x"})
        with pytest.raises(InvalidNamespaceError):
            store.put((), "k", {"text": "x"})
        # Through batch (BaseStore's methods check first; batch gets ops straight from code):
        # every op is checked before any runs, so the good put before the bad one is not kept.
        good = PutOp(("ok",), "k", {"text": "fine"})
        for bad, field in [
            (PutOp((), "k", {"text": "x"}), None),
            (PutOp(("langgraph",), "k", {"text": "x"}), None),
            (PutOp(("ok",), "", {"text": "x"}), "key"),
            (PutOp(("ok",), "k2", ["not", "a", "mapping"]), "value"),  # type: ignore[arg-type]
            (SearchOp(("ok",), limit=-1), "limit"),
            (PutOp(("ok",), "k3", {"when": object()}), "value"),
            (PutOp(("ok",), "k4", {"x": float("nan")}), "value"),
        ]:
            with pytest.raises((InvalidNamespaceError, ValidationError)) as refused:
                store.batch([good, bad])
            if field is not None:
                assert isinstance(refused.value, ValidationError)
                assert refused.value.field == field
            else:
                assert isinstance(refused.value, InvalidNamespaceError)
        assert mem.list(agent_id="langgraph") == []
        assert store.batch([good, GetOp(("ok",), "k")])[1] is not None
    assert namespace_of(user_id_of(("a", "b c", "d"))) == ("a", "b c", "d")


class State(TypedDict):
    user: str
    message: str
    answer: Annotated[list[str], operator.add]


def remember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    """A node that writes what the user told (not asked) into the injected store."""
    assert runtime.store is not None
    if state["message"].endswith("?"):
        return {}
    ns = ("memories", state["user"])
    count = len(runtime.store.search(ns, limit=100))
    runtime.store.put(ns, f"m{count}", {"text": state["message"]})
    return {}


def answer(state: State, *, store: BaseStore) -> dict[str, Any]:
    """A node that reads the memories back by meaning (the other way LangGraph injects it)."""
    hits = store.search(("memories", state["user"]), query=state["message"], limit=2)
    return {"answer": [hit.value["text"] for hit in hits]}


@pytest.mark.every_store
def test_a_langgraph_graph_keeps_its_long_term_memory_in_engrammar(mem: Memory) -> None:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("answer", answer)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "answer")
    builder.add_edge("answer", END)
    graph = builder.compile(store=EngrammarStore(mem))

    for message in ["I keep a cat named Miso.", "I drink green tea every morning."]:
        graph.invoke({"user": "dana", "message": message, "answer": []})
    out = graph.invoke({"user": "dana", "message": "What is my cat named?", "answer": []})
    assert out["answer"][0] == "I keep a cat named Miso."
    # Another user's thread sees nothing of dana's.
    other = graph.invoke({"user": "erin", "message": "What is my cat named?", "answer": []})
    assert other["answer"] == []
    # The memories are engrammar's: the CLI, REST and inspector see them under the mapping.
    contents = [r.content for r in mem.list(user_id="memories.dana", agent_id="langgraph")]
    assert contents == ["I keep a cat named Miso.", "I drink green tea every morning."]

    async def run_async() -> dict[str, Any]:
        return await graph.ainvoke({"user": "dana", "message": "green tea?", "answer": []})

    assert asyncio.run(run_async())["answer"][0] == "I drink green tea every morning."


def test_the_text_engrammar_embeds_comes_from_the_index_fields(tmp_path: Path) -> None:
    with Memory(Config(path=str(tmp_path)), embedder=HashEmbedder()) as mem:
        store = EngrammarStore(mem, fields=["summary"], agent_id="graph-a")
        ns = ("profiles",)
        value = {"summary": "Likes jazz.", "tags": ["music", "jazz"], "bio": {"city": "Oslo"}}
        store.put(ns, "default-fields", value)
        store.put(ns, "given-fields", value, index=["bio.city", "tags[*]"])
        store.put(ns, "one-string", {"a": "one", "b": 2})  # no "summary": the whole value
        store.put(ns, "two-strings", {"a": "one", "b": "two", "c": 3})
        contents = {r.session_id: r.content for r in mem.list(agent_id="graph-a")}
        assert contents == {
            "default-fields": "Likes jazz.",
            "given-fields": "Oslo\nmusic\njazz",
            "one-string": "one",
            "two-strings": "a: one\nb: two\nc: 3",
        }
        got = store.get(ns, "given-fields")
        assert got is not None and got.value == value
        # Another agent_id is another store over the same Memory: it sees none of these.
        assert EngrammarStore(mem, agent_id="graph-b").list_namespaces() == []
