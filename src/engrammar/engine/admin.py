"""Store administration the command line needs beside `Memory`: the API-key store, the embedded
store's online backup and restore, and the copy of one store into another.

Interfaces reach a store backend only through here (ARCHITECTURE.md, rule 6; the `admin`
contract of `make lint`): they name a store by its configuration, never by its module.
"""

from __future__ import annotations

from pathlib import Path

from ..config import Config
from ..store import ApiKeyStore, open_store
from ..store.migrate import migrate

__all__ = ["backup_sqlite", "copy_store", "key_store", "restore_sqlite"]


def key_store(config: Config) -> ApiKeyStore:
    """The store that holds the API keys of ``config``'s store (close it when done)."""
    return open_store(config)


def backup_sqlite(config: Config, target: str | Path) -> int:
    """Copy the embedded store of ``config`` to ``target`` while it is in use; the pages copied."""
    from ..store.sqlite.backup import backup_file

    return backup_file(config.sqlite_file, target, busy_timeout_ms=config.busy_timeout_ms)


def restore_sqlite(config: Config, backup: str | Path) -> int:
    """Replace the embedded store of ``config`` with the checked ``backup``; the pages copied."""
    from ..store.sqlite.backup import restore_file

    return restore_file(backup, config.sqlite_file, busy_timeout_ms=config.busy_timeout_ms)


#: Copy the store at ``source`` into the empty one at ``destination``, then verify it (see
#: :func:`~engrammar.store.migrate.migrate`).
copy_store = migrate
