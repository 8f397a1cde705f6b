"""The HTTP server for real: uvicorn on a free loopback port, httpx for REST, the MCP SDK client
over streamable HTTP, and cross-tenant probes by every route and argument."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import jsonschema
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from engrammar import AuthError, Config, HashEmbedder, Memory
from engrammar.interfaces.rest import rest_operations
from engrammar.keys import create_api_key, revoke_api_key
from engrammar.server import openapi_document, serve
from examples import WEBHOOK_EVENT as EXAMPLE
from serving import serve_in_thread

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
WEBHOOK_EVENT = {k: v for k, v in EXAMPLE.items() if k != "workspace"}  # the key names it


@dataclass
class Server:
    base: str
    memory: Memory
    keys: dict[str, str]

    def client(self, who: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"} if who else {}
        return httpx.Client(base_url=self.base, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    path = tmp_path_factory.mktemp("http") / "store"
    memory = Memory(Config(path=str(path), workspace="default"), embedder=HashEmbedder())
    keys = {
        "a": create_api_key(memory.store, "team-a")[0],
        "alice": create_api_key(memory.store, "team-a", user_id="alice")[0],
        "b": create_api_key(memory.store, "team-b")[0],
    }
    for base in serve_in_thread(memory):
        yield Server(base, memory, keys)
    memory.close()


def _counts(srv: Server, workspace: str) -> dict[str, Any]:
    stats = srv.memory.stats(workspace=workspace)
    stats.pop("bytes_on_disk")  # the file grows with other workspaces' writes
    return stats


# -- OpenAPI conformance -------------------------------------------------------------------------
DOC = openapi_document()


def _check(response: httpx.Response, path: str, method: str) -> Any:
    """Assert the response is documented for this operation and matches its schema."""
    op = DOC["paths"][path][method]
    documented = op["responses"].get(str(response.status_code))
    assert documented, f"{method.upper()} {path} answered undocumented {response.status_code}"
    assert response.headers["content-type"].startswith("application/json")
    schema = documented["content"]["application/json"]["schema"]
    body = response.json()
    jsonschema.validate(body, {**schema, "components": DOC["components"]})
    return body


def test_openapi_documents_every_rest_route(srv: Server) -> None:
    served = rest_operations() - {("/openapi.json", "get")}
    documented = {(p, m) for p, ops in DOC["paths"].items() for m in ops}
    assert served == documented
    jsonschema.Draft202012Validator.check_schema({"$defs": DOC["components"]["schemas"]})
    with srv.client(None) as c:
        assert c.get("/openapi.json").json() == DOC
        assert _check(c.get("/healthz"), "/healthz", "get")["status"] == "ok"


# -- REST ----------------------------------------------------------------------------------------
def test_rest_round_trip(srv: Server) -> None:
    with srv.client("a") as c:
        added = _check(
            c.post(
                "/v1/memories",
                json={
                    "messages": [
                        {"role": "user", "content": "Deploys happen on Tuesdays."},
                        {"role": "assistant", "content": "Tuesday deploys, noted."},
                    ],
                    "user_id": "dave",
                    "metadata": {"source": "rest"},
                },
            ),
            "/v1/memories",
            "post",
        )
        first, second = added["ids"]
        assert added["workspace"] == "team-a"
        got = _check(c.get(f"/v1/memories/{first}"), "/v1/memories/{memory_id}", "get")
        assert got["content"] == "Deploys happen on Tuesdays." and got["metadata"] == {
            "source": "rest"
        }
        found = _check(
            c.post("/v1/search", json={"query": "deploy tuesdays", "user_id": "dave"}),
            "/v1/search",
            "post",
        )
        assert found["results"][0]["memory"]["id"] in (first, second)
        recalled = _check(
            c.post(
                "/v1/recall", json={"query": "when do we deploy", "user_id": "dave", "limit": 1}
            ),
            "/v1/recall",
            "post",
        )
        assert len(recalled["memories"]) == 1 and recalled["recall_id"]
        listed = _check(c.get("/v1/memories", params={"user_id": "dave"}), "/v1/memories", "get")
        assert [m["id"] for m in listed["memories"]] == [first, second]
        updated = _check(
            c.patch(f"/v1/memories/{first}", json={"content": "Deploys happen on Wednesdays."}),
            "/v1/memories/{memory_id}",
            "patch",
        )
        assert updated["content"] == "Deploys happen on Wednesdays."
        hist = _check(
            c.get(f"/v1/memories/{first}/history"), "/v1/memories/{memory_id}/history", "get"
        )
        assert [h["op"] for h in hist["history"]] == ["add", "update"]
        stats = _check(c.get("/v1/stats", params={"user_id": "dave"}), "/v1/stats", "get")
        assert stats["memories"] == 2 and "file" not in stats
        gone = _check(c.delete(f"/v1/memories/{first}"), "/v1/memories/{memory_id}", "delete")
        assert gone == {"deleted": 1}
        _check(c.get(f"/v1/memories/{first}"), "/v1/memories/{memory_id}", "get")
        assert c.get(f"/v1/memories/{first}").status_code == 404
        assert _check(c.post("/v1/forget", json={"user_id": "dave"}), "/v1/forget", "post") == {
            "deleted": 1
        }


def test_rest_errors_are_json_and_name_the_field(srv: Server) -> None:
    with srv.client("a") as c:
        r = c.post("/v1/memories", json={"content": "x", "kind": "gossip", "user_id": "u"})
        assert r.status_code == 422
        assert _check(r, "/v1/memories", "post")["error"]["field"] == "kind"
        r = c.post("/v1/search", json={"query": "x", "user_id": "u", "limit": "ten"})
        assert r.status_code == 422 and r.json()["error"]["field"] == "limit"
        r = c.post("/v1/search", json={"query": "x", "colour": "blue"})
        assert r.status_code == 422 and r.json()["error"]["field"] == "colour"
        r = c.post("/v1/search", json={"user_id": "u"})
        assert r.status_code == 422 and r.json()["error"]["field"] == "query"
        # A body that does not parse is a 400 (the convention), not a 422.
        r = c.post("/v1/recall", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"] == {
            "type": "bad_request",
            "message": "the body is not valid JSON",
            "field": "body",
        }
        _check(r, "/v1/recall", "post")
        r = c.post("/v1/recall", json=[1, 2])
        assert r.status_code == 400 and r.json()["error"]["field"] == "body"
        r = c.get("/v1/memories", params={"limit": "lots"})
        assert r.status_code == 422 and r.json()["error"]["field"] == "limit"
        assert c.get("/v1/memories", params={"limit": 0}).status_code == 422


def test_edge_cases_of_http_itself_are_json(srv: Server) -> None:
    with srv.client("a") as c:
        r = c.options("/v1/memories")
        assert r.status_code == 405 and r.headers["allow"] == "GET, POST"
        assert r.json()["error"]["type"] == "method_not_allowed"
        r = c.get("/v1/nowhere")
        assert r.status_code == 404 and r.json()["error"]["type"] == "http_error"
        r = c.get("/v1/memories", params={"offset": str(10**30)})
        assert r.status_code == 422 and r.json()["error"]["field"] == "offset"
        r = c.post(
            "/v1/memories",
            content=b'{"content": "\\ud800 lone", "user_id": "u"}',
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 422 and "surrogate" in r.json()["error"]["message"]
        r = c.post("/v1/memories", json={"content": "x", "user_id": "u", "timestamp": 10**400})
        assert r.status_code == 422 and r.json()["error"]["field"] == "timestamp"


def test_every_route_needs_a_valid_key(srv: Server) -> None:
    probes: list[tuple[str, str]] = [
        ("post", "/v1/memories"),
        ("get", "/v1/memories"),
        ("get", "/v1/memories/x"),
        ("patch", "/v1/memories/x"),
        ("delete", "/v1/memories/x"),
        ("get", "/v1/memories/x/history"),
        ("post", "/v1/recall"),
        ("post", "/v1/search"),
        ("post", "/v1/forget"),
        ("get", "/v1/stats"),
        ("post", "/mcp"),
    ]
    token, record = create_api_key(srv.memory.store, "team-a")
    revoke_api_key(srv.memory.store, record.key_id)
    before = srv.memory.stats(workspace="team-a")["memories"]
    for header in (None, "Bearer", "Bearer nope", f"Basic {srv.keys['a']}", f"Bearer {token}"):
        headers = {"Authorization": header} if header else {}
        with httpx.Client(base_url=srv.base, headers=headers, timeout=60) as c:
            for method, path in probes:
                r = c.request(method, path, json={"content": "sneaky", "user_id": "eve"})
                assert r.status_code == 401, (header, method, path)
                assert r.headers["www-authenticate"] == "Bearer"
                assert r.json()["error"]["type"] == "unauthorized"
    assert srv.memory.stats(workspace="team-a")["memories"] == before


# -- tenancy -------------------------------------------------------------------------------------
def test_a_key_of_workspace_a_cannot_touch_workspace_b(srv: Server) -> None:
    with srv.client("b") as b:
        (b_id,) = b.post(
            "/v1/memories", json={"content": "B's secret plan", "user_id": "zed"}
        ).json()["ids"]
        b.post("/v1/recall", json={"query": "secret plan", "user_id": "zed"})
    before = srv.memory.get(b_id, workspace="team-b").to_dict()
    before_stats = _counts(srv, "team-b")
    with srv.client("a") as a:
        # Another workspace's id is simply not there.
        for method, path, body in [
            ("get", f"/v1/memories/{b_id}", None),
            ("patch", f"/v1/memories/{b_id}", {"content": "hijacked"}),
            ("delete", f"/v1/memories/{b_id}", None),
            ("get", f"/v1/memories/{b_id}/history", None),
            ("post", "/v1/forget", {"memory_id": b_id}),
            ("post", "/v1/forget", {"memory_id": [b_id]}),
        ]:
            assert a.request(method, path, json=body).status_code == 404, (method, path)
        # Naming the other workspace is refused outright, by every argument that takes one.
        for method, path, kwargs in [
            ("get", f"/v1/memories/{b_id}", {"params": {"workspace": "team-b"}}),
            ("patch", f"/v1/memories/{b_id}", {"json": {"content": "x", "workspace": "team-b"}}),
            ("delete", f"/v1/memories/{b_id}", {"params": {"workspace": "team-b"}}),
            ("get", f"/v1/memories/{b_id}/history", {"params": {"workspace": "team-b"}}),
            ("get", "/v1/memories", {"params": {"workspace": "team-b"}}),
            ("get", "/v1/stats", {"params": {"workspace": "team-b"}}),
            (
                "post",
                "/v1/memories",
                {"json": {"content": "x", "user_id": "u", "workspace": "team-b"}},
            ),
            ("post", "/v1/recall", {"json": {"query": "secret plan", "workspace": "team-b"}}),
            ("post", "/v1/search", {"json": {"query": "secret plan", "workspace": "team-b"}}),
            ("post", "/v1/forget", {"json": {"user_id": "zed", "workspace": "team-b"}}),
        ]:
            r = a.request(method, path, **kwargs)
            assert r.status_code == 403, (method, path, r.text)
            assert r.json()["error"]["type"] == "forbidden"
        # Its own searches and listings never surface B's memories.
        hits = a.post("/v1/search", json={"query": "secret plan", "user_id": "zed"}).json()
        assert hits["results"] == []
        assert a.get("/v1/memories", params={"user_id": "zed"}).json()["memories"] == []
        assert a.post("/v1/forget", json={"user_id": "zed"}).json() == {"deleted": 0}
    assert srv.memory.get(b_id, workspace="team-b").to_dict() == before
    assert _counts(srv, "team-b") == before_stats


def test_a_user_bound_key_reaches_only_its_user(srv: Server) -> None:
    with srv.client("a") as a:
        (bob_id,) = a.post("/v1/memories", json={"content": "Bob's note", "user_id": "bob"}).json()[
            "ids"
        ]
    with srv.client("alice") as c:
        added = c.post("/v1/memories", json={"content": "Alice likes jasmine tea."}).json()
        assert srv.memory.get(added["ids"][0], workspace="team-a").user_id == "alice"
        for method, path, kwargs in [
            ("post", "/v1/memories", {"json": {"content": "x", "user_id": "bob"}}),
            ("post", "/v1/search", {"json": {"query": "note", "user_id": "bob"}}),
            ("post", "/v1/recall", {"json": {"query": "note", "user_id": "bob"}}),
            ("get", "/v1/memories", {"params": {"user_id": "bob"}}),
            ("get", "/v1/stats", {"params": {"user_id": "bob"}}),
            ("post", "/v1/forget", {"json": {"user_id": "bob"}}),
        ]:
            assert c.request(method, path, **kwargs).status_code == 403, (method, path)
        for method, path in [
            ("get", f"/v1/memories/{bob_id}"),
            ("patch", f"/v1/memories/{bob_id}"),
            ("delete", f"/v1/memories/{bob_id}"),
            ("get", f"/v1/memories/{bob_id}/history"),
        ]:
            r = c.request(method, path, json={"content": "x"} if method == "patch" else None)
            assert r.status_code == 404, (method, path)
        assert c.post("/v1/forget", json={"memory_id": bob_id}).status_code == 404
        # Without a user_id, everything it sees is alice's.
        listed = c.get("/v1/memories").json()["memories"]
        assert listed and {m["user_id"] for m in listed} == {"alice"}
        hits = c.post("/v1/search", json={"query": "note tea"}).json()["results"]
        assert {h["memory"]["user_id"] for h in hits} == {"alice"}
    assert srv.memory.get(bob_id, workspace="team-a").content == "Bob's note"


# -- MCP over streamable HTTP --------------------------------------------------------------------
def _mcp(srv: Server, who: str, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def run() -> None:
        headers = {"Authorization": f"Bearer {srv.keys[who]}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(f"{srv.base}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            await body(session)

    anyio.run(run)


TRANSCRIPT = [
    {"role": "user", "content": [{"type": "text", "text": "Book me a table for two tonight."}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "book_table", "arguments": '{"people": 2}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_7", "content": "Booked at 19:30."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
    {"role": "user", "content": "   "},
]


# What the OpenAI Agents SDK's to_input_list() gives: Responses items beside messages.
RESPONSES_RUN = [
    {"role": "user", "content": "Which table did you book for me?"},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_9",
        "name": "find_booking",
        "arguments": '{"day": "today"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_9", "output": "Table 12 at 19:30."},
]


def _booking_found(memory: Any, ids: list[str | None]) -> None:
    assert ids[1] is None and all(ids[i] for i in (0, 2, 3))
    got = memory.get(ids[3], workspace="team-a")
    assert (got.role, got.kind, got.content) == (
        "tool",
        "event",
        "tool find_booking returned: Table 12 at 19:30.",
    )


def _post_messages(c: Any, messages: list[Any]) -> dict[str, Any]:
    """Add ``messages`` over REST, the request first checked against the served schema."""
    body = {"messages": messages, "user_id": "tess"}
    jsonschema.validate(
        body, {**DOC["components"]["schemas"]["AddRequest"], "components": DOC["components"]}
    )
    added: dict[str, Any] = _check(c.post("/v1/memories", json=body), "/v1/memories", "post")
    return added


def test_rest_takes_a_responses_run(srv: Server) -> None:
    with srv.client("a") as c:
        added = _post_messages(c, RESPONSES_RUN)
        assert added["skipped"] == [{"index": 1, "reason": "no_text"}]
        _booking_found(srv.memory, added["ids"])


def test_rest_takes_a_transcript_and_reports_the_skips(srv: Server) -> None:
    with srv.client("a") as c:
        added = _post_messages(c, TRANSCRIPT)
        assert added["skipped"] == [{"index": 4, "reason": "empty"}]
        assert added["ids"][4] is None and all(added["ids"][:4])
        got = srv.memory.get(added["ids"][2], workspace="team-a")
        assert (got.role, got.kind, got.content) == (
            "tool",
            "event",
            "tool book_table returned: Booked at 19:30.",
        )
        bad = {"user_id": "tess", "messages": [{"role": "user", "content": [{"type": 3}]}]}
        refused = _check(c.post("/v1/memories", json=bad), "/v1/memories", "post")
        assert refused["error"]["field"] == "messages[0].content[0].type"


def test_mcp_over_http_calls_every_tool(srv: Server) -> None:
    async def body(s: ClientSession) -> None:
        listed = await s.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        for tool in listed.tools:
            assert tool.description and tool.input_schema["type"] == "object"
        added = await s.call_tool(
            "memory_add",
            {
                "messages": [{"role": "user", "content": "I never deploy on Fridays."}],
                "user_id": "max",
            },
        )
        assert not added.is_error and added.structured_content is not None
        (mid,) = added.structured_content["ids"]
        assert srv.memory.get(mid, workspace="team-a").content == "I never deploy on Fridays."
        chat = await s.call_tool("memory_add", {"messages": TRANSCRIPT, "user_id": "max"})
        assert not chat.is_error and chat.structured_content is not None
        assert chat.structured_content["skipped"] == [{"index": 4, "reason": "empty"}]
        assert "Skipped, nothing to remember: messages[4] (empty)" in chat.content[0].text  # type: ignore[union-attr]
        run = await s.call_tool("memory_add", {"messages": RESPONSES_RUN, "user_id": "max"})
        assert not run.is_error and run.structured_content is not None
        assert run.structured_content["skipped"] == [{"index": 1, "reason": "no_text"}]
        _booking_found(srv.memory, run.structured_content["ids"])
        recalled = await s.call_tool("memory_recall", {"query": "deploy fridays", "user_id": "max"})
        assert not recalled.is_error and recalled.structured_content is not None
        assert recalled.structured_content["memories"][0]["memory"]["id"] == mid
        assert "I never deploy on Fridays." in recalled.content[0].text  # type: ignore[union-attr]
        found = await s.call_tool("memory_search", {"query": "fridays", "user_id": "max"})
        assert found.structured_content is not None
        assert found.structured_content["results"][0]["memory"]["id"] == mid
        gone = await s.call_tool("memory_forget", {"memory_id": mid})
        assert gone.structured_content == {"deleted": 1}
        kb = await s.call_tool(
            "memory_add_knowledge",
            {
                "name": "Runbook",
                "chunks": [{"content": "Deploy with make ship."}],
                "user_id": "max",
            },
        )
        assert not kb.is_error and kb.structured_content is not None
        hits = await s.call_tool("memory_search_knowledge", {"query": "deploy", "user_id": "max"})
        assert hits.structured_content is not None
        assert hits.structured_content["results"][0]["content"] == "Deploy with make ship."
        dropped = await s.call_tool(
            "memory_delete_knowledge", {"kb_id": kb.structured_content["id"], "user_id": "max"}
        )
        assert dropped.structured_content is not None and dropped.structured_content["deleted"] == 1
        bad = await s.call_tool("memory_add", {"content": "x", "user_id": "max", "kind": "gossip"})
        assert bad.is_error
        # An argument the tool does not take is refused, not silently dropped.
        odd = await s.call_tool("memory_add", {"content": "x", "user_id": "max", "usr_id": "m"})
        assert odd.is_error
        assert "ValidationError: usr_id: unknown argument" in odd.content[0].text  # type: ignore[union-attr]

    _mcp(srv, "a", body)


def test_mcp_tools_refuse_other_tenants(srv: Server) -> None:
    (b_id,) = srv.memory.add("B only.", user_id="zed", workspace="team-b")
    (bob_id,) = srv.memory.add("Bob only.", user_id="bob", workspace="team-a")

    async def as_a(s: ClientSession) -> None:
        for name, args, message in [
            ("memory_forget", {"memory_id": b_id}, "NotFoundError"),
            ("memory_forget", {"memory_id": [b_id]}, "NotFoundError"),
            ("memory_forget", {"user_id": "zed", "workspace": "team-b"}, "ForbiddenError"),
            ("memory_recall", {"query": "B only", "workspace": "team-b"}, "ForbiddenError"),
            ("memory_search", {"query": "B only", "workspace": "team-b"}, "ForbiddenError"),
            (
                "memory_add",
                {"content": "x", "user_id": "u", "workspace": "team-b"},
                "ForbiddenError",
            ),
        ]:
            r = await s.call_tool(name, args)
            assert r.is_error, (name, args)
            assert message in r.content[0].text, r.content  # type: ignore[union-attr]
        r = await s.call_tool("memory_search", {"query": "B only", "user_id": "zed"})
        assert r.structured_content == {"query": "B only", "results": []}

    async def as_alice(s: ClientSession) -> None:
        for name, args, message in [
            ("memory_forget", {"memory_id": bob_id}, "NotFoundError"),
            ("memory_search", {"query": "Bob", "user_id": "bob"}, "ForbiddenError"),
            ("memory_recall", {"query": "Bob", "user_id": "bob"}, "ForbiddenError"),
            ("memory_add", {"content": "x", "user_id": "bob"}, "ForbiddenError"),
        ]:
            r = await s.call_tool(name, args)
            assert r.is_error and message in r.content[0].text  # type: ignore[union-attr]

    _mcp(srv, "a", as_a)
    _mcp(srv, "alice", as_alice)
    assert srv.memory.get(b_id, workspace="team-b").content == "B only."
    assert srv.memory.get(bob_id, workspace="team-a").content == "Bob only."


# -- --no-auth -----------------------------------------------------------------------------------
def test_no_auth_is_refused_off_loopback(tmp_path: Path) -> None:
    with Memory(Config(path=str(tmp_path / "s")), embedder=HashEmbedder()) as memory:
        for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):
            with pytest.raises(AuthError, match="loopback"):
                serve(memory, host=host, port=0, auth=False)


def test_no_auth_on_loopback_serves_the_local_user(tmp_path: Path) -> None:
    with Memory(Config(path=str(tmp_path / "s")), embedder=HashEmbedder()) as memory:
        for base in serve_in_thread(memory, auth=False):
            with httpx.Client(base_url=base, timeout=60) as c:
                r = c.post("/v1/memories", json={"content": "local", "user_id": "me"})
                assert r.status_code == 201 and r.json()["workspace"] == "default"
                r = c.post(
                    "/v1/memories", json={"content": "x", "user_id": "me", "workspace": "w2"}
                )
                assert r.status_code == 201 and r.json()["workspace"] == "w2"


def test_delete_with_a_scope_that_does_not_match_is_not_found(srv: Server) -> None:
    with srv.client("a") as c:
        (mid,) = c.post("/v1/memories", json={"content": "Scoped.", "user_id": "ivy"}).json()["ids"]
        r = c.delete(f"/v1/memories/{mid}", params={"user_id": "someone-else"})
        assert r.status_code == 404
        assert c.get(f"/v1/memories/{mid}").status_code == 200
        r = c.post("/v1/search", json={"query": "Scoped", "user_id": "ivy", "limit": 3.0})
        assert r.status_code == 200 and len(r.json()["results"]) == 1
        assert c.delete(f"/v1/memories/{mid}", params={"user_id": "ivy"}).json() == {"deleted": 1}
        assert c.get(f"/v1/memories/{mid}").status_code == 404


# -- alignment feedback and explanations ---------------------------------------------------------
def test_rest_feedback_and_explain(srv: Server) -> None:
    with srv.client("a") as c:
        ids = c.post(
            "/v1/memories",
            json={"content": "I always write documentation before code.", "user_id": "fay"},
        ).json()["ids"]
        c.post("/v1/memories", json={"content": "Docs first, then tests.", "user_id": "fay"})
        recall = c.post("/v1/recall", json={"query": "documentation first", "user_id": "fay"})
        recall_id = recall.json()["recall_id"]
        fb = _check(
            c.post(
                "/v1/feedback",
                json={"response": "You write documentation first.", "user_id": "fay"},
            ),
            "/v1/feedback",
            "post",
        )
        assert fb["recall_id"] == recall_id and fb["consumed"] is True
        again = c.post(
            "/v1/feedback",
            json={"response": "Once more.", "user_id": "fay", "recall_id": recall_id},
        )
        assert again.status_code == 200 and again.json()["strengthened"] == 0
        why = _check(
            c.post(
                "/v1/explain",
                json={"query": "documentation first", "memory_id": ids[0], "user_id": "fay"},
            ),
            "/v1/explain",
            "post",
        )
        assert why["memory_id"] == ids[0] and "final" in why["components"]
        r = c.post("/v1/feedback", json={"user_id": "fay"})
        assert r.status_code == 422 and r.json()["error"]["field"] == "response"


def test_feedback_and_explain_stay_inside_the_tenant(srv: Server) -> None:
    with srv.client("b") as b:
        (b_id,) = b.post("/v1/memories", json={"content": "B plans.", "user_id": "zed"}).json()[
            "ids"
        ]
        b_recall = b.post("/v1/recall", json={"query": "plans", "user_id": "zed"}).json()[
            "recall_id"
        ]
    with srv.client("a") as a:
        (bob_id,) = a.post("/v1/memories", json={"content": "Bob plans.", "user_id": "bob"}).json()[
            "ids"
        ]
        bob_recall = a.post("/v1/recall", json={"query": "plans", "user_id": "bob"}).json()[
            "recall_id"
        ]
        r = a.post(
            "/v1/feedback", json={"response": "B plans.", "recall_id": b_recall, "user_id": "zed"}
        )
        assert r.status_code == 404
        r = a.post("/v1/feedback", json={"response": "x", "user_id": "zed", "workspace": "team-b"})
        assert r.status_code == 403
        r = a.post("/v1/explain", json={"query": "plans", "memory_id": b_id, "user_id": "zed"})
        assert r.status_code == 404
        r = a.post(
            "/v1/explain",
            json={"query": "plans", "memory_id": b_id, "user_id": "zed", "workspace": "team-b"},
        )
        assert r.status_code == 403
    with srv.client("alice") as c:
        r = c.post("/v1/feedback", json={"response": "Bob plans.", "recall_id": bob_recall})
        assert r.status_code == 404
        r = c.post("/v1/feedback", json={"response": "Bob plans.", "user_id": "bob"})
        assert r.status_code == 403
        r = c.post("/v1/explain", json={"query": "plans", "memory_id": bob_id})
        assert r.status_code == 404
        recalled = c.post("/v1/recall", json={"query": "plans tea note"}).json()
        assert {m["memory"]["user_id"] for m in recalled["memories"]} <= {"alice"}
    # Nothing was consumed: the owners' feedback still acts on their recalls.
    with srv.client("b") as b:
        fb = b.post(
            "/v1/feedback", json={"response": "B plans.", "recall_id": b_recall, "user_id": "zed"}
        )
        assert fb.json()["consumed"] is True
    with srv.client("a") as a:
        fb = a.post(
            "/v1/feedback",
            json={"response": "Bob plans.", "recall_id": bob_recall, "user_id": "bob"},
        )
        assert fb.json()["consumed"] is True


# -- decisions and feedback records ----------------------------------------------------------------
def test_rest_feedback_records(srv: Server) -> None:
    with srv.client("a") as c:
        created = c.post("/v1/feedback-events", json={**WEBHOOK_EVENT, "source_event_id": "wh-1"})
        event = _check(created, "/v1/feedback-events", "post")
        assert created.status_code == 201 and event["workspace"] == "team-a"
        again = c.post("/v1/feedback-events", json={**WEBHOOK_EVENT, "source_event_id": "wh-1"})
        assert again.json()["id"] == event["id"]
        conflict = c.post(
            "/v1/feedback-events",
            json={**WEBHOOK_EVENT, "source_event_id": "wh-1", "reason": "other"},
        )
        assert _check(conflict, "/v1/feedback-events", "post") and conflict.status_code == 409
        got = c.get(f"/v1/feedback-events/{event['id']}")
        assert _check(got, "/v1/feedback-events/{event_id}", "get") == event
        listed = c.get("/v1/feedback-events", params={"agent_id": "codex"})
        assert _check(listed, "/v1/feedback-events", "get")["feedback_events"] == [event]
        recalled = c.post(
            "/v1/recall", json={"query": "retries for the webhook sender", "agent_id": "codex"}
        ).json()
        assert recalled["memories"][0]["memory"]["content"] == WEBHOOK_EVENT["corrected_output"]

        review = _check(
            c.post(
                "/v1/decision-reviews",
                json={
                    "event_id": event["id"],
                    "final_decision": "corrected",
                    "outcome": "success",
                    "confidence": 0.9,
                    "agent_id": "codex",
                },
            ),
            "/v1/decision-reviews",
            "post",
        )
        assert review["reversed"] is False
        _check(
            c.get(f"/v1/decision-reviews/{review['id']}"), "/v1/decision-reviews/{review_id}", "get"
        )
        _check(c.get("/v1/decision-reviews"), "/v1/decision-reviews", "get")

        pair = _check(
            c.post(
                "/v1/preference-pairs",
                json={
                    "context": "Commit messages",
                    "accepted_output": "feat: add retries",
                    "rejected_output": "stuff",
                    "weight": 2,
                    "user_id": "gus",
                },
            ),
            "/v1/preference-pairs",
            "post",
        )
        _check(c.get(f"/v1/preference-pairs/{pair['id']}"), "/v1/preference-pairs/{pair_id}", "get")
        _check(
            c.get("/v1/preference-pairs", params={"user_id": "gus"}), "/v1/preference-pairs", "get"
        )

        logged = _check(
            c.post(
                "/v1/events",
                json={"kind": "checkpoint", "payload": {"step": 2}, "agent_id": "codex"},
            ),
            "/v1/events",
            "post",
        )
        _check(c.get(f"/v1/events/{logged['id']}"), "/v1/events/{event_id}", "get")
        assert _check(c.get("/v1/events", params={"agent_id": "codex"}), "/v1/events", "get")[
            "logged_events"
        ] == [logged]

        (mid,) = c.post(
            "/v1/memories", json={"content": "Standups at 9.", "user_id": "gus"}
        ).json()["ids"]
        rec = c.post("/v1/recall", json={"query": "standup time", "user_id": "gus"}).json()
        rating = _check(
            c.post(
                "/v1/ratings",
                json={
                    "memory_id": mid,
                    "verdict": "accepted",
                    "recall_id": rec["recall_id"],
                    "user_id": "gus",
                },
            ),
            "/v1/ratings",
            "post",
        )
        assert rating["context"] == "standup time"
        _check(c.get(f"/v1/ratings/{rating['id']}"), "/v1/ratings/{rating_id}", "get")
        _check(c.get("/v1/ratings", params={"user_id": "gus"}), "/v1/ratings", "get")
        bad = c.post("/v1/ratings", json={"memory_id": mid, "verdict": "meh", "user_id": "gus"})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "verdict"
        bad = c.post(
            "/v1/feedback-events",
            json={
                **WEBHOOK_EVENT,
                "state": "corrected",
                "corrected_output": None,
                "user_correction": None,
            },
        )
        assert bad.status_code == 422


def test_feedback_records_stay_inside_the_tenant(srv: Server) -> None:
    with srv.client("b") as b:
        b_event = b.post("/v1/feedback-events", json=WEBHOOK_EVENT).json()
        (b_mid,) = b.post("/v1/memories", json={"content": "B fact.", "user_id": "zed"}).json()[
            "ids"
        ]
        b_log = b.post("/v1/events", json={"kind": "checkpoint", "agent_id": "codex"}).json()
        b_pair = b.post(
            "/v1/preference-pairs",
            json={"context": "c", "accepted_output": "a", "rejected_output": "r", "user_id": "zed"},
        ).json()
        b_rating = b.post("/v1/ratings", json={"memory_id": b_mid, "verdict": "accepted"}).json()
        b_recall = b.post("/v1/recall", json={"query": "fact", "user_id": "zed"}).json()[
            "recall_id"
        ]
    before = _counts(srv, "team-b")
    with srv.client("a") as a:
        for path in (
            f"/v1/feedback-events/{b_event['id']}",
            f"/v1/events/{b_log['id']}",
            f"/v1/preference-pairs/{b_pair['id']}",
            f"/v1/ratings/{b_rating['id']}",
        ):
            assert a.get(path).status_code == 404, path
            assert a.get(path, params={"workspace": "team-b"}).status_code == 403, path
        for body in (
            {"event_id": b_event["id"], "final_decision": "rejected", "agent_id": "codex"},
        ):
            assert a.post("/v1/decision-reviews", json=body).status_code == 404
            assert (
                a.post("/v1/decision-reviews", json={**body, "workspace": "team-b"}).status_code
                == 403
            )
        assert (
            a.post("/v1/ratings", json={"memory_id": b_mid, "verdict": "rejected"}).status_code
            == 404
        )
        (own,) = a.post("/v1/memories", json={"content": "A fact.", "user_id": "ann"}).json()["ids"]
        r = a.post(
            "/v1/ratings", json={"memory_id": own, "verdict": "accepted", "recall_id": b_recall}
        )
        assert r.status_code == 404
        for path in (
            "/v1/feedback-events",
            "/v1/decision-reviews",
            "/v1/preference-pairs",
            "/v1/events",
            "/v1/ratings",
        ):
            assert a.get(path, params={"workspace": "team-b"}).status_code == 403, path
            for record in next(iter(a.get(path).json().values())):
                assert record["workspace"] == "team-a"
        r = a.post("/v1/feedback-events", json={**WEBHOOK_EVENT, "workspace": "team-b"})
        assert r.status_code == 403
    assert _counts(srv, "team-b") == before


def test_user_bound_key_and_feedback_records(srv: Server) -> None:
    with srv.client("a") as a:
        bob_event = a.post("/v1/feedback-events", json={**WEBHOOK_EVENT, "user_id": "bob"}).json()
        (bob_mid,) = a.post(
            "/v1/memories", json={"content": "Bob's fact.", "user_id": "bob"}
        ).json()["ids"]
        bob_recall = a.post("/v1/recall", json={"query": "fact", "user_id": "bob"}).json()[
            "recall_id"
        ]
    with srv.client("alice") as c:
        assert c.get(f"/v1/feedback-events/{bob_event['id']}").status_code == 404
        review = {"event_id": bob_event["id"], "final_decision": "rejected"}
        assert c.post("/v1/decision-reviews", json=review).status_code == 404
        assert (
            c.post("/v1/ratings", json={"memory_id": bob_mid, "verdict": "rejected"}).status_code
            == 404
        )
        assert c.get("/v1/feedback-events", params={"user_id": "bob"}).status_code == 403
        mine = c.post("/v1/feedback-events", json=WEBHOOK_EVENT).json()
        assert mine["user_id"] == "alice"
        (own,) = c.post("/v1/memories", json={"content": "Alice's fact."}).json()["ids"]
        r = c.post(
            "/v1/ratings", json={"memory_id": own, "verdict": "accepted", "recall_id": bob_recall}
        )
        assert r.status_code == 404
        events = c.get("/v1/feedback-events").json()["feedback_events"]
        assert {e["user_id"] for e in events} == {"alice"}


def test_mcp_over_http_feedback_tools(srv: Server) -> None:
    (b_mid,) = srv.memory.add("B memory.", user_id="zed", workspace="team-b")
    b_event = srv.memory.create_feedback_event(
        "ctx", "out", "adopted", agent_id="codex", workspace="team-b"
    )
    before = _counts(srv, "team-b")

    async def body(s: ClientSession) -> None:
        r = await s.call_tool(
            "memory_create_feedback_event", {**WEBHOOK_EVENT, "source_event_id": "m-1"}
        )
        assert not r.is_error and r.structured_content is not None
        event = r.structured_content
        assert event["workspace"] == "team-a" and event["decision_memory_id"]
        r = await s.call_tool(
            "memory_create_decision_review",
            {
                "event_id": event["id"],
                "final_decision": "adopted",
                "outcome": "failure",
                "confidence": 0.7,
                "agent_id": "codex",
            },
        )
        assert r.structured_content is not None and r.structured_content["reversed"] is True
        r = await s.call_tool(
            "memory_create_preference_pair",
            {"context": "c", "accepted_output": "good", "rejected_output": "bad", "user_id": "hal"},
        )
        assert r.structured_content is not None and r.structured_content["weight"] == 1.0
        r = await s.call_tool(
            "memory_log_event", {"kind": "checkpoint", "payload": {"n": 1}, "agent_id": "codex"}
        )
        assert r.structured_content is not None and r.structured_content["payload"] == {"n": 1}
        added = await s.call_tool("memory_add", {"content": "Lunch is at noon.", "user_id": "hal"})
        assert added.structured_content is not None
        (mid,) = added.structured_content["ids"]
        r = await s.call_tool(
            "memory_feedback", {"memory_id": mid, "verdict": "rejected", "user_id": "hal"}
        )
        assert r.structured_content is not None
        assert r.structured_content["rating"]["verdict"] == "rejected"
        assert r.structured_content["alignment"] is None
        recall = await s.call_tool("memory_recall", {"query": "lunch", "user_id": "hal"})
        assert recall.structured_content is not None
        r = await s.call_tool(
            "memory_feedback", {"response": "Lunch is at noon.", "user_id": "hal"}
        )
        assert r.structured_content is not None and r.structured_content["rating"] is None
        assert (
            r.structured_content["alignment"]["recall_id"] == recall.structured_content["recall_id"]
        )
        r = await s.call_tool("memory_feedback", {"memory_id": mid, "user_id": "hal"})
        assert r.is_error and "verdict" in r.content[0].text  # type: ignore[union-attr]
        for name, args in [
            ("memory_feedback", {"memory_id": b_mid, "verdict": "accepted"}),
            (
                "memory_create_decision_review",
                {"event_id": b_event.id, "final_decision": "rejected"},
            ),
        ]:
            r = await s.call_tool(name, args)
            assert r.is_error and "NotFoundError" in r.content[0].text  # type: ignore[union-attr]
        r = await s.call_tool(
            "memory_log_event", {"kind": "x", "agent_id": "a", "workspace": "team-b"}
        )
        assert r.is_error and "ForbiddenError" in r.content[0].text  # type: ignore[union-attr]
        r = await s.call_tool("memory_feedback", {"memory_id": mid, "verdict": "maybe"})
        assert r.is_error

    _mcp(srv, "a", body)
    assert _counts(srv, "team-b") == before
