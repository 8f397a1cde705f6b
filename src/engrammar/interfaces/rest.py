"""The HTTP server: MCP over streamable HTTP at ``/mcp`` and the REST API at ``/v1``, one process.

Every request except ``/healthz`` and ``/openapi.json`` must carry ``Authorization: Bearer <key>``
(see :mod:`engrammar.keys`); the key's workspace and user become the request's principal. Only
``auth=False`` turns this off, and :func:`serve` refuses that on a non-loopback address.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import logging
import secrets
import socket
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__, deadline
from ..engine.validate import shown
from ..errors import (
    AuthError,
    ConflictError,
    DeadlineError,
    EngrammarError,
    ForbiddenError,
    NotFoundError,
    TooLargeError,
    ValidationError,
    escaped,
)
from ..keys import verify_api_key
from ..memory import Memory
from .http_guard import HostGuard, allowed_hosts, guarded_h11
from .limits import (
    CostBudget,
    LimitsMiddleware,
    TokenBucket,
    over_budget,
    past_deadline,
    rate_limited,
    request_cost,
)
from .mcp_tools import PRINCIPAL_KEY, build_mcp_server
from .openapi import MAX_INT, openapi_document
from .operations import (
    OPERATIONS,
    HttpRoute,
    Operation,
    Principal,
    dispatch,
    feedback_over_budget,
)
from .ui import ui_routes

__all__ = ["build_app", "is_loopback", "serve", "server_config"]

log = logging.getLogger("engrammar.server")

PUBLIC_PATHS = frozenset({"/healthz", "/openapi.json"})
#: The web inspector's static files: the page asks for a key and sends it with every API call.
UI_PREFIX = "/ui"


#: Served without a key beside the inspector: where the parts are, and no icon.
HOME_PATHS = frozenset({"/", "/favicon.ico"})


def _public(path: str) -> bool:
    return (
        path in PUBLIC_PATHS
        or path in HOME_PATHS
        or path == UI_PREFIX
        or path.startswith(UI_PREFIX + "/")
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _error(status: int, kind: str, message: str, field: str | None = None) -> JSONResponse:
    body: dict[str, Any] = {"type": kind, "message": escaped(message)}
    if field is not None:
        body["field"] = escaped(field)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": body}, status_code=status, headers=headers)


def error_response(exc: EngrammarError) -> JSONResponse:
    """The JSON error response for an engrammar error."""
    if isinstance(exc, TooLargeError):
        return _error(413, "payload_too_large", str(exc), exc.field)
    if isinstance(exc, ValidationError):
        return _error(422, "validation_error", str(exc), exc.field)
    if isinstance(exc, NotFoundError):
        return _error(404, "not_found", str(exc))
    if isinstance(exc, ForbiddenError):
        return _error(403, "forbidden", str(exc))
    if isinstance(exc, AuthError):
        return _error(401, "unauthorized", str(exc))
    if isinstance(exc, ConflictError):
        return _error(409, "conflict", str(exc))
    return internal_error(exc, "an operation")


def internal_error(exc: BaseException, where: str) -> JSONResponse:
    """A 500 that names an error id and nothing else: the details go to the server's log
    under that id, never to the client (they can name files, tables, other tenants)."""
    error_id = secrets.token_hex(6)
    log.error("error %s on %s: %s: %s", error_id, where, type(exc).__name__, exc, exc_info=exc)
    message = f"internal error {error_id}; the server's log has the details"
    body = {"type": "internal_error", "message": message, "error_id": error_id}
    return JSONResponse({"error": body}, status_code=500)


async def in_worker(app: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """Run blocking ``fn(*args)`` on one of the app's ``server_threads`` worker threads.

    Bounded because the work is mostly Python under one GIL plus a model run that already
    uses every core: with anyio's default of 40 threads, a burst above capacity became 40
    threads thrashing the GIL, the write lock and the model's own threads, the CPU spent per
    request rose and the queue never drained.
    Requests past the bound now wait their turn instead.
    """
    state = app.state
    limiter = getattr(state, "limiter", None)
    if limiter is None:  # created inside the event loop, on first use
        limiter = state.limiter = anyio.CapacityLimiter(state.server_threads)
    return await anyio.to_thread.run_sync(fn, *args, limiter=limiter)


class AuthMiddleware:
    """Turns the API key of each HTTP request into a :class:`Principal` (or a 401), and
    applies the rate limit: a verified key is judged by its own bucket only, and requests
    that fail authentication (or every request, when authentication is off) by the bucket of
    their client address. Failed attempts from an address therefore never hold back a valid
    key sent from it, and buckets are never keyed by what a client merely sends, so inventing
    new keys buys no fresh tokens.

    With ``memwire``, MemWire's routes are behind it too: ``X-API-Key`` carries a key as well
    as ``Authorization: Bearer``, ``/health`` is public, and refusals outside ``/mcp`` take
    MemWire's ``{"detail": ...}`` shape.
    """

    def __init__(
        self,
        app: ASGIApp,
        memory: Memory,
        *,
        auth: bool,
        default: Principal,
        bucket: TokenBucket | None = None,
        memwire: bool = False,
    ) -> None:
        self.app = app
        self.memory = memory
        self.auth = auth
        self.default = default
        self.bucket = bucket
        self.memwire = memwire

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if scope["type"] != "http" or _public(path) or (self.memwire and path == "/health"):
            await self.app(scope, receive, send)
            return
        address = "ip:" + (scope["client"][0] if scope.get("client") else "?")
        if not self.auth:
            if await self._limited(address, scope, receive, send):
                return
            scope[PRINCIPAL_KEY] = self.default
            await self.app(scope, receive, send)
            return
        token = self._token(scope)
        if not token:
            if await self._limited(address, scope, receive, send):
                return
            missing = _MEMWIRE_MISSING_KEY if self._memwire_path(scope) else _MISSING_KEY
            await self._refuse(scope, receive, send, AuthError(missing))
            return
        try:
            record = await in_worker(self.app, verify_api_key, self.memory.store, token)
        except AuthError as exc:
            # Only a failed attempt spends the address's tokens.
            if await self._limited(address, scope, receive, send):
                return
            await self._refuse(scope, receive, send, exc)
            return
        except EngrammarError as exc:
            await self._refuse(scope, receive, send, exc)
            return
        if await self._limited("key:" + record.key_id, scope, receive, send):
            return
        scope[PRINCIPAL_KEY] = Principal(
            workspace=record.workspace, user_id=record.user_id, key_id=record.key_id
        )
        await self.app(scope, receive, send)

    def _token(self, scope: Scope) -> str:
        headers: dict[bytes, bytes] = dict(scope["headers"])
        if self.memwire:  # MemWire's clients send X-API-Key, and it comes first there
            given = headers.get(b"x-api-key", b"").decode("latin-1").strip()
            if given:
                return given
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""

    def _memwire_path(self, scope: Scope) -> bool:
        return self.memwire and not scope["path"].startswith("/mcp")

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, exc: EngrammarError
    ) -> None:
        if self._memwire_path(scope):
            status = 401 if isinstance(exc, AuthError) else 500
            response: Response = JSONResponse({"detail": str(exc)}, status_code=status)
        else:
            response = error_response(exc)
        await response(scope, receive, send)

    async def _limited(self, client: str, scope: Scope, receive: Receive, send: Send) -> bool:
        """Spend one of ``client``'s tokens; answer 429 (and say so) when it has none."""
        if self.bucket is None:
            return False
        wait = self.bucket.take(client, time.monotonic())
        if wait <= 0:
            return False
        response = rate_limited(wait)
        if self._memwire_path(scope):
            response = _memwire_limited(response)
        await response(scope, receive, send)
        return True


_MISSING_KEY = "missing API key: send the header 'Authorization: Bearer <key>'"
_MEMWIRE_MISSING_KEY = "Invalid or missing API key: send 'X-API-Key: <key>'"


def _memwire_limited(response: Response) -> JSONResponse:
    """A 429 in MemWire's error shape (same message and ``Retry-After``)."""
    message = json.loads(bytes(response.body))["error"]["message"]
    return JSONResponse(
        {"detail": message},
        status_code=429,
        headers={"Retry-After": response.headers["Retry-After"]},
    )


# -- REST ------------------------------------------------------------------------------------------
_INT_PARAMS = frozenset({"limit", "offset", "depth"})


def _query_args(request: Request) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for name, value in request.query_params.multi_items():
        if name in args:
            raise ValidationError(name, "given more than once")
        if name in _INT_PARAMS:
            try:
                number = int(value)
            except ValueError:
                raise ValidationError(name, f"must be an integer, got {shown(value)}") from None
            if abs(number) > MAX_INT:
                raise ValidationError(name, f"must be <= {MAX_INT}, got {shown(number)}")
            args[name] = number
        else:
            args[name] = value
    return args


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise _BadRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise _BadRequest("the body must be a JSON object")
    _check_json("body", data)
    for name in _INT_PARAMS:
        # JSON Schema counts 5.0 as an integer; Python's json reads it as a float.
        value = data.get(name)
        if isinstance(value, float) and value.is_integer():
            data[name] = int(value)
    return data


class _BadRequest(Exception):
    """A body that is not a JSON object at all: 400, the HTTP convention for a request that
    cannot be parsed (422 is for a well-formed request whose fields are wrong)."""


def _check_json(where: str, value: Any) -> None:
    """Refuse what JSON can carry but no store can keep: lone surrogates, huge integers."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(where, "contains invalid Unicode (a lone surrogate)") from None
    elif isinstance(value, int) and not isinstance(value, bool):
        if abs(value) > MAX_INT:
            raise ValidationError(where, f"integers must be at most {MAX_INT} in size")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json(f"{where}.{key}" if where != "body" else key, key)
            _check_json(f"{where}.{key}" if where != "body" else key, item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(f"{where}[{i}]", item)


def _endpoint(op: Operation, route: HttpRoute) -> Callable[[Request], Any]:
    """The endpoint of one operation: arguments from the body (POST, PATCH) or the query string
    (GET, DELETE), plus the ids in the URL path."""
    method, path, status = route.method, route.path, route.status
    in_path = [p.name for p in op.params if "{" + p.name + "}" in path]
    from_body = method in ("POST", "PATCH")

    async def endpoint(request: Request) -> Response:
        arrived = time.monotonic()
        principal = request.scope.get(PRINCIPAL_KEY)
        if not isinstance(principal, Principal):
            return _error(401, "unauthorized", "this request carries no authenticated principal")
        memory: Memory = request.app.state.memory
        try:
            args = await _body(request) if from_body else _query_args(request)
            for key in in_path:
                if key in args:
                    raise ValidationError(
                        key,
                        "is given in the URL; do not repeat it in the body"
                        if from_body
                        else "is given in the URL path; do not repeat it",
                    )
                args[key] = request.path_params[key]
            limited = _feedback_limited(request, principal, op.name, args)
            if limited is None:
                limited = _cost_limited(request, principal, args)
            if limited is not None:
                return limited
            data = await in_worker(request.app, _within_deadline(request, arrived), memory,
                                   principal, op.name, args)  # fmt: skip
        except _BadRequest as exc:
            return _error(400, "bad_request", str(exc), "body")
        except DeadlineError as exc:
            response: Response = past_deadline(str(exc))
            return response
        except EngrammarError as exc:
            return error_response(exc)
        except ClientDisconnect:
            # Nobody is left to answer; one line, not a traceback.
            client = request.client.host if request.client else "?"
            log.info("client %s went away during %s %s", client, request.method, request.url.path)
            return Response(status_code=400)
        return JSONResponse(data, status_code=status)

    return endpoint


def _within_deadline(request: Request, arrived: float) -> Callable[..., Any]:
    """``dispatch`` under the request's deadline (``request_deadline_s`` from its arrival,
    the wait for a worker thread included)."""
    seconds = request.app.state.memory.config.request_deadline_s

    def run(*args: Any) -> Any:
        left = max(seconds - (time.monotonic() - arrived), 1e-3) if seconds else None
        with deadline.within(left):
            return dispatch(*args)

    return run


def _cost_limited(request: Request, principal: Principal, args: dict[str, Any]) -> Response | None:
    """The 429 of a key over its cost budget (``cost_budget_chars_per_s``)."""
    budget: CostBudget | None = getattr(request.app.state, "cost_budget", None)
    if budget is None:
        return None
    address = request.client.host if request.client else "?"
    client = f"key:{principal.key_id}" if principal.key_id else f"ip:{address}"
    wait = budget.spend(client, request_cost(args), time.monotonic())
    if wait <= 0:
        return None
    response: Response = over_budget(wait)
    return response


def _feedback_limited(
    request: Request, principal: Principal, name: str, args: dict[str, Any]
) -> Response | None:
    """The 429 of a feedback write over its source's budget (``feedback_over_budget``):
    one source flooding ratings is refused before it reaches the store."""
    address = request.client.host if request.client else "?"
    refused = feedback_over_budget(
        getattr(request.app.state, "feedback_bucket", None), principal, name, args, address
    )
    if refused is None:
        return None
    source, wait = refused
    response: Response = rate_limited(wait, f"too many feedback writes from {source}")
    return response


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok", "version": __version__})


async def _openapi(request: Request) -> Response:
    return JSONResponse(openapi_document(request.app.state.memory.config))


class _Dispatch:
    """One path's REST methods as an ASGI app, so any other method gets a JSON 405."""

    def __init__(self, methods: dict[str, Callable[[Request], Any]]) -> None:
        self.methods = methods
        self.allow = ", ".join(sorted(methods))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        handler = self.methods.get(request.method)
        if handler is None:
            response = _error(405, "method_not_allowed", f"this path accepts {self.allow}")
            response.headers["Allow"] = self.allow
        else:
            response = await handler(request)
        await response(scope, receive, send)


def rest_operations() -> set[tuple[str, str]]:
    """Every (path, lower-case method) the REST API serves."""
    return {
        (route.path, method.lower())
        for route in _routes()
        for method in route.methods or ()
        if method != "HEAD"
    }


def rest_routes() -> list[Route]:
    """The REST API's routes, one per path (authentication is applied around them by the app)."""
    by_path: dict[str, dict[str, Callable[[Request], Any]]] = {}
    for route in _routes():
        for method in route.methods or ():
            if method != "HEAD":
                by_path.setdefault(route.path, {})[method] = route.endpoint
    return [Route(path, _Dispatch(methods)) for path, methods in by_path.items()]


def _routes() -> list[Route]:
    routes = [
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/openapi.json", _openapi, methods=["GET"]),
    ]
    for op in OPERATIONS:
        for route in op.http:
            routes.append(Route(route.path, _endpoint(op, route), methods=[route.method]))
    return routes


def build_app(
    memory: Memory,
    *,
    auth: bool = True,
    default: Principal | None = None,
    host: str = "127.0.0.1",
    memwire_compat: bool = False,
) -> ASGIApp:
    """The ASGI app serving MCP at ``/mcp`` and REST at ``/v1``.

    Args:
        memory: the memory every request acts on.
        auth: require an API key on every request (except health and the OpenAPI document).
        default: the principal of unauthenticated requests when ``auth`` is off; by default
            the local user in ``memory.config.workspace``.
        host: the address served, for the MCP transport's DNS-rebinding protection.
        memwire_compat: serve MemWire's REST API (:mod:`engrammar.compat.memwire_server`:
            its routes and payloads, engrammar's keys and tenancy) instead of engrammar's
            ``/v1`` routes; MCP stays at ``/mcp``.
    """
    default = default or Principal(workspace=memory.config.workspace, fixed=False)
    cfg = memory.config
    hosts = allowed_hosts(host, cfg.allowed_hosts)
    # The same Host/Origin rule for /mcp as for REST (the MCP SDK's own check uses it too).
    enforce = is_loopback(host) or bool(cfg.allowed_hosts.strip())
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=enforce,
        allowed_hosts=[f"{h}:*" for h in hosts] + list(hosts),
        allowed_origins=[
            f"{scheme}://{h}{port}"
            for h in hosts
            for scheme in ("http", "https")
            for port in ("", ":*")
        ],
    )
    # One budget per source for feedback writes, whether they come over REST or MCP.
    feedback_bucket = (
        TokenBucket(cfg.feedback_rate_limit_per_s, cfg.feedback_rate_limit_burst)
        if cfg.feedback_rate_limit_per_s
        else None
    )
    # One work budget per key, whether its requests come over REST or MCP.
    cost_budget = (
        CostBudget(cfg.cost_budget_chars_per_s, cfg.cost_budget_chars_burst)
        if cfg.cost_budget_chars_per_s
        else None
    )
    mcp = build_mcp_server(memory, default, feedback_bucket, cost_budget)
    app: Starlette = mcp.streamable_http_app(
        host=host,
        stateless_http=True,
        json_response=True,
        transport_security=security,
    )
    if not memwire_compat:
        app.router.routes.extend(rest_routes())
        app.router.routes.extend(ui_routes())
    app.state.memory = memory
    app.state.server_threads = cfg.server_threads
    app.state.feedback_bucket = feedback_bucket
    app.state.cost_budget = cost_budget
    app.add_exception_handler(Exception, _internal_error)
    app.add_exception_handler(HTTPException, _http_error)
    bucket = (
        TokenBucket(cfg.rate_limit_per_s, cfg.rate_limit_burst) if cfg.rate_limit_per_s else None
    )
    inner: ASGIApp = app
    if memwire_compat:
        from ..compat.memwire_server import create_app

        memwire = create_app(memory, auth=auth, who=_memwire_who, admit=_memwire_admit,
                             deadline_s=cfg.request_deadline_s)  # fmt: skip
        memwire.state.feedback_bucket = feedback_bucket
        memwire.state.cost_budget = cost_budget
        inner = _MemWireFront(memwire, app)
    # One authentication and one rate limit in front of every route, MemWire's included.
    served: ASGIApp = AuthMiddleware(
        inner, memory, auth=auth, default=default, bucket=bucket, memwire=memwire_compat
    )
    limited = LimitsMiddleware(
        HostGuard(
            served,
            hosts=hosts,
            enforce_hosts=enforce,
            exempt=frozenset({"/healthz"}),
            origins=cfg.cors_origins,
        ),
        max_bytes=cfg.max_request_bytes,
        body_timeout_s=cfg.body_timeout_s,
        body_deadline_s=cfg.body_deadline_s,
        exempt=frozenset({"/healthz"}),
    )
    if not cfg.cors_origins:
        return JsonHeaders(limited)
    # Outermost: a browser's preflight carries no key, so it is answered before
    # authentication; the real request that follows still needs one.
    return CORSMiddleware(
        JsonHeaders(limited),
        allow_origins=list(cfg.cors_origins),
        allow_methods=["GET", "POST", "PATCH", "DELETE"],
        allow_headers=["Authorization", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version"],
        expose_headers=["Retry-After", "WWW-Authenticate", "Mcp-Session-Id"],
        max_age=600,
    )


#: Added to every JSON response: a browser must not read it as anything else, and nothing
#: between the server and the client may keep a copy (answers hold memories).
_JSON_HEADERS = ((b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store"))


class JsonHeaders:
    """Adds ``X-Content-Type-Options: nosniff`` and ``Cache-Control: no-store`` to every JSON
    response (answers and errors alike, from any layer below it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                kind = next((v for n, v in headers if n.lower() == b"content-type"), b"")
                kind = kind.split(b";")[0].strip().lower()
                if kind == b"application/json" or kind.endswith(b"+json"):
                    headers += [(n, v) for n, v in _JSON_HEADERS if n not in names]
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def server_config(memory: Memory, app: ASGIApp, *, host: str, port: int, **kw: Any) -> Any:
    """The uvicorn configuration `engrammar serve` runs ``app`` with: the header deadline and
    the cap on connections still sending headers from ``memory.config``."""
    import uvicorn

    cfg = memory.config
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_h11(cfg.header_timeout_s, cfg.max_pending_connections),
        timeout_keep_alive=5,
        **kw,
    )


def _memwire_who(request: Request) -> tuple[str, str | None]:
    """The organisation and bound user of a MemWire request: its principal's workspace and
    user, as :class:`AuthMiddleware` found them."""
    principal = request.scope.get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):
        raise AuthError("this request carries no authenticated principal")
    return principal.workspace, principal.bound_user


def _memwire_admit(request: Request, name: str | None, args: dict[str, Any]) -> Response | None:
    """The 429 of a MemWire request over its key's cost budget, or of a MemWire feedback
    write over its source's budget, in MemWire's shape (the budgets of ``/v1`` and ``/mcp``)."""
    principal = request.scope.get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):
        return None
    limited = _feedback_limited(request, principal, name, args) if name else None
    if limited is None:
        limited = _cost_limited(request, principal, args)
    return None if limited is None else _memwire_limited(limited)


class _MemWireFront:
    """MemWire's REST routes in front of engrammar's MCP app at ``/mcp`` (both behind one
    :class:`AuthMiddleware`)."""

    def __init__(self, memwire: ASGIApp, mcp: Starlette) -> None:
        self.memwire = memwire
        self.mcp = mcp
        # The worker threads of authentication (in_worker) are the engrammar app's.
        self.state = mcp.state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/mcp"):
            await self.memwire(scope, receive, send)
        else:
            await self.mcp(scope, receive, send)


async def _http_error(request: Request, exc: Exception) -> Response:
    # Starlette's own 404s (unknown paths) in the same JSON shape as every other error.
    assert isinstance(exc, HTTPException)
    kind = _HTTP_KINDS.get(exc.status_code, "http_error")
    return _error(exc.status_code, kind, str(exc.detail))


#: The error types of HTTP-level refusals, as the middleware names them.
_HTTP_KINDS = {413: "payload_too_large", 405: "method_not_allowed", 408: "request_timeout"}


async def _internal_error(request: Request, exc: Exception) -> Response:
    # The process boundary: log the trace on the server, give the client one clear line.
    return internal_error(exc, f"{request.method} {request.url.path}")


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``; a busy port or a bad address is one clear ``OSError``
    (the CLI prints it and exits 1) instead of uvicorn's log and exit status 3."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        why = "the port is in use" if exc.errno == errno.EADDRINUSE else exc.strerror or exc
        raise OSError(f"cannot listen on {host}:{port}: {why}") from None
    return sock


def serve(
    memory: Memory,
    *,
    host: str,
    port: int,
    auth: bool,
    log_level: str = "info",
    sock: socket.socket | None = None,
    memwire_compat: bool = False,
) -> None:
    """Serve MCP + REST with uvicorn until interrupted (on ``sock`` when given, bound by
    :func:`listen`); with ``memwire_compat``, MemWire's REST routes instead of engrammar's."""
    import uvicorn

    if not auth and not is_loopback(host):
        raise AuthError(
            f"refusing to serve without authentication on {host!r}: --no-auth is only allowed "
            "on a loopback address (127.0.0.1, ::1, localhost)"
        )
    app = build_app(memory, auth=auth, host=host, memwire_compat=memwire_compat)
    sock = sock or listen(host, port)
    try:
        server = uvicorn.Server(
            server_config(memory, app, host=host, port=port, log_level=log_level)
        )
        server.run(sockets=[sock])
    finally:
        sock.close()
