"""The answers of the REST API match the OpenAPI schemas generated from their types.

Every route is called over real HTTP on loopback (on each store backend, with the real model
and real keys) with data that fills each answer's optional parts, and each answer is checked
against its documented schema read strictly: a key the type does not declare fails as surely
as a missing or mistyped one. The schemas themselves follow the types: a key added to a ``TypedDict`` is in the schema.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, NotRequired

import httpx
import jsonschema
import pytest

from engrammar import Memory, models
from engrammar.interfaces.openapi import ANSWERS, model_schema
from engrammar.keys import create_api_key
from engrammar.server import openapi_document
from examples import WEBHOOK_EVENT
from serving import serve_in_thread

DOC = openapi_document()
QUERY = "When do payments deploys happen?"
ALICE = {"user_id": "alice"}


def _strict(node: Any) -> Any:
    """``node`` with every object schema that names its properties closed to other keys."""
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


STRICT = _strict(DOC["components"])


@dataclass
class Walk:
    """A server, its keys, and the routes called so far."""

    base: str
    memory: Memory
    keys: dict[str, str]
    called: set[tuple[str, str]] = field(default_factory=set)

    def call(self, who: str, method: str, route: str, path: str = "", **kw: Any) -> Any:
        """Call ``route`` (at ``path``, its ids filled in) as ``who``; the answer, after
        checking its status and body against the documented 2xx response, strictly."""
        headers = {"Authorization": f"Bearer {self.keys[who]}"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=60) as c:
            response = c.request(method, path or route, **kw)
        op = DOC["paths"][route][method.lower()]
        ((status, documented),) = [(s, d) for s, d in op["responses"].items() if s[0] == "2"]
        assert response.status_code == int(status), response.text
        body = response.json()
        schema = documented["content"]["application/json"]["schema"]
        jsonschema.validate(body, {**schema, "components": STRICT})
        self.called.add((method.lower(), route))
        return body


@pytest.fixture
def walk(real_mem: Memory) -> Iterator[Walk]:
    keys = {
        "acme": create_api_key(real_mem.store, "acme")[0],
        "alice": create_api_key(real_mem.store, "acme", user_id="alice")[0],
    }
    for base in serve_in_thread(real_mem):
        yield Walk(base, real_mem, keys)


def _memories(w: Walk) -> None:
    image = [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    added = w.call(
        "acme",
        "POST",
        "/v1/memories",
        json={
            "messages": [
                {"role": "user", "content": "I live in Paris."},
                {"role": "user", "content": image},
            ],
            **ALICE,
            "timestamp": 1_700_000_000,
        },
    )
    assert added["skipped"] == [{"index": 1, "reason": "no_text"}]
    later = {**ALICE, "timestamp": 1_700_000_100}
    w.call(
        "acme", "POST", "/v1/memories", json={"content": "I moved to Berlin last year.", **later}
    )
    ops = {**ALICE, "agent_id": "ops"}
    for text in (
        "The payments service deploys on Tuesday mornings; hotfixes happen any day.",
        "Payments deploys happen on Tuesdays after standup.",
        "Deploy day for the payments service is Tuesday.",
    ):
        w.call("acme", "POST", "/v1/memories", json={"content": text, **ops})
    listed = w.call("acme", "GET", "/v1/memories", params=ALICE)
    assert listed["total"] == 5
    assert "bytes_on_disk" not in w.call("acme", "GET", "/v1/stats", params=ALICE)
    # Where the store lives is for the local user only: the Python answer says it.
    local = w.memory.stats(workspace="acme")
    assert local["bytes_on_disk"] > 0 and ("file" in local or "url" in local)
    jsonschema.validate(local, {"$ref": "#/components/schemas/Stats", "components": STRICT})
    assert w.call("acme", "GET", "/v1/scopes")["scopes"]
    assert w.call("acme", "POST", "/v1/search", json={"query": QUERY, **ALICE})["results"]


def _learning(w: Walk) -> None:
    recall = w.call("acme", "POST", "/v1/recall", json={"query": QUERY, **ALICE})
    top = recall["memories"][0]["memory"]["id"]
    rated = {"memory_id": top, "verdict": "rejected", "recall_id": recall["recall_id"]}
    rating = w.call("acme", "POST", "/v1/ratings", json=rated)
    w.call("acme", "GET", "/v1/ratings", params=ALICE)
    w.call("acme", "GET", "/v1/ratings/{rating_id}", f"/v1/ratings/{rating['id']}")
    # A reply about something else: the recalled paths it ignored are weakened.
    off = "Noted: you prefer tea over coffee."
    reply = {"response": off, "recall_id": recall["recall_id"], **ALICE}
    applied = w.call("acme", "POST", "/v1/feedback", json=reply)
    assert applied["weakened"] and applied["paths"] and "drawn_on" in applied
    refused = w.call("acme", "POST", "/v1/feedback", json=reply)
    assert not refused["consumed"] and refused["message"]
    asked = {"query": QUERY, "memory_id": top, **ALICE}
    explained = w.call("acme", "POST", "/v1/explain", json=asked)
    assert explained["records"] and explained["sources"]
    # A user-bound key sees another key's records without their ids.
    hidden = w.call("alice", "POST", "/v1/explain", json=asked)["records"]
    assert hidden and all("record_id" not in r for r in hidden)
    edges = f"/v1/memories/{top}"
    assert w.call("acme", "GET", "/v1/memories/{memory_id}/edges", f"{edges}/edges")["changes"]
    assert w.call("acme", "GET", "/v1/memories/{memory_id}/learning", f"{edges}/learning")[
        "signals"
    ]
    assert w.call("acme", "GET", "/v1/timeline", params=ALICE)["items"]
    assert w.call("acme", "GET", "/v1/rank-shifts", params=ALICE)["shifts"]
    assert w.call("acme", "GET", "/v1/tensions", params=ALICE)["tensions"]
    undone = w.call("acme", "POST", "/v1/undo", json={"record_id": rating["id"]})
    assert undone["kind"] == "memory_rating"
    reply_undone = w.call("acme", "POST", "/v1/undo", json={"record_id": recall["recall_id"]})
    assert reply_undone["kind"] == "reply" and reply_undone["edges_restored"] > 0


def _records(w: Walk) -> None:
    event = {k: v for k, v in WEBHOOK_EVENT.items() if k != "workspace"}
    made = w.call("acme", "POST", "/v1/feedback-events", json=event)
    w.call("acme", "GET", "/v1/feedback-events", params={"agent_id": "codex"})
    w.call("acme", "GET", "/v1/feedback-events/{event_id}", f"/v1/feedback-events/{made['id']}")
    review = {"event_id": made["id"], "final_decision": "adopted", "outcome": "failure"}
    reviewed = w.call("acme", "POST", "/v1/decision-reviews", json=review)
    w.call("acme", "GET", "/v1/decision-reviews", params={"agent_id": "codex"})
    route = "/v1/decision-reviews/{review_id}"
    w.call("acme", "GET", route, f"/v1/decision-reviews/{reviewed['id']}")
    pair = {"context": "Tone", "accepted_output": "Short.", "rejected_output": "Long.", **ALICE}
    paired = w.call("acme", "POST", "/v1/preference-pairs", json=pair)
    w.call("acme", "GET", "/v1/preference-pairs", params=ALICE)
    w.call("acme", "GET", "/v1/preference-pairs/{pair_id}", f"/v1/preference-pairs/{paired['id']}")
    logged = w.call("acme", "POST", "/v1/events", json={"kind": "checkpoint", **ALICE})
    w.call("acme", "GET", "/v1/events", params=ALICE)
    w.call("acme", "GET", "/v1/events/{event_id}", f"/v1/events/{logged['id']}")
    undone = w.call("acme", "POST", "/v1/undo", json={"record_id": made["id"]})
    assert undone["undone"] == [made["id"], reviewed["id"]] and undone["memories_removed"]


def _edits_and_knowledge(w: Walk) -> None:
    (first, *rest) = [
        m["id"] for m in w.call("acme", "GET", "/v1/memories", params=ALICE)["memories"]
    ]
    one = f"/v1/memories/{first}"
    change = {"content": "I live in Paris, France.", "reason": "more precise"}
    w.call("acme", "PATCH", "/v1/memories/{memory_id}", one, json=change)
    w.call("acme", "GET", "/v1/memories/{memory_id}", one)
    history = w.call("acme", "GET", "/v1/memories/{memory_id}/history", f"{one}/history")
    ops = [h["op"] for h in history["history"]]
    assert ops[0] == "add" and ops[-1] == "update" and "supersede" in ops
    text = "Deploys need two approvals. Rollbacks are automatic. " * 30
    kb = w.call("acme", "POST", "/v1/knowledge", json={"name": "runbook", "text": text, **ALICE})
    assert w.call("acme", "GET", "/v1/knowledge", params=ALICE)["knowledge_bases"]
    search = {"query": "How are rollbacks done?", **ALICE}
    assert w.call("acme", "POST", "/v1/knowledge/search", json=search)["results"]
    gone = w.call("acme", "DELETE", "/v1/knowledge/{kb_id}", f"/v1/knowledge/{kb['id']}")
    assert gone == {"kb_id": kb["id"], "deleted": kb["chunk_count"]}
    assert w.call("acme", "DELETE", "/v1/memories/{memory_id}", one) == {"deleted": 1}
    assert w.call("acme", "POST", "/v1/forget", json={"memory_id": rest}) == {"deleted": len(rest)}


@pytest.mark.every_store
def test_every_route_answers_what_its_schema_says(walk: Walk) -> None:
    _memories(walk)
    _learning(walk)
    _records(walk)
    _edits_and_knowledge(walk)
    routes = {(m, p) for p, ops in DOC["paths"].items() for m in ops if p.startswith("/v1/")}
    assert routes - walk.called == set()


def test_answer_schemas_are_generated_from_their_types() -> None:
    schemas = DOC["components"]["schemas"]
    for name, answer in ANSWERS.items():
        assert schemas[name] == model_schema(answer), name
        hints = typing.get_type_hints(answer)
        assert set(schemas[name]["properties"]) == set(hints), name

    class Wider(models.ForgetResult):
        why: NotRequired[Annotated[str, models.Doc("Why they went.")]]

    wider = model_schema(Wider)
    assert wider["required"] == ["deleted"]
    assert wider["properties"]["why"] == {"type": "string", "description": "Why they went."}
    assert model_schema(models.ForgetResult)["properties"].keys() == {"deleted"}


def test_descriptions_and_choices_come_from_the_types() -> None:
    schemas = DOC["components"]["schemas"]
    ids = schemas["AddResult"]["properties"]["ids"]
    assert ids["description"].startswith("One per message")
    reason = schemas["AddResult"]["properties"]["skipped"]["items"]["properties"]["reason"]
    assert reason["enum"] == list(models.SKIP_REASONS)
    assert schemas["UndoResult"]["properties"]["kind"]["enum"] == list(models.UNDO_KINDS)
    assert "refused" in schemas["FeedbackResult"]["properties"]["query"]["description"]
    assert "undone" in schemas["Explanation"]["properties"]["records"]["description"]
    assert schemas["FeedbackResult"]["required"] == [
        "strengthened",
        "weakened",
        "recall_id",
        "query",
        "consumed",
    ]
