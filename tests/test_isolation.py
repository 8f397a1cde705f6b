"""Isolation, probed at random: a key of one tenant tries every REST operation of the served
OpenAPI document and every MCP tool, with arguments aimed at another tenant (its ids, its
workspace, its users, agents and sessions, its recall ids) mixed with valid values.

The routes and tools are enumerated from the spec and from ``list_tools``, so a new route or
tool is probed without touching this file. Zero leaks means: no response carries a secret of
the victim or a victim id the request did not send itself, no response is a 5xx, and no byte
of the victim's data changes (a digest over every table's victim rows, before and after).
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from engrammar import Config, HashEmbedder, Memory
from engrammar.keys import create_api_key
from engrammar.server import openapi_document
from engrammar.store.tables import COPY_TABLES
from serving import serve_in_thread

pytestmark = pytest.mark.processes

DOC = openapi_document()
PROBES_PER_OPERATION = 12
PROBES_PER_TOOL = 12


@dataclass
class Victim:
    """What one tenant holds that an attacker must never see or change."""

    workspace: str
    user_id: str
    agent_id: str
    session_id: str
    secrets: list[str] = field(default_factory=list)
    ids: dict[str, list[str]] = field(default_factory=dict)

    def all_ids(self) -> set[str]:
        return {i for ids in self.ids.values() for i in ids}


def _seed_victim(mem: Memory, workspace: str, user: str) -> Victim:
    """Every kind of record, each carrying a secret token the attacker never sends."""
    v = Victim(workspace, user, f"agent-{user}", f"session-{user}")

    def secret(text: str) -> str:
        token = f"SECRET{uuid.uuid4().hex[:12]}"
        v.secrets.append(token)
        return f"{text} {token}"

    scope = {"user_id": user, "agent_id": v.agent_id, "session_id": v.session_id}
    ids = mem.add(
        [
            {"role": "user", "content": secret("The secret plan is to deploy on Friday night.")},
            {"role": "assistant", "content": secret("Noted: the secret plan, Friday night.")},
            {"role": "user", "content": secret("The secret budget is nine million.")},
        ],
        workspace=workspace,
        **scope,
    )
    recall = mem.recall("secret plan", workspace=workspace, **scope)
    event = mem.create_feedback_event(
        secret("What is the secret plan?"),
        secret("Deploy on Monday."),
        "corrected",
        user_correction=secret("Friday night."),
        corrected_output=secret("Deploy on Friday night."),
        reason=secret("Because."),
        source_event_id=f"src-{user}",
        workspace=workspace,
        **scope,
    )
    review = mem.create_decision_review(
        event.id, "adopted", reason=secret("On review."), workspace=workspace, user_id=user
    )
    pair = mem.create_preference_pair(
        secret("secret plan context"),
        secret("accepted secret plan"),
        secret("rejected secret plan"),
        workspace=workspace,
        **scope,
    )
    logged = mem.log_event(
        "checkpoint", {"note": secret("secret log")}, workspace=workspace, **scope
    )
    rating = mem.rate_memory(
        ids[0],
        "corrected",
        correction=secret("The secret plan moved to Saturday."),
        recall_id=recall.recall_id,
        workspace=workspace,
        **scope,
    )
    v.ids = {
        "memory": [*ids, rating.correction_memory_id or "", event.decision_memory_id or ""],
        "recall": [recall.recall_id],
        "event": [event.id, logged.id],
        "review": [review.id],
        "pair": [pair.id, pair.memory_id or ""],
        "rating": [rating.id],
    }
    v.ids = {k: [i for i in ids if i] for k, ids in v.ids.items()}
    return v


def _digest(mem: Memory, victim: Victim) -> str:
    """Every row of every table that belongs to the victim (its workspace, or its user within a
    shared workspace, and the edges touching its memories), canonically serialised."""
    memory_ids = {
        row["id"]
        for row in mem.store.export_rows("memories", None, 10**7)[0]
        if row["workspace"] == victim.workspace and row.get("user_id") == victim.user_id
    }
    out = []
    for table in COPY_TABLES:
        for row in mem.store.export_rows(table, None, 10**7)[0]:
            mine = row.get("workspace") == victim.workspace and (
                row.get("user_id") == victim.user_id
                or row.get("src") in memory_ids
                or row.get("dst") in memory_ids
                or row.get("memory_id") in memory_ids
            )
            if mine or (table == "decision_memories" and row["memory_id"] in memory_ids):
                out.append(table + json.dumps(row, sort_keys=True, default=repr))
    return "\n".join(sorted(out))


@dataclass
class Tenancy:
    base: str
    memory: Memory
    keys: dict[str, str]
    victims: dict[str, list[Victim]]  # attacker -> the tenants it must not reach
    own: dict[str, dict[str, list[str]]]  # attacker -> ids of its own records


@pytest.fixture(scope="module")
def tenancy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenancy]:
    path = tmp_path_factory.mktemp("iso") / "store"
    memory = Memory(Config(path=str(path)), embedder=HashEmbedder())
    keys = {
        "a": create_api_key(memory.store, "team-a")[0],
        "alice": create_api_key(memory.store, "team-a", user_id="alice")[0],
    }
    other_ws = _seed_victim(memory, "team-b", "zed")
    bob = _seed_victim(memory, "team-a", "bob")
    mine = _seed_victim(memory, "team-a", "alice")  # the attackers' own data, not secret
    for victim in (other_ws, bob):  # the detectors see the victim's data when it is shown
        assert _digest(memory, victim).count("\n") > 10
        shown = memory.get(victim.ids["memory"][0], workspace=victim.workspace).to_dict()
        assert _leaks(json.dumps(shown), victim, sent="")
    for base in serve_in_thread(memory):
        yield Tenancy(
            base,
            memory,
            keys,
            victims={"a": [other_ws], "alice": [other_ws, bob]},
            own={"a": mine.ids, "alice": mine.ids},
        )
    memory.close()


# -- argument generation ---------------------------------------------------------------------------
ID_KINDS = {
    "memory_id": "memory",
    "recall_id": "recall",
    "event_id": "event",
    "review_id": "review",
    "pair_id": "pair",
    "rating_id": "rating",
}
TEXT = {
    "query": ["secret plan", "secret budget", "Friday night deploy", '"secret" OR *'],
    "content": ["A harmless note about the plan."],
    "response": ["The secret plan is to deploy on Friday night."],
}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref:
        return _resolve(DOC["components"]["schemas"][ref.rsplit("/", 1)[1]])
    return schema


def _value(
    name: str, schema: dict[str, Any], rng: random.Random, victim: Victim, own: dict[str, list[str]]
) -> Any:
    """An argument aimed at the victim when it names a tenant or a record, else a valid one."""
    schema = _resolve(schema)
    if name in ID_KINDS:
        pool = victim.ids.get(ID_KINDS[name], []) + [i for ids in victim.ids.values() for i in ids]
        if rng.random() < 0.2 and own.get(ID_KINDS[name]):
            return rng.choice(own[ID_KINDS[name]])  # own id, maybe with the victim's scope
        chosen = rng.choice(pool)
        if name == "memory_id" and rng.random() < 0.3 and "anyOf" in schema:
            return [chosen, rng.choice(pool)]
        return chosen
    if name == "workspace":
        return victim.workspace
    if name in ("user_id", "agent_id", "session_id"):
        return getattr(victim, name)
    if name in TEXT:
        return rng.choice(TEXT[name])
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        options = [o for o in options if o.get("type") != "null"]
        return _value(name, rng.choice(options), rng, victim, own)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "integer":
        return rng.randint(1, 20)
    if kind == "number":
        return round(rng.uniform(0.1, 1.0), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        if name == "messages":
            return [{"role": "user", "content": "A harmless message about the plan."}]
        return []
    if kind == "object" or name in ("metadata", "payload"):
        return {"probe": True}
    if schema.get("format") == "date-time" or name == "timestamp":
        return "2025-01-01T00:00:00Z"
    return "probe text about the secret plan"


def _arguments(
    props: dict[str, Any],
    required: set[str],
    rng: random.Random,
    victim: Victim,
    own: dict[str, list[str]],
) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for name, schema in props.items():
        if name in required or name in ID_KINDS or rng.random() < 0.5:
            args[name] = _value(name, schema, rng, victim, own)
    if "content" in args and "messages" in args:
        del args[rng.choice(["content", "messages"])]
    return args


def _rest_operations() -> list[tuple[str, str, dict[str, Any]]]:
    ops = []
    for path, methods in DOC["paths"].items():
        for method, op in methods.items():
            if not op.get("security", [{}]):
                continue  # public: /healthz
            ops.append((path, method, op))
    return ops


def _rest_probe(
    path: str, method: str, op: dict[str, Any], rng: random.Random, victim: Victim, own: Any
) -> tuple[str, dict[str, Any]]:
    url = path
    query: dict[str, Any] = {}
    for param in op.get("parameters", []):
        name = param["name"]
        if param["in"] == "path":
            url = url.replace(
                "{" + name + "}", str(_value(name, param["schema"], rng, victim, own))
            )
        elif name in ID_KINDS or name in ("workspace", "user_id", "agent_id", "session_id"):
            if rng.random() < 0.7:
                query[name] = _value(name, param["schema"], rng, victim, own)
        elif rng.random() < 0.3:
            query[name] = _value(name, param["schema"], rng, victim, own)
    kwargs: dict[str, Any] = {"params": query}
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    if body:
        schema = _resolve(body["schema"])
        kwargs["json"] = _arguments(
            schema.get("properties", {}), set(schema.get("required", [])), rng, victim, own
        )
    return url, kwargs


def _leaks(text: str, victim: Victim, sent: str) -> list[str]:
    found = [s for s in victim.secrets if s in text]
    found += [i for i in victim.all_ids() if i in text and i not in sent]
    return found


def test_rest_probes_by_every_route_leak_nothing(tenancy: Tenancy) -> None:
    ops = _rest_operations()
    probed = set()
    rng = random.Random(2026)
    before = {id(v): _digest(tenancy.memory, v) for vs in tenancy.victims.values() for v in vs}
    statuses: dict[int, int] = {}
    for who, victims in tenancy.victims.items():
        headers = {"Authorization": f"Bearer {tenancy.keys[who]}"}
        with httpx.Client(base_url=tenancy.base, headers=headers, timeout=30) as client:
            for path, method, op in ops:
                for _ in range(PROBES_PER_OPERATION):
                    victim = rng.choice(victims)
                    url, kwargs = _rest_probe(path, method, op, rng, victim, tenancy.own[who])
                    r = client.request(method.upper(), url, **kwargs)
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                    sent = url + json.dumps(kwargs)
                    where = f"{who}: {method.upper()} {url} {kwargs}"
                    assert r.status_code < 500, f"{where} -> {r.status_code} {r.text[:300]}"
                    assert not _leaks(r.text, victim, sent), f"{where} leaked: {r.text[:500]}"
                    probed.add((path, method))
    assert probed == {(p, m) for p, m, _ in ops}
    for vs in tenancy.victims.values():
        for v in vs:
            assert _digest(tenancy.memory, v) == before[id(v)], f"{v.workspace}/{v.user_id} changed"
    # The probes were refused for the right reasons, and some valid ones went through.
    assert statuses.get(403, 0) > 0 and statuses.get(404, 0) > 0, statuses
    assert sum(n for s, n in statuses.items() if s < 300) > 0, statuses
    print("REST probe statuses", sorted(statuses.items()))


def test_mcp_probes_by_every_tool_leak_nothing(tenancy: Tenancy) -> None:
    rng = random.Random(2027)
    before = {id(v): _digest(tenancy.memory, v) for vs in tenancy.victims.values() for v in vs}
    outcomes = {"ok": 0, "error": 0}

    async def run(who: str) -> None:
        headers = {"Authorization": f"Bearer {tenancy.keys[who]}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(f"{tenancy.base}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            assert tools
            for tool in tools:
                props = tool.input_schema.get("properties", {})
                required = set(tool.input_schema.get("required", []))
                for _ in range(PROBES_PER_TOOL):
                    victim = rng.choice(tenancy.victims[who])
                    args = _arguments(props, required, rng, victim, tenancy.own[who])
                    result = await session.call_tool(tool.name, args)
                    outcomes["error" if result.is_error else "ok"] += 1
                    text = json.dumps(
                        [c.model_dump() for c in result.content]
                        + [result.structured_content or {}],
                        default=str,
                    )
                    leaked = _leaks(text, victim, json.dumps(args))
                    assert not leaked, f"{who}: {tool.name}({args}) leaked {leaked}: {text[:400]}"
                    assert "Traceback" not in text

    for who in tenancy.victims:
        anyio.run(run, who)
    for vs in tenancy.victims.values():
        for v in vs:
            assert _digest(tenancy.memory, v) == before[id(v)], f"{v.workspace}/{v.user_id} changed"
    assert outcomes["ok"] > 0 and outcomes["error"] > 0, outcomes
    print("MCP probe outcomes", outcomes)
