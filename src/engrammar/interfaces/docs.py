"""The reference pages under ``docs/reference/``, written from the code: the configuration from
:class:`~engrammar.Config`'s fields, the CLI from the click commands, the MCP tools and the REST
routes from the operation table. ``make docs`` (``python -m engrammar.interfaces.docs``) writes
them; ``tests/test_reference_docs.py`` fails when the committed pages differ.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ..config import Config
from .operations import OPERATIONS
from .spec import Operation, Param

__all__ = ["PAGES", "render", "write"]

_HEADER = "<!-- Written by `make docs` from the code; edit the code, not this page. -->\n\n"


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _value(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return f"`{value!r}`" if not isinstance(value, str) else f'`"{value}"`'


def _type_name(tp: Any) -> str:
    return tp if isinstance(tp, str) else getattr(tp, "__name__", str(tp))


def _config_rows(cls: type, prefix: str = "") -> Iterator[str]:
    for f in dataclasses.fields(cls):
        meta = f.metadata
        default = meta.get("default", f.default)
        factory: Any = f.default_factory
        if default is dataclasses.MISSING and factory is not dataclasses.MISSING:
            default = factory()
        nested = default if dataclasses.is_dataclass(default) else None
        if nested is None and isinstance(f.type, type) and dataclasses.is_dataclass(f.type):
            nested = f.type
        if nested is not None:
            yield from _config_rows(
                type(nested) if not isinstance(nested, type) else nested, f"{prefix}{f.name}."
            )
            continue
        name = f"{prefix}{f.name}"
        env = f"`ENGRAMMAR_{f.name.upper()}`" if not prefix else ""
        yield (
            f"| `{name}` | `{_cell(_type_name(f.type))}` | {_cell(_value(default))} | {env} "
            f"| {_cell(meta.get('doc', ''))} |"
        )


def config_page() -> str:
    rows = "\n".join(_config_rows(Config))
    return (
        f"{_HEADER}# Configuration reference\n\n"
        "Every field of `Config`, in the order it declares them. Precedence, per field: an argument "
        "to `Config` > the `ENGRAMMAR_<FIELD>` environment variable > a TOML file named by "
        "`ENGRAMMAR_CONFIG` > the default. What the settings do, at more length, and how to "
        "change the ranking: [configuration.md](../configuration.md).\n\n"
        "| field | type | default | environment | what it does |\n|---|---|---|---|---|\n"
        f"{rows}\n"
    )


def _cli_command(path: str, cmd: click.Command) -> Iterator[str]:
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.commands):
            yield from _cli_command(f"{path} {name}", cmd.commands[name])
        return
    yield f"## `{path}`\n"
    help_text = (cmd.help or "").strip()
    if help_text:
        yield help_text.replace("\b\n", "") + "\n"
    rows = []
    for p in cmd.params:
        if isinstance(p, click.Argument):
            rows.append(f"| `{p.human_readable_name}` | argument | | |")
            continue
        if not isinstance(p, click.Option) or p.hidden:
            continue
        names = ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
        unset = p.default in (None, False, ()) or callable(p.default)
        default = "" if unset or "Sentinel" in repr(p.default) else _value(p.default)
        rows.append(
            f"| {names} | {_cell(p.type.name)} | {_cell(default)} | {_cell(p.help or '')} |"
        )
    if rows:
        yield (
            "| parameter | type | default | what it is |\n|---|---|---|---|\n"
            + "\n".join(rows)
            + "\n"
        )


def cli_page() -> str:
    from .cli import cli

    body = "\n".join(_cli_command("engrammar", cli))
    return (
        f"{_HEADER}# CLI reference\n\nEvery command of `engrammar`, with its options "
        "(`engrammar COMMAND --help` prints the same).\n\n"
        f"{body}"
    )


def _param_row(p: Param) -> str:
    if p.required:
        default = "required"
    elif p.default is None:
        default = ""
    else:
        default = _value(p.default)
    kind = _type_name(p.type)
    if p.choices:
        kind += " (" + ", ".join(p.choices) + ")"
    return f"| `{p.name}` | {_cell(kind)} | {_cell(default)} | {_cell(p.doc)} |"


def _params(params: tuple[Param, ...]) -> str:
    if not params:
        return "No parameters.\n"
    head = "| parameter | type | default | what it is |\n|---|---|---|---|\n"
    return head + "\n".join(_param_row(p) for p in params) + "\n"


def mcp_page() -> str:
    parts = [
        f"{_HEADER}# MCP tools\n\n`engrammar mcp` serves these tools (stdio), one per "
        "operation of the table that has one.\n"
    ]
    for op in sorted((o for o in OPERATIONS if o.mcp), key=lambda o: o.mcp or ""):
        params = tuple(p for p in op.params if p.mcp)
        parts.append(f"## `{op.mcp}`\n\n{_cell(op.mcp_doc or op.summary)}\n\n{_params(params)}")
    return "\n".join(parts)


def _routes(op: Operation) -> Iterator[tuple[str, str, int]]:
    for route in op.http:
        yield route.path, route.method.upper(), route.status


def rest_page() -> str:
    rows = sorted(
        (path, method, status, op) for op in OPERATIONS for path, method, status in _routes(op)
    )
    parts = [
        f"{_HEADER}# REST reference\n\n`engrammar serve` serves these routes; the OpenAPI "
        "document at `/openapi.json` describes the same with their schemas.\n\n"
        "| method | path | status | operation | what it does |\n|---|---|---|---|---|\n"
        + "\n".join(
            f"| {m} | `{p}` | {s} | `{op.name}` | {_cell(op.summary)} |" for p, m, s, op in rows
        )
        + "\n"
    ]
    for op in sorted({op.name: op for *_, op in rows}.values(), key=lambda o: o.name):
        parts.append(f"## `{op.name}`\n\n{_cell(op.summary)}\n\n{_params(op.params)}")
    return "\n".join(parts)


PAGES = {
    "configuration.md": config_page,
    "cli.md": cli_page,
    "mcp.md": mcp_page,
    "rest.md": rest_page,
}


def render() -> dict[str, str]:
    """Each page's file name under ``docs/reference/`` and the text the code gives it."""
    return {name: page() for name, page in PAGES.items()}


def write(folder: Path) -> list[str]:
    """Write the pages into ``folder``; the names of those that changed."""
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in render().items():
        target = folder / name
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)
            changed.append(name)
    return changed


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/reference")
    for name in write(out):
        print(f"wrote {out / name}")
