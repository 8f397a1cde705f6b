"""Servers: MCP (stdio and streamable HTTP) and the REST API, thin adapters over ``Memory``.

Importing this package loads the MCP SDK and Starlette; ``import engrammar`` does not.
"""

from __future__ import annotations

from .._ops import Operations, Principal
from ._http import build_app, is_loopback, serve
from ._mcp import build_mcp_server
from ._openapi import openapi_document

__all__ = [
    "Operations",
    "Principal",
    "build_app",
    "build_mcp_server",
    "is_loopback",
    "openapi_document",
    "run_stdio",
    "serve",
]


def run_stdio(memory: object, workspace: str | None = None) -> None:
    """Serve the MCP tools over stdin/stdout until the client closes the stream."""
    from ..memory import Memory

    assert isinstance(memory, Memory)
    principal = Principal(workspace=workspace or memory.config.workspace, fixed=False)
    build_mcp_server(memory, principal).run("stdio")
