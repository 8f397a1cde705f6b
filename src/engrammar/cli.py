"""The ``engrammar`` command line (click); commands are thin adapters over the library."""

from __future__ import annotations

import sys

import click

from . import __version__
from .cli_eval import eval_group
from .errors import EngrammarError

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="engrammar")
def cli() -> None:
    """Long-term memory for AI agents that learns from feedback."""


cli.add_command(eval_group)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; exit 0 on success, 1 on an error (one line on stderr), 2 on misuse."""
    try:
        code = cli.main(args=argv, prog_name="engrammar", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (EngrammarError, OSError) as exc:
        # The process boundary: one clear line instead of a traceback.
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
