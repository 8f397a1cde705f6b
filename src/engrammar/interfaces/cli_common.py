"""What every command of the CLI shares: the store and scope options, opening the store, output."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["config_of", "emit", "json_object", "memory_of", "scope_options", "store_options"]

F = TypeVar("F", bound=Callable[..., Any])


# -- shared options ------------------------------------------------------------------------------
def store_options(fn: F) -> F:
    fn = click.option(
        "--embedder",
        help="Embedding model: minilm (default, offline), hash (fast test double, no meaning), "
        "openai, sentence-transformers. Env: ENGRAMMAR_EMBEDDER.",
    )(fn)
    fn = click.option(
        "--store",
        "store_url",
        metavar="URL",
        help="'sqlite' (default) or a postgresql:// URL. Env: ENGRAMMAR_STORE.",
    )(fn)
    fn = click.option(
        "--path",
        type=click.Path(file_okay=False),
        help="Folder of the embedded store (default ./engrammar_data). Env: ENGRAMMAR_PATH.",
    )(fn)
    fn = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)
    return fn


def scope_options(fn: F) -> F:
    fn = click.option(
        "--workspace",
        "-w",
        help="Workspace (tenant); default 'default'. Env: ENGRAMMAR_WORKSPACE.",
    )(fn)
    fn = click.option("--session-id", "-s", help="A conversation or task id.")(fn)
    fn = click.option("--agent-id", "-a", help="The agent that acts, e.g. codex.")(fn)
    fn = click.option("--user-id", "-u", help="The end user the memories belong to, e.g. alice.")(
        fn
    )
    return fn


def config_of(path: str | None, store_url: str | None, embedder: str | None, **extra: Any) -> Any:
    from ..config import Config

    given = {"path": path, "store": store_url, "embedder": embedder, **extra}
    return Config(**{k: val for k, val in given.items() if val is not None})


def memory_of(path: str | None, store_url: str | None, embedder: str | None) -> Any:
    from ..memory import Memory

    return Memory(config_of(path, store_url, embedder))


def emit(as_json: bool, data: Any, text: Callable[[Any], str]) -> None:
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        out = text(data)
        if out:
            click.echo(out)


def json_object(name: str, raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        raise click.BadParameter("is not valid JSON", param_hint=f"--{name}") from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint=f"--{name}")
    return value
