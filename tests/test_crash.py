"""Crash safety: SIGKILL a process in the middle of large adds, feedback rounds (recall,
feedback(response=), ratings with corrections, feedback events) and imports, many times at
random points, on SQLite and on PostgreSQL. After reopening, every call that had returned is
fully there, nothing partial is visible, and the integrity checks pass.

The worker (tests/crash_worker.py) logs each call only after it returned, so the log is a
lower bound: at most the one call running at the kill may also be there, but only whole.
``ENGRAMMAR_CRASH_KILLS`` (default 4) sets the kills per scenario; bench runs use more.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import crash_worker
from backends import open_memory
from engrammar import Config, HashEmbedder, Memory
from engrammar.store import MemoryUpdate

KILLS = int(os.environ.get("ENGRAMMAR_CRASH_KILLS", "4"))
WORKER = Path(__file__).with_name("crash_worker.py")
pytestmark = [pytest.mark.slow, pytest.mark.every_store]


def _settle(url: str, seconds: float = 30.0) -> None:
    """Wait until the server is done with what the killed workers sent: a transaction whose
    COMMIT left in a pipeline before the kill still commits after it, on a backend that has
    not yet noticed its client is gone. Read before then, two counts of one table differ."""
    import psycopg

    deadline = time.monotonic() + seconds
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
                "AND state IS DISTINCT FROM 'idle'"
            ).fetchone()
            if row is not None and row[0] == 0:
                return
            time.sleep(0.05)
    raise AssertionError(f"the killed workers' sessions still run after {seconds} s")


def _kill_many(
    store: str, scenario: str, log: Path, *extra: str, seed: int = 7
) -> list[dict[str, Any]]:
    """Start the worker KILLS times, SIGKILL it at a random point after its first returned call."""
    rng = random.Random(seed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env["PYTHONPATH"] = os.pathsep.join([str(WORKER.parent), *sys.path])
    for k in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, str(WORKER), scenario, store, str(log), str(k * 10_000), *extra],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", f"worker {scenario} did not start"
        time.sleep(rng.uniform(0.02, 0.5))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
    if "://" in store:
        _settle(store)
    entries, cut = [], 0
    for line in log.read_text().splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:  # a line a kill cut short (see crash_worker.py)
            cut += 1
    assert cut <= KILLS, f"{cut} log lines cut short by {KILLS} kills"
    assert entries, "no call returned before the kills; the test measured nothing"
    return entries


def _rows(mem: Memory, table: str) -> list[dict[str, Any]]:
    rows, _ = mem.store.export_rows(table, None, 10_000_000)
    return rows


def _check_store(mem: Memory, store: str) -> None:
    """Integrity of the whole store: the database's own check, the full-text index, and no
    record pointing at a memory that is not there."""
    if "://" not in store:
        with sqlite3.connect(Config(path=store).sqlite_file) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
            fts = conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
            assert fts == conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    ids = {m["id"] for m in _rows(mem, "memories")}
    for edge in _rows(mem, "edges"):
        assert edge["src"] in ids and edge["dst"] in ids, edge
    for link in _rows(mem, "decision_memories"):
        assert link["memory_id"] in ids, link
    for rating in _rows(mem, "memory_ratings"):
        assert rating["memory_id"] in ids
        assert rating["correction_memory_id"] is None or rating["correction_memory_id"] in ids


def test_killed_adds_leave_only_whole_batches(location: str, tmp_path: Path) -> None:
    open_memory(location).close()  # created (and migrated) before the first kill
    entries = _kill_many(location, "add", tmp_path / "log")
    returned = {e["n"]: e["ids"] for e in entries}
    with open_memory(location) as mem:
        _check_store(mem, location)
        batches: dict[int, int] = {}
        rows = _rows(mem, "memories")
        for m in rows:
            batches[m["metadata"]["batch"]] = batches.get(m["metadata"]["batch"], 0) + 1
        all_ids = {m["id"] for m in rows}
        assert mem.stats(user_id="u")["memories"] == len(rows)
        # Every add that returned is fully there; nothing partial is visible.
        for n, ids in returned.items():
            assert batches.get(n) == crash_worker.ADD_BATCH and set(ids) <= all_ids
        assert all(c == crash_worker.ADD_BATCH for c in batches.values()), batches
        assert len(batches) - len(returned) <= KILLS  # at most the call running at each kill
        some = next(iter(returned))
        hits = mem.search(f"batch {some} message 3", user_id="u", limit=5)
        assert any(h.memory.metadata["batch"] == some for h in hits)


def _seed_conversations(location: str) -> set[str]:
    with open_memory(location) as mem:
        for user in crash_worker.USERS:
            for topic in range(5):
                mem.add(
                    [
                        {"role": "user", "content": f"For topic {topic}, {user} wants option {t}."}
                        for t in range(4)
                    ],
                    user_id=user,
                )
        return {m["id"] for m in _rows(mem, "memories")}


def test_killed_feedback_rounds_leave_whole_rounds(location: str, tmp_path: Path) -> None:
    seeded = _seed_conversations(location)
    entries = _kill_many(location, "feedback", tmp_path / "log")
    by_step: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_step.setdefault(e["step"], []).append(e)
    assert by_step.get("feedback") and by_step.get("event"), "no whole round returned"
    with open_memory(location) as mem:
        _check_store(mem, location)
        memories = {m["id"]: m for m in _rows(mem, "memories")}
        recalls = {r["id"]: r for r in _rows(mem, "recalls")}
        ratings = {r["id"]: r for r in _rows(mem, "memory_ratings")}
        events = {e["id"]: e for e in _rows(mem, "feedback_events")}
        links = {(link["event_id"], link["memory_id"]) for link in _rows(mem, "decision_memories")}

        # Every call that returned is there, with everything it wrote.
        for e in by_step.get("recall", []):
            assert e["recall_id"] in recalls
        for e in by_step["feedback"]:
            assert recalls[e["recall_id"]]["consumed_at"] is not None
        for e in by_step.get("rate", []):
            assert e["rating_id"] in ratings
            if e["correction_memory_id"]:
                assert memories[e["correction_memory_id"]]["kind"] == "fact"
        for e in by_step["event"]:
            event = events[e["event_id"]]
            (decision,) = [m for ev, m in links if ev == e["event_id"]]
            wanted = (
                event["corrected_output"] if event["state"] == "corrected" else event["ai_output"]
            )
            assert memories[decision]["content"] == wanted

        # Nothing partial: every memory the rounds wrote belongs to a whole record ...
        made = set(memories) - seeded
        owned = {r["correction_memory_id"] for r in ratings.values()} | {m for _, m in links}
        assert made <= owned, made - owned
        # ... every decided event has its decision memory, every correction its memory ...
        for event in events.values():
            assert any(ev == event["id"] for ev, _ in links), event
        for rating in ratings.values():
            assert (rating["correction"] is None) == (rating["correction_memory_id"] is None)
        # ... and the edges are what the last returned feedback left, unless the one feedback
        # running at a kill committed whole (its recall consumed though it never returned).
        logged_feedback = {e["recall_id"] for e in by_step["feedback"]}
        extra = [
            rid
            for rid, r in recalls.items()
            if r["consumed_at"] is not None and rid not in logged_feedback
        ]
        assert len(extra) <= KILLS
        final = crash_worker.edge_snapshot(mem)
        last = by_step["feedback"][-1]["edges"]
        last_round = by_step["feedback"][-1]["n"]
        later_consumed = [
            e for e in by_step.get("recall", []) if e["n"] > last_round and e["recall_id"] in extra
        ]
        if not later_consumed:
            assert final == last
        else:  # the killed feedback committed: its changes are whole (only its paths' edges)
            (killed,) = later_consumed
            nodes = {n for p in recalls[killed["recall_id"]]["paths"] for n in p["nodes"]}
            for key, weight in final.items():
                if last.get(key) != weight:
                    src, dst, _ = key.split("|")
                    assert {src, dst} & nodes, key


def test_killed_imports_land_whole_or_not_at_all(location: str, tmp_path: Path) -> None:
    source = tmp_path / "export.jsonl"
    with Memory(Config(path=str(tmp_path / "source")), embedder=HashEmbedder()) as src:
        ids = src.add(
            [
                {"role": "user", "content": f"imported fact {i} about area {i % 9}"}
                for i in range(300)
            ],
            user_id="imp",
        )
        for memory_id, status in ((ids[0], "superseded"), (ids[1], "forgotten")):
            src.store.update_memory(
                "default", memory_id, MemoryUpdate(status=status, reason="test")
            )
        src.export(source)
        exported = [json.loads(line) for line in source.read_text().splitlines()]
    n_memories = sum(1 for x in exported if x["type"] == "memory")
    n_edges = sum(1 for x in exported if x["type"] == "edge")
    assert n_edges > 0
    open_memory(location).close()
    entries = _kill_many(location, "import", tmp_path / "log", str(source))
    returned = {e["workspace"] for e in entries}
    with open_memory(location) as mem:
        _check_store(mem, location)
        per_ws: dict[str, list[dict[str, Any]]] = {}
        for m in _rows(mem, "memories"):
            per_ws.setdefault(m["workspace"], []).append(m)
        edges_per_ws: dict[str, int] = {}
        for e in _rows(mem, "edges"):
            edges_per_ws[e["workspace"]] = edges_per_ws.get(e["workspace"], 0) + 1
        assert returned <= set(per_ws)
        for ws, rows in per_ws.items():
            # Whole: every memory, every edge, and the statuses the export carried.
            assert len(rows) == n_memories, (ws, len(rows))
            assert edges_per_ws.get(ws) == n_edges, ws
            assert sorted(r["status"] for r in rows) == sorted(
                x["status"] for x in exported if x["type"] == "memory"
            )
        assert len(per_ws) - len(returned) <= KILLS
