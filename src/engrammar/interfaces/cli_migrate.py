"""``engrammar migrate``: the click command (wired into the CLI group by ``cli_admin``)."""

from __future__ import annotations

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
def migrate_command(source: str, destination: str, batch: int) -> None:
    """Copy a store into another across backends, then verify counts and checksums."""
    from ..store.migrate import migrate

    def progress(table: str, copied: int) -> None:
        click.echo(f"  {table}: {copied} rows", err=True)

    if batch < 1:
        raise click.BadParameter("must be >= 1", param_hint="--batch")
    try:
        report = migrate(source, destination, batch=batch, progress=progress)
    except EngrammarError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(f"copied {report.source} -> {report.destination}")
    for table, (rows, checksum) in report.tables.items():
        click.echo(f"{table:15} {rows:>10} rows  sha256-sum {checksum[:16]}…  identical")
