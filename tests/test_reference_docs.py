"""The reference pages under docs/reference/ are what the code writes: Config's fields, the CLI's
commands, the MCP tools and the REST routes of the operation table."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engrammar.config import Config
from engrammar.interfaces import docs

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "reference"


def test_committed_reference_is_what_the_code_writes() -> None:
    stale = [
        name
        for name, text in docs.render().items()
        if not (FOLDER / name).is_file() or (FOLDER / name).read_text() != text
    ]
    assert not stale, f"docs/reference/{stale} differ from the code: run `make docs`"


def test_every_config_field_and_operation_is_in_the_reference() -> None:
    pages = docs.render()
    for f in dataclasses.fields(Config):
        assert f"`{f.name}" in pages["configuration.md"], f.name
    from engrammar.interfaces.operations import OPERATIONS

    for op in OPERATIONS:
        if op.mcp:
            assert f"## `{op.mcp}`" in pages["mcp.md"], op.mcp
        for route in op.http:
            assert f"`{route.path}`" in pages["rest.md"], route.path
        if op.cli:
            assert f"## `engrammar {' '.join(op.cli)}`" in pages["cli.md"], op.cli


def test_a_nested_settings_object_is_listed_field_by_field(tmp_path: Path) -> None:
    @dataclasses.dataclass(frozen=True)
    class Inner:
        weight: float = dataclasses.field(default=0.5, metadata={"doc": "How much."})

    @dataclasses.dataclass(frozen=True)
    class Outer:
        ranking: Inner = dataclasses.field(default_factory=Inner)

    rows = list(docs._config_rows(Outer))
    assert rows == ["| `ranking.weight` | `float` | `0.5` |  | How much. |"]
