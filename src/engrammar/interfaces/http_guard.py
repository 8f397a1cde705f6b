"""What `engrammar serve` checks before a request reaches authentication or an operation.

* :class:`HostGuard`: the ``Host`` and ``Origin`` headers (DNS rebinding, cross-site requests
  from a web page) and the content type of JSON bodies, the same rule for REST and ``/mcp``.
* :func:`guarded_h11`: the HTTP protocol uvicorn runs, with a deadline for the request line
  and headers and a cap on connections still sending them (a client feeding a byte every few
  seconds holds a connection for ``header_timeout_s`` at most, and only so many at once).
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import h11
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import escaped

__all__ = ["LOOPBACK_HOSTS", "HostGuard", "HttpCheck", "allowed_hosts", "guarded_h11"]

log = logging.getLogger("engrammar.server")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def allowed_hosts(served: str, extra: str) -> tuple[str, ...]:
    """The host names a request may address: loopback, the served address, and ``extra``
    (comma-separated, the ``allowed_hosts`` setting). Ports are not compared."""
    names = [*LOOPBACK_HOSTS, served if ":" not in served else f"[{served.strip('[]')}]"]
    names += [h.strip().lower() for h in extra.split(",") if h.strip()]
    return tuple(dict.fromkeys(n.lower() for n in names))


def _host_name(value: str) -> str:
    """``host[:port]`` without the port (IPv6 literals keep their brackets)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status)


class HttpCheck(ABC):
    """An ASGI middleware that checks HTTP requests only: other traffic (lifespan) and the
    ``exempt`` paths (health checks) go straight to ``app``."""

    def __init__(self, app: ASGIApp, exempt: frozenset[str]) -> None:
        self.app = app
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.exempt:
            await self.app(scope, receive, send)
            return
        await self.check(scope, receive, send)

    @abstractmethod
    async def check(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request, or pass it to ``self.app``."""


class HostGuard(HttpCheck):
    """Refuses a request whose ``Host`` is not an allowed name (421), whose ``Origin`` is a
    site other than an allowed host (403), or whose body is not declared JSON (415).

    ``enforce_hosts`` is off only when the server listens on a public address without a list
    of allowed names: there a reverse proxy decides which names reach it. A request without an
    ``Origin`` (curl, an SDK) is not a browser's cross-site request and passes.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Iterable[str],
        enforce_hosts: bool,
        exempt: frozenset[str],
        origins: Iterable[str] = (),
    ) -> None:
        super().__init__(app, exempt)
        self.hosts = frozenset(hosts)
        # The CORS origins an operator allowed (setting cors_origins) are trusted sites too.
        self.origins = frozenset(origins)
        self.enforce_hosts = enforce_hosts

    async def check(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k: v.decode("latin-1") for k, v in scope["headers"]}
        problem = self._problem(scope, headers)
        if problem is not None:
            await problem(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _problem(self, scope: Scope, headers: dict[bytes, str]) -> JSONResponse | None:
        if self.enforce_hosts:
            host = headers.get(b"host", "")
            if _host_name(host) not in self.hosts:
                return _error(
                    421,
                    "misdirected_request",
                    f"this server does not answer for host {escaped(host[:100])!r}; "
                    "allowed: " + ", ".join(sorted(self.hosts)) + " (setting allowed_hosts)",
                )
            origin = headers.get(b"origin")
            if origin is not None and origin not in self.origins and not self._origin_ok(origin):
                return _error(
                    403,
                    "forbidden_origin",
                    f"requests from the web origin {escaped(origin[:100])!r} are refused; "
                    "allowed: the allowed hosts over http or https (setting allowed_hosts) "
                    "and the origins of setting cors_origins",
                )
        if scope["method"] in _BODY_METHODS and scope["path"] != "/mcp":
            kind = headers.get(b"content-type", "").split(";")[0].strip().lower()
            has_body = headers.get(b"content-length", "0") != "0" or (
                b"transfer-encoding" in headers
            )
            if (kind or has_body) and not (kind == "application/json" or kind.endswith("+json")):
                return _error(
                    415,
                    "unsupported_media_type",
                    "the body must be JSON: send 'Content-Type: application/json'",
                )
        return None

    def _origin_ok(self, origin: str) -> bool:
        parts = urlsplit(origin.strip().lower())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return _host_name(parts.netloc) in self.hosts


def guarded_h11(header_timeout_s: float, max_pending: int) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a header deadline and a cap on pending connections.

    A connection is *pending* from the moment it opens (or a keep-alive request starts) until
    its request line and headers are complete. A pending connection is closed after
    ``header_timeout_s``; beyond ``max_pending`` of them a new connection is closed at once.
    """
    pending: set[Any] = set()

    class GuardedH11(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            if len(pending) >= max_pending:
                log.warning(
                    "refused a connection from %s: %d connections are still sending headers "
                    "(max_pending_connections)",
                    self._who(),
                    len(pending),
                )
                self.transport.close()
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:
                if self._header_timer is None and not self.transport.is_closing():
                    self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _who(self) -> str:
            return f"{self.client[0]}:{self.client[1]}" if self.client else "?"

        def _arm(self) -> None:
            pending.add(self)
            self._header_timer = self.loop.call_later(header_timeout_s, self._too_slow)

        def _disarm(self) -> None:
            pending.discard(self)
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            pending.discard(self)
            if not self.transport.is_closing():
                log.info(
                    "closed a connection from %s: no complete request headers within %g s "
                    "(header_timeout_s)",
                    self._who(),
                    header_timeout_s,
                )
                self.transport.close()

    return GuardedH11
