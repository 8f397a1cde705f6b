"""What a new user meets first: a closed ``Memory`` says so; lists follow when things were
said, also for memories added (or imported) with an earlier time than ones already stored; an
agent on MCP reads the ids it is told to rate by."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import anyio
import pytest
from mcp import Client

from engrammar import Config, HashEmbedder, Memory, StoreError
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


@pytest.mark.processes
def test_a_refused_limit_reads_the_same_on_every_interface(mem: Memory) -> None:
    """Python, REST (body and query), MCP and the CLI word the same refusal the same way."""
    import httpx
    from click.testing import CliRunner

    from engrammar import ValidationError
    from engrammar.cli import cli
    from serving import serve_in_thread

    mem.add("hello", user_id="u")
    wanted = {
        0: "limit: must be >= 1, got 0",
        "x": "limit: must be an integer, got 'x'",
        2.5: "limit: must be an integer, got 2.5",
        5000: "limit: must be <= 1000, got 5000",
    }
    server = build_mcp_server(mem, Principal("default", fixed=False))

    async def by_mcp(bad: Any) -> str:
        async with Client(server) as client:
            r = await client.call_tool(
                "memory_search", {"query": "q", "user_id": "u", "limit": bad}
            )
            return str(r.content[0].text)

    for base in serve_in_thread(mem, auth=False):
        with httpx.Client(base_url=base, timeout=60) as http:
            for bad, message in wanted.items():
                with pytest.raises(ValidationError) as raised:
                    mem.search("q", user_id="u", limit=bad)
                assert str(raised.value) == message
                body = {"query": "q", "user_id": "u", "limit": bad}
                assert http.post("/v1/search", json=body).json()["error"]["message"] == message
                assert anyio.run(by_mcp, bad) == f"ValidationError: {message}"
            for bad in ("0", "x"):
                query = {"user_id": "u", "limit": bad}
                got = http.get("/v1/memories", params=query).json()["error"]["message"]
                assert got == wanted[0 if bad == "0" else "x"]
    runner = CliRunner()
    for bad in ("0", "x", "5000"):
        args = ["search", "q", "-u", "u", "--limit", bad, "--path", mem.config.path]
        out = runner.invoke(cli, args, env={"ENGRAMMAR_EMBEDDER": "hash"})
        problem = wanted[{"0": 0, "x": "x", "5000": 5000}[bad]].split(": ", 1)[1]
        assert out.exit_code == 2 and problem in out.output, out.output


@pytest.mark.processes
def test_serve_says_where_its_parts_are_and_home_and_icon_need_no_key(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys
    import time

    import httpx

    from engrammar.keys import create_api_key
    from serving import serve_in_thread

    with Memory(Config(path=str(tmp_path / "s")), embedder=HashEmbedder()) as memory:
        create_api_key(memory.store, "team")
        for base in serve_in_thread(memory):
            home = httpx.get(f"{base}/", timeout=60)
            assert home.status_code == 200
            assert {home.json()[k] for k in ("ui", "mcp", "rest")} == {"/ui/", "/mcp", "/v1"}
            assert httpx.get(f"{base}/favicon.ico", timeout=60).status_code == 204
            assert (
                httpx.get(f"{base}/v1/stats", timeout=60).status_code == 401
            )  # the API still needs one
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env["ENGRAMMAR_EMBEDDER"] = "hash"
    help_text = subprocess.run(
        [sys.executable, "-m", "engrammar", "serve", "--help"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert help_text.returncode == 0 and "Port to listen on" in help_text.stdout
    proc = subprocess.Popen(
        [sys.executable, "-m", "engrammar", "serve", "--port", "0", "--no-auth",
         "--path", str(tmp_path / "s")],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        said = ""
        deadline = time.monotonic() + 120
        while "inspector" not in said and time.monotonic() < deadline:
            said += proc.stderr.readline()
        line = next(x for x in said.splitlines() if "inspector" in x)
        assert re.search(r"http://127\.0\.0\.1:\d+/ui/", line), line
        assert "/mcp" in line and "/v1" in line
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.processes
def test_the_cli_refuses_a_correction_without_its_content_and_says_when_a_list_is_empty(
    mem: Memory,
) -> None:
    from click.testing import CliRunner

    from engrammar import ValidationError
    from engrammar.cli import cli

    (memory_id,) = mem.add("Deploys are on Tuesdays.", user_id="bob")
    with pytest.raises(ValidationError) as raised:
        mem.rate_memory(memory_id, "corrected", user_id="bob")
    assert str(raised.value) == "correction: is required when verdict is 'corrected'"
    assert mem.list_memory_ratings(user_id="bob") == []  # nothing stored
    runner = CliRunner()
    store = ["--path", mem.config.path]
    env = {"ENGRAMMAR_EMBEDDER": "hash"}
    refused = runner.invoke(
        cli, ["rate", "create", memory_id, "--verdict", "corrected", *store], env=env
    )
    assert refused.exit_code == 1
    empty = runner.invoke(cli, ["knowledge", "list", "-u", "bob", *store], env=env)
    assert empty.exit_code == 0 and empty.output.strip() == "No knowledge bases in this scope."
    events = runner.invoke(cli, ["event", "list", "-u", "bob", *store], env=env)
    assert events.output.strip() == "No feedback events in this scope."


@pytest.mark.processes
def test_python_m_engrammar_is_the_command() -> None:
    import subprocess
    import sys

    from engrammar import __version__

    done = subprocess.run(
        [sys.executable, "-m", "engrammar", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and __version__ in done.stdout


@pytest.mark.model
def test_formatted_names_what_a_note_refers_to_never_an_id(real_mem: Memory) -> None:
    real_mem.add(["I live in Paris.", "I moved to Berlin last month."], user_id="alice")
    both = real_mem.recall("Where do I live?", user_id="alice")
    assert any(m.note and re.search(r"[0-9a-f]{32}", m.note) for m in both.memories)
    assert not re.search(r"[0-9a-f]{32}", both.formatted), both.formatted
    assert '(replaces "I live in Paris.")' in both.formatted, both.formatted
    alone = real_mem.recall("Where do I live?", user_id="alice", limit=1)
    assert not re.search(r"[0-9a-f]{32}", alone.formatted), alone.formatted
    assert "a memory not shown" in alone.formatted, alone.formatted
