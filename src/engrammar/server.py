"""Servers: MCP (stdio and streamable HTTP) and the REST API, generated from the operation table.

The code lives in :mod:`engrammar.interfaces`; this module keeps the public names where they
were. Importing it loads the MCP SDK and Starlette; ``import engrammar`` does not.
"""

from __future__ import annotations

from .interfaces.mcp_tools import build_mcp_server, run_stdio
from .interfaces.openapi import openapi_document
from .interfaces.operations import Principal, dispatch
from .interfaces.rest import build_app, is_loopback, serve

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
