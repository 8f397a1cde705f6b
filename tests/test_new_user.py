"""What a new user meets first: a closed ``Memory`` says so; lists follow when things were
said, also for memories added (or imported) with an earlier time than ones already stored; an
agent on MCP reads the ids it is told to rate by."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import anyio
import pytest
from mcp import Client

from engrammar import Memory, StoreError
from engrammar.recall.format import pair_choice
from engrammar.server import Principal, build_mcp_server


@pytest.mark.every_store
def test_a_closed_memory_says_it_is_closed(mem: Memory) -> None:
    mem.add("I write docs before code.", user_id="alice")
    mem.close()
    calls = [
        lambda: mem.recall("docs", user_id="alice"),
        lambda: mem.search("docs", user_id="alice"),
        lambda: mem.add("More.", user_id="alice"),
        lambda: mem.list(user_id="alice"),
        lambda: mem.stats(),
        lambda: mem.feedback("You write docs first.", user_id="alice"),
        lambda: mem.rate_memory("0" * 32, "accepted"),
        lambda: mem.list_knowledge(user_id="alice"),
    ]
    for call in calls:
        with pytest.raises(StoreError) as raised:
            call()
        assert str(raised.value).startswith("Memory is closed"), raised.value
    mem.close()  # closing twice is harmless


@pytest.mark.every_store
def test_list_and_newest_follow_when_each_memory_was_said(mem: Memory) -> None:
    mem.add("Said on day three.", user_id="alice", timestamp=1_700_200_000)
    mem.add("Said on day one.", user_id="alice", timestamp=1_700_000_000)
    mem.add(
        [
            {"role": "user", "content": "Said on day two.", "timestamp": 1_700_100_000},
            {"role": "user", "content": "Also said on day two.", "timestamp": 1_700_100_000},
        ],
        user_id="alice",
    )
    oldest_first = [m.content for m in mem.list(user_id="alice")]
    assert oldest_first == [
        "Said on day one.",
        "Said on day two.",
        "Also said on day two.",  # the same time: in the order stored
        "Said on day three.",
    ]
    assert [m.content for m in mem.list(user_id="alice", limit=2, offset=1)] == oldest_first[1:3]
    newest = mem.find_memories(user_id="alice", order="newest")["memories"]
    assert [m["content"] for m in newest] == oldest_first[::-1]
    oldest = mem.find_memories(user_id="alice")["memories"]
    assert [m["content"] for m in oldest] == oldest_first


def test_mcp_recall_text_names_each_memory_id_and_reads_are_read_only(mem: Memory) -> None:
    ids = mem.add(["Alice's cat is called Miso.", "Alice feeds the cat at seven."], user_id="alice")
    mem.add_knowledge("care", text="Cats need fresh water every day.", user_id="alice")
    server = build_mcp_server(mem, Principal("default", fixed=False))

    async def run() -> tuple[Any, Any]:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            recalled = await client.call_tool(
                "memory_recall", {"query": "Alice's cat", "user_id": "alice"}
            )
            return tools, recalled

    tools, recalled = anyio.run(run)
    text = recalled.content[0].text
    returned = [m["memory"]["id"] for m in recalled.structured_content["memories"]]
    assert set(returned) == set(ids)
    for memory_id in returned:
        assert memory_id in text
    assert recalled.structured_content["recall_id"] in text
    read_only = {
        name
        for name, tool in tools.items()
        if tool.annotations is not None and tool.annotations.read_only_hint
    }
    assert read_only == {"memory_recall", "memory_search", "memory_search_knowledge"}


@pytest.mark.model
def test_a_preference_pair_reads_as_its_choice_and_only_where_it_bears(real_mem: Memory) -> None:
    real_mem.add(
        ["I write docs before code.", "My cat is called Miso.", "I prefer short meetings."],
        user_id="alice",
    )
    real_mem.create_preference_pair(
        "Summarise the incident", "Three bullets", "An essay", user_id="alice"
    )
    choice = 'For "Summarise the incident": prefer "Three bullets" over "An essay"'
    for query in ("Summarise the outage for me", "Summarise the incident"):
        formatted = real_mem.recall(query, user_id="alice").formatted
        assert choice in formatted, (query, formatted)
        assert "assistant: Three bullets" not in formatted
    for query in ("What is my cat called?", "How do you approach projects?"):
        result = real_mem.recall(query, user_id="alice")
        assert "Three bullets" not in result.formatted, (query, result.formatted)
        assert all(m.memory.content != "Three bullets" for m in result.memories)
        assert all(p.memory.content != "Three bullets" for p in result.preferences)


def test_a_pair_stored_without_its_rejected_output_reads_as_the_choice_alone(mem: Memory) -> None:
    pair = mem.create_preference_pair("Name a branch", "feature/x", "my-branch", user_id="bob")
    assert pair.memory_id is not None
    stored = mem.get(pair.memory_id)
    assert pair_choice(stored) == 'For "Name a branch": prefer "feature/x" over "my-branch"'
    older = replace(stored, metadata={"pair_id": pair.id, "context": "Name a branch"})
    assert pair_choice(older) == 'For "Name a branch": prefer "feature/x"'
    assert pair_choice(mem.get(mem.add("Plain.", user_id="bob")[0])) is None
