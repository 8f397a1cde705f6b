"""The ``engrammar`` command (it lives in :mod:`engrammar.interfaces.cli`)."""

from __future__ import annotations

from .interfaces.cli import cli, main

__all__ = ["cli", "main"]

if __name__ == "__main__":
    main()
