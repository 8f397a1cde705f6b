"""The ``engrammar`` command run as a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.keys import verify_api_key

pytestmark = pytest.mark.processes


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


def ok(store: Path, *args: str, stdin: str | None = None) -> str:
    result = run(store, *args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout


def js(store: Path, *args: str, stdin: str | None = None) -> Any:
    return json.loads(ok(store, *args, "--json", stdin=stdin))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def test_tour_add_recall_search_get_list_history_stats_forget(store: Path) -> None:
    (tea,) = ok(store, "add", "I prefer green tea to coffee.", "-u", "alice").split()
    added = js(store, "add", "Ship on Fridays.", "Never ship on Fridays.", "-u", "bob")
    assert len(added["ids"]) == 2 and added["workspace"] == "default"
    piped = js(
        store,
        "add",
        "-",
        "-u",
        "alice",
        "--kind",
        "fact",
        "--metadata",
        '{"src": "pipe"}',
        stdin="Piped in.\n",
    )
    piped_record = js(store, "get", piped["ids"][0])
    assert piped_record["metadata"] == {"src": "pipe"} and piped_record["content"] == "Piped in."

    text = ok(store, "recall", "what tea does alice drink", "-u", "alice")
    assert "green tea" in text and "recall_id: " in text
    recalled = js(store, "recall", "green tea", "-u", "alice", "--limit", "1")
    assert [m["memory"]["id"] for m in recalled["memories"]] == [tea]
    found = js(store, "search", "green tea", "-u", "alice")
    assert found["results"][0]["memory"]["id"] == tea
    assert tea in ok(store, "search", "green tea", "-u", "alice")

    record = js(store, "get", tea)
    assert record["content"] == "I prefer green tea to coffee." and record["user_id"] == "alice"
    assert "content: I prefer green tea" in ok(store, "get", tea)
    listed = js(store, "list", "-u", "bob")["memories"]
    assert [m["content"] for m in listed] == ["Ship on Fridays.", "Never ship on Fridays."]
    assert [h["op"] for h in js(store, "history", tea)["history"]] == ["add"]
    assert js(store, "stats")["memories"] == 4
    assert js(store, "forget", tea) == {"deleted": 1}
    assert js(store, "forget", "-u", "bob", "--yes") == {"deleted": 2}
    assert js(store, "stats")["memories"] == 1


def test_exit_codes_and_one_line_errors(store: Path) -> None:
    ok(store, "add", "Something to have a store.", "-u", "zed")
    missing = run(store, "get", "no-such-id")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip().splitlines() == [
        "error: memory 'no-such-id' not found in workspace 'default'"
    ]
    bad = run(store, "search", "   ", "-u", "alice")
    assert bad.returncode == 1 and bad.stderr.startswith("error: query:")
    assert len(bad.stderr.strip().splitlines()) == 1
    assert run(store, "add").returncode == 2  # missing argument
    assert run(store, "recall", "x", "--limit", "0").returncode == 2
    assert run(store, "add", "x", "-u", "a", "--metadata", "[1]").returncode == 2
    assert run(store, "frobnicate").returncode == 2
    assert run(store, "serve", "--no-auth", "--host", "0.0.0.0").returncode == 2
    wrong = run(store, "stats", env={"ENGRAMMAR_RECALL_LIMIT": "zero"})
    assert wrong.returncode == 1 and "recall_limit" in wrong.stderr
    assert run(store, "--help").returncode == 0


def test_every_command_has_help_that_explains_it(store: Path) -> None:
    commands = [
        "add",
        "recall",
        "search",
        "forget",
        "get",
        "list",
        "history",
        "stats",
        "export",
        "import",
        "keys",
        "serve",
        "mcp",
    ]
    top = ok(store, "--help")
    for name in commands:
        assert name in top
        page = ok(store, *name.split(), "--help")
        assert "Usage: engrammar" in page
        if name not in ("keys",):
            assert "--json" in page or name in ("serve", "mcp")


def test_path_option_and_env_choose_the_store(tmp_path: Path, store: Path) -> None:
    other = tmp_path / "other"
    ok(store, "add", "in the env store", "-u", "u")
    ok(store, "add", "in the option store", "-u", "u", "--path", str(other))
    assert js(store, "stats")["memories"] == 1
    assert js(store, "stats", "--path", str(other))["memories"] == 1
    assert (
        js(store, "list", "--path", str(other))["memories"][0]["content"] == "in the option store"
    )


def test_export_import_round_trip(tmp_path: Path, store: Path) -> None:
    ok(store, "add", "one", "two", "-u", "alice")
    ok(store, "add", "three", "-u", "bob", "-w", "elsewhere")
    out = tmp_path / "dump.jsonl"
    assert js(store, "export", str(out)) == {"memories": 2, "file": str(out)}
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "engrammar-export" and len(lines) >= 3
    assert ok(store, "export", "-u", "alice").count('"type": "memory"') == 2
    copy = tmp_path / "copy"
    imported = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "engrammar.cli",
                "import",
                str(out),
                "--json",
                "--path",
                str(copy),
                "--embedder",
                "hash",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
    )
    assert imported == {
        "memories": 2,
        "duplicates": 0,
        "edges": imported["edges"],
        "records": imported["records"],
        "knowledge_bases": 0,
        "knowledge_chunks": 0,
        "edges_built": 0,
        "skipped": [],
    }
    assert js(copy, "stats")["memories"] == 2
    again = js(copy, "import", str(out), "-w", "moved")
    assert again["memories"] == 2
    assert {m["content"] for m in js(copy, "list", "-w", "moved")["memories"]} == {"one", "two"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "memory", "workspace": "w", "id": "x", "content": 5}\n')
    failed = run(copy, "import", str(bad))
    assert failed.returncode == 1 and "line 1: content" in failed.stderr
    assert js(copy, "stats", "-w", "w")["memories"] == 0


def test_keys_create_list_revoke(store: Path) -> None:
    created = js(store, "keys", "create", "--workspace", "acme", "--user", "alice", "--name", "ci")
    assert created["key"].startswith("egr_") and created["workspace"] == "acme"
    plain = ok(store, "keys", "create", "-w", "beta").splitlines()[0]
    with Memory(Config(path=str(store)), embedder=HashEmbedder()) as mem:
        assert verify_api_key(mem.store, created["key"]).user_id == "alice"
        assert verify_api_key(mem.store, plain).workspace == "beta"
    listed = js(store, "keys", "list")["keys"]
    assert {k["workspace"] for k in listed} == {"acme", "beta"}
    assert all("key" not in k and "key_hash" not in k for k in listed)
    assert created["key"] not in ok(store, "keys", "list")
    assert js(store, "keys", "revoke", created["key_id"])["was_active"] is True
    assert "REVOKED" in ok(store, "keys", "list", "-w", "acme")
    assert run(store, "keys", "revoke", "nope").returncode == 1
    assert run(store, "keys", "create").returncode == 2


def _serve(store: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(ENGRAMMAR_PATH=str(store), ENGRAMMAR_EMBEDDER="hash")
    proc = subprocess.Popen(
        [sys.executable, "-m", "engrammar.cli", "serve", "--port", str(port), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, f"http://127.0.0.1:{port}"


def _wait(base: str, proc: subprocess.Popen[str]) -> None:
    import time

    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            if httpx.get(f"{base}/healthz", timeout=60).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("engrammar serve did not start")


def test_serve_subprocess_with_keys_and_without(store: Path) -> None:
    import httpx

    key = js(store, "keys", "create", "-w", "default")["key"]
    proc, base = _serve(store)
    try:
        _wait(base, proc)
        assert httpx.get(f"{base}/v1/stats", timeout=60).status_code == 401
        r = httpx.post(
            f"{base}/v1/memories",
            json={"content": "Served.", "user_id": "u"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        assert r.status_code == 201
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert js(store, "list", "-u", "u")["memories"][0]["content"] == "Served."
    proc, base = _serve(store, "--no-auth")
    try:
        _wait(base, proc)
        assert httpx.get(f"{base}/v1/stats", timeout=60).json()["memories"] == 1
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_feedback_and_explain(store: Path) -> None:
    (docs,) = ok(store, "add", "I always write documentation before code.", "-u", "alice").split()
    ok(store, "add", "Docs first, then tests.", "-u", "alice")
    recall_id = js(store, "recall", "documentation first", "-u", "alice")["recall_id"]
    said = ok(store, "feedback", "You write documentation first.", "-u", "alice")
    assert said.startswith(f"recall {recall_id} ('documentation first'): ")  # which one it took
    again = run(store, "feedback", "again", "-u", "alice", "--recall-id", recall_id)
    assert again.returncode == 1 and "already received feedback" in again.stderr
    # Without --recall-id the newest recall, already answered, is refused too: the reply does
    # not go to an earlier recall instead.
    ok(store, "recall", "tests", "-u", "alice")
    recall_id = js(store, "recall", "documentation first", "-u", "alice")["recall_id"]
    fb = js(store, "feedback", "You write documentation first.", "-u", "alice")
    assert fb["recall_id"] == recall_id and fb["consumed"] is True
    refused = run(store, "feedback", "You write documentation first.", "-u", "alice", "--json")
    assert refused.returncode == 1 and recall_id in refused.stderr
    assert json.loads(refused.stdout)["consumed"] is False
    why = js(store, "explain", "documentation first", docs, "-u", "alice")
    assert why["memory_id"] == docs and "final" in why["components"]
    assert "final" in ok(store, "explain", "documentation first", docs, "-u", "alice")
    missing = run(store, "explain", "documentation", "nope", "-u", "alice")
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_decision_and_feedback_records(store: Path) -> None:
    create = [
        "event",
        "create",
        "--agent-id",
        "codex",
        "-w",
        "payments-api",
        "--input-context",
        "Add retries to the webhook sender",
        "--ai-output",
        "Retry every 30 seconds until it succeeds.",
        "--user-reaction",
        "Changed the retry policy",
        "--user-correction",
        "Use exponential backoff, at most 5 attempts. Don't retry 4xx.",
        "--corrected-output",
        "Exponential backoff, max 5 attempts, skip 4xx.",
        "--state",
        "corrected",
        "--reason",
        "A 4xx means the request is wrong; sending it again won't fix it.",
        "--source-event-id",
        "evt-1",
    ]
    event = js(store, *create)
    assert event["state"] == "corrected" and event["workspace"] == "payments-api"
    again = js(store, *create)
    assert again["id"] == event["id"]
    listed = js(store, "event", "list", "-w", "payments-api", "-a", "codex")["feedback_events"]
    assert [e["id"] for e in listed] == [event["id"]]
    assert "corrected" in ok(store, "event", "list", "-w", "payments-api", "-a", "codex")
    assert js(store, "event", "get", event["id"], "-w", "payments-api")["id"] == event["id"]

    review = js(
        store,
        "review",
        "create",
        event["id"],
        "--final-decision",
        "adopted",
        "--outcome",
        "failure",
        "--confidence",
        "0.8",
        "-a",
        "codex",
        "-w",
        "payments-api",
    )
    assert review["reversed"] is True and review["event_id"] == event["id"]
    assert js(store, "review", "list", "-w", "payments-api", "-a", "codex")["decision_reviews"]
    assert run(store, "review", "list", "-s", "x").returncode == 2

    pair = js(
        store,
        "pair",
        "create",
        "--context",
        "Commit message style",
        "--accepted-output",
        "feat: add retries",
        "--rejected-output",
        "added stuff",
        "--weight",
        "2",
        "-u",
        "alice",
    )
    assert pair["weight"] == 2.0
    assert js(store, "pair", "get", pair["id"])["accepted_output"] == "feat: add retries"

    logged = js(store, "log", "create", "checkpoint", "--payload", '{"step": 3}', "-a", "codex")
    assert logged["payload"] == {"step": 3}
    assert "checkpoint" in ok(store, "log", "list", "-a", "codex")

    (mid,) = ok(store, "add", "The deploy window is Friday.", "-u", "alice").split()
    rating = js(
        store,
        "rate",
        "create",
        mid,
        "--verdict",
        "corrected",
        "--correction",
        "The deploy window is Wednesday.",
        "-u",
        "alice",
    )
    assert rating["memory_id"] == mid and rating["correction_memory_id"]
    assert js(store, "rate", "list", "-u", "alice")["memory_ratings"][0]["id"] == rating["id"]
    bad = run(store, "rate", "create", mid, "--verdict", "maybe")
    assert bad.returncode == 2
    missing = run(store, "rate", "create", "nope", "--verdict", "accepted")
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_recall_shows_knowledge_passages_and_says_when_nothing_matched(store: Path) -> None:
    ok(store, "add", "The garden gate squeaks in the wind.", "-u", "bob")
    empty = ok(store, "recall", "What is the refund window?", "-u", "alice")
    assert "No memories matched." in empty
    assert js(store, "recall", "What is the refund window?", "-u", "alice")["formatted"] == (
        "No memories matched."
    )
    ok(store, "knowledge", "add", "policies", "-u", "alice",
       "--text", "Refunds are accepted within a thirty day refund window of purchase.")  # fmt: skip
    passage = "Refunds are accepted within a thirty day refund window of purchase."
    out = ok(store, "recall", passage, "-u", "alice")  # the test embedder: the same words
    assert "knowledge " in out and "thirty day refund window" in out
    assert "No memories matched." not in out
