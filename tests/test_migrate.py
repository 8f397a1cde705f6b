"""``engrammar migrate``: a store copied across backends reads back the same, through the API."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from engrammar import Config, HashEmbedder, Memory, StoreError, ValidationError
from engrammar.interfaces.cli_migrate import migrate_command
from engrammar.keys import create_api_key, verify_api_key
from engrammar.models import Scope
from engrammar.store import (
    EdgeAdjustment,
    EdgeBounds,
    EdgeDelta,
    NewEdge,
    NewMemory,
    RecallRecord,
    ReplyQuery,
)
from engrammar.store.base import FEEDBACK_RECORD_KINDS, ApiKeyRecord
from engrammar.store.migrate import migrate, open_location, table_checksums


def _config(location: str) -> Config:
    if location.startswith("postgresql://"):
        return Config(store=location)
    return Config(path=location)


def _fill(location: str) -> None:
    """Memories in two workspaces and several scopes, an update, a forget, edges with learned
    weights, recalls (one consumed) and metadata of several JSON types."""
    with Memory(_config(location), embedder=HashEmbedder()) as mem:
        ids = mem.add(
            [
                {"role": "user", "content": "I moved to Lisbon for a robotics job."},
                {"role": "assistant", "content": "Congratulations on the move!"},
                {"role": "user", "content": "I'm allergic to peanuts.", "kind": "fact"},
            ],
            user_id="alice",
            session_id="s1",
            metadata={"source": "chat", "n": 3, "ratio": 0.1, "tags": ["a", "b"], "x": None},
        )
        mem.add("Bob likes chess.", user_id="bob", agent_id="coach")
        mem.add("Other workspace note.", user_id="alice", workspace="w2")
        doomed = mem.add("Forget me later.", user_id="alice")
        mem.update(ids[0], "I moved to Porto for a robotics job.", reason="corrected city")
        mem.forget(doomed)
        extra = mem.add("Surfing on weekends.", user_id="alice", session_id="s1")
        # Edges as the graph would create them, then learned deltas.
        anchor = NewMemory(
            "anchor", "default", "alice", None, "s1", "user", "anchor memory", "message",
            time.time(), {}, "anchor-key", HashEmbedder().embed(["anchor memory"])[0],
        )  # fmt: skip
        mem.store.add_memories(
            [anchor],
            [
                NewEdge("anchor", ids[0], "semantic", 0.5),
                NewEdge(ids[0], ids[2], "entity", 0.3),
                NewEdge(ids[2], extra[0], "sequence", 0.7),
            ],
        )
        mem.store.adjust_edges(
            "default",
            EdgeAdjustment(
                [EdgeDelta("anchor", ids[0], "semantic", 0.123456789)], EdgeBounds(0.01, 1.0)
            ),
        )
        r = mem.recall("Where does the user live?", user_id="alice")
        mem.store.adjust_edges(
            "default", EdgeAdjustment([], EdgeBounds(0.01, 1.0), consume_recall=r.recall_id)
        )
        mem.recall("peanuts", user_id="alice", session_id="s1")
        mem.feedback(response="The user is allergic to peanuts.", user_id="alice", session_id="s1")
        # Feedback state: an event with its decision memory, a reversing review, a pair, a
        # logged event and ratings (one with a correction and a context).
        event = mem.create_feedback_event(
            input_context="Add retries to the webhook sender",
            ai_output="Retry every 30 seconds.",
            corrected_output="Exponential backoff, at most 5 attempts.",
            user_correction="Use exponential backoff.",
            state="corrected",
            reason="4xx will not heal",
            agent_id="codex",
            source_event_id="evt-1",
        )
        mem.create_decision_review(event.id, "adopted", "failure", 0.4, reason="30 s was fine")
        mem.create_preference_pair("Summarise", "Three bullets", "An essay", 2.0, user_id="alice")
        mem.log_event("checkpoint", {"step": 3, "ok": True, "ratio": 0.5}, agent_id="codex")
        mem.rate_memory(ids[2], "accepted")
        mem.rate_memory(ids[0], "corrected", "I moved to Porto, not Lisbon.", recall_id=r.recall_id)
        mem.store.create_api_key(ApiKeyRecord("k1", "sha-1", "default", "alice", "laptop", 1.0))
        mem.store.create_api_key(ApiKeyRecord("k2", "sha-2", "w2", None, "", 2.0))
        mem.store.revoke_api_key("k2")
        mem.store.save_recall(
            RecallRecord(
                "manual", "default", "bob", "coach", None, "chess?", 1.5, ["x"],
                [{"nodes": ["x"], "weights": [], "kinds": [], "score": 0.25}],
                [{"a": "x", "b": "y", "kind": "negation", "confidence": 0.75}],
            )
        )  # fmt: skip


def _snapshot(location: str) -> dict[str, object]:
    with Memory(_config(location), embedder=HashEmbedder()) as mem:
        out: dict[str, object] = {}
        for ws in ("default", "w2"):
            listed = mem.store.list_memories(Scope(ws), 100, 0)
            out[f"list:{ws}"] = [m.to_dict() for m in listed]
            out[f"history:{ws}"] = [mem.store.history(ws, m.id) for m in listed]
            ids = [m.id for m in listed]
            out[f"edges:{ws}"] = sorted(
                (e.src, e.dst, e.kind, e.weight, e.updated_at)
                for e in mem.store.edges_from(ws, ids)
            )
            out[f"vectors:{ws}"] = {k: v.tolist() for k, v in mem.store.vectors(ws, ids).items()}
        # Ties may come in any order; the ranking of distinct scores may not.
        out["search"] = sorted(
            ((m.id, round(m.score, 6)) for m in mem.search("robotics job", user_id="alice")),
            key=lambda hit: (-hit[1], hit[0]),
        )
        rec = mem.store.get_recall(Scope("default", "bob"), "manual")
        out["recall"] = rec
        out["unconsumed"] = mem.store.get_recall(Scope("default", "alice"), None)
        out["api_keys"] = mem.store.list_api_keys(None)
        out["feedback"] = {
            kind: [r.to_dict() for r in mem.store.list_feedback_records(kind, Scope(ws), 100, 0)]
            for kind in FEEDBACK_RECORD_KINDS
            for ws in ("default",)
        }
        out["facts"] = repr(mem.store.learning_facts(Scope("default", "alice"), []))
        anything = np.eye(mem.embedder.dim, dtype=np.float32)[0]  # every recall is >= -2
        replies = mem.store.reply_facts(
            Scope("default", "alice"), ReplyQuery(lambda: anything, -2.0, 0.0, 100)
        )
        assert replies  # the reply to the "peanuts" recall was kept
        out["replies"] = repr(sorted(replies, key=lambda r: (r.recall_id, r.memory_id)))
        for m in out["list:default"]:  # type: ignore[attr-defined]
            m.pop("rev", None)
        for entries in out["history:default"]:  # type: ignore[attr-defined]
            for h in entries:
                h.pop("rev")
        for entries in out["history:w2"]:  # type: ignore[attr-defined]
            for h in entries:
                h.pop("rev")
        return out


@pytest.mark.parametrize(
    ("src_kind", "dst_kind"),
    [
        pytest.param("sqlite", "postgres", marks=pytest.mark.postgres),
        pytest.param("postgres", "sqlite", marks=pytest.mark.postgres),
        ("sqlite", "sqlite"),
    ],
)
def test_migrate_roundtrip(
    src_kind: str, dst_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    def where(kind: str, name: str) -> str:
        if kind == "sqlite":
            return str(tmp_path / name)
        return str(request.getfixturevalue("pg_server").new_database())

    source, destination = where(src_kind, "src"), where(dst_kind, "dst")
    _fill(source)
    with Memory(_config(source), embedder=HashEmbedder()) as mem:
        token, _ = create_api_key(mem.store, "w1", user_id="alice")
    before = _snapshot(source)
    seen: list[tuple[str, int]] = []
    report = migrate(source, destination, batch=3, progress=lambda t, n: seen.append((t, n)))
    assert report.tables["memories"][0] == 11  # 7 added, 4 made by feedback records
    assert report.tables["edges"][0] >= 3  # ours, and those the graph adds on its own
    assert report.tables["recalls"][0] == 3
    assert report.tables["memory_changes"][0] >= 9
    for table in ("feedback_events", "decision_reviews", "preference_pairs", "logged_events"):
        assert report.tables[table][0] == 1, table
    assert report.tables["memory_ratings"][0] == 2
    assert report.tables["decision_memories"][0] == 2  # the correction, then the reversal
    assert report.tables["api_keys"][0] == 3  # two from _fill, one real key made here
    assert ("memories", 6) in seen  # paged in batches of 3
    assert _snapshot(destination) == before
    src, dst = open_location(source, create=False), open_location(destination, create=False)
    try:
        assert table_checksums(src) == table_checksums(dst) == report.tables
        # A key made for the old store opens the new one, with the same binding.
        assert verify_api_key(dst, token).user_id == "alice"
    finally:
        src.close()
        dst.close()


def test_migrate_refuses_non_empty_destination_and_missing_source(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _fill(a)
    with Memory(Config(path=b), embedder=HashEmbedder()) as mem:
        mem.add("already here", user_id="carol")
    with pytest.raises(ValidationError) as info:
        migrate(a, b)
    assert info.value.field == "to"
    with pytest.raises(ValidationError) as info:
        migrate(str(tmp_path / "nothing"), str(tmp_path / "c"))
    assert info.value.field == "from"
    with pytest.raises(ValidationError):
        migrate(a, a)


def test_migrate_detects_a_differing_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verification reads both sides back: a destination that drops rows is caught."""
    from engrammar.store.sqlite.store import SQLiteStore

    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _fill(a)
    real_import = SQLiteStore.import_rows

    def lossy(self: SQLiteStore, table: str, rows: list[dict[str, object]]) -> None:
        real_import(self, table, rows[:-1] if table == "edges" else rows)

    monkeypatch.setattr(SQLiteStore, "import_rows", lossy)
    with pytest.raises(StoreError, match=r"edges: (\d+) rows -> (\d+)"):
        migrate(a, b)


def test_cli_command(tmp_path: Path, pg_url: str) -> None:
    source = str(tmp_path / "src")
    _fill(source)
    result = CliRunner().invoke(migrate_command, ["--from", source, "--to", pg_url])
    assert result.exit_code == 0, result.output
    assert "memories" in result.output and "identical" in result.output
    again = CliRunner().invoke(migrate_command, ["--from", source, "--to", pg_url])
    assert again.exit_code == 1
    assert "already holds" in again.output


@pytest.mark.processes
def test_engrammar_migrate_command(tmp_path: Path) -> None:
    """Wired into the ``engrammar`` group, run as a real process."""
    import subprocess
    import sys

    source = str(tmp_path / "src")
    _fill(source)
    done = subprocess.run(
        [sys.executable, "-m", "engrammar.cli", "migrate", "--from", source, "--to",
         str(tmp_path / "copy.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "identical" in done.stdout
    again = subprocess.run(
        [sys.executable, "-m", "engrammar.cli", "migrate", "--from", source, "--to",
         str(tmp_path / "copy.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 1 and "already holds" in again.stderr
    as_json = subprocess.run(
        [sys.executable, "-m", "engrammar.cli", "migrate", "--from", source, "--to",
         str(tmp_path / "other.db"), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert (
        report["tables"]["memories"]["rows"] > 0
        and len(report["tables"]["memories"]["sha256"]) == 64
    )
