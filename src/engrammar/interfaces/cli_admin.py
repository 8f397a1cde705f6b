"""The hand-written commands: export/import, API keys, the servers, backup and restore."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from ..errors import EngrammarError, require_extra
from .cli_common import config_of, emit, memory_of, scope_options, store_options
from .cli_migrate import migrate_command
from .texts import plural

__all__ = ["register"]


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


@click.command(name="export")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True), default="-")
@scope_options
@store_options
def export_(
    file: str,
    as_json: bool,
    path: str | None,
    store_url: str | None,
    embedder: str | None,
    **scope: Any,
) -> None:
    """Write memories, their links, recall and feedback records and knowledge bases to FILE
    as JSON Lines ('-' or nothing: stdout).

    Exports the whole workspace unless scope options narrow it. Vectors are not included:
    'engrammar import' embeds again, so an export also moves a store to another model. API
    keys (credentials of this store) and each memory's change history are not exported;
    'engrammar backup' and 'engrammar migrate' keep everything.
    """
    memory = memory_of(path, store_url, embedder, existing=True)
    close, progress = _bar("exporting")
    try:
        target: Any = sys.stdout if file == "-" else file
        count = memory.export(target, progress=None if file == "-" else progress, **scope)
    finally:
        close()
        memory.close()
    if file != "-":
        emit(
            as_json,
            {"memories": count, "file": file},
            lambda d: (
                f"exported {plural(count, 'memory', 'memories')} with their links, the "
                "recall and feedback records and the knowledge bases (not: API keys, change history)"
            ),
        )


@click.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, exists=True))
@click.option("--workspace", "-w", help="Put everything into this workspace instead.")
@store_options
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
    memory = memory_of(path, store_url, embedder)
    close, progress = _bar("importing")
    try:
        source: Any = sys.stdin if file == "-" else file
        data = memory.import_(source, workspace=workspace, progress=progress)
    finally:
        close()
        memory.close()
    emit(
        as_json,
        data,
        lambda d: (
            f"imported {plural(d['memories'], 'memory', 'memories')} "
            f"({d['duplicates']} already present), {plural(d['edges'], 'new link', 'new links')}"
            + (f" ({d['edges_built']} built: the file had none)" if d["edges_built"] else "")
            + f", {plural(d['records'], 'new feedback or recall record', 'new feedback and recall records')}"
            + (
                f", {plural(d['knowledge_bases'], 'new knowledge base', 'new knowledge bases')}"
                f" ({plural(d['knowledge_chunks'], 'passage', 'passages')})"
                if d["knowledge_bases"] or d["knowledge_chunks"]
                else ""
            )
            + (
                f"; skipped {len(d['skipped'])} blank memories (lines "
                f"{', '.join(str(s['line']) for s in d['skipped'])})"
                if d.get("skipped")
                else ""
            )
        ),
    )


# -- keys ----------------------------------------------------------------------------------------
@click.group()
def keys() -> None:
    """API keys for the HTTP server: each reaches one workspace (and optionally one user)."""


def _key_store(path: str | None, store_url: str | None) -> Any:
    from ..engine.admin import key_store

    return key_store(config_of(path, store_url, None))


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
    from ..keys import create_api_key

    store = _key_store(path, store_url)
    try:
        token, record = create_api_key(store, workspace, user_id=user_id, name=name)
    finally:
        store.close()
    data = {"key": token, **record.to_dict()}
    emit(
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
    from ..keys import list_api_keys
    from ..models import iso

    store = _key_store(path, store_url)
    try:
        records = list_api_keys(store, workspace)
    finally:
        store.close()
    data = {"keys": [r.to_dict() for r in records]}
    emit(
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
    from ..keys import revoke_api_key

    store = _key_store(path, store_url)
    try:
        changed = revoke_api_key(store, key_id)
    finally:
        store.close()
    data = {"key_id": key_id, "revoked": True, "was_active": changed}
    emit(
        as_json, data, lambda d: f"revoked {key_id}" if changed else f"{key_id} was already revoked"
    )


# -- servers -------------------------------------------------------------------------------------
@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback exposes the server.",
)
@click.option(
    "--port",
    "-p",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port to listen on (0: any free port).",
)
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
@click.option(
    "--memwire-compat",
    is_flag=True,
    help="Serve MemWire's REST API (its routes and payloads; engrammar keys via X-API-Key or "
    "Bearer, the key's workspace as MemWire's org) instead of /v1; MCP stays at /mcp.",
)
def serve(
    host: str,
    port: int,
    no_auth: bool,
    workspace: str | None,
    log_level: str,
    path: str | None,
    store_url: str | None,
    embedder: str | None,
    memwire_compat: bool,
) -> None:
    """Serve MCP (streamable HTTP, at /mcp) and the REST API (/v1, /openapi.json, /healthz).

    Every request needs 'Authorization: Bearer KEY' with a key from 'engrammar keys create'.
    """
    require_extra("engrammar serve", "server", "mcp", "starlette", "uvicorn")
    from .rest import is_loopback, listen
    from .rest import serve as run

    if no_auth and not is_loopback(host):
        raise click.UsageError("--no-auth is only allowed on a loopback address (127.0.0.1, ::1)")
    from ..memory import Memory

    sock = listen(host, port)
    try:
        memory = Memory(config_of(path, store_url, embedder, workspace=workspace))
    except BaseException:
        sock.close()
        raise
    try:
        _announce(memory, host, sock.getsockname()[1], auth=not no_auth, memwire=memwire_compat)
        run(
            memory,
            host=host,
            port=port,
            auth=not no_auth,
            log_level=log_level,
            sock=sock,
            memwire_compat=memwire_compat,
        )
    finally:
        memory.close()


def _announce(memory: Any, host: str, port: int, *, auth: bool, memwire: bool = False) -> None:
    """Say on stderr which store is served, where its parts are, and how many keys open it: a
    key created on another store is the commonest reason for a 401."""
    from ..keys import list_api_keys

    config = memory.config
    where = str(config.sqlite_file.resolve()) if config.is_sqlite else _redacted(config.store)
    active = [k for k in list_api_keys(memory.store, None) if k.revoked_at is None]
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    click.echo(f"engrammar: serving {where} on {base}", err=True)
    if not auth:
        click.echo(
            f"engrammar: no authentication (--no-auth), workspace {config.workspace!r}", err=True
        )
    elif active:
        workspaces = sorted({k.workspace for k in active})
        click.echo(
            f"engrammar: {plural(len(active), 'active API key', 'active API keys')} "
            f"(workspaces: {', '.join(workspaces)})",
            err=True,
        )
    else:
        path_hint = f" --path {config.path}" if config.is_sqlite else " --store URL"
        click.echo(
            "engrammar: WARNING: this store holds no active API key, so every request will be "
            "refused (401). Create one on THIS store: "
            f"engrammar keys create --workspace W{path_hint}",
            err=True,
        )
    if memwire:
        click.echo(f"engrammar: MemWire's REST API at {base}/, MCP at {base}/mcp", err=True)
    else:
        click.echo(
            f"engrammar: inspector {base}/ui/, MCP {base}/mcp, REST {base}/v1 "
            f"(OpenAPI {base}/openapi.json)",
            err=True,
        )


def _redacted(url: str) -> str:
    """A store URL without its password."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


@click.command()
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

    require_extra("engrammar mcp", "server", "mcp")
    from ..memory import Memory
    from .mcp_tools import run_stdio

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    memory = Memory(config_of(path, store_url, embedder, workspace=workspace))
    try:
        run_stdio(memory)
    finally:
        memory.close()


def _sqlite_file(path: str | None, store_url: str | None) -> Any:
    config = config_of(path, store_url, None)
    if not config.is_sqlite:
        raise click.UsageError(
            "backup and restore work on the embedded store; for PostgreSQL use pg_dump/pg_restore"
        )
    return config


def _file_command(name: str, doc: str, copy: str, done: str) -> click.Command:
    """The command ``name`` that copies the embedded store to or from FILE with ``copy`` (a
    function of :mod:`..engine.admin`) and says ``done`` with the pages copied."""

    @click.command(name, help=doc)
    @click.argument("file", type=click.Path(dir_okay=False))
    @store_options
    def command(
        file: str, as_json: bool, path: str | None, store_url: str | None, embedder: Any
    ) -> None:
        from ..engine import admin

        config = _sqlite_file(path, store_url)
        try:
            pages = getattr(admin, copy)(config, file)
        except EngrammarError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1)
        said = done.format(file=file)
        emit(as_json, {"file": file, "pages": pages}, lambda d: f"{said} ({pages} pages)")

    return command


backup = _file_command(
    "backup",
    "Copy the embedded store to FILE while it is in use (SQLite online backup), checked.",
    "backup_sqlite",
    "backed up to {file}",
)
restore = _file_command(
    "restore",
    "Replace the embedded store's contents with the backup FILE (checked first).\n\n"
    "Running servers on the store should be restarted afterwards.",
    "restore_sqlite",
    "restored from {file}",
)


def register(group: click.Group) -> None:
    """Add the hand-written commands to ``group``."""
    for command in (
        export_,
        import_,
        keys,
        serve,
        mcp,
        backup,
        restore,
        migrate_command,
    ):
        group.add_command(command)
