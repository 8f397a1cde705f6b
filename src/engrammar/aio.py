"""``AsyncMemory``: every method of :class:`~engrammar.Memory` as an ``async def``.

One mechanism, :func:`awaitable`, turns a ``Memory`` method into a coroutine function that runs
the call on a bounded pool of worker threads, so an event loop keeps running while a call
embeds, writes or ranks. Each method below is ``awaitable(Memory.<name>)``: its parameters,
return type (what the coroutine returns), name and docstring are ``Memory``'s own, for
``help()``, ``inspect.signature`` and type checkers alike; nothing is restated by hand.
``tests/test_aio.py`` holds the class to ``Memory``'s public surface, so a new ``Memory`` method
is one line here, and the test names it when it is missing.

    async with AsyncMemory(Config(path="./data")) as mem:
        ids = await mem.add("I write docs before code.", user_id="alice")
        result = await mem.recall("How do you work?", user_id="alice")
        await mem.feedback("You write the docs first.", user_id="alice")

``Memory`` is safe to call from several threads (the store serialises writes), so concurrent
awaits on one ``AsyncMemory`` are fine; at most ``max_workers`` run at once and the rest wait
their turn, as requests do in ``engrammar serve``. Cancelling an await does not stop a call
already running on its thread: the call finishes (a write still lands whole) and its result is
dropped; a call still waiting for a thread is not run.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, ParamSpec, TypeVar

from .config import Config
from .embed import Embedder
from .errors import StoreError, ValidationError
from .memory import Memory
from .store import Backend

__all__ = ["AsyncMemory", "awaitable"]

P = ParamSpec("P")
R = TypeVar("R")


def awaitable(
    method: Callable[Concatenate[Memory, P], R],
) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    """``Memory.<name>`` as a coroutine method of :class:`AsyncMemory`: same parameters, same
    docstring, returns what the sync method returns; runs on the instance's worker threads."""
    name = method.__name__

    @functools.wraps(method)
    async def run(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if self._closed:
            raise StoreError(f"AsyncMemory.{name}: this AsyncMemory is closed")
        bound = getattr(self.sync, name)
        call = functools.partial(contextvars.copy_context().run, bound, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    run.__module__ = __name__
    run.__qualname__ = f"AsyncMemory.{name}"
    return run


class AsyncMemory:
    """:class:`~engrammar.Memory` for ``asyncio``: the same methods, each ``async def``.

    Args:
        config, embedder, store: as for :class:`~engrammar.Memory`, which this opens (and
            closes in :meth:`aclose`).
        memory: an open ``Memory`` to wrap instead; :meth:`aclose` leaves it open.
        max_workers: how many calls run at once on worker threads (default 4); more wait.

    Example:
        >>> async with AsyncMemory(Config(path="./data")) as mem:
        ...     await mem.add("I write docs before code.", user_id="alice")
        ...     (await mem.recall("How do you work?", user_id="alice")).formatted
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        embedder: Embedder | None = None,
        store: Backend | None = None,
        memory: Memory | None = None,
        max_workers: int = 4,
    ) -> None:
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValidationError("max_workers", f"must be an integer >= 1, got {max_workers!r}")
        if memory is not None and not isinstance(memory, Memory):
            raise ValidationError("memory", f"must be an engrammar Memory, got {memory!r}")
        if memory is not None and any(x is not None for x in (config, embedder, store)):
            raise ValidationError(
                "memory", "give an open Memory or what to open one with, not both"
            )
        self._owns = memory is None
        #: The synchronous ``Memory`` every call runs on.
        self.sync: Memory = (
            memory if memory is not None else Memory(config, embedder=embedder, store=store)
        )
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="engrammar-async")
        self._closed = False

    @classmethod
    async def open(
        cls,
        config: Config | None = None,
        *,
        embedder: Embedder | None = None,
        store: Backend | None = None,
        max_workers: int = 4,
    ) -> AsyncMemory:
        """Open one from inside a running loop: opening loads the model and the store, which
        blocks, so this does it on a worker thread (``AsyncMemory(...)`` blocks the loop)."""
        make = functools.partial(
            cls, config, embedder=embedder, store=store, max_workers=max_workers
        )
        return await asyncio.to_thread(make)

    @property
    def config(self) -> Config:
        """The settings of the wrapped ``Memory``."""
        return self.sync.config

    async def aclose(self) -> None:
        """Wait for the calls in flight, stop the worker threads and close the store (unless the
        ``Memory`` was passed in). Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(self._executor.shutdown, wait=True))
        if self._owns:
            await loop.run_in_executor(None, self.sync.close)

    #: ``Memory.close``'s counterpart: the same as :meth:`aclose`.
    close = aclose

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # Every public method of Memory (tests/test_aio.py checks that none is missing).
    add = awaitable(Memory.add)
    update = awaitable(Memory.update)
    forget = awaitable(Memory.forget)
    get = awaitable(Memory.get)
    list = awaitable(Memory.list)
    history = awaitable(Memory.history)
    stats = awaitable(Memory.stats)
    search = awaitable(Memory.search)
    recall = awaitable(Memory.recall)
    feedback = awaitable(Memory.feedback)
    explain = awaitable(Memory.explain)
    create_feedback_event = awaitable(Memory.create_feedback_event)
    create_decision_review = awaitable(Memory.create_decision_review)
    create_preference_pair = awaitable(Memory.create_preference_pair)
    log_event = awaitable(Memory.log_event)
    rate_memory = awaitable(Memory.rate_memory)
    get_feedback_event = awaitable(Memory.get_feedback_event)
    list_feedback_events = awaitable(Memory.list_feedback_events)
    get_decision_review = awaitable(Memory.get_decision_review)
    list_decision_reviews = awaitable(Memory.list_decision_reviews)
    get_preference_pair = awaitable(Memory.get_preference_pair)
    list_preference_pairs = awaitable(Memory.list_preference_pairs)
    get_logged_event = awaitable(Memory.get_logged_event)
    list_logged_events = awaitable(Memory.list_logged_events)
    get_memory_rating = awaitable(Memory.get_memory_rating)
    list_memory_ratings = awaitable(Memory.list_memory_ratings)
    export = awaitable(Memory.export)
    import_ = awaitable(Memory.import_)
    has_recall = awaitable(Memory.has_recall)
    scopes = awaitable(Memory.scopes)
    find_memories = awaitable(Memory.find_memories)
    memory_edges = awaitable(Memory.memory_edges)
    memory_learning = awaitable(Memory.memory_learning)
    timeline = awaitable(Memory.timeline)
    rank_shifts = awaitable(Memory.rank_shifts)
    tensions = awaitable(Memory.tensions)
    undo = awaitable(Memory.undo)
    # knowledge bases
    add_knowledge = awaitable(Memory.add_knowledge)
    search_knowledge = awaitable(Memory.search_knowledge)
    list_knowledge = awaitable(Memory.list_knowledge)
    delete_knowledge = awaitable(Memory.delete_knowledge)
