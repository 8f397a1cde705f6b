"""A new user's first hour: each defect they hit, held by a test.

The numbers in the test names are the items of the defect list. The CLI runs as a subprocess, as a
user runs it; the HTTP server is the real app on a loopback port.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.keys import create_api_key
from engrammar.recall.format import score_breakdown, score_parts
from serving import serve_in_thread


def run(
    store: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    base.update(ENGRAMMAR_PATH=str(store), ENGRAMMAR_EMBEDDER="hash", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "engrammar.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=base,
        timeout=120,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command (exit 1, nothing on stdout)."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


# -- the extras -----------------------------------------------------------------------------------
_BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
"""


def _without(blocked: set[str], code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where the ``blocked`` packages cannot be imported,
    as on a machine where the extra that brings them is not installed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(ENGRAMMAR_PATH=str(tmp_path / "store"), ENGRAMMAR_EMBEDDER="hash")
    script = _BLOCK.format(blocked=sorted(blocked)) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.processes
def test_02_core_works_without_the_server_extra_and_names_it_when_needed(
    tmp_path: Path,
) -> None:
    server_packages = {"mcp", "starlette", "uvicorn", "httpx", "anyio", "pydantic"}
    core = _without(
        server_packages,
        """
        from engrammar import Memory, Config
        from engrammar.interfaces.cli import main
        with Memory(Config()) as mem:
            mem.add("Core only.", user_id="u")
            assert mem.search("core", user_id="u")
        main(["list", "-u", "u"])
        """,
        tmp_path,
    )
    assert core.returncode == 0, core.stderr
    assert "Core only." in core.stdout
    for command in ("serve", "mcp"):
        cli = _without(
            server_packages,
            f"from engrammar.interfaces.cli import main\nmain([{command!r}])",
            tmp_path,
        )
        assert one_line_error(cli) == (
            f"error: engrammar {command} needs the 'server' extra (mcp is not installed): "
            "pip install 'engrammar[server]'"
        )
    library = _without({"starlette"}, "import engrammar.server", tmp_path)
    assert library.returncode == 1
    assert "MissingExtraError: engrammar.server needs the 'server' extra" in library.stderr
    assert "pip install 'engrammar[server]'" in library.stderr
    pg = _without(
        {"psycopg", "psycopg_pool"},
        "from engrammar import Memory, Config\nMemory(Config(store='postgresql://x/y'))",
        tmp_path,
    )
    assert "pip install 'engrammar[postgres]'" in pg.stderr


def test_02_the_extras_in_pyproject() -> None:
    import tomllib

    project = tomllib.loads(
        (Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    )["project"]
    core = " ".join(project["dependencies"])
    for heavy in ("mcp", "uvicorn", "starlette", "httpx", "psycopg", "pytest", "mypy"):
        assert heavy not in core
    extras = project["optional-dependencies"]
    assert {"mcp", "uvicorn", "starlette"} <= {
        d.split(">")[0].split("[")[0] for d in extras["server"]
    }
    (own,) = [d for d in extras["test"] if d.startswith("engrammar[")]
    assert {"server", "postgres", "langgraph"} <= set(own[len("engrammar[") : -1].split(","))
    assert "langgraph" in " ".join(extras["langgraph"]) and "langgraph" not in core


# -- serve says what it serves; a busy port is one line -------------------------------------------
@pytest.mark.processes
def test_04_10_serve_names_its_store_and_keys_and_a_busy_port_is_one_line(
    tmp_path: Path,
) -> None:
    store = tmp_path / "srv"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run(store, "serve", "--port", str(port))
        assert one_line_error(result) == (
            f"error: cannot listen on 127.0.0.1:{port}: the port is in use"
        )
    # The README's recipe: the key is created on the store that is then served.
    created = run(store, "keys", "create", "--workspace", "payments-api", "--json")
    assert created.returncode == 0, created.stderr
    key = json.loads(created.stdout)["key"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(ENGRAMMAR_PATH=str(store), ENGRAMMAR_EMBEDDER="hash")
    with subprocess.Popen(
        [sys.executable, "-m", "engrammar.cli", "serve", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        try:
            assert proc.stderr is not None
            said = [proc.stderr.readline(), proc.stderr.readline()]
            assert said[0].strip() == (
                f"engrammar: serving {(store / 'engrammar.db').resolve()} on "
                f"http://127.0.0.1:{port}"
            )
            assert said[1].strip() == "engrammar: 1 active API key (workspaces: payments-api)"
            for _ in range(1200):  # up to a minute on a loaded machine
                try:
                    r = httpx.post(
                        f"http://127.0.0.1:{port}/v1/memories",
                        headers={"Authorization": f"Bearer {key}"},
                        json={"content": "I write docs before code.", "user_id": "alice"},
                        timeout=60,
                    )
                    break
                except httpx.ConnectError:
                    anyio.run(anyio.sleep, 0.05)
            assert r.status_code == 201, r.text
        finally:
            proc.terminate()
            proc.wait(60)
    empty = tmp_path / "empty"
    Memory(Config(path=str(empty)), embedder=HashEmbedder()).close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env.update(ENGRAMMAR_PATH=str(empty))
    with subprocess.Popen(
        [sys.executable, "-m", "engrammar.cli", "serve", "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        try:
            assert proc.stderr is not None
            proc.stderr.readline()
            warning = proc.stderr.readline()
            assert "WARNING: this store holds no active API key" in warning
            assert f"engrammar keys create --workspace W --path {empty}" in warning
        finally:
            proc.terminate()
            proc.wait(60)


# -- import ---------------------------------------------------------------------------------------
@pytest.mark.processes
def test_05_06_07_import_errors_links_and_what_it_wrote(tmp_path: Path) -> None:
    store = tmp_path / "store"
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00bin")
    assert one_line_error(run(store, "import", str(binary))) == (
        "error: line 1: is not UTF-8 text (byte 0xff)"
    )
    source = tmp_path / "source"
    assert run(source, "add", "I go bouldering.", "The purple route.", "-u", "al").returncode == 0
    export = tmp_path / "x.jsonl"
    assert run(source, "export", str(export)).returncode == 0
    bare = tmp_path / "bare.jsonl"
    bare.write_text(
        "".join(line for line in export.read_text().splitlines(True) if '"edge"' not in line)
    )
    first = run(store, "import", str(bare))
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("imported 2 memories (0 already present), ")
    assert "built: the file had none" in first.stdout
    again = run(store, "import", str(bare))
    assert again.stdout.strip() == (
        "imported 0 memories (2 already present), 0 new links, 0 new feedback and recall records"
    )


# -- reads on a missing store ---------------------------------------------------------------------
@pytest.mark.processes
def test_13_reads_refuse_a_missing_store_and_an_empty_list_says_so(tmp_path: Path) -> None:
    typo = tmp_path / "newtypo"
    for args in (("list", "-u", "alice"), ("search", "x", "-u", "alice"), ("stats",)):
        error = one_line_error(run(typo, *args))
        assert error.startswith(f"error: no store at {typo} ")
    assert not typo.exists()
    store = tmp_path / "store"
    assert run(store, "add", "Something.", "-u", "bob").returncode == 0
    listed = run(store, "list", "-u", "alice")
    assert listed.returncode == 0 and listed.stdout.strip() == "No memories."


# -- configuration typos --------------------------------------------------------------------------
def test_15_a_misspelt_setting_is_a_validation_error_everywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValidationError, match="did you mean 'recall_limit'") as caught:
        Config(recal_limit=3)
    assert caught.value.field == "recal_limit"
    monkeypatch.setenv("ENGRAMMAR_RECAL_LIMIT", "5")
    with pytest.raises(ValidationError, match="did you mean ENGRAMMAR_RECALL_LIMIT"):
        Config()
    monkeypatch.delenv("ENGRAMMAR_RECAL_LIMIT")
    # Variables of the tools around engrammar, far from every setting, stay allowed.
    monkeypatch.setenv("ENGRAMMAR_CRASH_KILLS", "3")
    assert Config().recall_limit == 10


def test_15_the_readme_error_tree_is_the_errors_module() -> None:
    import engrammar.errors

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    for name in engrammar.errors.__all__:
        assert name in readme, f"README's error tree lacks {name}"


# -- what the CLI prints --------------------------------------------------------------------------
@pytest.mark.processes
def test_16_17_18_counts_recall_ids_and_forgetting_a_scope(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (one,) = run(store, "add", "I write docs before code.", "-u", "alice").stdout.split()
    run(store, "add", "Meetings are long.", "-u", "alice")
    recalled = run(store, "recall", "docs before code", "-u", "alice")
    assert recalled.returncode == 0
    first = recalled.stdout.splitlines()[0]
    assert first.startswith("1. ") and one in first and "I write docs" in first
    float(first.split()[1])  # the score
    assert recalled.stdout.strip().splitlines()[-1].startswith("recall_id: ")
    # A whole scope is deleted only after a yes (stdin here says nothing: aborted).
    refused = run(store, "forget", "-u", "alice", stdin="")
    assert refused.returncode == 1 and "Delete every memory of user_id=alice" in refused.stderr
    assert run(store, "forget", one).stdout.strip() == "deleted 1 memory"
    assert (
        run(store, "forget", "-u", "alice", stdin="y\n").stdout.strip().endswith("deleted 1 memory")
    )
    run(store, "add", "x", "y", "-u", "bob")
    assert run(store, "forget", "-u", "bob", "--yes").stdout.strip() == "deleted 2 memories"


@pytest.mark.processes
def test_16_migrate_prints_an_aligned_table(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run(store, "add", "One.", "-u", "a")
    result = run(store, "migrate", "--from", str(store), "--to", str(tmp_path / "copy"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header, rows = lines[1], [line for line in lines[2:] if line.strip()]
    assert header.split() == ["table", "rows", "sha256", "(first", "16)", "check"]
    assert len(rows) > 3 and all(line.endswith("  identical") for line in rows)
    # Every row's columns end where the header's do.
    for line in rows:
        assert line.index("identical") == header.index("check")
        assert line[: header.index("rows") + 4].rstrip()[-1].isdigit()


# -- MCP tool annotations -------------------------------------------------------------------------
@pytest.mark.processes
def test_08_18_19_mcp_errors_annotations_resources_and_prompts(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(ENGRAMMAR_PATH=str(tmp_path / "store"), ENGRAMMAR_EMBEDDER="hash")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engrammar.cli", "mcp"], env=env
    )
    seen: dict[str, Any] = {}
    errlog = (tmp_path / "err.txt").open("w")

    async def session() -> None:
        async with (
            stdio_client(params, errlog=errlog) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            await s.initialize()
            seen["tools"] = {t.name: t.annotations for t in (await s.list_tools()).tools}
            await s.call_tool("memory_add", {"content": "I like tea.", "user_id": "alice"})
            seen["templates"] = (await s.list_resource_templates()).resource_templates
            read = await s.read_resource("engrammar://default/users/alice/memories")
            seen["resource"] = read.contents[0]
            seen["prompts"] = (await s.list_prompts()).prompts
            got = await s.get_prompt("recall_answer_feedback", {"user_id": "alice"})
            seen["prompt"] = got.messages[0].content
            errors = []
            for tool, args in (
                ("memory_add", {"content": "", "user_id": "a"}),
                ("memory_add", {"content": "x", "user_id": "a", "kind": "gossip"}),
                ("memory_add", {"content": 5, "user_id": "a"}),
                ("memory_add", {"messages": [{"role": "bot", "content": "x"}], "user_id": "a"}),
                ("memory_recall", {"query": "x", "user_id": "a", "limit": 0}),
                ("memory_recall", {"user_id": "a"}),
            ):
                r = await s.call_tool(tool, args)
                assert r.is_error
                errors.append(r.content[0].text)
            seen["errors"] = errors

    try:
        anyio.run(session)
    finally:
        errlog.close()
    # Item 8: short, actionable, naming the field; no SDK prefix, no pydantic dump or URL.
    assert seen["errors"] == [
        "ValidationError: messages[0].content: must not be empty",
        "ValidationError: kind: must be one of message, fact, decision, preference, event; "
        "got 'gossip'",
        "ValidationError: content: must be a string, got 5",
        "ValidationError: messages[0].role: must be one of user, assistant, system, tool, "
        "developer, function; got 'bot'",
        "ValidationError: limit: must be >= 1, got 0",
        "ValidationError: query: is required",
    ]
    tools = seen["tools"]
    assert tools["memory_recall"].read_only_hint and tools["memory_search"].read_only_hint
    assert tools["memory_forget"].destructive_hint and tools["memory_forget"].idempotent_hint
    for name in ("memory_add", "memory_feedback", "memory_create_feedback_event"):
        assert tools[name].destructive_hint is False, name
    assert [t.uri_template for t in seen["templates"]] == [
        "engrammar://{workspace}/users/{user_id}/memories"
    ]
    assert "I like tea." in seen["resource"].text
    assert [p.name for p in seen["prompts"]] == ["recall_answer_feedback"]
    text = seen["prompt"].text
    assert "memory_recall" in text and "memory_feedback" in text and "alice" in text


# -- CORS -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    path = tmp_path_factory.mktemp("cors") / "store"
    config = Config(path=str(path), cors_origins=("http://localhost:5173",))
    memory = Memory(config, embedder=HashEmbedder())
    key = create_api_key(memory.store, "default")[0]
    for base in serve_in_thread(memory):
        yield base, key
    memory.close()


@pytest.mark.processes
def test_23_cors_preflight_is_answered_before_auth_for_allowed_origins_only(
    cors: tuple[str, str],
) -> None:
    base, key = cors
    preflight = {
        "Origin": "http://localhost:5173",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    with httpx.Client(base_url=base, timeout=30) as c:
        r = c.options("/v1/recall", headers=preflight)  # no key: a browser sends none here
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "http://localhost:5173"
        assert "POST" in r.headers["access-control-allow-methods"]
        assert "authorization" in r.headers["access-control-allow-headers"].lower()
        foreign = c.options("/v1/recall", headers={**preflight, "Origin": "https://evil.example"})
        assert foreign.status_code == 400
        assert "access-control-allow-origin" not in foreign.headers
        # The real request still needs its key, and carries the CORS header.
        r = c.post(
            "/v1/memories",
            headers={"Origin": "http://localhost:5173", "Authorization": f"Bearer {key}"},
            json={"content": "From a browser.", "user_id": "u"},
        )
        assert r.status_code == 201
        assert r.headers["access-control-allow-origin"] == "http://localhost:5173"
        r = c.post("/v1/search", headers={"Origin": "http://localhost:5173"}, json={})
        assert r.status_code == 401


def test_23_cors_origins_are_checked() -> None:
    with pytest.raises(ValidationError, match="cors_origins"):
        Config(cors_origins=("*",))
    with pytest.raises(ValidationError, match="cors_origins"):
        Config(cors_origins=("https://app.example/path",))
    assert Config(cors_origins="https://a.example, http://[::1]:8080").cors_origins == (
        "https://a.example",
        "http://[::1]:8080",
    )


# -- every printed breakdown adds up --------------------------------------------------------------
def _parts_add_up(score: float, components: dict[str, float]) -> None:
    parts = score_parts(score, components)
    total = components.get("ranking", score)
    assert abs(sum(v for _, v in parts) - round(total, 3)) < 1e-9, (parts, total)
    text = score_breakdown(score, components)
    assert text.startswith(f"{score:.3f} = ")
    if "query_match" in components:
        assert abs(components["ranking"] * components["query_match"] - score) < 1e-6


def test_09_score_breakdowns_add_up_before_and_after_feedback(mem: Memory) -> None:
    mem.add(
        [
            "I go bouldering at the climbing gym on weekends.",
            "My favourite route there is a purple overhang.",
            "I bake sourdough on Sundays.",
        ],
        user_id="alice",
        session_id="s1",
    )
    question = "What do you do at the climbing gym on weekends?"
    before = mem.recall(question, user_id="alice")
    stats = mem.feedback(response="You go bouldering on the purple overhang.", user_id="alice")
    assert stats["consumed"]
    after = mem.recall(question, user_id="alice")
    learned = [m for m in after.memories if m.components.get("learned")]
    assert learned, "the reply taught nothing: the test would not test the learned part"
    for item in (*before.memories, *after.memories):
        _parts_add_up(item.score, item.components)
    top = after.memories[0]
    parts = dict(score_parts(top.score, top.components))
    assert parts["learned"] != 0 and parts["graph"] >= 0
    for hit in mem.search(question, user_id="alice"):
        _parts_add_up(hit.score, hit.components)
        assert "graph" not in hit.components and "sequence" not in hit.components


# -- search scores are absolute -------------------------------------------------------------------
@pytest.mark.model
def test_14_search_scores_compare_across_queries_and_min_score_cuts(
    tmp_path: Path, minilm: Any
) -> None:
    with Memory(Config(path=str(tmp_path / "store")), embedder=minilm) as mem:
        mem.add(
            [
                "I always write documentation before code.",
                "Deploys happen on Wednesdays now.",
                "My cat is called Miso.",
            ],
            user_id="alice",
        )
        good = mem.search("How do you approach documentation and code?", user_id="alice")
        bad = mem.search("quantum chromodynamics lattice", user_id="alice")
        assert good[0].content == "I always write documentation before code."
        # An unrelated query matches nothing by its words or its meaning: no padding.
        assert bad == []
        assert good[0].score < 1.0
        floor = good[0].score / 2
        assert [
            h.content
            for h in mem.search("quantum chromodynamics lattice", user_id="alice", min_score=floor)
        ] == []
        kept = mem.search(
            "How do you approach documentation and code?", user_id="alice", min_score=floor
        )
        assert kept and all(h.score >= floor for h in kept)
    with pytest.raises(ValidationError, match="min_score"):
        Memory(Config(path=str(tmp_path / "s2")), embedder=HashEmbedder()).search(
            "x", user_id="a", min_score=-1
        )
