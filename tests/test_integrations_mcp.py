"""docs/interfaces.md's "Agent frameworks" section, run as written: each MCP configuration
(Claude Desktop, Claude Code, Cursor) is parsed from the doc and its command started with the
real MCP client; the OpenAI Agents SDK snippet runs as a script, and the SDK's own tool path
(the one a model's tool call takes) adds and recalls. The servers load the real model."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

pytestmark = [pytest.mark.processes, pytest.mark.model]

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "interfaces.md").read_text(encoding="utf-8")
SECTION = DOC[
    DOC.index("## Agent frameworks") : DOC.index("\n## ", DOC.index("## Agent frameworks") + 1)
]
COMMAND = "/path/to/.venv/bin/engrammar"
STORE = "/home/me/.engrammar"


def _engrammar() -> str:
    found = shutil.which("engrammar", path=str(Path(sys.executable).parent))
    assert found, "the engrammar command of this virtual environment"
    return found


def _blocks(heading: str, lang: str) -> list[str]:
    """The fenced ``lang`` blocks under ``### heading`` of the section."""
    start = SECTION.index(f"### {heading}\n")
    end = SECTION.find("\n### ", start + 1)
    part = SECTION[start : end if end > 0 else None]
    return re.findall(rf"```{lang}\n(.*?)```", part, re.S)


def _server_entry(heading: str) -> dict[str, Any]:
    (block,) = _blocks(heading, "json")
    entry: dict[str, Any] = json.loads(block)["mcpServers"]["engrammar"]
    assert entry["command"] == COMMAND and entry["args"][0] == "mcp"
    return entry


def _local(value: str, store: Path) -> str:
    return value.replace(COMMAND, _engrammar()).replace(STORE, str(store))


def _documented_tools() -> set[str]:
    table = DOC[DOC.index("### Tools") : DOC.index("## Agent frameworks")]
    return set(re.findall(r"^\| `(memory_\w+)` \|", table, re.M))


async def _list_and_call(params: StdioServerParameters, errlog: Any) -> str:
    """Start the server as a client would, list its tools, add a memory, recall it."""
    async with (
        stdio_client(params, errlog=errlog) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        info = await session.initialize()
        assert info.server_info.name == "engrammar"
        listed = {tool.name for tool in (await session.list_tools()).tools}
        assert listed == _documented_tools()
        added = await session.call_tool(
            "memory_add", {"content": "Alice's cat is called Miso.", "user_id": "alice"}
        )
        assert not added.is_error
        recalled = await session.call_tool("memory_recall", {"query": "cat", "user_id": "alice"})
        assert not recalled.is_error
        text: str = recalled.content[0].text  # type: ignore[union-attr]
        return text


def test_the_section_names_each_clients_file() -> None:
    for where in (
        "claude_desktop_config.json",
        "~/Library/Application Support/Claude/",
        "%APPDATA%\\Claude\\",
        "`.mcp.json`",
        "~/.claude.json",
        "`~/.cursor/mcp.json`",
        "`.cursor/mcp.json`",
    ):
        assert where in SECTION, where


@pytest.mark.parametrize("client", ["Claude Desktop", "Claude Code", "Cursor"])
def test_each_documented_configuration_starts_a_working_server(client: str, tmp_path: Path) -> None:
    entry = _server_entry(client)
    store = tmp_path / "store"
    # As the client starts it: the command and args as written, the client's own small
    # environment (none of the test's ENGRAMMAR_ settings), from some other folder.
    params = StdioServerParameters(
        command=_local(entry["command"], store),
        args=[_local(a, store) for a in entry["args"]],
        env=entry.get("env") or None,
        cwd=str(tmp_path),
    )
    with (tmp_path / "stderr.txt").open("w") as errlog:
        text = anyio.run(_list_and_call, params, errlog)
    assert "Miso" in text
    assert (store / "engrammar.db").exists()  # the store the configuration names


def test_the_claude_code_command_writes_what_the_mcp_json_shows() -> None:
    (block,) = _blocks("Claude Code", "sh")
    words = shlex.split(block, comments=True)
    assert words[:3] == ["claude", "mcp", "add"]
    assert words[words.index("--scope") + 1] == "project"
    name = words[words.index("--") - 1]
    entry = _server_entry("Claude Code")
    assert name == "engrammar"
    assert words[words.index("--") + 1 :] == [entry["command"], *entry["args"]]


def test_the_openai_agents_snippet_runs_as_written(tmp_path: Path) -> None:
    (block,) = _blocks("OpenAI Agents SDK", "python")
    script = tmp_path / "agent.py"
    script.write_text(_local(block, tmp_path / "store"), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert set(json.loads(lines[0].replace("'", '"'))) == _documented_tools()
    assert "Alice's cat is called Miso." in done.stdout
    assert lines[-1] == "assistant uses engrammar"


def test_an_agents_sdk_agent_calls_engrammar_through_its_own_tool_path(tmp_path: Path) -> None:
    """What a model's tool call runs: Agent.get_mcp_tools' FunctionTools, invoked as the
    runner invokes them (no model needed to choose them)."""
    from agents import Agent, FunctionTool, RunContextWrapper
    from agents.mcp import MCPServerStdio
    from agents.tool_context import ToolContext

    async def run() -> tuple[dict[str, Any], str]:
        async with MCPServerStdio(
            name="engrammar",
            params={"command": _engrammar(), "args": ["mcp", "--path", str(tmp_path / "s")]},
            client_session_timeout_seconds=60,
        ) as server:
            agent = Agent(name="assistant", mcp_servers=[server])
            tools = await agent.get_mcp_tools(RunContextWrapper(context=None))
            by_name = {t.name: t for t in tools if isinstance(t, FunctionTool)}
            assert set(by_name) == _documented_tools()

            async def invoke(name: str, arguments: dict[str, Any]) -> Any:
                raw = json.dumps(arguments)
                ctx = ToolContext(
                    context=None, tool_name=name, tool_call_id=f"call-{name}", tool_arguments=raw
                )
                return await by_name[name].on_invoke_tool(ctx, raw)

            added = await invoke("memory_add", {"content": "Bob drinks oolong.", "user_id": "bob"})
            recalled = await invoke("memory_recall", {"query": "tea", "user_id": "bob"})
            return added, str(recalled)

    added, recalled = anyio.run(run)
    assert "Stored 1 memory" in str(added)
    assert "Bob drinks oolong." in recalled
