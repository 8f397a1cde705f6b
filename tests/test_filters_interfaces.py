"""Recall's and search's filters on every interface, for real: REST over HTTP on loopback (its
bodies and answers held to the OpenAPI document), the MCP client over stdio against
`engrammar mcp`, and the `engrammar` command with --kind, --role, --since, --until, --meta and
--min-score."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from engrammar import Config, HashEmbedder, Memory
from engrammar.keys import create_api_key
from engrammar.server import openapi_document
from serving import serve_in_thread

pytestmark = pytest.mark.processes

QUERY = "billing invoice refund account"
DAY = 86_400.0
START = 1_709_251_200.0  # 2024-03-01T00:00:00Z


def _fill(memory: Memory) -> dict[str, Any]:
    """130 memories that match QUERY on every word, then three that match it on one word and
    carry topic "billing", one of them an assistant's fact said a day later: the three rank
    far below any top-k, beyond either search's candidate pool."""
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": f"billing invoice refund account number {i} was settled",
            "metadata": {"topic": "other"},
            "timestamp": START,
        }
        for i in range(130)
    ]
    messages += [
        {
            "role": "user",
            "content": "a short note on billing, item 1",
            "metadata": {"topic": "billing", "n": 1},
            "timestamp": START,
        },
        {
            "role": "user",
            "content": "a short note on billing, item 2",
            "metadata": {"topic": "billing", "n": 2},
            "timestamp": START,
        },
        {
            "role": "assistant",
            "kind": "fact",
            "content": "a short note on billing, item 3",
            "metadata": {"topic": "billing", "n": 3},
            "timestamp": START + DAY,
        },
    ]
    ids = memory.add(user_id="u", messages=messages).stored
    return {"billing": set(ids[-3:]), "fact": ids[-1], "n1": ids[-3]}


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    path = tmp_path_factory.mktemp("filters") / "store"
    with Memory(Config(path=str(path)), embedder=HashEmbedder()) as memory:
        yield path, _fill(memory)


# -- REST ------------------------------------------------------------------------------------
DOC = openapi_document()


def _valid(body: dict[str, Any], schema: str) -> None:
    jsonschema.validate(body, {"$ref": f"#/components/schemas/{schema}", **DOC})


def test_rest_recall_and_search_take_filters(tmp_path: Path) -> None:
    memory = Memory(Config(path=str(tmp_path / "store")), embedder=HashEmbedder())
    made = _fill(memory)
    key = create_api_key(memory.store, "default")[0]
    try:
        for base in serve_in_thread(memory):
            with httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60
            ) as c:
                _rest(c, made)
    finally:
        memory.close()


def _rest(c: httpx.Client, made: dict[str, Any]) -> None:
    only = {"metadata": {"topic": "billing"}}
    plain = c.post("/v1/search", json={"query": QUERY, "user_id": "u", "limit": 3})
    assert not {h["memory"]["id"] for h in plain.json()["results"]} & made["billing"]
    body = {"query": QUERY, "user_id": "u", "limit": 3, "filters": only}
    _valid(body, "SearchRequest")
    r = c.post("/v1/search", json=body)
    assert r.status_code == 200, r.text
    _valid(r.json(), "SearchResult")
    assert {h["memory"]["id"] for h in r.json()["results"]} == made["billing"]

    body = {
        "query": QUERY,
        "user_id": "u",
        "filters": {
            "metadata": {"n": {"in": [1, 3]}},
            "kind": ["message", "fact"],
            "role": "user",
            "since": "2024-03-01T00:00:00Z",
            "until": START + DAY,
        },
        "min_score": 0.0,
    }
    _valid(body, "RecallRequest")
    r = c.post("/v1/recall", json=body)
    assert r.status_code == 200, r.text
    _valid(r.json(), "RecallResult")
    assert [m["memory"]["id"] for m in r.json()["memories"]] == [made["n1"]]
    assert "absolute" in r.json()["memories"][0]["components"]
    r = c.post("/v1/recall", json={**body, "min_score": 10})
    assert r.status_code == 200 and r.json()["memories"] == []

    bad = {"query": QUERY, "user_id": "u", "filters": {"metadata": {"topic": {"in": "x"}}}}
    with pytest.raises(jsonschema.ValidationError):
        _valid(bad, "RecallRequest")  # the document refuses what the server refuses
    for path in ("/v1/recall", "/v1/search"):
        r = c.post(path, json=bad)
        assert r.status_code == 422
        assert r.json()["error"]["field"] == "filters.metadata.topic.in"
        assert "must be a list" in r.json()["error"]["message"]
        r = c.post(path, json={"query": QUERY, "user_id": "u", "filters": {"colour": "x"}})
        assert r.status_code == 422 and r.json()["error"]["field"] == "filters.colour"


# -- MCP over stdio --------------------------------------------------------------------------
def _env(store: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(ENGRAMMAR_PATH=str(store), ENGRAMMAR_EMBEDDER="hash")
    return env


def test_mcp_stdio_tools_take_filters(filled: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    store, made = filled
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engrammar.cli", "mcp"], env=_env(store)
    )
    errlog = (tmp_path / "stderr.txt").open("w")

    async def run() -> None:
        async with (
            stdio_client(params, errlog=errlog) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            for name in ("memory_recall", "memory_search"):
                assert "filters" in tools[name].input_schema["properties"]
            assert "min_score" in tools["memory_recall"].input_schema["properties"]
            found = await s.call_tool(
                "memory_search",
                {
                    "query": QUERY,
                    "user_id": "u",
                    "limit": 3,
                    "filters": {"metadata": {"topic": "billing"}},
                },
            )
            assert not found.is_error and found.structured_content is not None
            got = {h["memory"]["id"] for h in found.structured_content["results"]}
            assert got == made["billing"]
            recalled = await s.call_tool(
                "memory_recall",
                {
                    "query": QUERY,
                    "user_id": "u",
                    "filters": {"kind": "fact", "role": ["assistant"]},
                    "min_score": 0.0,
                },
            )
            assert not recalled.is_error and recalled.structured_content is not None
            memories = recalled.structured_content["memories"]
            assert [m["memory"]["id"] for m in memories] == [made["fact"]]
            bad = await s.call_tool(
                "memory_recall",
                {"query": QUERY, "user_id": "u", "filters": {"metadata": {"topic": {"in": 3}}}},
            )
            assert bad.is_error
            text = bad.content[0].text  # type: ignore[union-attr]
            assert "filters.metadata.topic.in: must be a list" in text

    try:
        anyio.run(run)
    finally:
        errlog.close()


# -- CLI -------------------------------------------------------------------------------------
def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engrammar.cli", *args],
        capture_output=True,
        text=True,
        env=_env(store),
        timeout=120,
    )


def _ids(store: Path, verb: str, *args: str) -> set[str]:
    done = _cli(store, verb, QUERY, "-u", "u", "--json", *args)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return {item["memory"]["id"] for item in data["results" if verb == "search" else "memories"]}


def test_cli_filter_options(filled: tuple[Path, dict[str, Any]]) -> None:
    store, made = filled
    for verb in ("search", "recall"):
        assert not _ids(store, verb, "-n", "3") & made["billing"]
        assert _ids(store, verb, "-n", "3", "--meta", "topic=billing") == made["billing"]
        assert _ids(store, verb, "--meta", "n:=1", "--meta", "n:=3") == {made["n1"], made["fact"]}
        assert _ids(store, verb, "--meta", "n=1") == set()  # text "1" is not the number 1
        assert _ids(store, verb, "--kind", "fact") == {made["fact"]}
        assert _ids(store, verb, "--role", "assistant", "--kind", "fact", "--kind", "event") == {
            made["fact"]
        }
        assert _ids(store, verb, "--since", str(START + DAY)) == {made["fact"]}
        day_one = ("--since", "2024-03-01", "--until", "2024-03-02", "--meta", "topic=billing")
        assert _ids(store, verb, *day_one) == made["billing"] - {made["fact"]}
        assert _ids(store, verb, "--meta", "topic=billing", "--min-score", "10") == set()
    bad = _cli(store, "recall", QUERY, "-u", "u", "--meta", "topic")
    assert bad.returncode == 2 and "key=value" in bad.stderr
    bad = _cli(store, "search", QUERY, "-u", "u", "--meta", "n:=one")
    assert bad.returncode == 2 and "not JSON" in bad.stderr
    bad = _cli(store, "search", QUERY, "-u", "u", "--since", "soon")
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        "error: filters.since: is not an ISO-8601 date/time: 'soon'"
    ]
    assert _cli(store, "search", QUERY, "--kind", "gossip").returncode == 2
