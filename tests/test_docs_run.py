"""Every Python and shell block of README.md and docs/*.md, run in order, as a reader pasting
them would: in a fresh folder, with the real model, the installed ``engrammar`` command on the
PATH and the throwaway PostgreSQL server wherever a block names a ``postgresql://`` URL.

Python blocks share one namespace (what one block defines, the next uses), top-level ``await``
included. Shell blocks run line by line (a line ending in ``\\`` goes on); what a reader fills in
by hand is filled in from what the commands before printed: ``MEMORY_ID`` from the last
``engrammar add``, ``EVENT_ID`` from ``event create``, ``KEY=egr_…`` from ``keys create``, and
so on. ``engrammar serve`` starts in the background (on a free port, stopped at the end), as a
reader runs it in another terminal. Two files a reader brings along (``chat.json``,
``handbook.md``) are written first.

A block that cannot run here says so right above it in the document, visibly:
``<!-- not run: why -->``. Those are few, and this test lists them.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from engrammar import Memory

pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.processes]

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"(?:<!-- not run: (?P<why>[^>]+?) -->\n)?```(?P<lang>python|sh|bash)\n(?P<body>.*?)```", re.S
)
HEX = re.compile(r"\b[0-9a-f]{32}\b")
#: Which placeholder the first id a command prints fills in (the command's first two words).
FILLS = {
    ("engrammar", "add"): "MEMORY_ID",
    ("engrammar", "recall"): "RECORD_ID",
    ("event", "create"): "EVENT_ID",
    ("review", "create"): "REVIEW_ID",
    ("pair", "create"): "PAIR_ID",
    ("rate", "create"): "RATING_ID",
    ("knowledge", "add"): "KB_ID",
}
#: The folders the documents use for a store, and where they are here.
FOLDERS = ("/srv/engrammar", "/home/me/.engrammar")


@dataclass
class Block:
    doc: str
    line: int
    lang: str
    body: str
    not_run: str | None


def blocks() -> list[Block]:
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text[: m.start("body")].count("\n") + 1
            out.append(Block(doc.name, line, m["lang"], m["body"], m["why"]))
    return out


def test_the_blocks_not_run_are_few_and_say_why() -> None:
    skipped = [b for b in blocks() if b.not_run]
    assert len(skipped) <= 8, [(b.doc, b.line) for b in skipped]
    assert all(len(b.not_run or "") > 20 for b in skipped)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Shell:
    """Runs a block's lines in one folder and environment, filling in placeholders."""

    def __init__(self, cwd: Path, pg_server: Any) -> None:
        self.cwd = cwd
        self.pg_server = pg_server
        self.databases: dict[str, str] = {}
        self.port = _free_port()
        self.fills: dict[str, str] = {}
        self.memories: list[str] = []  # what ``engrammar add`` printed, newest last
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env['PATH']}"
        self.servers: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def database(self, url: str) -> str:
        """A database of the test server for each server a document names (a standby of a
        primary: that primary here)."""
        host = re.sub(r"standby-\d+", "primary", url)
        if host not in self.databases:
            self.databases[host] = self.pg_server.new_database()
        return self.databases[host]

    def local(self, text: str) -> str:
        for folder in FOLDERS:
            text = text.replace(folder, str(self.cwd / "srv"))
        text = re.sub(r"postgresql://[^\s'\"]+", lambda m: self.database(m.group(0)), text)
        text = text.replace("8765", str(self.port))
        fills = {**self.fills, **({"MEMORY_ID": self.memories[-1]} if self.memories else {})}
        for name, value in fills.items():
            text = re.sub(rf"\b{name}\b", value, text)
        return text

    def run_block(self, block: Block) -> None:
        lines: list[str] = []
        for raw in block.body.splitlines():
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + " " + raw.strip()
            elif lines and not _complete(lines[-1]):  # a quoted argument goes on
                lines[-1] += "\n" + raw
            else:
                lines.append(raw)
        for line in lines:
            self.run_line(line, f"{block.doc}:{block.line}")

    def run_line(self, line: str, where: str) -> None:
        words = shlex.split(line, comments=True)
        if not words or words[:2] == ["source", ".venv/bin/activate"]:
            return  # the PATH has this environment's bin folder already
        if (len(words) == 1 and "=" in words[0]) or words[0] == "export":
            name, _, value = words[-1].partition("=")
            if value in ("egr_…", "egr_..."):
                value = self.fills["KEY"]
            self.env[name] = self.local(value)
            return
        command = self.local(line)
        if words[:2] == ["engrammar", "serve"]:
            self.serve(self.local(shlex.join(words)), where)
            return
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
        )
        assert result.returncode == 0, (where, command, result.stdout, result.stderr)
        key = re.search(r"\begr_\w+", result.stdout)
        if words[:2] == ["engrammar", "keys"] and key:
            self.fills["KEY"] = key.group(0)
        name = FILLS.get(tuple(words[:2])) or FILLS.get(tuple(words[1:3]))  # type: ignore[arg-type]
        found = HEX.findall(result.stdout)
        if name == "MEMORY_ID":
            self.memories += found
        elif name and found:
            self.fills[name] = found[-1] if name == "RECORD_ID" else found[0]
        if words[:2] == ["engrammar", "forget"] and len(words) > 2 and self.memories:
            self.memories = [m for m in self.memories if m not in command]

    def serve(self, command: str, where: str) -> None:
        self.stop()
        if "--port" not in command:
            command += f" --port {self.port}"
        log = self.cwd / f"serve-{len(self.logs)}.log"
        self.logs.append(log)
        with log.open("wb") as err:
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        self.servers.append(proc)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, (where, command, log.read_text())
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2)
                return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError(f"{where}: {command} did not start")

    def stop(self) -> None:
        for proc in self.servers:
            proc.terminate()
            proc.wait(30)
        self.servers.clear()


def _complete(line: str) -> bool:
    try:
        shlex.split(line, comments=True)
    except ValueError:  # no closing quotation yet
        return False
    return True


def _run_python(block: Block, namespace: dict[str, Any], shell: Shell) -> None:
    code = compile(
        shell.local(block.body),
        f"{block.doc}:{block.line}",
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
    )
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)


def test_every_block_runs_in_order(
    tmp_path: Path, pg_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in list(os.environ):
        if key.startswith("ENGRAMMAR_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "srv").mkdir()
    chat = [
        {"role": "user", "content": "Where should I eat in Lisbon?"},
        {"role": "assistant", "content": "Try the grilled sardines in Alfama."},
    ]
    (tmp_path / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    (tmp_path / "handbook.md").write_text(
        "# Expenses\n\nExpenses over 500 euros need a manager's approval first.\n",
        encoding="utf-8",
    )
    shell = Shell(tmp_path, pg_server)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    ran = 0
    try:
        for block in blocks():
            if block.not_run:
                continue
            if block.lang == "python":
                _run_python(block, namespace, shell)
            else:
                shell.run_block(block)
            ran += 1
    finally:
        shell.stop()
        for value in list(namespace.values()):
            if isinstance(value, Memory):
                value.close()
    assert ran >= 20
