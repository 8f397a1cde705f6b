"""Request limits: body size (413) and body read time (408) in front of authentication; the
token buckets of the per-key rate limit (429), which authentication applies once it knows
the key (see :class:`~.rest.AuthMiddleware`)."""

from __future__ import annotations

import math
import threading
from typing import Any

import anyio
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .http_guard import HttpCheck


class _TooLarge(HTTPException):
    """Raised inside ``receive`` when a streamed body passes the limit; the app's handler of
    HTTP errors turns it into the same JSON 413 (the middleware does if it reaches here)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, _too_large_message(max_bytes))


class _TooSlow(HTTPException):
    """Raised inside ``receive`` when the next piece of a body, or the whole body, does not
    come in time (``setting`` names which limit)."""

    def __init__(self, seconds: float, setting: str) -> None:
        super().__init__(408, _too_slow_message(seconds, setting))
        self.seconds, self.setting = seconds, setting


def _too_slow_message(seconds: float, setting: str) -> str:
    what = "the whole request body" if setting == "body_deadline_s" else "the request body"
    return f"{what} did not arrive within {seconds:g} s ({setting})"


def _too_large_message(max_bytes: int) -> str:
    return f"request body is larger than {max_bytes} bytes (max_request_bytes)"


class _Refilled:
    """Per-client amounts refilled at ``rate`` a second up to ``burst`` (full for a client not
    seen yet), for at most about ``max_clients`` clients. Pure apart from the clock, which the
    caller passes in (so it is testable without sleeping)."""

    def __init__(self, rate: float, burst: int, max_clients: int = 100_000) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.max_clients = max_clients
        self._held: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _refill(self, client: str, now: float) -> float:
        held, last = self._held.get(client, (self.burst, now))
        return min(self.burst, held + (now - last) * self.rate)

    def _bound(self, full: float) -> None:
        # Clients holding at least ``full`` carry no state worth keeping; drop them to bound
        # memory.
        if len(self._held) > self.max_clients:
            for k in [k for k, (h, _) in self._held.items() if h >= full]:
                del self._held[k]


class TokenBucket(_Refilled):
    """Per-client token buckets: ``rate`` tokens a second, at most ``burst`` saved up.

    Pure apart from the clock, which the caller passes in (so it is testable without sleeping).
    """

    def take(self, client: str, now: float) -> float:
        """Spend one token of ``client``; 0 if allowed, else the seconds until one is free."""
        with self._lock:
            tokens = self._refill(client, now)
            if tokens >= 1:
                self._held[client] = (tokens - 1, now)
                return 0.0
            self._held[client] = (tokens, now)
            self._bound(self.burst - 1)
            return (1 - tokens) / self.rate


class CostBudget(_Refilled):
    """Per-client budgets of work, counted in characters to embed: ``rate`` a second, at
    most ``burst`` saved up. A request is let through when the client's budget holds its cost
    (or, for a request costing more than ``burst``, when the budget is full) and its whole
    cost is then spent, going below zero if need be: a large add is allowed, and the key then
    waits until it is paid back. Pure apart from the clock, which the caller passes in."""

    def spend(self, client: str, cost: float, now: float) -> float:
        """Spend ``cost`` of ``client``'s budget: 0 if allowed, else the seconds until it is."""
        with self._lock:
            held = self._refill(client, now)
            need = min(cost, self.burst)
            if held >= need:
                self._held[client] = (held - cost, now)
                self._bound(self.burst)
                return 0.0
            self._held[client] = (held, now)
            return (need - held) / self.rate


def request_cost(value: Any) -> int:
    """What a request may cost to embed: the characters of every string it carries (walked
    without recursion: a body nested as deep as the JSON parser allows is counted, not a
    RecursionError)."""
    total, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return total


def over_budget(wait: float) -> Any:
    """The 429 of a key whose cost budget is spent."""
    return rate_limited(
        wait, "this API key's requests are over its cost budget (cost_budget_chars_per_s)"
    )


def past_deadline(message: str, retry: int = 30) -> Any:
    """The 503 of a request stopped by its deadline (nothing written)."""
    return _error(503, "deadline_exceeded", message, {"Retry-After": str(retry)})


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Any:
    return JSONResponse(
        {"error": {"type": kind, "message": message}}, status_code=status, headers=headers
    )


def rate_limited(wait: float, what: str = "too many requests for this API key") -> Any:
    """The 429 response for a client whose next token is ``wait`` seconds away."""
    retry = max(1, math.ceil(wait))
    return _error(429, "rate_limited", f"{what}; retry in {retry} s", {"Retry-After": str(retry)})


class LimitsMiddleware(HttpCheck):
    """Refuses bodies over ``max_bytes`` with 413, and with 408 a body whose next piece takes
    longer than ``body_timeout_s`` or which is not whole ``body_deadline_s`` after the request
    began (a client trickling a valid body piece by piece holds a connection that long at
    most). Health checks are exempt."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        body_timeout_s: float,
        body_deadline_s: float,
        exempt: frozenset[str],
    ) -> None:
        super().__init__(app, exempt)
        self.max_bytes = max_bytes
        self.body_timeout_s = body_timeout_s
        self.body_deadline_s = body_deadline_s

    async def check(self, scope: Scope, receive: Receive, send: Send) -> None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _error(400, "bad_request", "invalid Content-Length")(scope, receive, send)
                    return
                if declared > self.max_bytes:
                    await self._too_large(scope, receive, send)
                    return
        received = 0
        started = False
        body_done = False
        deadline = anyio.current_time() + self.body_deadline_s

        async def counted_receive() -> Message:
            nonlocal received, body_done
            if body_done:  # afterwards the app only waits for a disconnect: no deadline
                return await receive()
            left = deadline - anyio.current_time()
            whole = left < self.body_timeout_s  # the whole body's deadline comes first
            try:
                with anyio.fail_after(max(left, 0.0) if whole else self.body_timeout_s):
                    message = await receive()
            except TimeoutError:
                if whole:
                    raise _TooSlow(self.body_deadline_s, "body_deadline_s") from None
                raise _TooSlow(self.body_timeout_s, "body_timeout_s") from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if received > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _TooLarge:
            if started:
                raise
            await self._too_large(scope, receive, send)
        except _TooSlow as exc:
            if started:
                raise
            await _error(408, "request_timeout", _too_slow_message(exc.seconds, exc.setting))(
                scope, receive, send
            )

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _error(
            413,
            "payload_too_large",
            _too_large_message(self.max_bytes),
        )(scope, receive, send)
