"""`engrammar mcp` as a subprocess, driven by the official MCP client over stdio."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from engrammar import Config, HashEmbedder, Memory

pytestmark = pytest.mark.processes

TOOLS = {
    "memory_add",
    "memory_recall",
    "memory_search",
    "memory_forget",
    "memory_create_feedback_event",
    "memory_create_decision_review",
    "memory_create_preference_pair",
    "memory_log_event",
    "memory_feedback",
    "memory_add_knowledge",
    "memory_search_knowledge",
    "memory_delete_knowledge",
    "memory_undo",
}


def _params(store: Path, *extra: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(ENGRAMMAR_PATH=str(store), ENGRAMMAR_EMBEDDER="hash")
    return StdioServerParameters(
        command=sys.executable, args=["-m", "engrammar.cli", "mcp", *extra], env=env
    )


def test_stdio_server_serves_every_tool(tmp_path: Path) -> None:
    store = tmp_path / "store"
    errlog = (tmp_path / "stderr.txt").open("w")

    async def run() -> None:
        async with (
            stdio_client(_params(store, "--workspace", "home"), errlog=errlog) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            info = await s.initialize()
            assert info.server_info.name == "engrammar"
            assert info.instructions and "memory_recall" in info.instructions
            listed = await s.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            added = await s.call_tool(
                "memory_add", {"content": "My cat is called Miso.", "user_id": "alice"}
            )
            assert not added.is_error and added.structured_content is not None
            assert added.structured_content["workspace"] == "home"
            (mid,) = added.structured_content["ids"]
            elsewhere = await s.call_tool(
                "memory_add", {"content": "Other place.", "user_id": "alice", "workspace": "work"}
            )
            assert elsewhere.structured_content is not None
            assert elsewhere.structured_content["workspace"] == "work"
            recalled = await s.call_tool("memory_recall", {"query": "cat name", "user_id": "alice"})
            assert recalled.structured_content is not None
            assert [m["memory"]["id"] for m in recalled.structured_content["memories"]] == [mid]
            assert "Miso" in recalled.content[0].text  # type: ignore[union-attr]
            found = await s.call_tool("memory_search", {"query": "Miso", "user_id": "alice"})
            assert found.structured_content is not None
            assert found.structured_content["results"][0]["memory"]["id"] == mid
            missing = await s.call_tool("memory_forget", {"memory_id": "no-such-id"})
            assert missing.is_error
            assert "NotFoundError" in missing.content[0].text  # type: ignore[union-attr]
            bad = await s.call_tool("memory_recall", {"query": "   ", "user_id": "alice"})
            assert bad.is_error and "query" in bad.content[0].text  # type: ignore[union-attr]
            rated = await s.call_tool(
                "memory_feedback",
                {
                    "memory_id": mid,
                    "verdict": "accepted",
                    "recall_id": recalled.structured_content["recall_id"],
                    "response": "Your cat is called Miso.",
                    "user_id": "alice",
                },
            )
            assert rated.structured_content is not None
            assert rated.structured_content["rating"]["context"] == "cat name"
            alignment = rated.structured_content["alignment"]
            assert alignment["recall_id"] == recalled.structured_content["recall_id"]
            assert alignment["consumed"] is True
            neither = await s.call_tool("memory_feedback", {"user_id": "alice"})
            assert neither.is_error and "memory_id" in neither.content[0].text  # type: ignore[union-attr]
            event = await s.call_tool(
                "memory_create_feedback_event",
                {
                    "input_context": "Name the cat in the story",
                    "ai_output": "Whiskers",
                    "state": "corrected",
                    "corrected_output": "Miso",
                    "user_id": "alice",
                    "source_event_id": "story-1",
                },
            )
            assert event.structured_content is not None
            assert event.structured_content["workspace"] == "home"
            review = await s.call_tool(
                "memory_create_decision_review",
                {
                    "event_id": event.structured_content["id"],
                    "final_decision": "corrected",
                    "outcome": "success",
                    "user_id": "alice",
                },
            )
            assert review.structured_content is not None
            assert review.structured_content["reversed"] is False
            pair = await s.call_tool(
                "memory_create_preference_pair",
                {
                    "context": "Cat names",
                    "accepted_output": "Miso",
                    "rejected_output": "Whiskers",
                    "user_id": "alice",
                },
            )
            assert pair.structured_content is not None and pair.structured_content["memory_id"]
            logged = await s.call_tool(
                "memory_log_event", {"kind": "checkpoint", "user_id": "alice"}
            )
            assert logged.structured_content is not None
            assert logged.structured_content["kind"] == "checkpoint"
            undone = await s.call_tool(
                "memory_undo", {"record_id": logged.structured_content["id"]}
            )
            assert undone.structured_content is not None
            assert undone.structured_content["kind"] == "logged_event"
            again = await s.call_tool("memory_undo", {"record_id": logged.structured_content["id"]})
            assert again.is_error and "no feedback record" in again.content[0].text  # type: ignore[union-attr]
            gone = await s.call_tool("memory_forget", {"memory_id": mid})
            assert gone.structured_content == {"deleted": 1}
            kb = await s.call_tool(
                "memory_add_knowledge",
                {"name": "FAQ", "text": "Free shipping on orders over $50.", "user_id": "alice"},
            )
            assert kb.structured_content is not None and kb.structured_content["chunk_count"] == 1
            kb_id = kb.structured_content["id"]
            hits = await s.call_tool(
                "memory_search_knowledge", {"query": "free shipping", "user_id": "alice"}
            )
            assert hits.structured_content is not None
            assert hits.structured_content["results"][0]["kb_id"] == kb_id
            dropped = await s.call_tool(
                "memory_delete_knowledge", {"kb_id": kb_id, "user_id": "alice"}
            )
            assert dropped.structured_content == {"kb_id": kb_id, "deleted": 1}

    anyio.run(run)
    errlog.close()
    with Memory(Config(path=str(store)), embedder=HashEmbedder()) as mem:
        assert [e.state for e in mem.list_feedback_events(workspace="home", user_id="alice")] == [
            "corrected"
        ]
        assert [p.accepted_output for p in mem.list_preference_pairs(workspace="home")] == ["Miso"]
        assert [m.content for m in mem.list(workspace="work")] == ["Other place."]
