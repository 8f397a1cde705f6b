"""A person's "Wrong" is visible: a memory its own user rejected for a question goes below the
next one for that question (and nearly the same ones), undo brings it back, and "Keep this
one" on the inspector's Tensions page changes what recall answers for that subject."""

from __future__ import annotations

import httpx
import pytest

from engrammar import Memory
from engrammar.keys import create_api_key
from serving import serve_in_thread

pytestmark = pytest.mark.every_store

FACTS = [
    "I live in Paris near the Louvre.",
    "My sister lives in Lyon.",
    "I work from home on Fridays.",
]


def _order(mem: Memory, query: str, **scope: str) -> list[str]:
    return [m.memory.content for m in mem.recall(query, **scope).memories]


def test_three_wrongs_take_the_top_memory_off_the_top_and_undo_puts_it_back(
    real_mem: Memory,
) -> None:
    real_mem.add([{"role": "user", "content": t} for t in FACTS], user_id="u")
    question = "Where do I live?"
    before = _order(real_mem, question, user_id="u")
    assert before[:2] == FACTS[:2]
    top = real_mem.recall(question, user_id="u").memories[0].memory
    # Someone else's rejections keep to their bound (and to their own recalls).
    for _ in range(3):
        r = real_mem.recall(question, user_id="u")
        real_mem.rate_memory(top.id, "rejected", context=question, user_id="v")
    assert _order(real_mem, question, user_id="u") == before
    ratings = []
    for _ in range(3):
        r = real_mem.recall(question, user_id="u")
        ratings.append(real_mem.rate_memory(top.id, "rejected", recall_id=r.recall_id, user_id="u"))
    after = real_mem.recall(question, user_id="u")
    assert [m.memory.content for m in after.memories][:2] == [FACTS[1], FACTS[0]]
    assert after.memories[1].note == "rejected by its user for this question"
    why = real_mem.explain(question, top.id, user_id="u")
    assert why["rank"] == 2 and why["components"]["rejected_by_user"] == 1.0
    # Another question is not touched.
    assert _order(real_mem, "Who lives in Lyon?", user_id="u")[0] == FACTS[1]
    for rating in ratings:
        real_mem.undo(rating.id, user_id="u")
    assert _order(real_mem, question, user_id="u") == before


@pytest.mark.processes
def test_keep_this_one_on_the_tensions_page_changes_the_answer(real_mem: Memory) -> None:
    real_mem.add(
        [{"role": "user", "content": "I live in Paris."}], user_id="u", timestamp="2020-03-01"
    )
    real_mem.add(
        [{"role": "user", "content": "I moved to Berlin."}], user_id="u", timestamp="2024-03-01"
    )
    key = create_api_key(real_mem.store, "default")[0]
    question = {"query": "Where do I live?", "user_id": "u"}
    for base in serve_in_thread(real_mem):
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60
        ) as c:
            first = c.post("/v1/recall", json=question).json()["memories"][0]["memory"]
            assert first["content"] == "I moved to Berlin."
            (tension,) = c.get("/v1/tensions", params={"user_id": "u", "limit": 100}).json()[
                "tensions"
            ]
            keep = next(m for m in (tension["a"], tension["b"]) if m["content"].endswith("Paris."))
            drop = tension["b"] if keep is tension["a"] else tension["a"]
            # What the page's "Keep this one" sends (app.js, resolveTension).
            scope = {"user_id": keep["user_id"]}
            for memory, verdict in ((keep, "accepted"), (drop, "rejected")):
                r = c.post(
                    "/v1/ratings", json={"memory_id": memory["id"], "verdict": verdict, **scope}
                )
                assert r.status_code == 201, r.text
            now = c.post("/v1/recall", json=question).json()["memories"]
            assert now[0]["memory"]["content"] == "I live in Paris."
