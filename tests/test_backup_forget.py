"""`engrammar backup` / `restore` as processes (online, checked), and `forget --user-id U`
removing everything of a user."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engrammar import Config, HashEmbedder, Memory

pytestmark = pytest.mark.processes


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAMMAR_")}
    env.update(ENGRAMMAR_PATH=str(store), ENGRAMMAR_EMBEDDER="hash")
    return subprocess.run(
        [sys.executable, "-m", "engrammar.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _contents(mem: Memory) -> list[tuple[str, str]]:
    return [(m.id, m.content) for m in mem.list(user_id="u", limit=10_000)]


def test_backup_while_writing_then_restore(store_path: Path, tmp_path: Path) -> None:
    mem = Memory(Config(path=str(store_path)), embedder=HashEmbedder())
    for i in range(50):
        mem.add(f"fact number {i}", user_id="u")
    stop = threading.Event()
    written: list[str] = []

    def writer() -> None:  # keeps writing while the backup process copies
        i = 0
        while not stop.is_set():
            written.extend(mem.add(f"late fact {i}", user_id="u"))
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        result = cli(store_path, "backup", str(tmp_path / "snap.db"))
    finally:
        stop.set()
        thread.join()
    assert result.returncode == 0, result.stderr
    assert "backed up" in result.stdout
    assert not (tmp_path / "snap.db.partial").exists()

    with Memory(Config(store=f"sqlite:///{tmp_path / 'snap.db'}"), embedder=HashEmbedder()) as snap:
        backed = _contents(snap)
    live = _contents(mem)
    # A consistent snapshot: a prefix of what was written, with all 50 seeded facts.
    assert len(backed) >= 50 and live[: len(backed)] == backed

    mem.forget(user_id="u")
    mem.add("written after the backup", user_id="u")
    mem.close()
    result = cli(store_path, "restore", str(tmp_path / "snap.db"))
    assert result.returncode == 0, result.stderr
    with Memory(Config(path=str(store_path)), embedder=HashEmbedder()) as back:
        assert _contents(back) == backed
        assert back.recall("fact number 7", user_id="u").memories
    conn = sqlite3.connect(Config(path=str(store_path)).sqlite_file)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 100, None])
def test_restore_refuses_what_is_not_an_engrammar_backup(
    store_path: Path, tmp_path: Path, content: bytes | None
) -> None:
    with Memory(Config(path=str(store_path)), embedder=HashEmbedder()) as mem:
        mem.add("keep me", user_id="u")
    bad = tmp_path / "bad.db"
    if content is None:  # a valid SQLite file, but not an engrammar store
        conn = sqlite3.connect(bad)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
    else:
        bad.write_bytes(content)
    result = cli(store_path, "restore", str(bad))
    assert result.returncode != 0
    assert "error:" in result.stderr and "Traceback" not in result.stderr
    with Memory(Config(path=str(store_path)), embedder=HashEmbedder()) as mem:
        assert [m.content for m in mem.list(user_id="u")] == ["keep me"]


def test_backup_of_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    result = cli(tmp_path / "nothing", "backup", str(tmp_path / "x.db"))
    assert result.returncode != 0 and "no store" in result.stderr


def _rows_of(db: Path, user: str, ids: set[str]) -> dict[str, int]:
    """Rows in any table that name the user or one of the user's memory ids."""
    conn = sqlite3.connect(db)
    found: dict[str, int] = {}
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
                "'CREATE VIRTUAL%'"
            )
        ]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                text = repr(row)
                if f"'{user}'" in text or any(i in text for i in ids):
                    found[table] = found.get(table, 0) + 1
    finally:
        conn.close()
    return found


def test_forget_user_removes_everything_of_the_user(store_path: Path) -> None:
    with Memory(Config(path=str(store_path)), embedder=HashEmbedder()) as mem:
        for user in ("alice", "bob"):
            ids = mem.add(
                [
                    {"role": "user", "content": f"{user} deploys on Tuesdays."},
                    {"role": "assistant", "content": f"Noted, {user}: Tuesday deploys."},
                ],
                user_id=user,
            )
            mem.recall("when do we deploy", user_id=user)
            mem.feedback("Deploys happen on Tuesdays.", user_id=user)
            mem.rate_memory(ids[0], "accepted", user_id=user)
            event = mem.create_feedback_event(
                "When do we deploy?",
                "Fridays.",
                "corrected",
                user_correction="Tuesdays.",
                user_id=user,
            )
            mem.create_decision_review(event.id, "adopted", reason="Fridays it is", user_id=user)
            mem.create_preference_pair(
                "Summarise the deploy", "Two bullets.", "An essay.", user_id=user
            )
            mem.log_event("checkpoint", {"owner": user}, user_id=user)
            mem.rate_memory(
                ids[1], "corrected", correction=f"{user} deploys Wednesdays.", user_id=user
            )
        alice_ids = {m.id for m in mem.list(user_id="alice")}
        bob_before = _rows_of(mem.config.sqlite_file, "bob", set())
    before = _rows_of(Config(path=str(store_path)).sqlite_file, "alice", alice_ids)
    # Every kind of record of the user is there to be removed.
    assert set(before) >= {
        "memories", "edges", "recalls", "feedback_events", "decision_memories",
        "decision_reviews", "preference_pairs", "logged_events", "memory_ratings",
    }, before  # fmt: skip

    result = cli(store_path, "forget", "--user-id", "alice")
    assert result.returncode == 0, result.stderr

    db = Config(path=str(store_path)).sqlite_file
    left = _rows_of(db, "alice", alice_ids)
    # Only the content-free audit trail stays: which memory ids were added and forgotten.
    assert set(left) <= {"memory_changes"}, left
    conn = sqlite3.connect(db)
    trail = conn.execute(
        "SELECT op, before, after FROM memory_changes WHERE user_id = 'alice'"
    ).fetchall()
    conn.close()
    assert trail and all(before is None and after is None for _, before, after in trail)
    assert {op for op, _, _ in trail} >= {"forget"}
    assert _rows_of(db, "bob", set()) == bob_before
