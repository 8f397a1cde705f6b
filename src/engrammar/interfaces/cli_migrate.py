"""``engrammar migrate``: the click command (wired into the CLI group by ``cli_admin``)."""

from __future__ import annotations

import json
import sys

import click

from ..errors import EngrammarError

__all__ = ["migrate_command"]


@click.command("migrate")
@click.option(
    "--from",
    "source",
    required=True,
    metavar="PATH_OR_URL",
    help="Store to copy: a data folder, a .db file, sqlite:///file or postgresql://… (only read).",
)
@click.option(
    "--to",
    "destination",
    required=True,
    metavar="PATH_OR_URL",
    help="Empty store to copy into (created if absent), in the same forms as --from.",
)
@click.option("--batch", default=1000, show_default=True, help="Rows per page/transaction.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def migrate_command(source: str, destination: str, batch: int, as_json: bool) -> None:
    """Copy a store into another across backends, then verify counts and checksums."""
    from ..engine.admin import copy_store

    def progress(table: str, copied: int) -> None:
        click.echo(f"  {table}: {copied} rows", err=True)

    if batch < 1:
        raise click.BadParameter("must be >= 1", param_hint="--batch")
    try:
        report = copy_store(source, destination, batch=batch, progress=progress)
    except EngrammarError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if as_json:
        tables = {t: {"rows": n, "sha256": c} for t, (n, c) in report.tables.items()}
        out = {"source": report.source, "destination": report.destination, "tables": tables}
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"copied {report.source} -> {report.destination}")
    width = max((len(t) for t in report.tables), default=5)
    digits = max([4, *(len(str(rows)) for rows, _ in report.tables.values())])
    click.echo(f"{'table':<{width}}  {'rows':>{digits}}  {'sha256 (first 16)':<17}  check")
    for table, (rows, checksum) in report.tables.items():
        click.echo(f"{table:<{width}}  {rows:>{digits}}  {checksum[:16]:<17}  identical")
