"""The REST reads behind the web inspector, over real HTTP with real keys and the real model:
each answers as documented, and no key reaches another workspace's (or user's) data."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.keys import create_api_key
from engrammar.server import openapi_document
from serving import serve_in_thread

DOC = openapi_document()
QUERY = "When do payments deploys happen?"
# Close enough behind the top memory ("Payments deploys happen on Tuesdays after standup.",
# every query word together) for one bounded "wrong" rating to put it first.
OTHER_DEPLOY = "The payments service deploys on Tuesday mornings; hotfixes happen any day."

pytestmark = pytest.mark.model


@dataclass
class Srv:
    base: str
    memory: Memory
    keys: dict[str, str]

    def client(self, who: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.base, headers={"Authorization": f"Bearer {self.keys[who]}"}, timeout=60
        )


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, minilm: MiniLMEmbedder) -> Iterator[Srv]:
    path = tmp_path_factory.mktemp("inspector") / "store"
    memory = Memory(Config(path=str(path)), embedder=minilm)
    alice = {"user_id": "alice", "workspace": "acme"}
    memory.add(content="I live in Paris.", **alice, timestamp=1_700_000_000)
    memory.add(content="I moved to Berlin last year.", **alice, timestamp=1_700_000_100)
    ops = {**alice, "agent_id": "ops"}
    memory.add(content=OTHER_DEPLOY, **ops)
    memory.add(content="Payments deploys happen on Tuesdays after standup.", **ops)
    memory.add(content="Deploy day for the payments service is Tuesday.", **ops, session_id="s1")
    memory.add(
        messages=[
            {"role": "user", "content": "I prefer tea over coffee."},
            {"role": "assistant", "content": "Noted: tea, not coffee."},
        ],
        **alice,
        session_id="s1",
    )
    memory.add(content="Bob lives in Rome.", user_id="bob", workspace="acme")
    memory.add(content="Bob moved to Oslo.", user_id="bob", workspace="acme")
    memory.add(content="Globex deploys on Fridays.", user_id="gus", workspace="globex")
    keys = {
        "acme": create_api_key(memory.store, "acme")[0],
        "alice": create_api_key(memory.store, "acme", user_id="alice")[0],
        "globex": create_api_key(memory.store, "globex")[0],
    }
    for base in serve_in_thread(memory):
        yield Srv(base, memory, keys)
    memory.close()


def _ok(response: httpx.Response, path: str, method: str = "get") -> Any:
    """The body, after checking it against the operation's documented schema."""
    assert response.status_code == 200, response.text
    schema = DOC["paths"][path][method]["responses"]["200"]["content"]["application/json"]
    body = response.json()
    jsonschema.validate(body, {**schema["schema"], "components": DOC["components"]})
    return body


def _id(srv: Srv, content: str) -> str:
    (record,) = [r for r in srv.memory.list(workspace="acme", limit=1000) if r.content == content]
    return record.id


def test_scopes_count_memories_per_user_agent_session(srv: Srv) -> None:
    with srv.client("acme") as c:
        body = _ok(c.get("/v1/scopes"), "/v1/scopes")
    assert body["workspace"] == "acme" and body["truncated"] is False
    rows = {(r["user_id"], r["agent_id"], r["session_id"]): r["memories"] for r in body["scopes"]}
    assert rows == {
        ("alice", None, None): 2,
        ("alice", None, "s1"): 2,
        ("alice", "ops", None): 2,
        ("alice", "ops", "s1"): 1,
        ("bob", None, None): 2,
    }
    with srv.client("alice") as c:
        mine = _ok(c.get("/v1/scopes"), "/v1/scopes")["scopes"]
        assert {r["user_id"] for r in mine} == {"alice"}
        assert c.get("/v1/scopes", params={"user_id": "bob"}).status_code == 403
    with srv.client("globex") as c:
        other = _ok(c.get("/v1/scopes"), "/v1/scopes")
        assert other["workspace"] == "globex"
        assert [r["user_id"] for r in other["scopes"]] == ["gus"]
        assert c.get("/v1/scopes", params={"workspace": "acme"}).status_code == 403


def test_memory_list_filters_pages_and_totals(srv: Srv) -> None:
    with srv.client("acme") as c:

        def listing(**params: Any) -> dict[str, Any]:
            return dict(_ok(c.get("/v1/memories", params=params), "/v1/memories"))

        everything = listing(user_id="alice")
        assert everything["total"] == 7 and len(everything["memories"]) == 7
        assert listing(user_id="alice", text="BERLIN")["total"] == 1
        assert listing(user_id="alice", text="100%")["total"] == 0  # LIKE wildcards are literal
        assert listing(user_id="alice", role="assistant")["total"] == 1
        assert listing(user_id="alice", kind="fact")["total"] == 0
        assert listing(user_id="alice", until="1700000050")["total"] == 1
        assert (
            listing(user_id="alice", since="2023-11-14T22:14:00Z", until=1_700_000_200)["total"]
            == 1
        )
        page = listing(user_id="alice", order="newest", limit=2, offset=1)
        assert page["total"] == 7 and len(page["memories"]) == 2
        newest = listing(user_id="alice", order="newest")["memories"]
        assert [m["id"] for m in newest] == [m["id"] for m in everything["memories"]][::-1]
        for params, field in [
            ({"role": "robot"}, "role"),
            ({"order": "random"}, "order"),
            ({"since": "yesterday"}, "since"),
            ({"limit": "0"}, "limit"),
        ]:
            r = c.get("/v1/memories", params=params)
            assert r.status_code == 422 and r.json()["error"]["field"] == field, params
    with srv.client("alice") as c:
        assert {m["user_id"] for m in c.get("/v1/memories").json()["memories"]} == {"alice"}
    with srv.client("globex") as c:
        assert c.get("/v1/memories", params={"text": "Paris"}).json()["total"] == 0


def test_feedback_shows_in_edges_learning_timeline_and_rank_shifts(srv: Srv) -> None:
    top_text = "Payments deploys happen on Tuesdays after standup."
    top = _id(srv, top_text)
    with srv.client("acme") as c:
        recall = c.post("/v1/recall", json={"query": QUERY, "user_id": "alice"}).json()
        assert recall["memories"][0]["memory"]["id"] == top
        for _ in range(3):
            r = c.post(
                "/v1/ratings",
                json={"memory_id": top, "verdict": "rejected", "recall_id": recall["recall_id"]},
            )
            assert r.status_code == 201, r.text
        fb = c.post(
            "/v1/feedback",
            json={
                # A reply that leaves the rated memory out agrees with the ratings.
                "response": "Noted: you prefer tea over coffee.",
                "recall_id": recall["recall_id"],
                "user_id": "alice",
            },
        ).json()
        assert fb["strengthened"] + fb["weakened"] > 0

        graph = _ok(c.get(f"/v1/memories/{top}/edges"), "/v1/memories/{memory_id}/edges")
        assert graph["nodes"][0]["id"] == top and len(graph["nodes"]) > 1
        keys = {(e["src"], e["dst"], e["kind"]) for e in graph["edges"]}
        assert all(top in (e["src"], e["dst"]) for e in graph["edges"])
        assert graph["changes"], "the reply changed no edge around the memory"
        for change in graph["changes"]:
            assert (change["src"], change["dst"], change["kind"]) in keys
            assert change["recall_id"] == recall["recall_id"]
        deeper = c.get(f"/v1/memories/{top}/edges", params={"depth": 2}).json()
        assert len(deeper["nodes"]) >= len(graph["nodes"])

        learning = _ok(c.get(f"/v1/memories/{top}/learning"), "/v1/memories/{memory_id}/learning")
        ratings = [s for s in learning["signals"] if s["source"] == "rating"]
        assert len(ratings) == 3
        multipliers = [s["multiplier"] for s in ratings]
        assert multipliers == sorted(multipliers, reverse=True) and multipliers[-1] < 1

        timeline = _ok(c.get("/v1/timeline", params={"user_id": "alice"}), "/v1/timeline")
        kinds = [i["type"] for i in timeline["items"]]
        assert kinds.count("memory_rating") == 3 and "reply_signal" in kinds
        times = [i["at"] for i in timeline["items"]]
        assert times == sorted(times, reverse=True)

        shifts = _ok(c.get("/v1/rank-shifts", params={"user_id": "alice"}), "/v1/rank-shifts")[
            "shifts"
        ]
        moved = [s for s in shifts if s["memory_id"] == top]
        assert moved and moved[0]["rank_before"] == 1 and moved[0]["rank_after"] > 1
    with srv.client("globex") as c:
        for path in (f"/v1/memories/{top}/edges", f"/v1/memories/{top}/learning"):
            assert c.get(path).status_code == 404, path
        assert c.get("/v1/timeline").json()["items"] == []
        assert c.get("/v1/rank-shifts").json()["shifts"] == []
        assert c.get("/v1/timeline", params={"workspace": "acme"}).status_code == 403


def test_tensions_and_resolving_one_by_hand(srv: Srv) -> None:
    with srv.client("acme") as c:
        found = _ok(c.get("/v1/tensions", params={"user_id": "alice"}), "/v1/tensions")
        (tension,) = [
            t
            for t in found["tensions"]
            if {t["a"]["content"], t["b"]["content"]} >= {"I live in Paris."}
        ]
        berlin = next(m for m in (tension["a"], tension["b"]) if "Berlin" in m["content"])
        paris = next(m for m in (tension["a"], tension["b"]) if "Paris" in m["content"])
        assert tension["newer"] == berlin["id"] and tension["kind"] == "superseded"
        for memory, verdict in ((berlin, "accepted"), (paris, "rejected")):
            r = c.post("/v1/ratings", json={"memory_id": memory["id"], "verdict": verdict})
            assert r.status_code == 201
        again = c.get("/v1/tensions", params={"user_id": "alice"}).json()["tensions"]
        (after,) = [t for t in again if t["a"]["id"] in (paris["id"], berlin["id"])]
        assert after["ratings"][paris["id"]][-1]["verdict"] == "rejected"
        assert after["ratings"][berlin["id"]][-1]["verdict"] == "accepted"
    with srv.client("alice") as c:
        mine = c.get("/v1/tensions").json()["tensions"]
        assert mine and all(t["a"]["user_id"] == "alice" for t in mine)
    with srv.client("globex") as c:
        assert c.get("/v1/tensions").json()["tensions"] == []


def test_user_bound_key_sees_no_other_users_neighbours(srv: Srv) -> None:
    bob = _id(srv, "Bob lives in Rome.")
    paris = _id(srv, "I live in Paris.")
    with srv.client("alice") as c:
        assert c.get(f"/v1/memories/{bob}/edges").status_code == 404
        assert c.get(f"/v1/memories/{bob}/learning").status_code == 404
        graph = c.get(f"/v1/memories/{paris}/edges", params={"depth": 2}).json()
        assert {n["user_id"] for n in graph["nodes"]} == {"alice"}
        asked = c.get(f"/v1/memories/{paris}/edges", params={"user_id": "bob"})
        assert asked.status_code == 403
    with srv.client("acme") as c:
        everyone = c.get(f"/v1/memories/{paris}/edges", params={"depth": 2}).json()
        narrowed = c.get(
            f"/v1/memories/{paris}/edges", params={"depth": 2, "user_id": "alice"}
        ).json()
        assert {n["user_id"] for n in narrowed["nodes"]} == {"alice"}
        assert len(narrowed["nodes"]) <= len(everyone["nodes"])


def test_forget_removes_the_edge_history(srv: Srv, tmp_path: Path) -> None:
    top = _id(srv, OTHER_DEPLOY)
    before = srv.memory.store.edge_changes("acme", [top], 100)
    with srv.client("acme") as c:
        recall = c.post("/v1/recall", json={"query": QUERY, "user_id": "alice"}).json()
        c.post(
            "/v1/feedback",
            json={"response": "On Tuesdays.", "recall_id": recall["recall_id"], "user_id": "alice"},
        )
        assert c.delete(f"/v1/memories/{top}").status_code == 200
    assert len(srv.memory.store.edge_changes("acme", [top], 100)) == 0 <= len(before)


def test_ui_files_need_no_key_and_carry_a_strict_policy(srv: Srv) -> None:
    with httpx.Client(base_url=srv.base, timeout=60) as c:
        assert c.get("/ui").status_code == 308
        page = c.get("/ui/")
        assert page.status_code == 200 and "engrammar inspector" in page.text
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        script = c.get("/ui/app.js")
        assert script.status_code == 200
        assert script.headers["content-type"].startswith("text/javascript")
        assert "innerHTML" not in script.text  # every server value goes in as text
        for escape in ("/ui/%2e%2e/__init__.py", "/ui/..%2f__init__.py"):
            r = c.get(escape)
            assert r.status_code == 404 and "import" not in r.text, escape
        assert c.get("/v1/scopes").status_code == 401  # the data still needs a key
