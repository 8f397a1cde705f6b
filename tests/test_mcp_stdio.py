"""`engrammar mcp` as a subprocess, driven by the official MCP client over stdio."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from engrammar import Config, HashEmbedder, Memory

TOOLS = {"memory_add", "memory_recall", "memory_search", "memory_forget"}


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
            gone = await s.call_tool("memory_forget", {"memory_id": mid})
            assert gone.structured_content == {"deleted": 1}

    anyio.run(run)
    errlog.close()
    with Memory(Config(path=str(store)), embedder=HashEmbedder()) as mem:
        assert mem.stats(workspace="home")["memories"] == 0
        assert [m.content for m in mem.list(workspace="work")] == ["Other place."]
