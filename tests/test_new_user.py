"""What a new user meets first: a closed ``Memory`` says so; lists follow when things were
said, also for memories added (or imported) with an earlier time than ones already stored; an
agent on MCP reads the ids it is told to rate by."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from engrammar import Memory, StoreError
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
