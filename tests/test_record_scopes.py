"""Who a feedback record reaches: records made without a user are the workspace's (every agent
of it sees their decisions and preferences where they bear on the query); records made by a
user reach only that user's recalls (docs/learning.md, "Who sees a record")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession

from engrammar import Memory
from engrammar.keys import create_api_key
from examples import WEBHOOK_EVENT
from serving import keyed_client, mcp_session, serve_in_thread

pytestmark = pytest.mark.every_store

POLICY = "Refunds above 500 euros need a second approver from finance."
BOBS = "Bob sends refunds above 500 euros through the finance approval queue."
QUESTION = "Who has to approve a refund above 500 euros?"
ALICES = "Anyone on the support team may approve any refund."


def _ranked(mem: Memory, **scope: str) -> list[tuple[str, float]]:
    found = mem.recall(QUESTION, workspace="shop", **scope)
    return [(m.memory.content, round(m.score, 6)) for m in found.memories]


def test_a_users_records_reach_only_that_users_recalls(real_mem: Memory) -> None:
    real_mem.add([{"role": "user", "content": POLICY}], workspace="shop", agent_id="ops")
    real_mem.add(
        [{"role": "user", "content": BOBS}], workspace="shop", agent_id="ops", user_id="bob"
    )
    before = _ranked(real_mem, agent_id="ops")
    assert [c for c, _ in before][:2] == [POLICY, BOBS]

    # Alice names the others' texts as what she rejects, and her own as what she prefers.
    for rejected in (POLICY, BOBS):
        real_mem.create_preference_pair(
            QUESTION, ALICES, rejected, user_id="alice", workspace="shop", agent_id="ops"
        )
        real_mem.create_feedback_event(
            QUESTION, rejected, "rejected", user_id="alice", workspace="shop", agent_id="ops"
        )

    # A recall made without her is ranked exactly as before: nothing demoted, nothing added.
    assert _ranked(real_mem, agent_id="ops") == before
    assert _ranked(real_mem, agent_id="ops", user_id="bob")[0][0] == BOBS
    # Her own recalls do learn from them.
    assert _ranked(real_mem, user_id="alice")[0][0] == ALICES


def test_a_users_rating_reaches_only_that_users_recalls(real_mem: Memory) -> None:
    real_mem.add(
        [{"role": "user", "content": BOBS}], workspace="shop", agent_id="ops", user_id="bob"
    )
    real_mem.add([{"role": "user", "content": POLICY}], workspace="shop", agent_id="ops")
    before = _ranked(real_mem, agent_id="ops")
    top = real_mem.recall(QUESTION, workspace="shop", agent_id="ops").memories[0]
    for _ in range(3):
        real_mem.rate_memory(
            top.memory.id, "rejected", context=QUESTION, workspace="shop", user_id="alice"
        )
    assert _ranked(real_mem, agent_id="ops") == before


# -- decisions recorded without a user are the workspace's -----------------------------------------
ASKED = "How should the payment notification sender retry failed deliveries?"
DECIDED = WEBHOOK_EVENT["corrected_output"]
CLAUDES = [
    "The webhook sender lives in notifier/send.py and posts JSON to each subscriber.",
    "Retries for the webhook sender are configured in settings.yaml.",
    "The payments dashboard shows failed deliveries per merchant.",
]
CODEX_CHAT = "Codex notes: the staging database was reset on Monday."


def _mcp(base: str, key: str, body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        async with mcp_session(base, key) as session:
            return await body(session)

    return anyio.run(run)


@pytest.mark.processes
def test_the_next_agent_of_the_workspace_starts_from_the_decision(real_mem: Memory) -> None:
    key = create_api_key(real_mem.store, "payments-api")[0]
    for text in CLAUDES:
        real_mem.add(
            [{"role": "user", "content": text}], workspace="payments-api", agent_id="claude"
        )
    real_mem.add(
        [{"role": "user", "content": CODEX_CHAT}], workspace="payments-api", agent_id="codex"
    )
    for base in serve_in_thread(real_mem):
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as c:
            created = c.post("/v1/feedback-events", json=WEBHOOK_EVENT)
            assert created.status_code == 201, created.text
            event = created.json()
            assert event["user_id"] is None and event["agent_id"] == "codex"

            # Python: the other agent of the workspace gets the decision first, with its reason.
            found = real_mem.recall(ASKED, workspace="payments-api", agent_id="claude")
            top = found.memories[0]
            assert top.memory.content == DECIDED and top.memory.id == event["decision_memory_id"]
            assert top.note is not None and "4xx" in top.note
            assert {m.memory.content for m in found.memories} >= set(CLAUDES[:2])
            # ... and explain reads it in that agent's scope too.
            why = real_mem.explain(
                ASKED, event["decision_memory_id"], workspace="payments-api", agent_id="claude"
            )
            assert why["rank"] == 1 and why["in_results"]

            # REST.
            r = c.post("/v1/recall", json={"query": ASKED, "agent_id": "claude"})
            assert r.status_code == 200, r.text
            assert r.json()["memories"][0]["memory"]["content"] == DECIDED

            # MCP.
            async def recall(s: ClientSession) -> Any:
                return await s.call_tool("memory_recall", {"query": ASKED, "agent_id": "claude"})

            answer = _mcp(base, key, recall)
            assert not answer.is_error
            assert answer.structured_content["memories"][0]["memory"]["content"] == DECIDED

            # A conversation keeps its agent's scope: what codex was told stays codex's.
            for scope in ({"agent_id": "claude"}, {"agent_id": "claude", "user_id": "dana"}):
                r = c.post("/v1/recall", json={"query": "Was the staging database reset?", **scope})
                shown = [m["memory"]["content"] for m in r.json()["memories"]]
                assert CODEX_CHAT not in shown
            # The workspace's decision reaches a user's recall as well.
            r = c.post("/v1/recall", json={"query": ASKED, "agent_id": "claude", "user_id": "dana"})
            assert r.json()["memories"][0]["memory"]["content"] == DECIDED


@pytest.mark.processes
def test_a_user_bound_keys_records_leave_other_recalls_alone(real_mem: Memory) -> None:
    org = create_api_key(real_mem.store, "shop")[0]
    alice = create_api_key(real_mem.store, "shop", user_id="alice")[0]
    real_mem.add([{"role": "user", "content": POLICY}], workspace="shop", agent_id="ops")
    real_mem.add(
        [{"role": "user", "content": BOBS}], workspace="shop", agent_id="ops", user_id="bob"
    )
    for base in serve_in_thread(real_mem):
        with keyed_client(base, org) as c, keyed_client(base, alice) as a:

            def ranked() -> list[str]:
                r = c.post("/v1/recall", json={"query": QUESTION, "agent_id": "ops"})
                return [m["memory"]["content"] for m in r.json()["memories"]]

            before = ranked()
            assert before[:2] == [POLICY, BOBS]
            top = c.post("/v1/recall", json={"query": QUESTION, "agent_id": "ops"}).json()
            rated = a.post(
                "/v1/ratings",
                json={"memory_id": top["memories"][0]["memory"]["id"], "verdict": "rejected"},
            )
            assert rated.status_code == 404  # not hers to rate
            for rejected in (POLICY, BOBS):
                pair = {"context": QUESTION, "accepted_output": ALICES, "rejected_output": rejected}
                assert a.post("/v1/preference-pairs", json=pair).status_code == 201
                event = {"input_context": QUESTION, "ai_output": rejected, "state": "rejected"}
                assert a.post("/v1/feedback-events", json=event).status_code == 201

            async def recall(s: ClientSession) -> Any:
                return await s.call_tool("memory_recall", {"query": QUESTION, "agent_id": "ops"})

            assert ranked() == before
            by_mcp = _mcp(base, org, recall).structured_content["memories"]
            assert [m["memory"]["content"] for m in by_mcp] == before
            mine = a.post("/v1/recall", json={"query": QUESTION}).json()["memories"]
            assert mine[0]["memory"]["content"] == ALICES


@pytest.mark.processes
def test_a_user_bound_key_reads_and_rates_the_workspaces_decision_but_cannot_change_it(
    real_mem: Memory,
) -> None:
    org = create_api_key(real_mem.store, "payments-api")[0]
    dana = create_api_key(real_mem.store, "payments-api", user_id="dana")[0]
    for base in serve_in_thread(real_mem):
        with keyed_client(base, org) as c, keyed_client(base, dana) as d:
            event = c.post("/v1/feedback-events", json=WEBHOOK_EVENT).json()
            decision = event["decision_memory_id"]
            seen = d.post("/v1/recall", json={"query": ASKED}).json()
            assert seen["memories"][0]["memory"]["id"] == decision
            assert d.get(f"/v1/memories/{decision}").status_code == 200
            assert d.get(f"/v1/memories/{decision}/history").status_code == 200
            why = d.post("/v1/explain", json={"query": ASKED, "memory_id": decision})
            assert why.status_code == 200 and why.json()["rank"] == 1
            rated = d.post(
                "/v1/ratings",
                json={"memory_id": decision, "verdict": "accepted", "recall_id": seen["recall_id"]},
            )
            assert rated.status_code == 201, rated.text
            assert d.patch(f"/v1/memories/{decision}", json={"content": "x"}).status_code == 404
            assert d.delete(f"/v1/memories/{decision}").status_code == 404
            assert d.post("/v1/forget", json={"memory_id": decision}).status_code == 404
    assert real_mem.get(decision, workspace="payments-api").content == DECIDED


def test_a_users_replies_reach_only_that_users_recalls(real_mem: Memory) -> None:
    """The implicit signals of ``feedback(response=...)`` on a user's recall are that user's."""
    first, second = "Refunds are approved by the shift lead.", "Refund approvals take two days."
    real_mem.add(
        [{"role": "user", "content": first}], workspace="shop", agent_id="ops", user_id="alice"
    )
    real_mem.add(
        [{"role": "user", "content": second}], workspace="shop", agent_id="ops", user_id="alice"
    )
    asked = "Who approves refunds?"
    before = [
        m.memory.content for m in real_mem.recall(asked, workspace="shop", agent_id="ops").memories
    ]
    assert before[:2] == [first, second]
    for _ in range(3):
        r = real_mem.recall(asked, workspace="shop", user_id="alice")
        real_mem.feedback(response=second, workspace="shop", user_id="alice", recall_id=r.recall_id)
    mine = real_mem.recall(asked, workspace="shop", user_id="alice").memories
    assert any(m.components.get("learned", 0.0) != 0.0 for m in mine)
    others = real_mem.recall(asked, workspace="shop", agent_id="ops").memories
    assert [m.memory.content for m in others] == before
    assert all(m.components.get("learned", 0.0) == 0.0 for m in others)
