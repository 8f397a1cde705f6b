"""docs/interfaces.md's decision example, run as written: the event, then
the review of it in the same workspace; a failed outcome counts against the decision."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from test_cli import js, ok

pytestmark = pytest.mark.processes

DOC = Path(__file__).resolve().parents[1] / "docs" / "interfaces.md"


def _command(starts: str) -> list[str]:
    """The shell command of the docs' CLI tour that starts with ``starts`` (continuation
    lines joined, the trailing comment dropped), as arguments after ``engrammar``."""
    lines = DOC.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(starts))
    text = ""
    for line in lines[at:]:
        text += line.rstrip("\\").rstrip() + " "
        if not line.rstrip().endswith("\\"):
            break
    words = shlex.split(text, comments=True)
    assert words[0] == "engrammar"
    return words[1:]


def test_the_documented_event_and_review_run_as_written(tmp_path: Path) -> None:
    store = tmp_path / "store"
    event = js(store, *_command("engrammar event create"))
    review = _command("engrammar review create")
    assert review[2] == "EVENT_ID"
    review[2] = event["id"]
    out = js(store, *review)
    assert out["event_id"] == event["id"]
    assert out["outcome"] == "failure"
    listed = ok(store, *_command("engrammar review list"))
    assert out["id"] in listed
