"""Issue 21, hostile input and isolation round 2: one regression test (or a few) per finding.

The property-based and schema-based siblings of each class live in test_hostile_api.py and
test_hostile_http.py.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engrammar import Memory, ValidationError
from engrammar.interfaces.cli import cli

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
