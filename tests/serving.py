"""A real `engrammar serve` app on a loopback port, in a thread of the test process."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from engrammar import Memory
from engrammar.interfaces.rest import server_config
from engrammar.server import build_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_in_thread(memory: Memory, auth: bool = True, **options: Any) -> Iterator[str]:
    """Yields the base URL once the server accepts connections; stops it afterwards (``options``:
    more arguments of ``build_app``, such as ``memwire_compat``)."""
    port = free_port()
    app = build_app(memory, auth=auth, **options)
    server = uvicorn.Server(
        server_config(memory, app, host="127.0.0.1", port=port, log_level="critical")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # started at once, or late on a loaded machine
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@asynccontextmanager
async def mcp_session(base: str, key: str) -> AsyncIterator[ClientSession]:
    """A real MCP client, initialised, on the server at ``base`` with the bearer ``key``."""
    async with (
        httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def keyed_client(base: str, key: str) -> httpx.Client:
    """An HTTP client of the server at ``base`` with the bearer ``key``."""
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60)
