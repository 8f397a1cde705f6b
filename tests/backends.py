"""Where a test's store lives and how to open it, for the fixtures of conftest.py and for the
worker processes that tests start (which cannot receive fixtures).

A *location* is what a user passes to engrammar: a folder for SQLite, a ``postgresql://`` URL
for PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engrammar import Config, HashEmbedder, Memory
from engrammar.embed import Embedder
from engrammar.store import Store, open_store

#: The store backends; a test marked ``every_store`` runs once on each.
BACKENDS = ("sqlite", "postgresql")


def config_for(location: str, **settings: Any) -> Config:
    """The configuration of the store at ``location``, with ``settings`` on top."""
    if "://" in location:
        return Config(store=location, **settings)
    return Config(path=location, **settings)


def open_memory(location: str, embedder: Embedder | None = None, **settings: Any) -> Memory:
    """A Memory on ``location`` (the deterministic test embedder unless one is given)."""
    return Memory(config_for(location, **settings), embedder=embedder or HashEmbedder())


@dataclass
class StoreClients:
    """Handles on the one store at ``location`` (several handles = several clients); all are
    closed at the end of the test."""

    backend: str
    location: str
    handles: list[Store] = field(default_factory=list)

    @property
    def config(self) -> Config:
        return config_for(self.location, pool_size=4)

    def open(self) -> Store:
        """A new handle, checked against the deterministic test embedder."""
        store = open_store(self.config)
        self.handles.append(store)
        embedder = HashEmbedder()
        store.check_embedder(embedder.name, embedder.dim)
        return store
