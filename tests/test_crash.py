"""Crash safety: SIGKILL a process in the middle of large adds, many times, at random points."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engrammar import Config, HashEmbedder, Memory

BATCH = 50

_CHILD = r"""
import os, sys
from engrammar import Config, HashEmbedder, Memory
path, log, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
m = Memory(Config(path=path), embedder=HashEmbedder())
n = start
with open(log, "a") as out:
    while True:
        m.add([f"batch {n} message {i} about topic {i % 7}" for i in range(BATCH)], user_id="u",
              metadata={"batch": n})
        out.write(f"{n}\n"); out.flush(); os.fsync(out.fileno())
        if n == start:
            print("ready", flush=True)  # one add has returned: kill points start here
        n += 1
""".replace("BATCH", str(BATCH))


@pytest.mark.slow
def test_killed_adds_leave_only_whole_batches(tmp_path: Path) -> None:
    path, log = tmp_path / "store", tmp_path / "returned.log"
    rng = random.Random(7)
    next_batch = 0
    for _ in range(8):
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(path), str(log), str(next_batch)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        next_batch += 10_000  # distinct numbering per child: no dedup between runs
    returned = {int(x) for x in log.read_text().split()} if log.exists() else set()
    assert returned, "no add returned before the kills; the test measured nothing"

    with sqlite3.connect(path / "engrammar.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counts = dict(
            conn.execute(
                "SELECT json_extract(metadata, '$.batch'), count(*) FROM memories GROUP BY 1"
            ).fetchall()
        )
        fts = conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
        total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    # Every add that returned is fully there; nothing partial is visible.
    assert all(counts.get(n) == BATCH for n in returned)
    assert all(c == BATCH for c in counts.values())
    assert fts == total
    m = Memory(Config(path=str(path)), embedder=HashEmbedder())
    assert m.stats(user_id="u")["memories"] == total
    some = next(iter(returned))
    hits = m.search(f"batch {some} message 3", user_id="u", limit=5)
    assert any(h.memory.metadata["batch"] == some for h in hits)
    m.close()
