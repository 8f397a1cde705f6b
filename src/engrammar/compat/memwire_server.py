"""MemWire's REST API (``memwire.server.app``) served by engrammar: same routes, same payloads.

::

    engrammar serve --memwire-compat          # MemWire's routes at the root, MCP at /mcp

or mount :func:`create_app` in any ASGI app. Routes: ``POST /v1/memories``,
``POST /v1/memories/recall``, ``POST /v1/memories/search``, ``POST /v1/memories/feedback``,
``POST /v1/knowledge``, ``POST /v1/knowledge/search``, ``DELETE /v1/knowledge/{kb_id}``,
``POST /v1/stats``, ``POST /v1/categories``, ``GET /health``.

Keys and tenancy are engrammar's: a request carries an engrammar API key (``X-API-Key: <key>``
as MemWire's clients send it, or ``Authorization: Bearer <key>``); the key's workspace is the
MemWire organisation, and a key bound to a user acts only for that user (403 otherwise).
``workspace_id`` / ``app_id`` narrow within the organisation (see
:func:`~engrammar.compat.memwire.workspace_of`). Without authentication (``auth=False``, local
development only) every request acts in the memory's default workspace.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import deadline
from ..errors import (
    AuthError,
    DeadlineError,
    EngrammarError,
    ForbiddenError,
    NotFoundError,
    TooLargeError,
    ValidationError,
)
from ..keys import verify_api_key
from ..memory import Memory
from .memwire import (
    KnowledgeChunk,
    MemoryRecord,
    MemWire,
    MemWireConfig,
    RecallPath,
    __version__,
    workspace_of,
)

__all__ = ["create_app", "route_table"]

log = logging.getLogger("engrammar.server")

_TENANT = {"agent_id": str, "app_id": str, "workspace_id": str}


def _memory_json(r: MemoryRecord) -> dict[str, Any]:
    return {
        "memory_id": r.memory_id,
        "user_id": r.user_id,
        "content": r.content,
        "role": r.role,
        "category": r.category,
        "strength": r.strength,
        "timestamp": r.timestamp,
        "node_ids": r.node_ids,
        "agent_id": r.agent_id,
    }


def _path_json(p: RecallPath) -> dict[str, Any]:
    return {
        "tokens": [n.token for n in p.nodes],
        "score": p.score,
        "memories": [_memory_json(m) for m in p.memories],
    }


def _chunk_json(c: KnowledgeChunk) -> dict[str, Any]:
    return {
        "chunk_id": c.chunk_id,
        "kb_id": c.kb_id,
        "content": c.content,
        "score": c.score,
        "metadata": c.metadata,
    }


def _fields(body: Any, spec: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    """Checked request fields: ``spec`` maps a name to (type, default); ``...`` = required."""
    if not isinstance(body, dict):
        raise ValidationError("body", "must be a JSON object")
    out: dict[str, Any] = {}
    for name, (kind, default) in spec.items():
        value = body.get(name, default)
        if value is ...:
            raise ValidationError(name, "field required")
        if value is not None and not isinstance(value, kind):
            raise ValidationError(name, f"must be {getattr(kind, '__name__', kind)}")
        out[name] = value
    return out


def _limit(value: Any, name: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        raise ValidationError(name, "must be an integer from 1 to 100")
    return value


def _owner(args: dict[str, Any]) -> dict[str, Any]:
    """The user and tenant keys of checked request fields, as the facade's keyword arguments."""
    return {k: args[k] for k in ("user_id", *_TENANT)}


def _spec(**required: Any) -> dict[str, tuple[Any, Any]]:
    spec: dict[str, tuple[Any, Any]] = {k: (v, ...) for k, v in required.items()}
    spec.update({k: (v, None) for k, v in _TENANT.items()})
    return spec


class _Tenants:
    """One :class:`MemWire` facade per organisation (workspace), over the one memory."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._facades: dict[str, MemWire] = {}
        self._lock = threading.Lock()

    def get(self, org_id: str) -> MemWire:
        with self._lock:
            if org_id not in self._facades:
                self._facades[org_id] = MemWire(MemWireConfig(org_id=org_id), memory=self.memory)
            return self._facades[org_id]


def _not_another_keys(memory: Memory, org: str, data: dict[str, Any]) -> None:
    """Refuse a workspace below the organisation that an API key of its own names (a store
    made before such keys were refused may hold one): it belongs to that key, not to this."""
    ws_id, app_id = data.get("workspace_id"), data.get("app_id")
    if not all(isinstance(x, str | None) for x in (ws_id, app_id)):
        return  # the route's own checks refuse it
    ws = workspace_of(org, ws_id, app_id)
    if ws != org and memory.store.list_api_keys(ws):
        raise ForbiddenError(f"workspace {ws!r} belongs to another API key")


def _principal(request: Request, auth: bool) -> tuple[str, str | None]:
    """(organisation, bound user) of the request, from its engrammar API key."""
    memory: Memory = request.app.state.memory
    if not auth:
        return memory.config.workspace, None
    token = request.headers.get("x-api-key", "").strip()
    if not token:
        scheme, _, rest = request.headers.get("authorization", "").partition(" ")
        token = rest.strip() if scheme.lower() == "bearer" else ""
    if not token:
        raise AuthError("Invalid or missing API key")
    record = verify_api_key(memory.store, token)
    return record.workspace, record.user_id


#: How a request's (organisation, bound user) is found, when something in front of the app
#: (``engrammar serve``'s authentication) has already checked its key.
Who = Callable[[Request], tuple[str, str | None]]
#: Asked before each request with its fields and the feedback write it makes, if any (named as
#: engrammar's operation); a response it returns is the answer instead (``engrammar serve``'s
#: per-key cost budget and per-source feedback budget).
Admit = Callable[[Request, str | None, dict[str, Any]], Response | None]


def _handler(
    fn: Callable[[MemWire, dict[str, Any], Request], Any],
    *,
    body: bool = True,
    writes: str | None = None,
) -> Callable[[Request], Any]:
    """The endpoint of one route; ``writes`` names the feedback write it makes, if any."""

    async def endpoint(request: Request) -> Response:
        arrived = time.monotonic()
        auth: bool = request.app.state.auth
        who: Who | None = request.app.state.who
        try:
            if who is not None:
                org, bound = who(request)
            else:
                org, bound = await anyio.to_thread.run_sync(_principal, request, auth)
            if body:
                try:
                    data = await request.json()
                except ValueError as exc:
                    raise ValidationError("body", f"invalid JSON: {exc}") from exc
                except RecursionError:
                    # Nested deeper than the parser goes: a request that cannot be read.
                    return JSONResponse({"detail": _TOO_DEEP}, status_code=400)
            else:
                data = dict(request.query_params)
            if bound is not None and isinstance(data, dict):
                asked = data.get("user_id")
                if asked is not None and asked != bound:
                    raise ForbiddenError(f"this API key acts only for user_id {bound!r}")
                data["user_id"] = bound
            admit: Admit | None = request.app.state.admit
            if admit is not None and isinstance(data, dict):
                refused = admit(request, writes, data)
                if refused is not None:
                    return refused
            if auth and isinstance(data, dict):
                memory: Memory = request.app.state.memory
                await anyio.to_thread.run_sync(_not_another_keys, memory, org, data)
            facade = request.app.state.tenants.get(org)
            run = _within_deadline(fn, request.app.state.deadline_s, arrived)
            out = await anyio.to_thread.run_sync(run, facade, data, request)
        except DeadlineError as exc:
            # Stopped before it wrote anything: the client may send it again later.
            return JSONResponse({"detail": str(exc)}, status_code=503, headers=_RETRY_LATER)
        except ForbiddenError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=403)
        except AuthError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=401)
        except NotFoundError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=404)
        except ValidationError as exc:
            detail = [{"loc": ["body", exc.field], "msg": exc.problem, "type": "value_error"}]
            return JSONResponse(
                {"detail": detail}, status_code=413 if isinstance(exc, TooLargeError) else 422
            )
        except EngrammarError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=500)
        return JSONResponse(out)

    return endpoint


_TOO_DEEP = "the body is not valid JSON: nested too deeply"
_RETRY_LATER = {"Retry-After": "30"}


def _within_deadline(
    fn: Callable[[MemWire, Any, Request], Any], seconds: float, arrived: float
) -> Callable[[MemWire, Any, Request], Any]:
    """``fn`` under the request's deadline: ``seconds`` from its arrival (the wait for a
    worker thread included); 0: none."""

    def run(facade: MemWire, data: Any, request: Request) -> Any:
        left = max(seconds - (time.monotonic() - arrived), 1e-3) if seconds else None
        with deadline.within(left):
            return fn(facade, data, request)

    return run


async def _http_error(request: Request, exc: Exception) -> Response:
    # An unknown path or method: JSON in MemWire's (FastAPI's) shape, not plain text.
    assert isinstance(exc, HTTPException)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def _internal_error(request: Request, exc: Exception) -> Response:
    # An unexpected failure is JSON too (MemWire's shape); the trace goes to the server's log.
    error_id = secrets.token_hex(6)
    log.error("error %s on %s %s", error_id, request.method, request.url.path, exc_info=exc)
    detail = f"internal error {error_id}; the server's log has the details"
    return JSONResponse({"detail": detail}, status_code=500)


# -- the routes ------------------------------------------------------------------------------------
def _add(mw: MemWire, body: Any, _: Request) -> Any:
    args = _fields(body, _spec(user_id=str, messages=list))
    for i, m in enumerate(args["messages"]):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ValidationError(f"messages[{i}].role", "field required")
        if not isinstance(m.get("content"), str):
            raise ValidationError(f"messages[{i}].content", "field required")
    records = mw.add(
        messages=[{"role": m["role"], "content": m["content"]} for m in args["messages"]],
        **_owner(args),
    )
    return [_memory_json(r) for r in records]


def _recall(mw: MemWire, body: Any, _: Request) -> Any:
    args = _fields(body, _spec(query=str, user_id=str))
    result = mw.recall(
        args["query"],
        **_owner(args),
    )
    return {
        "query": result.query,
        "supporting": [_path_json(p) for p in result.supporting],
        "conflicting": [_path_json(p) for p in result.conflicting],
        "knowledge": [_chunk_json(c) for c in result.knowledge],
        "formatted": result.formatted,
        "has_conflicts": result.has_conflicts,
    }


def _search(mw: MemWire, body: Any, _: Request) -> Any:
    spec = _spec(query=str, user_id=str)
    spec.update(category=(str, None), limit=(int, 10))
    args = _fields(body, spec)
    hits = mw.search(
        args["query"],
        **_owner(args),
        category=args["category"],
        top_k=_limit(args["limit"]),
    )
    return [{"memory": _memory_json(r), "score": s} for r, s in hits]


def _feedback(mw: MemWire, body: Any, _: Request) -> Any:
    args = _fields(body, _spec(assistant_response=str, user_id=str))
    return mw.feedback(
        args["assistant_response"],
        **_owner(args),
    )


def _add_knowledge(mw: MemWire, body: Any, _: Request) -> Any:
    args = _fields(body, _spec(name=str, chunks=list, user_id=str))
    for i, c in enumerate(args["chunks"]):
        if not isinstance(c, dict) or not isinstance(c.get("content"), str):
            raise ValidationError(f"chunks[{i}].content", "field required")
        if not isinstance(c.get("metadata", {}), dict):
            raise ValidationError(f"chunks[{i}].metadata", "must be an object")
    kb_id = mw.add_knowledge(
        args["name"],
        args["chunks"],
        **_owner(args),
    )
    return {"kb_id": kb_id}


def _search_knowledge(mw: MemWire, body: Any, _: Request) -> Any:
    spec = _spec(query=str, user_id=str)
    spec.update(limit=(int, 5))
    args = _fields(body, spec)
    chunks = mw.search_knowledge(
        args["query"],
        **_owner(args),
        top_k=_limit(args["limit"]),
    )
    return [_chunk_json(c) for c in chunks]


def _delete_knowledge(mw: MemWire, query: Any, request: Request) -> Any:
    args = _fields(
        query, {"user_id": (str, ...), "app_id": (str, None), "workspace_id": (str, None)}
    )
    kb_id = request.path_params["kb_id"]
    try:
        mw.memory.delete_knowledge(
            kb_id,
            user_id=args["user_id"],
            workspace=workspace_of(mw.config.org_id, args["workspace_id"], args["app_id"]),
        )
    except NotFoundError as exc:
        raise NotFoundError("Knowledge base not found for user") from exc
    return {"deleted": kb_id}


def _stats(mw: MemWire, body: Any, _: Request) -> Any:
    args = _fields(body, _spec(user_id=str))
    return mw.get_stats(
        **_owner(args),
    )


def _add_category(mw: MemWire, body: Any, _: Request) -> Any:
    args = _fields(body, _spec(name=str, text=str, user_id=str))
    mw.add_category(
        args["name"],
        args["text"],
        user_id=args["user_id"],
        app_id=args["app_id"],
        workspace_id=args["workspace_id"],
    )
    return {"status": "ok", "category": args["name"]}


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok", "version": __version__})


def route_table() -> list[Route]:
    """MemWire's routes (each one's method, path and handler)."""
    return [
        Route("/v1/memories", _handler(_add), methods=["POST"]),
        Route("/v1/memories/recall", _handler(_recall), methods=["POST"]),
        Route("/v1/memories/search", _handler(_search), methods=["POST"]),
        Route("/v1/memories/feedback", _handler(_feedback, writes="feedback"), methods=["POST"]),
        Route("/v1/knowledge", _handler(_add_knowledge), methods=["POST"]),
        Route("/v1/knowledge/search", _handler(_search_knowledge), methods=["POST"]),
        Route("/v1/knowledge/{kb_id}", _handler(_delete_knowledge, body=False), methods=["DELETE"]),
        Route("/v1/stats", _handler(_stats), methods=["POST"]),
        Route("/v1/categories", _handler(_add_category, writes="log_event"), methods=["POST"]),
        Route("/health", _health, methods=["GET"]),
    ]


def create_app(
    memory: Memory,
    *,
    auth: bool = True,
    who: Who | None = None,
    admit: Admit | None = None,
    deadline_s: float = 0.0,
) -> Starlette:
    """MemWire's REST API over ``memory`` (mount it, or serve it with uvicorn).

    ``engrammar serve --memwire-compat`` serves it behind engrammar's authentication, which
    also applies the per-key rate limit, the per-key cost budget, the per-source feedback
    budget and the request deadline of ``/v1``; mounted on its own, it checks keys itself and
    limits nothing.

    Args:
        memory: the engrammar memory every request acts on; its store holds the API keys.
        auth: require an engrammar API key (``X-API-Key`` or ``Authorization: Bearer``);
            ``False`` only for local development.
        who: the (organisation, bound user) of a request whose key was checked in front of
            this app; when given, the app does not check keys itself.
        admit: asked before each request (see :data:`Admit`).
        deadline_s: seconds of work a request is given; an add or knowledge base still
            embedding after it is stopped before it writes anything (503 with Retry-After,
            MemWire's ``{"detail"}`` shape); 0: none.
    """
    app = Starlette(
        routes=route_table(),
        exception_handlers={HTTPException: _http_error, Exception: _internal_error},
    )
    app.state.memory = memory
    app.state.auth = auth
    app.state.who = who
    app.state.admit = admit
    app.state.deadline_s = deadline_s
    app.state.tenants = _Tenants(memory)
    return app
