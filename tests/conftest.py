"""Shared fixtures: real SQLite files in a temporary folder; the real model loaded once."""

from __future__ import annotations

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
