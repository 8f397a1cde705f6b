"""The README's recipes, run as written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block(after: str) -> str:
    """The first fenced block after the heading ``after``."""
    start = README.index(after)
    match = re.search(r"```(?:sh|python|json)?\n(.*?)```", README[start:], re.S)
    assert match, after
    return match.group(1)


def test_the_readme_opens_with_exactly_the_two_commands() -> None:
    first = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first is not None
    commands = [line.split("#")[0].strip() for line in first.group(1).splitlines()]
    assert commands == ["make demo", "make test"]
    assert README.index("make demo") < README.index("## Install") < README.index("## Quick start")
    assert "English-only" in README


def test_the_readme_keeps_the_jargon_in_docs() -> None:
    for word in ("MemWire", "OpenCLaw", "seed 0", "bm25_k1"):
        assert word not in README, word


def test_the_http_recipe_serves_the_store_its_key_was_created_in() -> None:
    lines = [
        line.split("#")[0].split() for line in _block("## REST and MCP over HTTP").splitlines()
    ]
    create = next(words for words in lines if words[:3] == ["engrammar", "keys", "create"])
    serve = next(words for words in lines if words[:2] == ["engrammar", "serve"])
    assert create[create.index("--path") + 1] == serve[serve.index("--path") + 1]


@pytest.mark.model
@pytest.mark.processes
def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    """Every line of the quick start, in a fresh folder with the real model."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    outputs = []
    for line in _block("## Quick start").splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[0] == "source":
            continue
        assert words[0] == "engrammar"
        result = subprocess.run(
            [sys.executable, "-m", "engrammar.cli", *words[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert result.returncode == 0, (line, result.stderr)
        outputs.append(result.stdout)
    assert (tmp_path / "engrammar_data" / "engrammar.db").exists()
    recalled = outputs[2]
    assert recalled.startswith("1. ") and "recall_id: " in recalled
    assert "documentation before code" in recalled.splitlines()[0]
    assert "learned from the reply" in outputs[3]
    assert "meetings" in outputs[4].splitlines()[0]
