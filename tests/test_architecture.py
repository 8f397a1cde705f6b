"""ARCHITECTURE.md against the package: its drawing and its table name every top-level module,
and every rule it numbers names an import-linter contract that `make lint` runs; no module
imports another module's private names."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "ARCHITECTURE.md").read_text()
PACKAGE = ROOT / "src" / "engrammar"


def _top_level() -> set[str]:
    names = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    return names


def test_drawing_names_every_top_level_module() -> None:
    drawing = DOC.split("```", 2)[1]
    missing = sorted(
        n for n in _top_level() if not re.search(rf"(?<![\w/]){n}(\.py|/)?(?!\w)", drawing)
    )
    assert not missing, f"ARCHITECTURE.md's drawing leaves out {missing}"


def test_table_names_every_top_level_module() -> None:
    table = DOC.split("## What each package holds", 1)[1].split("\n## ", 1)[0]
    missing = sorted(n for n in _top_level() if f"`{n}" not in table)
    assert not missing, f"ARCHITECTURE.md's package table leaves out {missing}"


def test_every_rule_is_a_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ids = {c["id"] for c in config["tool"]["importlinter"]["contracts"]}
    rules = DOC.split("## Rules", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"^\d+\. \*\*[^*]+\*\* \(`(\w+)`", rules, re.M)
    assert len(named) == len(re.findall(r"^\d+\. ", rules, re.M)), "a rule names no contract"
    assert set(named) <= ids, f"rules name contracts lint does not run: {set(named) - ids}"
    assert ids <= set(named), f"contracts no rule states: {ids - set(named)}"


def _private_imports(source: str) -> list[tuple[int, str]]:
    """The ``from module import _name`` of ``source``: a private name of another module."""
    return [
        (node.lineno, alias.name)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def test_no_module_imports_another_modules_private_names() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, name in _private_imports(path.read_text())
    ]
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def test_the_check_sees_a_private_import_and_passes_a_public_one_under_a_private_alias() -> None:
    assert _private_imports("from .text import _WORD, terms\n") == [(1, "_WORD")]
    assert _private_imports("from .text import stem as _stem\n") == []
