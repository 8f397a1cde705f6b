"""The embedded store: one SQLite file, searched through in-process indexes."""

from .backup import backup_file, restore_file
from .store import SQLiteStore

__all__ = ["SQLiteStore", "backup_file", "restore_file"]
