"""Copy a store into another, across backends, without loss: ``engrammar migrate``.

Every table of :data:`~.tables.COPY_TABLES` is copied page by page through the stores' own
``export_rows`` / ``import_rows`` (so no backend SQL lives here), in insertion order, into a
destination that must hold no data yet. Afterwards both sides are read again and compared:
per table, the row count and a checksum over the canonical form of every row (an
order-independent sum of SHA-256 digests; vectors compared bit for bit as float32). A mismatch
raises :class:`~engrammar.errors.StoreError`.

Two databases share no transaction: each page lands whole, but a failed migration leaves a
partial destination. Discard it and run again; the source is only read.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ..config import Config
from ..errors import StoreError, ValidationError
from .base import Backend
from .tables import COPY_TABLES

__all__ = ["MigrationReport", "migrate", "open_location", "table_checksums"]

_MOD = 2**256


@dataclass
class MigrationReport:
    """What was copied: per table, ``(rows, checksum)`` of the source, equal in the destination."""

    source: str
    destination: str
    tables: dict[str, tuple[int, str]] = field(default_factory=dict)


def open_location(location: str, *, create: bool) -> Backend:
    """A store from a ``postgresql://`` URL, a ``sqlite:///file`` URL, a ``.db`` file or a data
    folder (holding ``engrammar.db``, as ``Config(path=…)`` does)."""
    if location.startswith(("postgresql://", "postgres://")):
        from . import open_store

        return open_store(Config(store=location))
    from .sqlite.store import SQLiteStore

    if location.startswith("sqlite:///"):
        file = Path(location[len("sqlite:///") :])
    else:
        path = Path(location)
        is_file = path.suffix in (".db", ".sqlite", ".sqlite3") or path.is_file()
        file = path if is_file else Config(path=str(path)).sqlite_file
    if not create and not file.exists():
        raise ValidationError("from", f"no store at {location} (looked for {file})")
    return SQLiteStore(file)


def _shown(location: str) -> str:
    parts = urlsplit(location)
    if parts.password is None:
        return location
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")))


def _canonical(row: dict[str, Any]) -> bytes:
    out = {}
    for name, value in row.items():
        if isinstance(value, np.ndarray):
            raw = np.ascontiguousarray(value, dtype="<f4").tobytes()
            value = base64.b64encode(raw).decode()
        out[name] = value
    return json.dumps(out, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _digest(row: dict[str, Any]) -> int:
    return int.from_bytes(hashlib.sha256(_canonical(row)).digest(), "big")


def _pages(store: Backend, table: str, batch: int) -> Any:
    cursor: Any = None
    while True:
        rows, cursor = store.export_rows(table, cursor, batch)
        if rows:
            yield rows
        if cursor is None:
            return


def table_checksums(store: Backend, batch: int = 1000) -> dict[str, tuple[int, str]]:
    """Per table of :data:`COPY_TABLES`: the row count and the order-independent checksum."""
    out = {}
    for table in COPY_TABLES:
        count, total = 0, 0
        for rows in _pages(store, table, batch):
            count += len(rows)
            for row in rows:
                total = (total + _digest(row)) % _MOD
        out[table] = (count, f"{total:064x}")
    return out


def migrate(
    source: str,
    destination: str,
    *,
    batch: int = 1000,
    progress: Callable[[str, int], None] | None = None,
) -> MigrationReport:
    """Copy the store at ``source`` into the empty store at ``destination`` and verify it.

    Args:
        source: where to read (URL, ``.db`` file or data folder); only read.
        destination: where to write; created if absent; must hold no data.
        batch: rows per page (one transaction per page in the destination).
        progress: called with (table, rows copied so far) after each page.

    Returns:
        The tables' row counts and checksums, identical on both sides.

    Raises:
        ValidationError: ``from`` names no store, ``to`` is not empty, or both are the same.
        StoreError: a store failed, or the copy differs from the source.
    """
    if source == destination:
        raise ValidationError("to", "is the same store as --from")
    src = open_location(source, create=False)
    try:
        dst = open_location(destination, create=True)
    except BaseException:
        src.close()
        raise
    try:
        for table in COPY_TABLES:
            if table != "meta" and dst.export_rows(table, None, 1)[0]:
                raise ValidationError(
                    "to",
                    f"{_shown(destination)} already holds {table}; migrate into an empty store",
                )
        meta = [row for rows in _pages(src, "meta", batch) for row in rows]
        embedder = next((json.loads(r["value"]) for r in meta if r["key"] == "embedder"), None)
        if embedder is not None:
            # Through the contract, so a PostgreSQL destination sizes its vector column.
            dst.check_embedder(embedder["name"], int(embedder["dim"]))
        others = [r for r in meta if r["key"] != "embedder"]
        if others:
            dst.import_rows("meta", others)
        with dst.bulk_load():
            for table in COPY_TABLES:
                if table == "meta":
                    continue
                copied = 0
                for rows in _pages(src, table, batch):
                    dst.import_rows(table, rows)
                    copied += len(rows)
                    if progress is not None:
                        progress(table, copied)
        want, got = table_checksums(src, batch), table_checksums(dst, batch)
        differ = [t for t in COPY_TABLES if want[t] != got[t]]
        if differ:
            detail = ", ".join(f"{t}: {want[t][0]} rows -> {got[t][0]}" for t in differ)
            raise StoreError(f"the copy differs from the source in {detail}")
        return MigrationReport(_shown(source), _shown(destination), tables=want)
    finally:
        src.close()
        dst.close()
