"""Bounded work per request: a large embedding call runs in slices that let other calls'
texts through, a message gets at most ``window_limit`` window vectors, and the server gives
each request a deadline (503, nothing written) and each key a cost budget (429)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import httpx
import numpy as np
import pytest
from mcp.types import CallToolResult, TextContent

from engrammar import Config, DeadlineError, HashEmbedder, Memory, ValidationError, deadline
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.interfaces.limits import CostBudget, request_cost
from engrammar.keys import create_api_key
from engrammar.recall.chunks import chunk_spans, message_windows
from serving import mcp_session, serve_in_thread


def _texts(n: int) -> list[str]:
    return [f"Note {i}: the copper budget for quarter {i % 4} moves because the supplier "
            f"{i % 17} is late and the harbour team waits for ticket {i * 31}." for i in
            range(n)]  # fmt: skip


def test_a_small_call_is_embedded_between_the_slices_of_a_large_one(
    minilm: MiniLMEmbedder,
) -> None:
    sliced = MiniLMEmbedder(slice_s=0.02)
    big_texts = _texts(800)
    big_done = threading.Event()
    big_out: list[np.ndarray] = []

    def big() -> None:
        big_out.append(sliced.embed(big_texts))
        big_done.set()

    worker = threading.Thread(target=big)
    worker.start()
    time.sleep(0.3)  # the large call holds the model, a slice at a time
    assert not big_done.is_set()
    small = sliced.embed(["When does the copper shop open?"])
    # Answered while the large call still runs: it waited for one slice, not for all 800.
    assert not big_done.is_set()
    worker.join()
    # Slicing changes nothing in the vectors.
    np.testing.assert_allclose(small, minilm.embed(["When does the copper shop open?"]),
                               atol=1e-5)  # fmt: skip
    np.testing.assert_allclose(big_out[0][::50], minilm.embed(big_texts[::50]), atol=1e-5)


def test_a_large_call_stops_at_its_deadline_between_slices() -> None:
    sliced = MiniLMEmbedder(slice_s=0.02)
    with pytest.raises(DeadlineError, match="request_deadline_s"), deadline.within(0.3):
        sliced.embed(_texts(2000))


@pytest.mark.every_store
def test_an_add_past_its_deadline_writes_nothing(mem: Memory) -> None:
    with pytest.raises(DeadlineError), deadline.within(1e-9):
        time.sleep(0.001)
        mem.add(_texts(20), user_id="alice")
    with pytest.raises(DeadlineError), deadline.within(1e-9):
        time.sleep(0.001)
        mem.add_knowledge("KB", _texts(5), user_id="alice")
    assert mem.list(user_id="alice") == []
    assert mem.list_knowledge(user_id="alice") == []
    assert len(mem.add(_texts(3), user_id="alice")) == 3  # without a deadline all is well


def test_window_vectors_per_message_are_capped() -> None:
    text = "A sentence about the harbour. " * 40_000  # 1.2 million characters
    assert len(message_windows(text, 250, 4)) == 4
    assert message_windows(text, 250, 4) == chunk_spans(text[:2000], 250, 50)[:4]
    with pytest.raises(ValidationError, match="window_limit: must be <= 64"):
        Config(window_limit=65)


def test_cost_budget_lets_a_large_request_through_then_makes_the_key_pay_it_back() -> None:
    budget = CostBudget(rate=100.0, burst=1000)
    assert budget.spend("a", 400, 0.0) == 0
    assert budget.spend("a", 5000, 0.0) > 0  # 600 left: less than a full budget
    assert budget.spend("a", 5000, 4.0) == 0  # full again: let through, 4,000 owed
    assert budget.spend("a", 10, 4.0) == pytest.approx((10 + 4000) / 100)
    assert budget.spend("b", 10, 4.0) == 0  # another key has its own
    assert request_cost({"messages": [{"content": "abc"}, {"content": "de"}], "n": 3}) == 5


def _memory(tmp_path: Path, **settings: object) -> Memory:
    return Memory(Config(path=str(tmp_path / "s"), **settings), embedder=HashEmbedder())


def test_http_answers_503_past_the_deadline_and_writes_nothing(tmp_path: Path) -> None:
    with _memory(tmp_path, request_deadline_s=1e-6) as mem:
        key, _ = create_api_key(mem.store, "default", user_id="alice")
        auth = {"Authorization": f"Bearer {key}"}
        for base in serve_in_thread(mem):
            added = httpx.post(f"{base}/v1/memories", headers=auth, timeout=30,
                               json={"messages": _texts(10)})  # fmt: skip
            assert added.status_code == 503, added.text
            assert added.headers["Retry-After"].isdigit()
            error = added.json()["error"]
            assert (
                error["type"] == "deadline_exceeded" and "nothing was written" in error["message"]
            )
            # A read has nothing to cut and answers as ever; nothing was stored.
            found = httpx.post(f"{base}/v1/search", headers=auth, timeout=30,
                               json={"query": "copper budget"})  # fmt: skip
            assert found.status_code == 200 and found.json()["results"] == []


def test_http_answers_429_over_the_cost_budget_per_key(tmp_path: Path) -> None:
    with _memory(tmp_path, cost_budget_chars_per_s=1.0, cost_budget_chars_burst=2000) as mem:
        alice, _ = create_api_key(mem.store, "default", user_id="alice")
        bob, _ = create_api_key(mem.store, "default", user_id="bob")
        body = {"messages": _texts(20)}  # ~2,600 characters: more than the burst
        for base in serve_in_thread(mem):

            def add(key: str, base: str = base) -> httpx.Response:
                return httpx.post(f"{base}/v1/memories", json=body, timeout=30,
                                  headers={"Authorization": f"Bearer {key}"})  # fmt: skip

            assert add(alice).status_code == 201  # a full budget lets it through
            again = add(alice)
            assert again.status_code == 429 and int(again.headers["Retry-After"]) > 100
            assert "cost_budget_chars_per_s" in again.json()["error"]["message"]
            assert add(bob).status_code == 201  # bob's budget is his own
        assert len(mem.list(user_id="alice")) == 20


def _memwire_add(base: str, key: str, n: int) -> httpx.Response:
    messages = [{"role": "user", "content": text} for text in _texts(n)]
    return httpx.post(f"{base}/v1/memories", headers={"X-API-Key": key}, timeout=30,
                      json={"user_id": "alice", "messages": messages})  # fmt: skip


def test_memwire_routes_answer_503_past_the_deadline_and_write_nothing(tmp_path: Path) -> None:
    with _memory(tmp_path, request_deadline_s=1e-6) as mem:
        key, _ = create_api_key(mem.store, "acme")
        for base in serve_in_thread(mem, memwire_compat=True):
            added = _memwire_add(base, key, 10)
            assert added.status_code == 503, added.text
            assert added.headers["Retry-After"].isdigit()
            message = added.json()["detail"]  # MemWire's error shape
            assert "request_deadline_s" in message and "nothing was written" in message
            # A read has nothing to cut and answers as ever; nothing was stored.
            found = httpx.post(f"{base}/v1/memories/search", headers={"X-API-Key": key},
                               timeout=30, json={"user_id": "alice", "query": "copper"})  # fmt: skip
            assert found.status_code == 200 and found.json() == []
        assert mem.list(user_id="alice", workspace="acme") == []


def test_memwire_routes_answer_429_over_the_cost_budget_per_key(tmp_path: Path) -> None:
    with _memory(tmp_path, cost_budget_chars_per_s=1.0, cost_budget_chars_burst=2000) as mem:
        alice, _ = create_api_key(mem.store, "acme")
        bob, _ = create_api_key(mem.store, "acme")
        for base in serve_in_thread(mem, memwire_compat=True):
            assert _memwire_add(base, alice, 20).status_code == 200  # a full budget: let through
            again = _memwire_add(base, alice, 20)
            assert again.status_code == 429 and int(again.headers["Retry-After"]) > 100
            assert "cost_budget_chars_per_s" in again.json()["detail"]
            # The budget is the key's, on every route (a search costs its query too).
            search = httpx.post(f"{base}/v1/memories/search", headers={"X-API-Key": alice},
                                timeout=30, json={"user_id": "alice", "query": "copper"})  # fmt: skip
            assert search.status_code == 429
            assert _memwire_add(base, bob, 20).status_code == 200  # bob's budget is his own
        assert len(mem.list(user_id="alice", workspace="acme", limit=100)) == 40


def test_mcp_over_http_answers_over_the_cost_budget_per_key(tmp_path: Path) -> None:
    """The per-key budget is one across /v1 and /mcp: a key that spent it over REST is refused
    by MCP's tools, with the wait; another key still adds; nothing refused is stored."""
    with _memory(tmp_path, cost_budget_chars_per_s=1.0, cost_budget_chars_burst=2000) as mem:
        alice, _ = create_api_key(mem.store, "default", user_id="alice")
        bob, _ = create_api_key(mem.store, "default", user_id="bob")
        for base in serve_in_thread(mem):
            outcomes: list[CallToolResult] = []

            async def add(
                key: str, base: str = base, outcomes: list[CallToolResult] = outcomes
            ) -> None:
                async with mcp_session(base, key) as session:
                    for _ in range(2):
                        args = {"messages": [{"content": t} for t in _texts(20)]}
                        outcomes.append(await session.call_tool("memory_add", args))

            anyio.run(add, alice)
            assert [r.is_error for r in outcomes] == [False, True]
            refused = outcomes[1].content[0]
            assert isinstance(refused, TextContent)
            assert refused.text.startswith("RateLimited: this API key's requests are over its "
                                           "cost budget (cost_budget_chars_per_s)")  # fmt: skip
            assert int(refused.text.rsplit("retry in ", 1)[1].split()[0]) > 100
            # Spent over MCP, refused over REST as well: one budget per key.
            rest = httpx.post(f"{base}/v1/memories", json={"messages": _texts(1)}, timeout=30,
                              headers={"Authorization": f"Bearer {alice}"})  # fmt: skip
            assert rest.status_code == 429
            outcomes.clear()
            anyio.run(add, bob)
            assert [r.is_error for r in outcomes] == [False, True]  # bob's budget is his own
        assert len(mem.list(user_id="alice", limit=100)) == 20
        assert len(mem.list(user_id="bob", limit=100)) == 20
