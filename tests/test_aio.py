"""AsyncMemory: Memory's whole public surface as coroutines, under real concurrency in one loop."""

from __future__ import annotations

import asyncio
import inspect
import io
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import engrammar
from backends import config_for
from engrammar import AsyncMemory, Config, HashEmbedder, Memory, StoreError, ValidationError


def _public(cls: type) -> set[str]:
    return {
        name
        for name, value in inspect.getmembers(cls)
        if not name.startswith("_") and inspect.isfunction(value)
    }


def test_the_async_surface_is_memorys_public_surface() -> None:
    public = _public(Memory)
    assert {"add_knowledge", "list_feedback_events", "timeline"} <= public
    assert len(public) > 30
    missing = public - _public(AsyncMemory)
    assert not missing, f"AsyncMemory lacks {sorted(missing)}: add `name = awaitable(Memory.name)`"
    assert _public(AsyncMemory) - public == {"aclose"}
    for name in public:
        method = getattr(AsyncMemory, name)
        assert inspect.iscoroutinefunction(method), name
        if name == "close":
            continue
        sync = getattr(Memory, name)
        assert inspect.signature(method) == inspect.signature(sync), name
        assert method.__doc__ == sync.__doc__ and method.__doc__, name
        assert method.__qualname__ == f"AsyncMemory.{name}"
    assert engrammar.AsyncMemory is AsyncMemory and "AsyncMemory" in engrammar.__all__


def test_every_method_awaits_and_answers_as_memory_does(tmp_path: Path) -> None:
    """A tour through every public method, awaited; reads compare with the sync Memory."""
    called: set[str] = set()

    async def tour() -> None:
        async with AsyncMemory(Config(path=str(tmp_path)), embedder=HashEmbedder()) as amem:

            def call(name: str) -> Callable[..., Awaitable[Any]]:
                called.add(name)
                method = getattr(amem, name)
                assert inspect.iscoroutinefunction(method)
                return method  # type: ignore[no-any-return]

            sync = amem.sync
            ids = await call("add")(
                ["I write docs before code.", "Long meetings tire me.", "I like tea, not coffee."],
                user_id="alice",
            )
            assert len(ids) == 3
            assert await call("get")(ids[0]) == sync.get(ids[0])
            updated = await call("update")(ids[0], "I write docs before any code.", reason="r")
            assert updated.content == "I write docs before any code."
            assert [m.id for m in await call("list")(user_id="alice")] == ids
            assert len(await call("history")(ids[0])) == len(sync.history(ids[0])) >= 1
            assert (await call("stats")(user_id="alice"))["memories"] == 3
            hits = await call("search")("meetings", user_id="alice")
            assert hits[0].memory.id == ids[1]
            result = await call("recall")("How do you write docs?", user_id="alice")
            assert result.memories and await call("has_recall")(result.recall_id)
            explained = await call("explain")("meetings", ids[1], user_id="alice")
            assert explained == sync.explain("meetings", ids[1], user_id="alice")
            rating = await call("rate_memory")(ids[1], "accepted", recall_id=result.recall_id)
            assert await call("get_memory_rating")(rating.id) == rating
            assert await call("list_memory_ratings")(user_id="alice") == [rating]
            learned = await call("feedback")("You write the docs first.", user_id="alice")
            assert learned["recall_id"] == result.recall_id and learned["consumed"] is True
            event = await call("create_feedback_event")(
                "Name the cat", "Whiskers", "corrected", corrected_output="Miso", user_id="alice"
            )
            assert await call("get_feedback_event")(event.id) == event
            assert await call("list_feedback_events")(user_id="alice") == [event]
            review = await call("create_decision_review")(event.id, "adopted", "success")
            assert await call("get_decision_review")(review.id) == review
            assert await call("list_decision_reviews")(user_id="alice") == [review]
            pair = await call("create_preference_pair")("Cats", "Miso", "Rex", user_id="alice")
            assert await call("get_preference_pair")(pair.id) == pair
            assert await call("list_preference_pairs")(user_id="alice") == [pair]
            logged = await call("log_event")("checkpoint", {"step": 1}, user_id="alice")
            assert await call("get_logged_event")(logged.id) == logged
            assert await call("list_logged_events")(user_id="alice") == [logged]
            assert await call("scopes")() == sync.scopes()
            assert (await call("find_memories")(user_id="alice", text="tea"))["total"] == 1
            assert await call("memory_edges")(ids[0]) == sync.memory_edges(ids[0])
            assert await call("memory_learning")(ids[1]) == sync.memory_learning(ids[1])
            assert await call("timeline")(user_id="alice") == sync.timeline(user_id="alice")
            assert await call("rank_shifts")(user_id="alice") == sync.rank_shifts(user_id="alice")
            assert await call("tensions")(user_id="alice") == sync.tensions(user_id="alice")
            assert await call("undo")(rating.id)
            assert await call("list_memory_ratings")(user_id="alice") == []
            kb = await call("add_knowledge")(
                "handbook", ["Tea is served at four."], user_id="alice"
            )
            assert await call("list_knowledge")(user_id="alice") == [kb]
            found = await call("search_knowledge")("When is tea?", user_id="alice")
            assert [c.content for c in found] == ["Tea is served at four."]
            assert await call("delete_knowledge")(kb.id, user_id="alice") == 1
            dump = io.StringIO()
            held = len(sync.list(user_id="alice"))  # the three, and the recorded decisions
            assert await call("export")(dump, user_id="alice") == held > 3
            dump.seek(0)
            imported = await call("import_")(dump, workspace="copy")
            assert imported["memories"] + imported["duplicates"] == held
            assert await call("forget")(ids[2]) == 1
            with pytest.raises(ValidationError) as bad:
                await call("recall")("   ", user_id="alice")
            assert bad.value.field == "query"
            await call("close")()
            with pytest.raises(StoreError, match="closed"):
                await amem.stats()

    asyncio.run(tour())
    assert called == _public(Memory)


def test_arguments_are_checked() -> None:
    with pytest.raises(ValidationError) as bad:
        AsyncMemory(memory=None, max_workers=0)
    assert bad.value.field == "max_workers"


def test_a_wrapped_memory_stays_open(tmp_path: Path) -> None:
    with Memory(Config(path=str(tmp_path)), embedder=HashEmbedder()) as mem:
        with pytest.raises(ValidationError) as both:
            AsyncMemory(Config(path=str(tmp_path)), memory=mem)
        assert both.value.field == "memory"

        async def use() -> list[str]:
            async with AsyncMemory(memory=mem) as amem:
                ids: list[str] = await amem.add("kept", user_id="u")
                return ids

        ids = asyncio.run(use())
        assert mem.get(ids[0]).content == "kept"  # still open after the async with
        with pytest.raises(ValidationError) as wrong:
            AsyncMemory(memory="not a memory")  # type: ignore[arg-type]
        assert wrong.value.field == "memory"


def test_open_inside_a_running_loop(tmp_path: Path) -> None:
    async def run() -> str:
        async with await AsyncMemory.open(
            Config(path=str(tmp_path)), embedder=HashEmbedder(), max_workers=2
        ) as amem:
            (mid,) = await amem.add("opened off the loop", user_id="u")
            return str((await amem.get(mid)).content)

    assert asyncio.run(run()) == "opened off the loop"


@pytest.mark.every_store
def test_many_calls_at_once_lose_nothing(mem: Memory) -> None:
    """40 users each add, recall, rate and reply, all interleaved in one event loop."""
    users = [f"user{i}" for i in range(40)]

    async def one_user(amem: AsyncMemory, user: str) -> tuple[str, list[str], dict[str, Any]]:
        ids = await amem.add(
            [f"{user} keeps a pet called {user}-pet.", f"{user} drinks green tea."], user_id=user
        )
        result = await amem.recall("what pet?", user_id=user)
        assert {m.memory.user_id for m in result.memories} == {user}
        await amem.rate_memory(ids[0], "accepted", recall_id=result.recall_id, user_id=user)
        reply = await amem.feedback(f"Your pet is {user}-pet.", user_id=user)
        assert reply["recall_id"] == result.recall_id
        return user, ids, reply

    async def run() -> list[tuple[str, list[str], dict[str, Any]]]:
        amem = AsyncMemory(memory=mem, max_workers=4)
        try:
            return await asyncio.gather(*(one_user(amem, u) for u in users))
        finally:
            await amem.aclose()

    done = asyncio.run(run())
    assert [user for user, _, _ in done] == users
    every_id = [i for _, ids, _ in done for i in ids]
    assert len(set(every_id)) == 2 * len(users)
    for user, ids, reply in done:
        assert [m.id for m in mem.list(user_id=user)] == ids
        assert [r.memory_id for r in mem.list_memory_ratings(user_id=user)] == [ids[0]]
        assert reply["consumed"] is True
        assert mem.stats(user_id=user)["memories"] == 2


class _TickGate(HashEmbedder):
    """Embeds only once the event loop has ticked ``ticks`` times since the add began: a loop
    blocked by the add could not tick, and the add would wait in vain (60 s, then fail)."""

    def __init__(self) -> None:
        super().__init__()
        self.ticked = threading.Event()
        self.waited: list[bool] = []

    def embed(self, texts: Any) -> Any:
        self.waited.append(self.ticked.wait(60))
        return super().embed(texts)


@pytest.mark.every_store
def test_the_loop_keeps_running_while_a_long_add_runs(location: str) -> None:
    """A ticker coroutine ticks while 1,000 messages are embedded and written: the embedder
    waits for ten ticks made after the add began, so the add finishes only if the loop ran
    meanwhile (however fast or slow the machine)."""
    messages = [f"message {i} about topic {i % 17}" for i in range(1000)]
    gate = _TickGate()

    async def run() -> list[str]:
        ticks = 0
        began: int | None = None
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                if began is not None and ticks - began >= 10:
                    gate.ticked.set()
                await asyncio.sleep(0.001)

        async with AsyncMemory(config_for(location), embedder=gate) as amem:
            task = asyncio.create_task(ticker())
            await asyncio.sleep(0)  # the ticker's first tick
            began = ticks
            ids = await amem.add(messages, user_id="u")
            stop.set()
            await task
            assert (await amem.stats(user_id="u"))["memories"] == len(messages)
        return ids

    ids = asyncio.run(run())
    assert len(ids) == len(messages)
    assert gate.waited and all(gate.waited)


@pytest.mark.model
def test_the_readme_recipe_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README's Async block, as written (inside a coroutine), in a fresh folder, real model."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index("### Async")
    block = readme[start:].split("```python\n", 1)[1].split("```", 1)[0]
    body = "".join(f"    {line}\n" for line in block.splitlines())
    namespace: dict[str, Any] = {}
    exec(f"async def recipe():\n{body}    return ids, result\n", namespace)
    monkeypatch.chdir(tmp_path)
    ids, result = asyncio.run(namespace["recipe"]())
    assert [m.memory.id for m in result.memories] == ids
    assert (tmp_path / "data" / "engrammar.db").exists()


def test_cancelling_drops_a_waiting_call_and_lets_a_running_one_land(tmp_path: Path) -> None:
    many = [f"long message {i}" for i in range(400)]

    async def run() -> None:
        async with AsyncMemory(
            Config(path=str(tmp_path)), embedder=HashEmbedder(), max_workers=1
        ) as amem:
            running = asyncio.create_task(amem.add(many, user_id="u"))
            await asyncio.sleep(0)
            while amem._executor._work_queue.qsize():  # until the one worker thread takes it
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.005)
            waiting = asyncio.create_task(amem.add("never stored", user_id="v"))
            await asyncio.sleep(0)
            running.cancel()
            waiting.cancel()
            for task in (running, waiting):
                with pytest.raises(asyncio.CancelledError):
                    await task
            # The next call queues behind the running one, so it sees it finished.
            assert (await amem.stats(user_id="u"))["memories"] == len(many)
            assert (await amem.stats(user_id="v"))["memories"] == 0

    asyncio.run(run())
