"""The OpenAI-compatible embedder against a real HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from engrammar import EmbedderError, HashEmbedder
from engrammar.embed.providers import OpenAICompatibleEmbedder

_HASH = HashEmbedder(dim=16)


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.headers.get("Authorization") != "Bearer secret" or body["model"] != "m":
            self.send_response(401)
            self.end_headers()
            return
        vecs = _HASH.embed(body["input"]) * 3.0  # unnormalised on purpose
        data = [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)][::-1]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_embeds_in_order_and_normalises(server: str) -> None:
    emb = OpenAICompatibleEmbedder("m", base_url=server, api_key="secret")
    assert emb.dim == 16
    got = emb.embed(["one", "two"])
    assert np.allclose(got, _HASH.embed(["one", "two"]), atol=1e-6)


def test_server_errors_are_embedder_errors(server: str) -> None:
    with pytest.raises(EmbedderError, match="failed"):
        OpenAICompatibleEmbedder("m", base_url=server, api_key="wrong")
    with pytest.raises(EmbedderError, match="failed"):
        OpenAICompatibleEmbedder("m", base_url="http://127.0.0.1:9", api_key="x", timeout=2)
