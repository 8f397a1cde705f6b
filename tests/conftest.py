"""Shared fixtures: real stores in a temporary place; the real model loaded once.

Stores: ``mem``, ``real_mem`` and ``store`` open on ``location``, which is a SQLite folder
unless the test is marked ``every_store``: then it runs once per backend (SQLite, and PostgreSQL
on the throwaway server of tests/pg.py). ``backend`` names the one a test runs on.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends import BACKENDS, StoreClients, open_memory
from engrammar import Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.store import Store

# Modules that take long to collect, with the marks of their tests: schemathesis builds its
# cases while collecting (minutes on a busy machine), so a run whose -m expression deselects
# every one of their tests (``make test-fast``) does not collect them at all.
SLOW_TO_COLLECT = {"test_hostile_http.py": {"slow", "processes"}}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    marks = SLOW_TO_COLLECT.get(collection_path.name)
    markexpr = config.getoption("markexpr")
    if marks and markexpr:
        from _pytest.mark.expression import Expression

        if not Expression.compile(markexpr).evaluate(lambda name, **_: name in marks):
            return True
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("every_store"):
        postgres = [pytest.mark.postgres]
        params = [pytest.param(b, marks=postgres if b == "postgresql" else ()) for b in BACKENDS]
        metafunc.parametrize("backend", params, indirect=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # What a test costs follows from the fixtures it uses: mark it, so that -m can leave it out.
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "minilm" in names:
            item.add_marker(pytest.mark.model)
        if "pg_server" in names:
            item.add_marker(pytest.mark.postgres)


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
def backend(request: pytest.FixtureRequest) -> str:
    """The backend the test runs on: each of BACKENDS if it is marked ``every_store``, else
    SQLite."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def location(backend: str, store_path: Path, request: pytest.FixtureRequest) -> str:
    """A new, empty store: a SQLite folder, or the URL of a fresh PostgreSQL database."""
    if backend == "sqlite":
        return str(store_path)
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def mem(location: str) -> Iterator[Memory]:
    """A Memory on ``location`` with the deterministic test embedder."""
    m = open_memory(location)
    yield m
    m.close()


@pytest.fixture
def real_mem(location: str, minilm: MiniLMEmbedder) -> Iterator[Memory]:
    """A Memory on ``location`` with the real default model."""
    m = open_memory(location, minilm)
    yield m
    m.close()


@pytest.fixture
def clients(backend: str, location: str) -> Iterator[StoreClients]:
    """A factory of handles on one new store (several handles = several clients of it)."""
    made = StoreClients(backend, location)
    yield made
    for store in made.handles:
        store.close()


@pytest.fixture
def store(clients: StoreClients) -> Store:
    """A Store (no Memory around it) on ``location``."""
    return clients.open()


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
