"""``engrammar eval …``: measure engrammar on evaluation data sets (thin over ``eval_locomo``)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from .. import eval_locomo

__all__ = ["eval_group"]

_CATEGORIES = ("overall_1-4", "1:multi-hop", "2:temporal", "3:open-domain", "4:single-hop")


@click.group(name="eval")
def eval_group() -> None:
    """Measure retrieval quality on evaluation data sets."""


@eval_group.command()
@click.option(
    "--data",
    type=click.Path(dir_okay=False, path_type=Path),
    default=eval_locomo.DEFAULT_DATA,
    show_default=True,
    help="locomo10.json (the referee script is read from ../eval/ beside its folder).",
)
@click.option("--conversations", default="1-10", show_default=True, help="e.g. 1-5 or 1,3.")
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Memories recalled per question (figures at k above it count only what was recalled).",
)
@click.option(
    "--path",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the evaluation store (default: a temporary folder, removed after).",
)
@click.option("--run-file", type=click.Path(dir_okay=False, path_type=Path), help="Write the run.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
def locomo(
    data: Path,
    conversations: str,
    limit: int,
    path: Path | None,
    run_file: Path | None,
    as_json: bool,
) -> None:
    """Retrieval on LoCoMo with the current configuration, scored by the shared referee.

    Each conversation goes into its own user scope, one memory per turn; every question is
    asked through recall. Configure with ENGRAMMAR_* variables like any other command.
    """
    try:
        eval_locomo.parse_numbers(conversations, 10_000)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--conversations") from None
    with tempfile.TemporaryDirectory(prefix="engrammar-locomo-") as tmp:
        store = path or Path(tmp)
        log = (lambda _: None) if as_json else (lambda m: click.echo(m, err=True))
        result = eval_locomo.evaluate(
            data, store, conversations=conversations, limit=limit, run_file=run_file, log=log
        )
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    report = result["report"]
    click.echo(
        f"{result['turns']} turns ingested in {result['ingest_s']}s; {result['questions']} "
        f"questions; recall p50 {result['recall_ms']['p50']} ms, p95 {result['recall_ms']['p95']} ms"
    )
    click.echo(
        f"{'category':16s}{'n':>6s}{'recall@5':>10s}{'recall@10':>10s}{'nDCG@10':>10s}{'MRR':>8s}"
    )
    for name in _CATEGORIES:
        row = report.get(name)
        if row:
            click.echo(
                f"{name:16s}{row['n']:6d}{row['recall@5']:10.3f}{row['recall@10']:10.3f}"
                f"{row['ndcg@10']:10.3f}{row['mrr']:8.3f}"
            )
