"""Over a real `engrammar serve` on loopback: Host/Origin/content type (2), lone
surrogates in JSON keys (5), timeouts, slow connections, disconnects, the rate limiter, 500s
and MCP's strict types (7)."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from backends import open_memory
from engrammar import Memory
from engrammar.keys import create_api_key
from serving import mcp_session, serve_in_thread

pytestmark = pytest.mark.processes


def _serve(path: Path, auth: bool = True, **settings: object) -> Iterator[tuple[str, Memory]]:
    memory = open_memory(str(path), **settings)
    try:
        for base in serve_in_thread(memory, auth=auth):
            yield base, memory
    finally:
        memory.close()


@pytest.fixture
def open_server(tmp_path: Path) -> Iterator[tuple[str, Memory]]:
    yield from _serve(tmp_path / "store", auth=False, allowed_hosts="memory.example")


# -- 2. --no-auth REST: Host, Origin, content type -----------------------------------------------
def test_no_auth_rest_refuses_other_sites_hosts_and_non_json(
    open_server: tuple[str, Memory],
) -> None:
    base, _ = open_server
    planted = {"content": "planted by a web page", "user_id": "victim"}
    r = httpx.post(f"{base}/v1/memories", json=planted, timeout=60)
    assert r.status_code == 201
    evil = {"Origin": "http://evil.example"}
    as_text = {"Content-Type": "text/plain"}
    body = '{"content":"planted by a web page","user_id":"victim"}'
    r = httpx.post(f"{base}/v1/memories", content=body, headers={**as_text, **evil}, timeout=60)
    assert r.status_code == 403, r.text
    r = httpx.post(f"{base}/v1/memories", content=body, headers=as_text, timeout=60)
    assert r.status_code == 415, r.text
    assert "application/json" in r.json()["error"]["message"]
    r = httpx.post(f"{base}/v1/forget", json={"user_id": "victim"}, headers=evil, timeout=60)
    assert r.status_code == 403
    r = httpx.get(
        f"{base}/v1/memories?user_id=victim", headers={"Host": "evil.example:8765"}, timeout=60
    )
    assert r.status_code == 421
    assert "victim" not in r.text
    r = httpx.get(
        f"{base}/v1/memories?user_id=victim", headers={"Host": "memory.example"}, timeout=60
    )
    assert r.status_code == 200  # named in allowed_hosts
    port = base.rsplit(":", 1)[1]
    ok = {"Origin": f"http://localhost:{port}"}
    r = httpx.get(f"{base}/v1/memories?user_id=victim", headers=ok, timeout=60)
    assert r.status_code == 200
    assert len(r.json()["memories"]) == 1  # the one JSON write, nothing else got in
    r = httpx.post(f"{base}/mcp", json={}, headers={"Host": "evil.example"}, timeout=60)
    assert r.status_code == 421


# -- 5. lone surrogates in JSON keys -------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"content":"ok","user_id":"j","metadata":{"\\udfff":1}}', "metadata.\\udfff"),
        ('{"content":"ok","user_id":"j","\\ud800":1}', "\\ud800"),
    ],
)
def test_a_lone_surrogate_key_is_a_422_with_an_escaped_message(
    open_server: tuple[str, Memory], body: str, field: str
) -> None:
    base, _ = open_server
    headers = {"Content-Type": "application/json"}
    r = httpx.post(f"{base}/v1/memories", content=body, headers=headers, timeout=60)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == field
    r = httpx.post(
        f"{base}/v1/events",
        content='{"kind":"k","user_id":"j","payload":{"\\ud800x":1}}',
        headers=headers,
        timeout=60,
    )
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "payload.\\ud800x"


# -- 7. timeouts, slow connections, disconnects ----------------------------------------------------
def _closed(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(100) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_slow_headers_are_cut_off_and_slow_connections_capped(tmp_path: Path) -> None:
    for base, _ in _serve(tmp_path / "s", header_timeout_s=1.0, max_pending_connections=2):
        port = int(base.rsplit(":", 1)[1])
        drip = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        closed = False
        # Headers that never end, a byte every 0.3 s, until the server cuts the connection
        # (a minute at most: a loaded machine may be slow to, but it must).
        head = b"GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 200
        for ch in head:
            try:
                drip.send(bytes([ch]))
            except OSError:
                closed = True
                break
            if _closed(drip, 0.3):
                closed = True
                break
        assert closed, "a connection dripping its headers was never cut"
        assert time.monotonic() - started >= 0.9  # not before header_timeout_s
        drip.close()
    # Connections sending nothing stay pending for a minute here: the third is refused for
    # the cap alone, however late a loaded machine gets to it (accepted in the order made).
    for base, _ in _serve(tmp_path / "c", header_timeout_s=60.0, max_pending_connections=2):
        port = int(base.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        third = socket.create_connection(("127.0.0.1", port))
        assert _closed(third, 30.0), "a connection past max_pending_connections stayed open"
        assert not any(_closed(s, 0.1) for s in idle)  # pending, not refused
        for s in (*idle, third):
            s.close()
        # Once they are gone (as soon as the server has seen them go), it answers again.
        deadline = time.monotonic() + 60
        while True:
            try:
                assert httpx.get(f"{base}/healthz", timeout=60).status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server never answered again"
                time.sleep(0.1)


def test_a_client_gone_mid_body_logs_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    for base, _ in _serve(tmp_path / "s", auth=False):
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(
                b"POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b'Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{"content":'
            )
            time.sleep(0.3)
        deadline = time.monotonic() + 60  # as soon as it is logged; a loaded machine is late
        while time.monotonic() < deadline and not any(
            "went away" in r.getMessage() for r in caplog.records
        ):
            time.sleep(0.05)
    mine = [r for r in caplog.records if r.name.startswith(("engrammar", "uvicorn.error"))]
    gone = [r for r in mine if "went away" in r.getMessage()]
    assert len(gone) == 1, [r.getMessage() for r in mine]
    assert not any(r.exc_info for r in mine), "a traceback was logged"


def test_the_rate_limit_buckets_by_verified_key_and_failing_address(tmp_path: Path) -> None:
    for base, memory in _serve(tmp_path / "s", rate_limit_per_s=0.001, rate_limit_burst=2):
        key = create_api_key(memory.store, "team")[0]
        # Spelling the same key differently does not buy fresh tokens.
        spelt = [f"Bearer {key}", f"bearer {key}", f"BEARER  {key}"]
        codes = [
            httpx.get(f"{base}/v1/stats", headers={"Authorization": h}, timeout=60).status_code
            for h in spelt
        ]
        assert codes == [200, 200, 429], codes
        # Made-up keys from one address share that address's bucket.
        fails = [
            httpx.get(
                f"{base}/v1/stats", headers={"Authorization": f"Bearer made-up-{i}"}, timeout=60
            )
            for i in range(4)
        ]
        assert [r.status_code for r in fails][:2] == [401, 401]
        assert {r.status_code for r in fails[2:]} == {429}


def test_a_500_names_an_error_id_and_logs_the_details(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for base, memory in _serve(tmp_path / "s", auth=False):
        memory.add("tea", user_id="u")
        memory.store.close()  # every read now fails inside the store
        r = httpx.get(f"{base}/v1/memories?user_id=u", timeout=60)
    assert r.status_code == 500
    error = r.json()["error"]
    assert error["type"] == "internal_error"
    assert error["error_id"] in error["message"]
    assert "Error" not in error["message"] and "sqlite" not in r.text.lower()
    logged = [rec for rec in caplog.records if error["error_id"] in rec.getMessage()]
    assert logged and logged[0].exc_info


def test_mcp_refuses_a_limit_given_as_a_string(tmp_path: Path) -> None:
    for base, memory in _serve(tmp_path / "s"):
        key = create_api_key(memory.store, "team")[0]
        memory.add("We deploy on Tuesdays.", user_id="u", workspace="team")

        async def run(base: str = base, key: str = key) -> tuple[bool, bool]:
            async with mcp_session(base, key) as session:
                bad = await session.call_tool(
                    "memory_search", {"query": "deploy", "user_id": "u", "limit": "5"}
                )
                good = await session.call_tool(
                    "memory_search", {"query": "deploy", "user_id": "u", "limit": 5}
                )
                return bad.is_error, good.is_error

        assert anyio.run(run) == (True, False)
