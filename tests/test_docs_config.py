"""Every setting is documented where users look for it."""

from __future__ import annotations

from pathlib import Path

from engrammar import Config

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_is_in_the_docs() -> None:
    docs = "".join(
        (ROOT / name).read_text()
        for name in ("README.md", "docs/postgres.md", "docs/learning.md", "docs/configuration.md")
    )
    missing = [name for name in Config.describe() if f"`{name}`" not in docs]
    assert not missing, f"undocumented settings: {missing}"
