"""Hostile input and isolation: one regression test (or a few) per finding.

The property-based and schema-based siblings of each class live in test_hostile_api.py and
test_hostile_http.py.
"""

from __future__ import annotations

import json
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from backends import open_memory
from engrammar import ConflictError, Memory, NotFoundError, ValidationError
from engrammar.interfaces.cli import cli
from engrammar.interfaces.operations import Principal, dispatch

BAD_TIMES = ["0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59", "1969-12-31T23:59:59Z"]


def poke(location: str, sql: str, *params: Any) -> None:
    """Write to the store behind engrammar's back, as a hand edit or an old version would."""
    if "://" in location:
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
        return
    conn = sqlite3.connect(Path(location) / "engrammar.db")
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


# -- 1. one timestamp poisons a scope ------------------------------------------------------------
@pytest.mark.parametrize("when", BAD_TIMES)
def test_iso_times_outside_the_supported_range_are_refused(mem: Memory, when: str) -> None:
    with pytest.raises(ValidationError) as info:
        mem.add(
            [{"role": "user", "content": "deploy fridays note", "timestamp": when}],
            agent_id="deployer",
        )
    assert info.value.field == "messages[0].timestamp"
    assert "1970" in info.value.problem
    for call in (
        lambda: mem.add("x", agent_id="deployer", timestamp=when),
        lambda: mem.log_event("checkpoint", agent_id="deployer", timestamp=when),
        lambda: mem.create_feedback_event(
            "ctx", "out", "adopted", agent_id="deployer", timestamp=when
        ),
    ):
        with pytest.raises(ValidationError) as info:
            call()
        assert info.value.field == "timestamp"
    assert mem.list(agent_id="deployer") == []


@pytest.mark.every_store
@pytest.mark.parametrize("bad", [-62135683140.0, 1e300, -1e15])
def test_a_bad_stored_time_does_not_take_the_scope_down(
    mem: Memory, location: str, bad: float, tmp_path: Path
) -> None:
    good, poisoned = mem.add(["deploy on tuesdays", "deploy fridays note"], agent_id="deployer")
    poke(location, "UPDATE memories SET created_at = ? WHERE id = ?", bad, poisoned)
    listed = {m.id: m.to_dict() for m in mem.list(agent_id="deployer")}
    assert set(listed) == {good, poisoned}
    assert listed[poisoned]["created_at_iso"] == f"invalid time {bad!r}"
    assert listed[poisoned]["created_at"] == bad
    assert mem.get(poisoned).to_dict()["created_at_iso"].startswith("invalid time")
    assert {h.memory.id for h in mem.search("deploy fridays", agent_id="deployer")} >= {poisoned}
    recall = mem.recall("deploy fridays", agent_id="deployer")
    json.dumps(recall.to_dict())
    assert "date unknown" in recall.formatted
    out = tmp_path / "out.jsonl"
    mem.export(str(out))
    lines = out.read_text().splitlines()
    assert any(poisoned in line for line in lines)
    assert mem.stats(agent_id="deployer")["memories"] == 2


def test_a_bad_stored_time_that_is_not_a_number_reads_as_invalid(
    mem: Memory, location: str
) -> None:
    (memory_id,) = mem.add("deploy fridays note", agent_id="deployer")
    poke(location, "UPDATE memories SET created_at = 'yesterday' WHERE id = ?", memory_id)
    record = mem.get(memory_id).to_dict()
    assert record["created_at"] is None
    assert record["created_at_iso"] == "invalid time nan"
    assert [m.id for m in mem.list(agent_id="deployer")] == [memory_id]
    assert mem.recall("deploy", agent_id="deployer").memories


def test_cli_list_and_export_survive_a_bad_stored_time(
    mem: Memory, location: str, tmp_path: Path
) -> None:
    (memory_id,) = mem.add("deploy fridays note", agent_id="deployer")
    mem.close()
    poke(location, "UPDATE memories SET created_at = ? WHERE id = ?", -62135683140.0, memory_id)
    runner = CliRunner()
    env = {"ENGRAMMAR_EMBEDDER": "hash"}
    listed = runner.invoke(cli, ["list", "--path", location, "-a", "deployer"], env=env)
    assert listed.exit_code == 0, listed.output
    assert memory_id in listed.output
    out = tmp_path / "dump.jsonl"
    exported = runner.invoke(cli, ["export", str(out), "--path", location], env=env)
    assert exported.exit_code == 0, exported.output
    assert memory_id in out.read_text()


# -- 4. idempotency keys stay within what the caller may read ------------------------------------
def _as(memory: Memory, user: str | None, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return dispatch(memory, Principal(workspace="team", user_id=user), name, args)


def test_a_source_event_id_neither_reveals_nor_blocks_another_users_event(mem: Memory) -> None:
    event = {"input_context": "Add retries", "ai_output": "Retry forever.", "state": "rejected"}
    bobs = _as(mem, "bob", "create_feedback_event", {**event, "source_event_id": "bob-evt-1"})
    # alice's key, the same source id, another payload: her own event, no 409 naming bob's.
    alices = _as(
        mem,
        "alice",
        "create_feedback_event",
        {**event, "ai_output": "Retry twice.", "source_event_id": "bob-evt-1"},
    )
    assert alices["id"] != bobs["id"]
    assert alices["source_event_id"] == bobs["source_event_id"] == "bob-evt-1"
    # A resend by alice with another payload conflicts with her own event only.
    with pytest.raises(ConflictError) as info:
        _as(mem, "alice", "create_feedback_event", {**event, "source_event_id": "bob-evt-1"})
    assert alices["id"] in str(info.value)
    assert bobs["id"] not in str(info.value)
    # The same event resent for bob by a workspace key is bob's, not a new one.
    again = _as(
        mem,
        None,
        "create_feedback_event",
        {**event, "user_id": "bob", "source_event_id": "bob-evt-1"},
    )
    assert again["id"] == bobs["id"]
    with pytest.raises(ValidationError):
        _as(mem, "bob", "create_feedback_event", {**event, "source_event_id": "x\x1fmallory"})


# -- 6. explain names only what the caller can read ----------------------------------------------
def test_explain_shows_a_user_bound_key_only_edges_it_can_read(mem: Memory, location: str) -> None:
    (hidden,) = mem.add("The deploy freeze starts on Friday.", agent_id="ops", workspace="team")
    (own,) = mem.add("I deploy on Friday afternoons.", user_id="bob", workspace="team")
    (mine_too,) = mem.add("Friday deploys need a second reviewer.", user_id="bob", workspace="team")
    for src, dst in ((own, hidden), (hidden, own), (own, mine_too)):
        poke(
            location,
            "INSERT OR REPLACE INTO edges (workspace, src, dst, kind, weight, updated_at) "
            "VALUES ('team', ?, ?, 'semantic', 0.9, 0)",
            src,
            dst,
        )
    with pytest.raises(NotFoundError):
        _as(mem, "bob", "get", {"memory_id": hidden})
    out = _as(mem, "bob", "explain", {"query": "friday deploy", "memory_id": own})
    assert hidden not in json.dumps(out)
    assert {e["dst"] for e in out["edges"]["out"]} == {mine_too}
    assert {e["src"] for e in out["edges"]["in"]} <= {mine_too}


# -- 7. stats, permissions, MCP types ------------------------------------------------------------
def test_stats_bytes_on_disk_only_for_the_local_admin(mem: Memory) -> None:
    mem.add("tea", user_id="u", workspace="team")
    assert "bytes_on_disk" not in _as(mem, None, "stats", {})
    assert "bytes_on_disk" not in _as(mem, "u", "stats", {})
    local = dispatch(mem, Principal("team", fixed=False), "stats", {"user_id": "u"})
    assert local["bytes_on_disk"] > 0


def test_a_new_store_is_private_to_its_owner(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "store"
    memory = open_memory(str(folder))
    memory.add("secret", user_id="u")
    memory.close()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in ("engrammar.db",):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    extra = [p for p in folder.iterdir() if p.name.startswith("engrammar.db-")]
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in extra)


@pytest.mark.parametrize("created_at", [-62135683140.0, "0001-01-01T00:00:00+23:59", 4e10])
def test_import_refuses_a_time_outside_the_range_and_writes_nothing(
    mem: Memory, tmp_path: Path, created_at: Any
) -> None:
    mem.add(["deploy on tuesdays", "deploy fridays note"], agent_id="deployer")
    out = tmp_path / "dump.jsonl"
    mem.export(str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    target = next(line for line in lines if line.get("content") == "deploy fridays note")
    target["created_at"] = created_at
    out.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    other = open_memory(str(tmp_path / "other"))
    try:
        with pytest.raises(ValidationError) as info:
            other.import_(str(out))
        assert "created_at" in info.value.field
        assert other.list(agent_id="deployer") == []
    finally:
        other.close()
