"""Who a feedback record reaches: records made without a user are the workspace's (every agent
of it sees their decisions and preferences where they bear on the query); records made by a
user reach only that user's recalls (docs/learning.md, "Who sees a record")."""

from __future__ import annotations

import pytest

from engrammar import Memory

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
