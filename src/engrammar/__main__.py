"""``python -m engrammar``: the ``engrammar`` command."""

from __future__ import annotations

from .interfaces.cli import main

if __name__ == "__main__":
    main()
