"""The ``engrammar`` command: the library's verbs in the shell, and the servers.

Every command takes ``--json`` (machine-readable output on stdout) and ``--path`` (the store's
folder; also ``ENGRAMMAR_PATH``). Exit status: 0 success, 1 an error (one line on stderr),
2 a usage mistake. The verbs over memories and feedback records are generated from the
operation table (:mod:`.operations`); :mod:`.cli_admin` holds the rest.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from .. import __version__
from ..engine.validate import shown
from ..errors import EngrammarError
from ..models import KINDS, ROLES
from .cli_admin import register
from .cli_common import emit, json_object, memory_of, store_options
from .operations import OPERATIONS, Operation, Param, Principal, dispatch

__all__ = ["cli", "main"]


def _stdin(text: str) -> str:
    return sys.stdin.read() if text == "-" else text


def _when(value: str | None) -> Any:
    """A timestamp option: epoch seconds when it reads as a number, else the text."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return value


def _transcript(source: str) -> list[Any]:
    """The messages of a transcript file ('-': stdin): a JSON array of messages, or an object
    with a ``messages`` array (a saved OpenAI or Anthropic request body)."""
    try:
        if source == "-":
            raw = sys.stdin.read()
        else:
            with open(source, encoding="utf-8") as handle:
                raw = handle.read()
        value = json.loads(raw)
    except OSError as exc:
        raise click.BadParameter(str(exc), param_hint="--messages") from None
    except ValueError:
        raise click.BadParameter("is not valid JSON", param_hint="--messages") from None
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        raise click.BadParameter(
            "must hold a JSON array of messages (or an object with one under 'messages')",
            param_hint="--messages",
        )
    return value


def _add_messages(args: dict[str, Any]) -> None:
    contents, role, source = args.pop("content"), args.pop("role"), args.pop("messages_file")
    if bool(contents) == (source is not None):
        raise click.UsageError("give CONTENT arguments or --messages FILE, one of the two")
    if source is not None:
        args["messages"] = _transcript(source)
        return
    texts = [sys.stdin.read().rstrip("\n") if c == "-" else c for c in contents]
    args["messages"] = [{"role": role, "content": t} for t in texts]


def _confirm_scope(args: dict[str, Any]) -> None:
    """Forgetting a whole scope asks first (``--yes`` skips the question)."""
    yes = args.pop("yes")
    if args.get("memory_id"):
        return
    keys = ("workspace", "user_id", "agent_id", "session_id")
    scope = ", ".join(f"{k}={args[k]}" for k in keys if args.get(k)) or "the default workspace"
    if not yes:
        click.confirm(f"Delete every memory of {scope}, for good?", abort=True, err=True)


def _meta_condition(text: str) -> tuple[str, Any]:
    """``key=value`` (the value as text) or ``key:=JSON`` (a number, true, false, null)."""
    key, typed, raw = text.partition(":=")
    if not typed:
        key, eq, raw = text.partition("=")
        if not eq:
            raise click.BadParameter(
                f"{text!r}: give key=value (text) or key:=JSON (e.g. n:=2)", param_hint="--meta"
            )
        return key, raw
    try:
        return key, json.loads(raw)
    except ValueError:
        raise click.BadParameter(f"{text!r}: {raw!r} is not JSON", param_hint="--meta") from None


def _filters(args: dict[str, Any]) -> None:
    """The ``filters`` of recall and search from their options: each given option one
    condition; a repeated --kind, --role or --meta KEY allows any of its values."""
    kinds, roles = list(args.pop("kind")), list(args.pop("role"))
    since, until, metas = args.pop("since"), args.pop("until"), args.pop("meta")
    metadata: dict[str, list[Any]] = {}
    for text in metas:
        key, value = _meta_condition(text)
        metadata.setdefault(key, []).append(value)
    found: dict[str, Any] = {
        "metadata": {k: v[0] if len(v) == 1 else {"in": v} for k, v in metadata.items()},
        "kind": kinds,
        "role": roles,
        "since": _when(since),
        "until": _when(until),
    }
    args["filters"] = {k: v for k, v in found.items() if v not in (None, [], {})} or None


def _filter_options() -> list[click.Parameter]:
    return [
        click.Option(
            ["--kind"],
            type=click.Choice(KINDS),
            multiple=True,
            help="Only memories of this kind (repeat for any of several).",
        ),
        click.Option(
            ["--role"],
            type=click.Choice(ROLES),
            multiple=True,
            help="Only memories said by this role (repeat for any of several).",
        ),
        click.Option(
            ["--since"], help="Only memories created at or after this (ISO-8601 or epoch seconds)."
        ),
        click.Option(
            ["--until"], help="Only memories created before this (ISO-8601 or epoch seconds)."
        ),
        click.Option(
            ["--meta"],
            multiple=True,
            metavar="KEY=VALUE",
            help="Only memories whose metadata KEY equals VALUE (text; KEY:=JSON for a number, "
            "true, false or null). Repeat a KEY for any of several values.",
        ),
    ]


#: What a few verbs take beyond their operation's parameters, and how they turn it into those.
_EXTRA: dict[str, tuple[list[click.Parameter], Callable[[dict[str, Any]], None]]] = {
    "add": (
        [
            click.Argument(["content"], nargs=-1),
            click.Option(
                ["--messages", "messages_file"],
                metavar="FILE",
                help="A transcript to remember instead of CONTENT: a JSON array of messages "
                "({role, content} or as the OpenAI / Anthropic APIs write them), '-' for stdin.",
            ),
            click.Option(
                ["--role"],
                type=click.Choice(ROLES),
                default="user",
                show_default=True,
                help="Who said it.",
            ),
        ],
        _add_messages,
    ),
    "feedback": ([], lambda args: args.update(response=_stdin(args["response"]))),
    "recall": (_filter_options(), _filters),
    "search": (_filter_options(), _filters),
    "forget": (
        [
            click.Option(
                ["--yes", "-y"],
                is_flag=True,
                help="Do not ask before deleting a whole scope.",
            )
        ],
        _confirm_scope,
    ),
}


#: Answers that are refusals (nothing was done, and the answer says why): the command prints
#: the reason as an error and exits 1, so a script does not take a refused reply for learned.
_REFUSAL: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "feedback": lambda d: None if d.get("consumed") else str(d.get("message") or "nothing changed"),
}

#: The commands that may create the store; every other one reads (or changes) what is there,
#: so on a missing store it says so instead of creating an empty one.
_CREATES_STORE = frozenset({"add", "create_feedback_event", "create_preference_pair", "log_event"})


class _Number(click.ParamType[Any]):
    """An integer or a number within bounds, refused in the words the library uses on every
    interface (``must be >= 1, got 0``; ``must be an integer, got 'x'``)."""

    def __init__(self, kind: type, low: float | None, high: float | None, gt: bool) -> None:
        self.kind, self.low, self.high, self.gt = kind, low, high, gt
        self.name = "integer" if kind is int else "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = self.kind(value)
        except (TypeError, ValueError):
            wanted = "an integer" if self.kind is int else "a number"
            self.fail(f"must be {wanted}, got {shown(value)}", param, ctx)
        shown_number = shown(number)
        if self.low is not None and self.gt and not number > self.low:
            self.fail(f"must be > {self.low:g}, got {shown_number}", param, ctx)
        if self.low is not None and not self.gt and number < self.low:
            self.fail(f"must be >= {self.low:g}, got {shown_number}", param, ctx)
        if self.high is not None and number > self.high:
            self.fail(f"must be <= {self.high:g}, got {shown_number}", param, ctx)
        return number


def _option(p: Param) -> click.Parameter:
    if p.cli == "arg":
        return click.Argument([p.name])
    if p.cli == "args":
        return click.Argument([p.name], nargs=-1)
    flags = [f"--{p.name.replace('_', '-')}", *([f"-{p.short}"] if p.short else [])]
    kind: Any = None
    if p.choices is not None:
        kind = click.Choice(p.choices)
    elif p.type in (int, int | None):
        kind = _Number(int, p.low, p.high, p.gt)
    elif p.type in (float, float | None):
        kind = _Number(float, p.low, p.high, p.gt)
    default = None if p.required or p.default in (None, "") else p.default
    return click.Option(
        flags,
        type=kind,
        required=p.required,
        default=default,
        show_default=default is not None,
        help=p.doc,
    )


def _command(op: Operation) -> click.Command:
    """The command of ``op``: its parameters as arguments and options, its text as output."""
    extra, prepare = _EXTRA.get(op.name, ([], lambda args: None))
    params = [_option(p) for p in op.params if p.cli is not None]

    def run(
        as_json: bool, path: str | None, store_url: str | None, embedder: str | None, **args: Any
    ) -> None:
        prepare(args)
        for p in op.params:
            if p.json:
                args[p.name] = json_object(p.name.replace("_", "-"), args.get(p.name))
            elif p.cli == "args":
                args[p.name] = list(args[p.name]) or None
        if "timestamp" in args:
            args["timestamp"] = _when(args["timestamp"])
        given = {k: v for k, v in args.items() if v is not None}
        memory = memory_of(path, store_url, embedder, existing=op.name not in _CREATES_STORE)
        try:
            # The shell is the store's owner: scope options are honoured as given.
            principal = Principal(workspace=memory.config.workspace, fixed=False)
            data = dispatch(memory, principal, op.name, given)
        finally:
            memory.close()
        refused = _REFUSAL[op.name](data) if op.name in _REFUSAL else None
        if refused is None or as_json:
            emit(as_json, data, op.text)
        if refused is not None:
            click.echo(f"error: {refused}", err=True)
            raise click.exceptions.Exit(1)

    command = click.Command(op.cli[-1], callback=run, params=[*extra, *params], help=op.cli_doc)
    return store_options(command)


# -- the group -----------------------------------------------------------------------------------
@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="engrammar")
def cli() -> None:
    """Long-term memory for AI agents that learns from feedback.

    Memories live in a local store (a folder, ./engrammar_data by default; choose another with
    --path or ENGRAMMAR_PATH). A quick tour:

    \b
      engrammar add "I write docs before code." --user-id alice
      engrammar recall "How do you approach projects?" --user-id alice
      engrammar search "docs" --user-id alice --json
      engrammar forget MEMORY_ID
      engrammar mcp                        # MCP server on stdio, for agents
      engrammar keys create --workspace W  # an API key for the HTTP server
      engrammar serve                      # MCP + REST over HTTP on 127.0.0.1:8765

    Run 'engrammar COMMAND --help' for a command's options.
    """


for _op in OPERATIONS:
    if len(_op.cli) == 1:
        cli.add_command(_command(_op))
    elif _op.cli:
        _group = cli.commands.get(_op.cli[0])
        if _group is None:
            titles = [o.summary[4:] for o in OPERATIONS if o.cli == (_op.cli[0], "get")]
            _group = click.Group(
                _op.cli[0],
                help=f"Create, list and show {titles[0]}s."
                if titles
                else f"Add, search, list and delete {_op.cli[0]} bases.",
            )
            cli.add_command(_group)
        assert isinstance(_group, click.Group)
        _group.add_command(_command(_op))
register(cli)


# -- entry point ---------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """Run the CLI; exit 0 on success, 1 on an error (one line on stderr), 2 on misuse."""
    try:
        code = cli.main(args=argv, prog_name="engrammar", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except EngrammarError as exc:
        # The process boundary: every error the library raises on purpose, as one line.
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except OSError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        # The outermost boundary: an error nobody meant still reads as one line, not a trace.
        click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
