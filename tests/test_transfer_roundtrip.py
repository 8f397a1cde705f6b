"""Export -> import into a fresh store -> export again gives the same content: every record
kind (memories with every status, edges, recalls, feedback events with their decision
memories, decision reviews, preference pairs, logged events, ratings with corrections, the
signals of replies sent through feedback, knowledge bases with their passages)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.learn.scoring import verdict
from engrammar.models import Scope
from engrammar.store import MemoryUpdate, ReplyQuery


def _rich(mem: Memory) -> None:
    for user in ("alice", "bob"):
        ids = mem.add(
            [
                {"role": "user", "content": f"{user} deploys on Tuesdays.", "name": user},
                {"role": "assistant", "content": f"Noted, {user}: Tuesday deploys."},
                {"role": "user", "content": f"{user} never deploys on Fridays."},
            ],
            user_id=user,
            session_id=f"s-{user}",
            metadata={"source": "chat", "n": [1, 2]},
        )
        mem.add("The deploy day moved to Wednesday.", user_id=user, kind="fact", agent_id="ops")
        recall = mem.recall("when do we deploy", user_id=user)
        mem.feedback(response=f"{user} deploys on Tuesdays.", user_id=user)
        mem.recall("fridays", user_id=user)  # an unconsumed recall too
        mem.rate_memory(
            ids[0], "corrected", correction=f"{user} deploys on Wednesdays now.",
            recall_id=recall.recall_id, user_id=user,
        )  # fmt: skip
        mem.rate_memory(ids[1], "accepted", context="deploy day", weight=0.5, user_id=user)
        event = mem.create_feedback_event(
            "Add retries to the webhook sender", "Retry forever.", "corrected",
            user_correction="Exponential backoff, 5 attempts.", corrected_output="Backoff x5.",
            reason="4xx never succeed", agent_id="codex", user_id=user,
            source_event_id=f"wh-{user}", metadata={"ticket": 7},
        )  # fmt: skip
        mem.create_feedback_event("Pick a queue", "Use RabbitMQ.", "adopted", user_id=user)
        mem.create_feedback_event("Name the service", "svc1", "rejected", user_id=user)
        mem.create_decision_review(
            event.id, "adopted", reason="Retry forever was fine", user_id=user
        )
        mem.create_preference_pair(
            "Summarise the incident", "Short bullet points.", "A long essay.", user_id=user
        )
        mem.log_event("checkpoint", {"step": 3, "ok": True}, user_id=user, session_id="s9")
        handbook = f"{user}'s handbook. Expenses over 500 need a manager's approval. " * 3
        mem.add_knowledge("Handbook", text=handbook, user_id=user, chunk_chars=100, chunk_overlap=0)
        mem.store.update_memory("default", ids[2], MemoryUpdate(status="superseded", reason="test"))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_round_trip_keeps_every_record_kind(mem: Memory, tmp_path: Path) -> None:
    _rich(mem)
    mem.add("Somewhere else entirely.", user_id="carol", workspace="other")
    first = tmp_path / "first.jsonl"
    mem.export(first)
    lines = _lines(first)
    kinds = {x["type"] for x in lines} | {x["table"] for x in lines if x["type"] == "record"}
    assert kinds >= {
        "engrammar-export", "memory", "edge", "record", "recalls", "feedback_events",
        "decision_memories", "decision_reviews", "preference_pairs", "logged_events",
        "memory_ratings", "reply_signals", "knowledge_bases", "knowledge_chunks",
    }  # fmt: skip
    assert {x["status"] for x in lines if x["type"] == "memory"} == {"active", "superseded"}
    assert all(x.get("workspace", "default") == "default" for x in lines[1:])
    assert not any(k.endswith("embedding") for x in lines for k in x)

    with Memory(Config(path=str(tmp_path / "fresh")), embedder=HashEmbedder()) as fresh:
        result = fresh.import_(first)
        assert result["duplicates"] == 0
        knowledge = [x for x in lines if x.get("table", "").startswith("knowledge")]
        assert result["knowledge_bases"] == 2 and result["knowledge_chunks"] > 2
        assert result["knowledge_bases"] + result["knowledge_chunks"] == len(knowledge)
        assert result["records"] == sum(1 for x in lines if x["type"] == "record") - len(knowledge)
        # The knowledge bases answer as they did.
        for m in (fresh, mem):
            assert [k.name for k in m.list_knowledge(user_id="bob")] == ["Handbook"]
        asked = "Who approves expenses?"
        assert [
            (c.id, round(c.score, 5)) for c in fresh.search_knowledge(asked, user_id="bob")
        ] == [(c.id, round(c.score, 5)) for c in mem.search_knowledge(asked, user_id="bob")]
        second = tmp_path / "second.jsonl"
        fresh.export(second)
        assert _lines(second) == lines
        # Importing it again writes nothing new.
        again = fresh.import_(first)
        assert again["memories"] == 0 and again["knowledge_chunks"] == 0
        third = tmp_path / "third.jsonl"
        fresh.export(third)
        assert _lines(third) == lines
        # The same behaviour, not just the same bytes: learned ratings, decisions, feedback.
        q = "Add retries to the webhook sender"
        assert [m.id for m in fresh.recall(q, user_id="alice").memories][:3] == [
            m.id for m in mem.recall(q, user_id="alice").memories
        ][:3]

        def counts(m: Memory) -> dict[str, Any]:
            return {
                k: v
                for k, v in m.stats(user_id="bob").items()
                if k not in ("file", "bytes_on_disk")
            }

        assert counts(fresh) == counts(mem)

        # The reply's signals came back with their recall's query as context.
        def signals(m: Memory) -> list[tuple[str, str, float, tuple[float, ...]]]:
            every = np.eye(m.embedder.dim, dtype=np.float32)[0]  # any recall is >= -2
            return sorted(
                (r.recall_id, r.memory_id, r.value, tuple(np.round(r.context_vec, 5)))
                for r in m.store.reply_facts(
                    Scope("default", "alice"), ReplyQuery(lambda: every, -2, 0, 99)
                )
            )

        assert signals(fresh) == signals(mem) and signals(mem)


def test_round_trip_of_one_user_into_another_workspace(mem: Memory, tmp_path: Path) -> None:
    _rich(mem)
    out = tmp_path / "alice.jsonl"
    mem.export(out, user_id="alice")
    lines = _lines(out)
    assert all(x.get("user_id") in (None, "alice") for x in lines[1:] if x["type"] != "edge")
    mem.import_(out, workspace="copy")
    moved = tmp_path / "moved.jsonl"
    mem.export(moved, workspace="copy")
    # Same content, new ids, consistently renamed: map the new ids back and compare.
    after = _lines(moved)
    ids: dict[str, str] = {}
    for old, new in zip(lines[1:], after[1:], strict=True):
        if old["type"] != "edge":
            assert old["type"] == new["type"] and old.get("table") == new.get("table")
            if "id" in old:
                ids[new["id"]] = old["id"]

    def canonical(entries: list[dict[str, Any]], back: dict[str, str]) -> list[str]:
        out = []
        for x in entries[1:]:
            text = json.dumps({k: v for k, v in x.items() if k != "workspace"}, sort_keys=True)
            for new, old in back.items():
                text = text.replace(new, old)
            out.append(text)
        return sorted(out)

    assert canonical(after, ids) == canonical(lines, {})
    assert all(x.get("workspace", "copy") == "copy" for x in after[1:])
    assert len(mem.list(workspace="copy")) == sum(1 for x in lines if x["type"] == "memory")


def test_a_bad_record_names_its_line_and_writes_nothing(mem: Memory, tmp_path: Path) -> None:
    _rich(mem)
    out = tmp_path / "e.jsonl"
    mem.export(out)
    lines = _lines(out)
    for i, x in enumerate(lines):
        if x["type"] == "record" and x["table"] == "memory_ratings":
            lines[i] = {**x, "verdict": "meh"}
            break
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with Memory(Config(path=str(tmp_path / "fresh")), embedder=HashEmbedder()) as fresh:
        with pytest.raises(ValidationError) as info:
            fresh.import_(out)
        assert info.value.field == f"line {i + 1}: verdict"
        assert fresh.stats()["memories"] == 0


def test_a_reply_signal_without_its_recall_is_refused(mem: Memory, tmp_path: Path) -> None:
    _rich(mem)
    out = tmp_path / "e.jsonl"
    mem.export(out)
    lines = [x for x in _lines(out) if x.get("table") != "recalls"]
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with Memory(Config(path=str(tmp_path / "fresh")), embedder=HashEmbedder()) as fresh:
        with pytest.raises(ValidationError) as info:
            fresh.import_(out)
        assert info.value.field == "reply_signals: recall_id"
        assert fresh.stats()["memories"] == 0


def test_round_trip_on_postgresql(pg_server: Any, tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    with Memory(Config(store=pg_server.new_database()), embedder=HashEmbedder()) as source:
        _rich(source)
        source.export(first)
    with Memory(Config(store=pg_server.new_database()), embedder=HashEmbedder()) as copy:
        result = copy.import_(first)
        copy.export(second)
        assert copy.import_(first)["memories"] == 0  # again: nothing new
    assert result["records"] > 10 and result["knowledge_bases"] == 2
    assert _lines(second) == _lines(first)
    # And across backends: the PostgreSQL export read into SQLite gives the same lines.
    with Memory(Config(path=str(tmp_path / "lite")), embedder=HashEmbedder()) as lite:
        lite.import_(first)
        lite.export(tmp_path / "third.jsonl")
    assert _lines(tmp_path / "third.jsonl") == _lines(first)


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_reviews_of_an_event_known_by_its_source_id_join_the_stored_event(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    def open_store(name: str) -> Memory:
        if backend == "sqlite":
            return Memory(Config(path=str(tmp_path / name)), embedder=HashEmbedder())
        pg = request.getfixturevalue("pg_server")
        return Memory(Config(store=pg.new_database()), embedder=HashEmbedder())

    out = tmp_path / "a.jsonl"
    with open_store("a") as a:
        event = a.create_feedback_event(
            "Pick a database", "Use Mongo.", "corrected", user_correction="Use Postgres.",
            source_event_id="ticket-1", user_id="u",
        )  # fmt: skip
        a.create_decision_review(event.id, "adopted", reason="Mongo was fine", user_id="u")
        a.export(out)
    with open_store("b") as b:
        mine = b.create_feedback_event(
            "Pick a database", "Use Mongo.", "corrected", user_correction="Use Postgres.",
            source_event_id="ticket-1", user_id="u",
        )  # fmt: skip
        b.import_(out)
        events = b.store.list_feedback_records("feedback_event", Scope("default"), 10, 0)
        reviews = b.store.list_feedback_records("decision_review", Scope("default"), 10, 0)
        assert [e.id for e in events] == [mine.id]
        assert [r.event_id for r in reviews] == [mine.id]  # type: ignore[attr-defined]
        # The review counts: the stored event's verdict is now the AI's output.
        facts, _, _ = b.store.learning_facts(Scope("default", "u"), [])
        assert [verdict(e) for e in facts] == ["adopted"]
