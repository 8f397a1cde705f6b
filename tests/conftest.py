"""Shared fixtures: real SQLite files in a temporary folder; the real model loaded once."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.embed.onnx import MiniLMEmbedder


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("ENGRAMMAR_"):
            monkeypatch.delenv(key)


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real default embedding model, loaded once per test session."""
    return MiniLMEmbedder()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def mem(store_path: Path) -> Iterator[Memory]:
    """A Memory on a real SQLite file with the deterministic test embedder."""
    m = Memory(Config(path=str(store_path)), embedder=HashEmbedder())
    yield m
    m.close()


@pytest.fixture
def real_mem(store_path: Path, minilm: MiniLMEmbedder) -> Iterator[Memory]:
    """A Memory on a real SQLite file with the real default model."""
    m = Memory(Config(path=str(store_path)), embedder=minilm)
    yield m
    m.close()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """A throwaway PostgreSQL server with pgvector (see tests/pg.py); skips when unavailable,
    fails instead when ENGRAMMAR_REQUIRE_PG=1 (CI)."""
    import pg

    bindir, reason = pg.find_bindir()
    if bindir is None or importlib.util.find_spec("psycopg") is None:
        reason = reason or "psycopg is not installed (pip install 'engrammar[postgres]')"
        if pg.REQUIRE_PG:
            pytest.fail(f"ENGRAMMAR_REQUIRE_PG=1 but {reason}")
        pytest.skip(reason)
    server = pg.PgServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: object) -> str:
    """The URL of a new, empty database (with pgvector) on the throwaway server."""
    return pg_server.new_database()  # type: ignore[attr-defined, no-any-return]
