"""Online backup and restore of the embedded store (``engrammar backup`` / ``restore``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...errors import StoreError, ValidationError

__all__ = ["backup_file", "restore_file"]


def _copy(src: sqlite3.Connection, out: sqlite3.Connection, what: str) -> int:
    """Copy the database ``src`` into ``out`` (SQLite's online backup), check the copy (named
    ``what`` in the error) and return the pages copied."""
    pages = 0

    def count(status: int, remaining: int, total: int) -> None:
        nonlocal pages
        pages = total

    src.backup(out, progress=count)
    _check_engrammar_db(out, what)
    return pages


def _check_engrammar_db(conn: sqlite3.Connection, what: str) -> None:
    try:
        ok = conn.execute("PRAGMA integrity_check").fetchone()[0]
        has_meta = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{what} is not a readable SQLite database: {exc}") from exc
    if ok != "ok":
        raise StoreError(f"{what} fails the integrity check: {ok}")
    if not has_meta:
        raise StoreError(f"{what} is not an engrammar store (no meta table)")


def backup_file(db_file: str | Path, target: str | Path, *, busy_timeout_ms: int = 10_000) -> int:
    """Copy the live store ``db_file`` to ``target`` with SQLite's online backup API.

    Writers in other processes keep working (WAL: the copy reads one consistent snapshot).
    The copy is written to a temporary file, checked (integrity and schema) and then renamed,
    so ``target`` is either a complete backup or untouched. Returns the pages copied.
    """
    source, dest = Path(db_file), Path(target)
    if not source.is_file():
        raise StoreError(f"no store at {source}")
    if dest.resolve() == source.resolve():
        raise ValidationError("file", "the backup must not be the store itself")
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=busy_timeout_ms / 1000)
        out = sqlite3.connect(partial)
        try:
            pages = _copy(src, out, f"the backup {partial}")
        finally:
            out.close()
            src.close()
        partial.replace(dest)
    except sqlite3.Error as exc:
        raise StoreError(f"backup of {source} to {dest} failed: {exc}") from exc
    finally:
        partial.unlink(missing_ok=True)
    return pages


def restore_file(backup: str | Path, db_file: str | Path, *, busy_timeout_ms: int = 10_000) -> int:
    """Replace the contents of the store ``db_file`` with the backup ``backup``, online.

    The backup is checked first (integrity and schema); the copy runs as one write into the
    live database, so other connections see the old or the new contents, never a mix.
    Processes holding the store open should reopen it afterwards (in-memory caches).
    Returns the pages copied.
    """
    source, dest = Path(backup), Path(db_file)
    if not source.is_file():
        raise ValidationError("file", f"no backup file at {source}")
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        try:
            _check_engrammar_db(src, f"the backup {source}")
            dest.parent.mkdir(parents=True, exist_ok=True)
            out = sqlite3.connect(dest, timeout=busy_timeout_ms / 1000)
            try:
                pages = _copy(src, out, f"the restored store {dest}")
            finally:
                out.close()
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise StoreError(f"restore of {source} into {dest} failed: {exc}") from exc
    return pages
