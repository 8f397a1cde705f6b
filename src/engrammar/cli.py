"""The ``engrammar`` command: the library's verbs in the shell, and the servers.

Every command takes ``--json`` (machine-readable output on stdout) and ``--path`` (the store's
folder; also ``ENGRAMMAR_PATH``). Exit status: 0 success, 1 an error (one line on stderr),
2 a usage mistake.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from . import __version__
from .cli_eval import eval_group
from .cli_migrate import migrate_command
from .errors import EngrammarError

F = TypeVar("F", bound=Callable[..., Any])

_KINDS = ["message", "fact", "decision", "preference", "event"]
_ROLES = ["user", "assistant", "system", "tool"]


# -- shared options ------------------------------------------------------------------------------
def _store_options(fn: F) -> F:
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


def _scope_options(fn: F) -> F:
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


def _config(path: str | None, store_url: str | None, embedder: str | None, **extra: Any) -> Any:
    from .config import Config

    given = {"path": path, "store": store_url, "embedder": embedder, **extra}
    return Config(**{k: val for k, val in given.items() if val is not None})


def _memory(path: str | None, store_url: str | None, embedder: str | None) -> Any:
    from .memory import Memory

    return Memory(_config(path, store_url, embedder))


def _ops(memory: Any) -> Any:
    from ._ops import Operations, Principal

    # The shell is the store's owner: scope options are honoured as given.
    return Operations(memory, Principal(workspace=memory.config.workspace, fixed=False))


def _emit(as_json: bool, data: Any, text: Callable[[Any], str]) -> None:
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        out = text(data)
        if out:
            click.echo(out)


def _with_ops(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Open the store from the shared options, hand the command an Operations, close it."""

    @functools.wraps(fn)
    def wrapper(
        path: str | None, store_url: str | None, embedder: str | None, **kwargs: Any
    ) -> Any:
        memory = _memory(path, store_url, embedder)
        try:
            return fn(_ops(memory), **kwargs)
        finally:
            memory.close()

    return wrapper


def _json_object(name: str, raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        raise click.BadParameter("is not valid JSON", param_hint=f"--{name}") from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint=f"--{name}")
    return value


def _short(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _memory_lines(record: dict[str, Any]) -> str:
    keys = [
        "id",
        "content",
        "role",
        "kind",
        "status",
        "workspace",
        "user_id",
        "agent_id",
        "session_id",
        "created_at_iso",
    ]
    lines = [f"{k}: {record[k]}" for k in keys if record.get(k) is not None]
    if record.get("metadata"):
        lines.append(f"metadata: {json.dumps(record['metadata'], ensure_ascii=False)}")
    return "\n".join(lines)


def _ranked(items: list[dict[str, Any]]) -> str:
    if not items:
        return "No memories matched."
    return "\n".join(
        f"{i}. {item['score']:.3f}  {item['memory']['id']}  {_short(item['memory']['content'])}"
        for i, item in enumerate(items, 1)
    )


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


@cli.command()
@click.argument("content", nargs=-1, required=True)
@_scope_options
@click.option(
    "--role", type=click.Choice(_ROLES), default="user", show_default=True, help="Who said it."
)
@click.option(
    "--kind", type=click.Choice(_KINDS), default="message", show_default=True, help="What it is."
)
@click.option("--metadata", help='Extra data as a JSON object, e.g. \'{"source": "chat"}\'.')
@click.option("--timestamp", help="When it was said (ISO-8601 or epoch seconds); default now.")
@_store_options
@_with_ops
def add(
    ops: Any,
    content: tuple[str, ...],
    role: str,
    kind: str,
    metadata: str | None,
    timestamp: str | None,
    as_json: bool,
    **scope: Any,
) -> None:
    """Remember something: each CONTENT argument is one message ('-' reads one from stdin).

    \b
      engrammar add "I prefer tea to coffee." --user-id alice
      engrammar add "Ship on Fridays is fine." "No, never on Fridays." -u bob --role user
    Prints the new memories' ids (an exact duplicate prints the id it already has).
    """
    texts = [sys.stdin.read().rstrip("\n") if c == "-" else c for c in content]
    when: Any = timestamp
    if timestamp is not None:
        try:
            when = float(timestamp)
        except ValueError:
            when = timestamp
    data = ops.add(
        messages=[{"role": role, "content": t} for t in texts],
        metadata=_json_object("metadata", metadata),
        timestamp=when,
        kind=kind,
        **scope,
    )
    _emit(as_json, data, lambda d: "\n".join(d["ids"]))


@cli.command()
@click.argument("query")
@_scope_options
@click.option("--limit", "-n", type=click.IntRange(1, 1000), help="How many memories (default 10).")
@_store_options
@_with_ops
def recall(ops: Any, query: str, limit: int | None, as_json: bool, **scope: Any) -> None:
    """Recall what matters for QUERY: ranked memories, paths and conflicts, as a text block.

    The recall is recorded with an id (printed last) that 'engrammar feedback' can act on.
    """
    data = ops.recall(query=query, limit=limit, **scope)
    _emit(
        as_json,
        data,
        lambda d: f"{d['formatted'] or 'No memories matched.'}\n\nrecall_id: {d['recall_id']}",
    )


@cli.command()
@click.argument("query")
@_scope_options
@click.option("--limit", "-n", type=click.IntRange(1, 1000), help="How many results (default 10).")
@_store_options
@_with_ops
def search(ops: Any, query: str, limit: int | None, as_json: bool, **scope: Any) -> None:
    """Search memories by meaning and keywords: score, id and content, best first."""
    data = ops.search(query=query, limit=limit, **scope)
    _emit(as_json, data, lambda d: _ranked(d["results"]))


@cli.command()
@click.argument("memory_id", nargs=-1)
@_scope_options
@_store_options
@_with_ops
def forget(ops: Any, memory_id: tuple[str, ...], as_json: bool, **scope: Any) -> None:
    """Delete memories for good: the given MEMORY_IDs, or with no id a whole scope.

    \b
      engrammar forget 3f2a…                # one memory
      engrammar forget --user-id alice      # everything of alice
    """
    data = ops.forget(memory_id=list(memory_id) or None, **scope)
    _emit(as_json, data, lambda d: f"deleted {d['deleted']} memories")


@cli.command()
@click.argument("memory_id")
@click.option("--workspace", "-w", help="Workspace (default 'default').")
@_store_options
@_with_ops
def get(ops: Any, memory_id: str, workspace: str | None, as_json: bool) -> None:
    """Show one memory."""
    data = ops.get(memory_id=memory_id, workspace=workspace)
    _emit(as_json, data, _memory_lines)


@cli.command(name="list")
@_scope_options
@click.option("--limit", "-n", type=click.IntRange(1, 10000), default=100, show_default=True)
@click.option("--offset", type=click.IntRange(0), default=0, show_default=True)
@_store_options
@_with_ops
def list_(ops: Any, limit: int, offset: int, as_json: bool, **scope: Any) -> None:
    """List memories of a scope, oldest first."""
    data = ops.list(limit=limit, offset=offset, **scope)
    _emit(
        as_json,
        data,
        lambda d: "\n".join(
            f"{m['id']}  {m['created_at_iso'][:19]}  {m['user_id'] or '-'}  {_short(m['content'])}"
            for m in d["memories"]
        ),
    )


@cli.command()
@click.argument("memory_id")
@click.option("--workspace", "-w", help="Workspace (default 'default').")
@_store_options
@_with_ops
def history(ops: Any, memory_id: str, workspace: str | None, as_json: bool) -> None:
    """Show what changed a memory, and why, oldest first."""
    from .models import iso

    data = ops.history(memory_id=memory_id, workspace=workspace)
    _emit(
        as_json,
        data,
        lambda d: "\n".join(
            f"{h['rev']}  {iso(h['at'])[:19]}  {h['op']:<8} {h['reason'] or ''}".rstrip()
            for h in d["history"]
        ),
    )


@cli.command()
@_scope_options
@_store_options
@_with_ops
def stats(ops: Any, as_json: bool, **scope: Any) -> None:
    """Counts of memories, edges, recalls and feedback in a scope."""
    data = ops.stats(**scope)
    _emit(
        as_json,
        data,
        lambda d: "\n".join(
            f"{k}: {json.dumps(val) if isinstance(val, dict) else val}" for k, val in d.items()
        ),
    )


@cli.command()
@click.argument("response")
@click.option("--recall-id", help="The recall to act on (default: the scope's newest unused one).")
@_scope_options
@_store_options
@_with_ops
def feedback(ops: Any, response: str, recall_id: str | None, as_json: bool, **scope: Any) -> None:
    """Teach engrammar from RESPONSE, the reply you produced after a recall ('-': stdin).

    Graph links along recalled paths that the reply agreed with are strengthened; those it
    ignored are weakened. A recall is used once.

    \b
      engrammar recall "How do you approach projects?" -u alice
      engrammar feedback "You write the docs first, then code." -u alice
    """
    text = sys.stdin.read() if response == "-" else response
    data = ops.feedback(response=text, recall_id=recall_id, **scope)
    _emit(
        as_json,
        data,
        lambda d: (
            d.get("message")
            or f"strengthened {d['strengthened']}, weakened {d['weakened']} (recall {d['recall_id']})"
        ),
    )


@cli.command()
@click.argument("query")
@click.argument("memory_id")
@_scope_options
@click.option("--limit", "-n", type=click.IntRange(1, 1000), help="The result size ranked against.")
@_store_options
@_with_ops
def explain(
    ops: Any, query: str, memory_id: str, limit: int | None, as_json: bool, **scope: Any
) -> None:
    """Explain why MEMORY_ID ranks where it does for QUERY: every part of its score."""
    data = ops.explain(query=query, memory_id=memory_id, limit=limit, **scope)

    def text(d: dict[str, Any]) -> str:
        lines = [f"memory {d['memory_id']}: rank {d.get('rank')}, score {d.get('score')}"]
        lines += [f"  {k}: {val}" for k, val in d.get("components", {}).items()]
        if d.get("best_path"):
            lines.append(f"best path: {' -> '.join(d['best_path']['nodes'])}")
        if d.get("formula"):
            lines.append(d["formula"])
        return "\n".join(lines)

    _emit(as_json, data, text)


# -- decisions and feedback records (seed 003) ---------------------------------------------------
_STATES = ["corrected", "adopted", "rejected"]


def _record_lines(record: dict[str, Any]) -> str:
    return "\n".join(
        f"{k}: {json.dumps(val, ensure_ascii=False) if isinstance(val, dict) else val}"
        for k, val in record.items()
        if val is not None and val != {}
    )


def _record_group(
    name: str, title: str, lister: str, getter: str, key: str, summary: Callable[[Any], str]
) -> click.Group:
    """A command group with `list` and `get` for one kind of record; `create` is added after."""

    @click.group(name=name, help=f"Create, list and show {title}s.")
    def group() -> None:
        pass

    @group.command(name="list", help=f"List {title}s of a scope, oldest first.")
    @_scope_options
    @click.option("--limit", "-n", type=click.IntRange(1, 10000), default=100, show_default=True)
    @click.option("--offset", type=click.IntRange(0), default=0, show_default=True)
    @_store_options
    @_with_ops
    def list_cmd(ops: Any, limit: int, offset: int, as_json: bool, **scope: Any) -> None:
        if name == "review" and scope.pop("session_id") is not None:
            raise click.UsageError("decision reviews are not kept per session: drop --session-id")
        data = getattr(ops, lister)(limit=limit, offset=offset, **scope)
        _emit(
            as_json,
            data,
            lambda d: "\n".join(f"{r['id']}  {summary(r)}" for r in d[key]),
        )

    @group.command(name="get", help=f"Show one {title}.")
    @click.argument("record_id")
    @click.option("--workspace", "-w", help="Workspace (default 'default').")
    @_store_options
    @_with_ops
    def get_cmd(ops: Any, record_id: str, workspace: str | None, as_json: bool) -> None:
        id_name = {
            "get_decision_review": "review_id",
            "get_preference_pair": "pair_id",
            "get_memory_rating": "rating_id",
        }.get(getter, "event_id")
        data = getattr(ops, getter)(**{id_name: record_id, "workspace": workspace})
        _emit(as_json, data, _record_lines)

    cli.add_command(group)
    return group


event = _record_group(
    "event",
    "feedback event",
    "list_feedback_events",
    "get_feedback_event",
    "feedback_events",
    lambda r: f"{r['state']:<9} {_short(r['input_context'], 70)}",
)
review = _record_group(
    "review",
    "decision review",
    "list_decision_reviews",
    "get_decision_review",
    "decision_reviews",
    lambda r: (
        f"event {r['event_id']} -> {r['final_decision']} ({r['outcome']})"
        + (" REVERSED" if r["reversed"] else "")
    ),
)
pair = _record_group(
    "pair",
    "preference pair",
    "list_preference_pairs",
    "get_preference_pair",
    "preference_pairs",
    lambda r: f"{_short(r['accepted_output'], 40)}  >  {_short(r['rejected_output'], 40)}",
)
log = _record_group(
    "log",
    "logged event",
    "list_logged_events",
    "get_logged_event",
    "logged_events",
    lambda r: f"{r['kind']}  {json.dumps(r['payload'], ensure_ascii=False)[:70]}",
)
rate = _record_group(
    "rate",
    "memory rating",
    "list_memory_ratings",
    "get_memory_rating",
    "memory_ratings",
    lambda r: f"{r['verdict']:<9} memory {r['memory_id']}",
)


@event.command(name="create")
@click.option("--input-context", required=True, help="What the agent was asked or working on.")
@click.option("--ai-output", required=True, help="What the agent produced.")
@click.option(
    "--state", type=click.Choice(_STATES), required=True, help="What the user did with the output."
)
@click.option("--user-reaction", help="How the user reacted.")
@click.option("--user-correction", help="The user's correction, as said.")
@click.option("--corrected-output", help="The corrected version of the output.")
@click.option("--reason", help="Why.")
@click.option("--source-event-id", help="Your id for this event; a resend returns the same event.")
@click.option("--metadata", help="Extra data as a JSON object.")
@_scope_options
@_store_options
@_with_ops
def event_create(ops: Any, metadata: str | None, as_json: bool, **fields: Any) -> None:
    """Record what happened to an agent's output: corrected, adopted or rejected.

    \b
      engrammar event create --agent-id codex -w payments-api \\
        --input-context "Add retries to the webhook sender" \\
        --ai-output "Retry every 30 seconds until it succeeds." --state corrected \\
        --corrected-output "Exponential backoff, max 5 attempts, skip 4xx." \\
        --reason "A 4xx means the request is wrong; sending it again won't fix it."
    """
    data = ops.create_feedback_event(metadata=_json_object("metadata", metadata), **fields)
    _emit(as_json, data, lambda d: f"recorded feedback event {d['id']} ({d['state']})")


@review.command(name="create")
@click.argument("event_id")
@click.option(
    "--final-decision",
    type=click.Choice(_STATES),
    required=True,
    help="The verdict now; a different one from the event's state reverses it.",
)
@click.option(
    "--outcome",
    type=click.Choice(["success", "partial", "failure", "unknown"]),
    default="unknown",
    show_default=True,
    help="How the decision turned out.",
)
@click.option("--confidence", type=click.FloatRange(0, 1), default=1.0, show_default=True)
@click.option("--reason", help="Why.")
@click.option("--user-id", "-u", help="Who reviews.")
@click.option("--agent-id", "-a", help="The agent that reviews.")
@click.option("--workspace", "-w", help="Workspace (default 'default').")
@_store_options
@_with_ops
def review_create(ops: Any, as_json: bool, **fields: Any) -> None:
    """Review the feedback event EVENT_ID: final decision, outcome, confidence."""
    data = ops.create_decision_review(**fields)
    _emit(
        as_json,
        data,
        lambda d: f"recorded decision review {d['id']}" + (" (reversed)" if d["reversed"] else ""),
    )


@pair.command(name="create")
@click.option("--context", required=True, help="The situation both outputs answered.")
@click.option("--accepted-output", required=True, help="The preferred output.")
@click.option("--rejected-output", required=True, help="The output turned down.")
@click.option("--weight", type=float, default=1.0, show_default=True, help="In (0, 10].")
@_scope_options
@_store_options
@_with_ops
def pair_create(ops: Any, as_json: bool, **fields: Any) -> None:
    """Record that one output was preferred over another for the same context."""
    data = ops.create_preference_pair(**fields)
    _emit(as_json, data, lambda d: f"recorded preference pair {d['id']}")


@log.command(name="create")
@click.argument("kind")
@click.option("--payload", help="Data about the event, as a JSON object.")
@_scope_options
@_store_options
@_with_ops
def log_create(ops: Any, kind: str, payload: str | None, as_json: bool, **scope: Any) -> None:
    """Put any other event of KIND on record (a checkpoint, a tool run)."""
    data = ops.log_event(kind=kind, payload=_json_object("payload", payload), **scope)
    _emit(as_json, data, lambda d: f"logged event {d['id']} ({d['kind']})")


@rate.command(name="create")
@click.argument("memory_id")
@click.option(
    "--verdict",
    type=click.Choice(["accepted", "rejected", "corrected"]),
    required=True,
    help="Whether the memory helped.",
)
@click.option("--correction", help="With 'corrected': the right content (stored as a fact).")
@click.option(
    "--recall-id", help="The recall the memory came from (rating counts for similar queries)."
)
@click.option("--context", help="The query the rating applies to, instead of --recall-id.")
@click.option("--weight", type=float, default=1.0, show_default=True, help="In (0, 10].")
@_scope_options
@_store_options
@_with_ops
def rate_create(ops: Any, as_json: bool, **fields: Any) -> None:
    """Rate MEMORY_ID: accepted, rejected or corrected (MCP memory_feedback)."""
    data = ops.rate_memory(**fields)
    _emit(as_json, data, lambda d: f"rated memory {d['memory_id']}: {d['verdict']} ({d['id']})")


# -- export / import -----------------------------------------------------------------------------
def _bar(label: str) -> tuple[Any, Callable[[int, int], None]]:
    """A progress bar on stderr (shown only on a terminal) and the callback that moves it."""
    state: dict[str, Any] = {"bar": None, "done": 0}
    if not sys.stderr.isatty():
        # Scripts and pipes get no bar (click would still print its label).
        return (lambda: None), (lambda done, total: None)

    def progress(done: int, total: int) -> None:
        bar = state["bar"]
        if bar is None:
            bar = state["bar"] = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.update(done - state["done"])
        state["done"] = done

    def close() -> None:
        if state["bar"] is not None:
            state["bar"].__exit__(None, None, None)

    return close, progress


@cli.command(name="export")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), default="-")
@_scope_options
@_store_options
def export_(
    file: str,
    as_json: bool,
    path: str | None,
    store_url: str | None,
    embedder: str | None,
    **scope: Any,
) -> None:
    """Write memories and their links to FILE as JSON Lines ('-' or nothing: stdout).

    Exports the whole workspace unless scope options narrow it. Vectors are not included:
    'engrammar import' embeds again, so an export also moves a store to another model.
    """
    memory = _memory(path, store_url, embedder)
    close, progress = _bar("exporting")
    try:
        target: Any = sys.stdout if file == "-" else file
        count = memory.export(target, progress=None if file == "-" else progress, **scope)
    finally:
        close()
        memory.close()
    if file != "-":
        _emit(as_json, {"memories": count, "file": file}, lambda d: f"exported {count} memories")


@cli.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, exists=True))
@click.option("--workspace", "-w", help="Put everything into this workspace instead.")
@_store_options
def import_(
    file: str,
    workspace: str | None,
    as_json: bool,
    path: str | None,
    store_url: str | None,
    embedder: str | None,
) -> None:
    """Read a JSON Lines export from FILE ('-': stdin) into the store, in one transaction.

    A bad line stops the import before anything is written; exact duplicates are skipped.
    """
    memory = _memory(path, store_url, embedder)
    close, progress = _bar("importing")
    try:
        source: Any = sys.stdin if file == "-" else file
        data = memory.import_(source, workspace=workspace, progress=progress)
    finally:
        close()
        memory.close()
    _emit(
        as_json,
        data,
        lambda d: (
            f"imported {d['memories']} memories ({d['duplicates']} already present), "
            f"{d['edges']} links, {d['records']} feedback and recall records"
        ),
    )


# -- keys ----------------------------------------------------------------------------------------
@cli.group()
def keys() -> None:
    """API keys for the HTTP server: each reaches one workspace (and optionally one user)."""


def _key_store(path: str | None, store_url: str | None) -> Any:
    from .store import open_store

    return open_store(_config(path, store_url, None))


@keys.command(name="create")
@click.option("--workspace", "-w", required=True, help="The workspace the key reaches.")
@click.option("--user-id", "--user", "-u", "user_id", help="Bind the key to this user only.")
@click.option("--name", default="", help="A label to recognise the key by.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--path", type=click.Path(file_okay=False), help="Store folder. Env: ENGRAMMAR_PATH.")
@click.option("--store", "store_url", metavar="URL", help="Store URL. Env: ENGRAMMAR_STORE.")
def keys_create(
    workspace: str,
    user_id: str | None,
    name: str,
    as_json: bool,
    path: str | None,
    store_url: str | None,
) -> None:
    """Create an API key. It is printed once and only its hash is stored: keep it safe."""
    from .keys import create_api_key

    store = _key_store(path, store_url)
    try:
        token, record = create_api_key(store, workspace, user_id=user_id, name=name)
    finally:
        store.close()
    data = {"key": token, **record.to_dict()}
    _emit(
        as_json,
        data,
        lambda d: (
            f"{token}\n"
            f"(key_id {record.key_id}, workspace {record.workspace!r}"
            + (f", user {record.user_id!r}" if record.user_id else "")
            + "; shown once, store it now)"
        ),
    )


@keys.command(name="list")
@click.option("--workspace", "-w", help="Only keys of this workspace.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--path", type=click.Path(file_okay=False), help="Store folder. Env: ENGRAMMAR_PATH.")
@click.option("--store", "store_url", metavar="URL", help="Store URL. Env: ENGRAMMAR_STORE.")
def keys_list(
    workspace: str | None, as_json: bool, path: str | None, store_url: str | None
) -> None:
    """List API keys (ids, workspaces, users; never the keys themselves)."""
    from .keys import list_api_keys
    from .models import iso

    store = _key_store(path, store_url)
    try:
        records = list_api_keys(store, workspace)
    finally:
        store.close()
    data = {"keys": [r.to_dict() for r in records]}
    _emit(
        as_json,
        data,
        lambda d: "\n".join(
            f"{r['key_id']}  {r['workspace']}  user={r['user_id'] or '*'}  "
            f"created {iso(r['created_at'])[:19]}"
            + ("  REVOKED" if r["revoked_at"] else "")
            + (f"  {r['name']}" if r["name"] else "")
            for r in d["keys"]
        ),
    )


@keys.command(name="revoke")
@click.argument("key_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--path", type=click.Path(file_okay=False), help="Store folder. Env: ENGRAMMAR_PATH.")
@click.option("--store", "store_url", metavar="URL", help="Store URL. Env: ENGRAMMAR_STORE.")
def keys_revoke(key_id: str, as_json: bool, path: str | None, store_url: str | None) -> None:
    """Revoke the key KEY_ID (see 'engrammar keys list'); it stops working at once."""
    from .keys import revoke_api_key

    store = _key_store(path, store_url)
    try:
        changed = revoke_api_key(store, key_id)
    finally:
        store.close()
    data = {"key_id": key_id, "revoked": True, "was_active": changed}
    _emit(
        as_json, data, lambda d: f"revoked {key_id}" if changed else f"{key_id} was already revoked"
    )


# -- servers -------------------------------------------------------------------------------------
@cli.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback exposes the server.",
)
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--no-auth",
    is_flag=True,
    help="Accept requests without an API key (local development; loopback only).",
)
@click.option("--workspace", "-w", help="Workspace of unauthenticated requests with --no-auth.")
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
@click.option("--path", type=click.Path(file_okay=False), help="Store folder. Env: ENGRAMMAR_PATH.")
@click.option("--store", "store_url", metavar="URL", help="Store URL. Env: ENGRAMMAR_STORE.")
@click.option("--embedder", help="Embedding model (default minilm). Env: ENGRAMMAR_EMBEDDER.")
def serve(
    host: str,
    port: int,
    no_auth: bool,
    workspace: str | None,
    log_level: str,
    path: str | None,
    store_url: str | None,
    embedder: str | None,
) -> None:
    """Serve MCP (streamable HTTP, at /mcp) and the REST API (/v1, /openapi.json, /healthz).

    Every request needs 'Authorization: Bearer KEY' with a key from 'engrammar keys create'.
    """
    from .server import is_loopback
    from .server import serve as run

    if no_auth and not is_loopback(host):
        raise click.UsageError("--no-auth is only allowed on a loopback address (127.0.0.1, ::1)")
    from .memory import Memory

    memory = Memory(_config(path, store_url, embedder, workspace=workspace))
    try:
        run(memory, host=host, port=port, auth=not no_auth, log_level=log_level)
    finally:
        memory.close()


@cli.command()
@click.option("--workspace", "-w", help="Default workspace of the tools. Env: ENGRAMMAR_WORKSPACE.")
@click.option("--path", type=click.Path(file_okay=False), help="Store folder. Env: ENGRAMMAR_PATH.")
@click.option("--store", "store_url", metavar="URL", help="Store URL. Env: ENGRAMMAR_STORE.")
@click.option("--embedder", help="Embedding model (default minilm). Env: ENGRAMMAR_EMBEDDER.")
def mcp(
    workspace: str | None, path: str | None, store_url: str | None, embedder: str | None
) -> None:
    """Serve the MCP tools on stdin/stdout, for an agent that starts engrammar itself.

    stdout carries only the protocol; logs go to stderr. Runs as you, on your store.
    """
    import logging

    from .memory import Memory
    from .server import run_stdio

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    memory = Memory(_config(path, store_url, embedder, workspace=workspace))
    try:
        run_stdio(memory)
    finally:
        memory.close()


cli.add_command(eval_group)
cli.add_command(migrate_command)


def _sqlite_file(path: str | None, store_url: str | None) -> Any:
    config = _config(path, store_url, None)
    if not config.is_sqlite:
        raise click.UsageError(
            "backup and restore work on the embedded store; for PostgreSQL use pg_dump/pg_restore"
        )
    return config


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_store_options
def backup(
    file: str, as_json: bool, path: str | None, store_url: str | None, embedder: Any
) -> None:
    """Copy the embedded store to FILE while it is in use (SQLite online backup), checked."""
    from .store.sqlite import backup_file

    config = _sqlite_file(path, store_url)
    try:
        pages = backup_file(config.sqlite_file, file, busy_timeout_ms=config.busy_timeout_ms)
    except EngrammarError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    _emit(as_json, {"file": file, "pages": pages}, lambda d: f"backed up to {file} ({pages} pages)")


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_store_options
def restore(
    file: str, as_json: bool, path: str | None, store_url: str | None, embedder: Any
) -> None:
    """Replace the embedded store's contents with the backup FILE (checked first).

    Running servers on the store should be restarted afterwards.
    """
    from .store.sqlite import restore_file

    config = _sqlite_file(path, store_url)
    try:
        pages = restore_file(file, config.sqlite_file, busy_timeout_ms=config.busy_timeout_ms)
    except EngrammarError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    _emit(
        as_json, {"file": file, "pages": pages}, lambda d: f"restored from {file} ({pages} pages)"
    )


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
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
