"""Memory.explain: every component of a memory's score for a query, in or out of the top."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engrammar import Config, HashEmbedder, Memory, NotFoundError, ValidationError
from engrammar.engine import ranking
from engrammar.models import Scope


def test_explain_matches_recall(mem: Memory) -> None:
    mem.add(["alpha beta gamma", "alpha delta", "zeta eta theta"], user_id="u", session_id="s")
    result = mem.recall("alpha beta", user_id="u")
    for rank, item in enumerate(result.memories, 1):
        why = mem.explain("alpha beta", item.id, user_id="u")
        assert why["rank"] == rank
        assert why["in_results"] is True
        assert why["score"] == pytest.approx(item.score, abs=1e-5)
        comps = why["components"]
        for key in ("vector", "keyword", "relevance", "graph", "graph_edge_weight", "final"):
            assert key in comps
        assert comps["final"] == pytest.approx(
            comps["relevance"] + comps["graph_weight"] * comps["graph"], abs=1e-5
        )


def test_explain_a_memory_outside_the_top(mem: Memory) -> None:
    ids = mem.add(["alpha beta gamma", "alpha beta", "omega psi chi"], user_id="u")
    why = mem.explain("alpha beta gamma", ids[2], user_id="u", limit=1)
    assert why["in_results"] is False
    assert why["rank"] > 1
    assert why["score_to_beat"] is not None and why["score_to_beat"] >= why["score"]
    assert "vector" in why["components"]


def test_explain_shows_the_path_and_edges(store_path: Path) -> None:
    with Memory(Config(path=str(store_path), candidate_pool=1), embedder=HashEmbedder()) as mem:
        seed, other = mem.add(["alpha beta gamma", "zeta eta theta"], user_id="u", session_id="s")
        why = mem.explain("alpha beta gamma", other, user_id="u")
        assert why["via"] == "graph"
        assert why["best_path"]["nodes"] == [seed, other]
        assert why["best_path"]["kinds"] == ["sequence"]
        assert why["components"]["graph_edge_weight"] == pytest.approx(
            why["best_path"]["weights"][0]
        )
        assert {e["dst"] for e in why["edges"]["out"]} == {seed}
        assert {e["src"] for e in why["edges"]["in"]} == {seed}


def test_explain_records_nothing_and_checks_input(mem: Memory) -> None:
    (mid,) = mem.add("alpha beta", user_id="u")
    mem.explain("alpha", mid, user_id="u")
    assert mem.feedback(response="alpha", user_id="u")["consumed"] is False
    with pytest.raises(NotFoundError):
        mem.explain("alpha", "missing", user_id="u")
    with pytest.raises(NotFoundError):
        mem.explain("alpha", mid, user_id="someone-else")
    with pytest.raises(ValidationError):
        mem.explain("", mid, user_id="u")


TOPICS = ["deploys", "billing", "oncall", "backups"]


def _rated_then_outranked(mem: Memory) -> None:
    """Four rated recalls; then newer memories that answer two of the questions word for word
    push their rated ones out of the list ranked now."""
    mem.add(
        [f"Note {i}: the {TOPICS[i % 4]} rule number {i} for the team." for i in range(80)],
        user_id="alice",
    )
    for q, topic in enumerate(TOPICS):
        result = mem.recall(f"What is the {topic} rule?", user_id="alice", limit=3)
        for k, hit in enumerate(result.memories[:3]):
            verdict = "rejected" if (q + k) % 2 else "accepted"
            mem.rate_memory(hit.id, verdict, recall_id=result.recall_id, user_id="alice")
    mem.add([f"What is the {t} rule? Rule {i} of {t}." for t in TOPICS[:2] for i in range(10)],
            user_id="alice")  # fmt: skip


def test_rank_shifts_give_each_memory_the_rank_explain_gives_it(mem: Memory) -> None:
    _rated_then_outranked(mem)
    shifts = mem.rank_shifts(user_id="alice", limit=50)["shifts"]
    assert len(shifts) == 12
    moved = 0
    for shift in shifts:
        scope = Scope(mem.config.workspace, "alice")
        recalled = mem.store.get_recall(scope, shift["recall_id"])
        assert recalled is not None
        explained = mem.explain(shift["query"], shift["memory_id"], user_id="alice",
                                limit=len(recalled.memory_ids))  # fmt: skip
        assert shift["rank_after"] == explained["rank"], shift
        moved += shift["rank_after"] != shift["rank_before"]
    assert moved  # the ratings moved some of them


@pytest.mark.every_store
def test_rank_shifts_rank_each_recall_once(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rated memory the cut left below the list ranked now is placed where ``explain``
    places it (right after the list) without a ranking of its own: one ranking per recall."""
    _rated_then_outranked(mem)
    calls = {"rank": 0, "explain": 0}
    for module, name in ((ranking, "rank"), (ranking, "explain")):
        real = getattr(module, name)

        def counted(*args: object, real: Any = real, name: str = name, **kw: object) -> Any:
            calls[name] += 1
            return real(*args, **kw)

        monkeypatch.setattr(module, name, counted)
    shifts = mem.rank_shifts(user_id="alice", limit=50)["shifts"]
    assert len({s["recall_id"] for s in shifts}) == 4 and len(shifts) == 12
    assert calls == {"rank": 4, "explain": 0}
    # Most of the outranked recalls' rated memories are below the list of six ranked now (a
    # recall of three reads twice that far): each is ranked right after it, as explain ranks it.
    beyond = [s for s in shifts if s["rank_after"] > 6]
    assert len(beyond) >= 5 and all(s["rank_after"] == 7 for s in beyond)


@pytest.mark.every_store
def test_rank_shifts_show_the_newest_rating_of_a_memory_in_a_recall(mem: Memory) -> None:
    mem.add(["Deploys go out on Tuesdays.", "Billing closes on the 5th."], user_id="alice")
    result = mem.recall("When do deploys go out?", user_id="alice")
    top = result.memories[0].id
    mem.rate_memory(top, "accepted", recall_id=result.recall_id, user_id="alice")
    mem.rate_memory(top, "rejected", recall_id=result.recall_id, user_id="alice")
    (shift,) = [s for s in mem.rank_shifts(user_id="alice")["shifts"] if s["memory_id"] == top]
    assert shift["signal"] == -1.0
    mem.rate_memory(top, "accepted", recall_id=result.recall_id, user_id="alice")
    (shift,) = [s for s in mem.rank_shifts(user_id="alice")["shifts"] if s["memory_id"] == top]
    assert shift["signal"] == 1.0
