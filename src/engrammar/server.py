"""Servers: MCP (stdio and streamable HTTP) and the REST API, generated from the operation table.

The code lives in :mod:`engrammar.interfaces`; this module keeps the public names where they
were. Importing it loads the MCP SDK and Starlette; ``import engrammar`` does not.
"""

from __future__ import annotations

from .errors import require_extra

require_extra("engrammar.server", "server", "mcp", "starlette", "uvicorn")

from .interfaces.mcp_tools import build_mcp_server, run_stdio  # noqa: E402
from .interfaces.openapi import openapi_document  # noqa: E402
from .interfaces.operations import Principal, dispatch  # noqa: E402
from .interfaces.rest import build_app, is_loopback, serve  # noqa: E402

__all__ = [
    "Principal",
    "build_app",
    "build_mcp_server",
    "dispatch",
    "is_loopback",
    "openapi_document",
    "run_stdio",
    "serve",
]
