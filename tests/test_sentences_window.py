"""Sentence vectors (``Config.sentence_vectors``) and a named time's memories as candidates
(``Config.time_window_hits``), on both stores (issue 15, item 2).

A user's message of a few sentences gets a vector per sentence, so a fact said in passing
beside a request is matched by its own sentence; a question naming a time ("two weeks ago")
searches that time's memories too, so the time boost can lift one that the scope's whole
vector list left out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from backends import open_memory
from engrammar import Config
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.models import Scope
from engrammar.recall.chunks import sentence_spans

ASK = "Can you suggest a good pair of binoculars for a beginner on a budget?"
FACT = "By the way, I've been getting into bird watching for about three months now."
TEXT = f"{ASK} {FACT}"


def test_sentence_spans_split_at_sentence_ends_and_join_short_pieces() -> None:
    assert [TEXT[a:b] for a, b in sentence_spans(TEXT)] == [ASK, FACT]
    # A greeting joins the sentence after it; one sentence left: nothing to add.
    assert sentence_spans("Hi! I love hiking in the Alps.") == []
    assert sentence_spans("One sentence only.") == []
    # Line breaks end sentences; a short tail joins the sentence before it.
    text = "We moved to Berlin last month\nThe flat is near the park. Thanks!"
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "We moved to Berlin last month",
        "The flat is near the park. Thanks!",
    ]
    # A sentence longer than ``most`` is left to the windows.
    long = "word " * 80
    assert sentence_spans(f"{ASK} {long.strip()}.", most=250) == [(0, len(ASK))]


@pytest.mark.every_store
def test_a_short_message_gets_a_vector_per_sentence(location: str) -> None:
    with open_memory(location, sentence_vectors=1000) as mem:
        [u, a] = mem.add(
            [{"role": "user", "content": TEXT}, {"role": "assistant", "content": f"{TEXT} Ok."}],
            user_id="u",
        )
        found = mem.store.memory_chunks("default", [u, a])
        assert set(found) == {u}  # an assistant's message only with chunk_assistant
        assert [TEXT[c.start : c.end] for c in found[u]] == [ASK, FACT]
        # Vector search scores the message by its best sentence.
        hits = dict(mem.store.vector_search(Scope("default", "u"), found[u][1].embedding, 3))
        assert hits[u] == pytest.approx(1.0, abs=1e-5)
    with open_memory(location, sentence_vectors=40) as mem:  # longer than the limit: none
        [v] = mem.add([{"role": "user", "content": TEXT}], user_id="v")
        assert mem.store.memory_chunks("default", [v]) == {}
    with pytest.raises(Exception, match="sentence_vectors"):
        Config(sentence_vectors=-1)


@pytest.mark.every_store
@pytest.mark.model
def test_the_real_model_matches_a_fact_by_its_sentence(
    location: str, minilm: MiniLMEmbedder
) -> None:
    query = "How long have I been bird watching?"
    qvec = minilm.embed([query])[0]
    scores = {}
    for most in (0, 1000):
        with open_memory(location, minilm, sentence_vectors=most) as mem:
            mem.forget(user_id="u")
            [m] = mem.add([{"role": "user", "content": TEXT}], user_id="u")
            scores[most] = dict(mem.store.vector_search(Scope("default", "u"), qvec, 3))[m]
    assert scores[1000] > scores[0] + 0.05


@pytest.mark.every_store
def test_a_named_time_brings_its_memories_into_the_candidates(location: str) -> None:
    now = datetime(2023, 5, 20, 12, tzinfo=UTC)
    garden = [
        f"My garden plan number {i}: garden beds, garden soil and garden tools." for i in range(12)
    ]
    target = "I planted twelve tomato saplings in the garden today."
    with open_memory(location, candidate_pool=5, time_window_hits=0) as mem:
        day = now - timedelta(days=60)
        for i, text in enumerate(garden):
            mem.add(
                [
                    {
                        "role": "user",
                        "content": text,
                        "timestamp": (day + timedelta(days=i)).timestamp(),
                    }
                ],
                user_id="u",
            )
        [t] = mem.add(
            [
                {
                    "role": "user",
                    "content": target,
                    "timestamp": (now - timedelta(days=14)).timestamp(),
                }
            ],
            user_id="u",
        )
        query = "What garden work did I do two weeks ago?"
        before = [
            m.memory.id for m in mem.recall(query, user_id="u", as_of=now.timestamp()).memories
        ]
        assert t not in before  # beyond both searches' five hits
    with open_memory(location, candidate_pool=5, time_window_hits=5) as mem:
        after = {
            m.memory.id: m for m in mem.recall(query, user_id="u", as_of=now.timestamp()).memories
        }
        assert after[t].components["time_boost"] == 1.0
        # Asked about another time, that day's memories are not searched (nor boosted).
        other = mem.recall("What garden work did I do in 2021?", user_id="u", as_of=now.timestamp())
        assert all("time_boost" not in m.components for m in other.memories)
