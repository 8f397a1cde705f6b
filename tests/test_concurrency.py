"""Concurrency on one embedded store, for real: processes x threads adding, recalling, feeding
back, rating and adjusting shared edges at once (the load itself lives in tests/concurrency_load.py;
bench/concurrency.py runs it longer and records the figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

import concurrency_load


@pytest.mark.slow
def test_processes_and_threads_lose_nothing(tmp_path: Path) -> None:
    result = concurrency_load.run(str(tmp_path / "store"), procs=2, threads=3, seconds=3)
    assert result["errors"] == [], result["errors"][:3]
    assert all(result["ops"][name] > 10 for name in ("add", "recall", "feedback", "rate", "adjust"))
    assert result["lost_edge_updates"] == []
    assert result["shared_ratings"] > 10 and result["lost_score_updates"] == []
    assert result["memories_found"] == result["memories_expected"]
    assert result["ratings_found"] == result["ratings_expected"]
    assert result["recalls_found"] == result["recalls_expected"]
    assert result["integrity"] == "ok"
