"""What `engrammar serve` answers at the edges of access, over real HTTP on loopback: how JSON
answers are marked, bodies that cannot be read, and MemWire's routes beside /v1."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.keys import create_api_key
from serving import serve_in_thread

pytestmark = pytest.mark.processes


@pytest.fixture(params=[False, True], ids=["v1", "memwire"])
def served(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[tuple[str, str, bool]]:
    memory = Memory(
        Config(path=f"{tmp_path}/store", max_request_bytes=200_000), embedder=HashEmbedder()
    )
    key = create_api_key(memory.store, "acme")[0]
    for base in serve_in_thread(memory, memwire_compat=request.param):
        yield base, key, request.param
    memory.close()


def test_every_json_answer_is_nosniff_and_no_store(served: tuple[str, str, bool]) -> None:
    base, key, memwire = served
    search = "/v1/memories/search" if memwire else "/v1/search"
    with httpx.Client(base_url=base, timeout=30) as c:
        auth = {"Authorization": f"Bearer {key}"}
        answers = [
            c.post(search, headers=auth, json={"user_id": "u", "query": "tea"}),  # 200
            c.post(search, json={"user_id": "u", "query": "tea"}),  # 401
            c.post(search, headers=auth, json={"user_id": "u"}),  # 422
            c.post(search, headers=auth, json={"user_id": "u", "query": "x" * 300_000}),  # 413
            c.get("/no/such/path", headers=auth),  # 404
            c.post("/mcp", headers=auth, json={}),  # MCP's own error
        ]
        assert [r.status_code for r in answers[:5]] == [200, 401, 422, 413, 404]
        for r in answers:
            assert r.headers["content-type"].startswith("application/json"), r.text
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["cache-control"] == "no-store"


def test_json_nested_past_the_parser_is_a_400_in_json(served: tuple[str, str, bool]) -> None:
    base, key, memwire = served
    deep = "[" * 50_000 + "]" * 50_000
    path = "/v1/memories/search" if memwire else "/v1/search"
    with httpx.Client(base_url=base, timeout=30) as c:
        r = c.post(
            path,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            content='{"user_id": "u", "query": ' + deep + "}",
        )
        assert r.status_code == 400, r.text
        message = r.json()["detail"] if memwire else r.json()["error"]["message"]
        assert "not valid JSON" in message
