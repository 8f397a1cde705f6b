"""The web inspector at ``/ui``: static HTML, CSS and JavaScript shipped inside the package.

No build step and no third-party script: the page is plain HTML with vanilla JavaScript that
asks for an API key (kept in the tab's ``sessionStorage``) and reads everything through the
public REST API, with the key as a bearer token, so it sees exactly what that key may see.
The files need no key themselves; each is served with a strict Content-Security-Policy.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HOME", "STATIC_DIR", "ui_routes"]

STATIC_DIR = Path(__file__).with_name("static")

_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


class _Secured:
    """Adds the security headers to every response of the wrapped app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    (k, val) for k, val in message.get("headers", []) if k != b"cache-control"
                ] + _HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)


async def _to_index(request: Request) -> Response:
    return RedirectResponse("/ui/", status_code=308)


#: Where a server's parts are, as ``GET /`` tells a person or a client that lands there.
HOME = {
    "name": "engrammar",
    "ui": "/ui/",
    "mcp": "/mcp",
    "rest": "/v1",
    "openapi": "/openapi.json",
    "health": "/healthz",
}


async def _home(request: Request) -> Response:
    return JSONResponse(HOME)


async def _no_icon(request: Request) -> Response:
    # Browsers ask every page's server for one; a 401 there is a console error each visit.
    return Response(status_code=204)


def ui_routes() -> list[Route | Mount]:
    """``/`` (where the parts are), ``/favicon.ico`` (none: 204), ``/ui`` (redirects to
    ``/ui/``) and the inspector's files under it; none needs a key."""
    return [
        Route("/", _home, methods=["GET", "HEAD"]),
        Route("/favicon.ico", _no_icon, methods=["GET", "HEAD"]),
        Route("/ui", _to_index, methods=["GET", "HEAD"]),
        Mount("/ui", app=_Secured(StaticFiles(directory=STATIC_DIR, html=True)), name="ui"),
    ]
