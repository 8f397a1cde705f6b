"""What `engrammar serve` answers at the edges of access, over real HTTP on loopback: how JSON
answers are marked, bodies that cannot be read, and MemWire's routes beside /v1."""

from __future__ import annotations

import hashlib
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.keys import create_api_key
from engrammar.store import ApiKeyRecord
from serving import keyed_client, serve_in_thread

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
        # Just within what the parser reads: every later step copes too (a 422, not a 500).
        within = "[" * 900 + "]" * 900
        r = c.post(
            path,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            content='{"user_id": "u", "query": ' + within + "}",
        )
        assert r.status_code == 422, r.text


def _trickle(base: str, key: str, pause_s: float, stop_after: int | None = None) -> bytes:
    """Sends a valid body to /v1/memories a byte every ``pause_s`` (stopping after
    ``stop_after`` bytes, if given); the server's answer, or b"" if it gave none in 30 s."""
    port = int(base.rsplit(":", 1)[1])
    body = b'{"content": "' + b"x" * 100 + b'", "user_id": "u"}'
    head = (
        "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(head.encode())
        s.settimeout(pause_s)
        for i, byte in enumerate(body):
            if stop_after is not None and i >= stop_after:
                break
            try:
                s.sendall(bytes([byte]))
            except OSError:
                break  # the server answered and closed: read what it said
            try:
                answer = s.recv(4096)  # waits pause_s for an answer between bytes
            except TimeoutError:
                continue
            except OSError:
                return b""
            if answer or time.monotonic() - started > 30:
                return _rest_of(s, answer)
        s.settimeout(30)
        try:
            return _rest_of(s, s.recv(4096))
        except OSError:
            return b""


def _rest_of(s: socket.socket, answer: bytes) -> bytes:
    """The whole response that ``answer`` began (its headers and body may come apart)."""
    s.settimeout(30)
    while answer:
        head, sep, body = answer.partition(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in head.split(b"\r\n")
             if line.lower().startswith(b"content-length:")),
            0,
        )  # fmt: skip
        if sep and len(body) >= length:
            break
        more = s.recv(4096)
        if not more:
            break
        answer += more
    return answer


def test_a_body_trickled_in_is_cut_at_the_whole_body_deadline(tmp_path: object) -> None:
    # Each byte comes far within body_timeout_s (however late a loaded machine sends or reads
    # it); the whole body would take ~25 s: only the whole-body deadline can cut it.
    config = Config(path=f"{tmp_path}/store", body_timeout_s=60, body_deadline_s=2.5)
    memory = Memory(config, embedder=HashEmbedder())
    key = create_api_key(memory.store, "acme")[0]
    for base in serve_in_thread(memory):
        started = time.monotonic()
        answer = _trickle(base, key, pause_s=0.2)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"body_deadline_s" in answer and b"request_timeout" in answer
        assert time.monotonic() - started >= 2.5  # not before the deadline
    assert memory.stats(workspace="acme")["memories"] == 0
    memory.close()


def test_a_body_that_stops_coming_is_cut_at_the_body_timeout(tmp_path: object) -> None:
    # The whole-body deadline is far away: only the wait for the next piece can cut it.
    config = Config(path=f"{tmp_path}/store", body_timeout_s=1.0, body_deadline_s=120)
    memory = Memory(config, embedder=HashEmbedder())
    key = create_api_key(memory.store, "acme")[0]
    for base in serve_in_thread(memory):
        answer = _trickle(base, key, pause_s=0.2, stop_after=3)
        assert answer.startswith(b"HTTP/1.1 408") and b"(body_timeout_s)" in answer, answer
    assert memory.stats(workspace="acme")["memories"] == 0
    memory.close()


def test_memwire_org_key_does_not_reach_a_workspace_another_key_owns(tmp_path: object) -> None:
    memory = Memory(Config(path=f"{tmp_path}/store"), embedder=HashEmbedder())
    org = create_api_key(memory.store, "acme")[0]
    # A key named 'acme/x/y' can no longer be created; a store from before may still hold one.
    other = "egr_0123456789ab_" + "s" * 43
    memory.store.create_api_key(
        ApiKeyRecord(
            "0123456789ab", hashlib.sha256(other.encode()).hexdigest(), "acme/x/y", None, "", 0.0
        )
    )
    say = {"user_id": "u", "messages": [{"role": "user", "content": "Launch is on May 4."}]}
    ask = {"user_id": "u", "query": "launch", "workspace_id": "x", "app_id": "y"}
    for base in serve_in_thread(memory, memwire_compat=True):
        with httpx.Client(base_url=base, timeout=30) as c:
            assert c.post("/v1/memories", headers={"X-API-Key": other}, json=say).status_code == 200
            r = c.post("/v1/memories/search", headers={"X-API-Key": org}, json=ask)
            assert r.status_code == 403 and "another API key" in r.json()["detail"], r.text
            # The organisation's own sub-workspaces are still its own.
            mine = {**say, "workspace_id": "x", "app_id": "z"}
            assert c.post("/v1/memories", headers={"X-API-Key": org}, json=mine).status_code == 200
            r = c.post(
                "/v1/memories/search", headers={"X-API-Key": org}, json={**ask, "app_id": "z"}
            )
            assert [h["memory"]["content"] for h in r.json()] == ["Launch is on May 4."]
    memory.close()


def test_explain_names_no_other_key_to_a_user_bound_key(tmp_path: object) -> None:
    memory = Memory(Config(path=f"{tmp_path}/store"), embedder=HashEmbedder())
    team, team_record = create_api_key(memory.store, "acme")
    alice, alice_record = create_api_key(memory.store, "acme", user_id="alice")
    question = "When are deploys?"
    for base in serve_in_thread(memory):
        with keyed_client(base, team) as t, keyed_client(base, alice) as a:
            stored = a.post("/v1/memories", json={"content": "Deploys are on Wednesdays."})
            assert stored.status_code == 201, stored.text
            memory_id = stored.json()["ids"][0]
            for client, scope in ((t, {"user_id": "alice"}), (a, {})):
                recall_id = client.post("/v1/recall", json={"query": question, **scope}).json()[
                    "recall_id"
                ]
                rated = client.post("/v1/ratings", json={"memory_id": memory_id, **scope,
                                    "verdict": "accepted", "recall_id": recall_id})  # fmt: skip
                assert rated.status_code == 201, rated.text
            ask = {"query": question, "memory_id": memory_id}
            seen_by_team = t.post("/v1/explain", json={**ask, "user_id": "alice"}).json()
            seen_by_alice = a.post("/v1/explain", json=ask).json()
    memory.close()
    # The workspace's key sees every source; alice's key sees its own and "another API key".
    assert {s["source"] for s in seen_by_team["sources"]} == {
        f"key:{team_record.key_id}",
        f"key:{alice_record.key_id}",
    }
    assert team_record.key_id not in str(seen_by_alice)
    assert sorted(s["source"] for s in seen_by_alice["sources"]) == sorted(
        [f"key:{alice_record.key_id}", "another API key"]
    )
    hidden = [r for r in seen_by_alice["records"] if r["source"] == "another API key"]
    assert len(hidden) == 1 and "record_id" not in hidden[0]
    assert sum(s["contribution"] for s in seen_by_alice["sources"]) == pytest.approx(
        sum(s["contribution"] for s in seen_by_team["sources"])
    )
