"""Long messages embedded as overlapping windows, on both stores.

A message longer than ``Config.chunk_chars`` keeps its full text and gets one vector per
window (its first ``Config.window_limit``); vector search scores the memory by its best window, recall's excerpt is
that window when it won, and forget / update / export-import / migrate carry the chunks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backends import config_for, open_memory
from engrammar import Config, HashEmbedder, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.models import Scope
from engrammar.recall.chunks import (
    _window_terms,
    best_window,
    chunk_spans,
    message_windows,
    widened,
)
from engrammar.recall.text import embedding_text
from engrammar.store.migrate import migrate

FILLER = " ".join(
    f"Paragraph {i} talks about quarterly budgeting for a small household." for i in range(60)
)
FACT = "The spare key is hidden under the blue flowerpot beside the garage door."
# The fact early enough to lie in one of the first windows (Config.window_limit of them get
# vectors); the rest of the text only full-text search reads.
HEAD = " ".join(f"Paragraph {i} talks about quarterly budgeting." for i in range(6))
LONG = f"{HEAD} {FACT} {FILLER}"


def test_message_windows_cover_the_text() -> None:
    assert message_windows("short text", 1000) == []
    assert message_windows(LONG, 0) == []  # chunk_chars 0: off
    windows = message_windows(LONG, 1000)
    assert windows == chunk_spans(LONG, 1000, 200)
    # They cover every character, each overlapping the last.
    assert windows[0][0] == 0 and windows[-1][1] == len(LONG)
    ends = [end for _, end in windows[:-1]]
    assert all(start < end for (start, _), end in zip(windows[1:], ends, strict=True))
    assert all(end - start <= 1000 for start, end in windows)


def test_a_narrow_window_is_widened_with_the_text_around_it() -> None:
    text = f"{FILLER} {FACT} {FILLER}"
    at = text.index(FACT)
    start, end = widened(text, at, at + len(FACT), 1000)
    assert start < at and end > at + len(FACT)  # grown on both sides
    assert 950 <= end - start <= 1000
    assert text[start - 1] == " " and text[end] == " "  # cut at spaces
    # At the text's start the end takes what the start cannot.
    start, end = widened(LONG, 0, 100, 600)
    assert start == 0 and 550 <= end <= 600
    # Wide enough already, or a text shorter than the size: as it is / the whole text.
    assert widened(LONG, 10, 1500, 1000) == (10, 1500)
    assert widened(FACT, 4, 20, 1000) == (0, len(FACT))


def test_the_windows_of_a_long_excerpted_text_are_kept() -> None:
    # A message of tens of thousands of characters (a report an assistant wrote) is excerpted
    # on every recall that shows it: its windows' terms are read once, not on every recall.
    report = " ".join(f"Section {i}: {FILLER}" for i in range(40)) + f" {FACT}"
    assert len(report) > 20_000
    first = best_window(report, {"flowerpot"}, 1000, 200)
    assert first is not None and FACT in report[first[0][0] : first[0][1]]
    assert _window_terms(report, 1000, 200) is _window_terms(report, 1000, 200)
    assert best_window(report, {"flowerpot"}, 1000, 200) == first


@pytest.mark.every_store
def test_a_long_message_gets_chunk_vectors_and_scores_by_its_best(mem: Memory) -> None:
    [long_id, short_id] = mem.add(
        [
            {"role": "user", "content": LONG},
            {"role": "user", "content": "I watered the tomatoes this morning."},
        ],
        user_id="u",
    )
    stored = mem.store.memory_chunks("default", [long_id, short_id])
    assert set(stored) == {long_id}  # a short message has none
    chunks = stored[long_id]
    cap = mem.config.window_limit
    assert [(c.start, c.end) for c in chunks] == message_windows(LONG, mem.config.chunk_chars)[:cap]
    assert [c.position for c in chunks] == list(range(1, len(chunks) + 1))
    # Each chunk's vector is the embedding of its window of the text.
    expected = HashEmbedder().embed([embedding_text(LONG[c.start : c.end]) for c in chunks])
    assert np.allclose(np.stack([c.embedding for c in chunks]), expected, atol=1e-6)
    assert mem.get(long_id).content == LONG  # the memory keeps its full text

    # Searched with one window's own vector, the memory scores that window's cosine (~1),
    # above what its own vector scores (the test embedder reads the whole text; the model
    # would read only the start: see the last test).
    window = next(c for c in chunks if FACT in LONG[c.start : c.end])
    own = mem.store.vectors("default", [long_id])[long_id]
    hits = dict(mem.store.vector_search(Scope("default", "u"), window.embedding, 5))
    assert hits[long_id] == pytest.approx(1.0, abs=1e-5)
    assert float(own @ window.embedding) < 0.999
    # The batched search (the one add uses for the graph) agrees.
    batch = mem.store.vector_searches(Scope("default", "u"), np.stack([window.embedding] * 20), 5)
    assert all(dict(row)[long_id] == pytest.approx(1.0, abs=1e-5) for row in batch)


@pytest.mark.every_store
def test_recall_excerpt_is_the_window_whose_vector_won(mem: Memory) -> None:
    [long_id] = mem.add([{"role": "user", "content": LONG}], user_id="u")
    mem.add([{"role": "user", "content": "The car needs new tyres before winter."}], user_id="u")
    result = mem.recall(
        "spare key hidden under the blue flowerpot beside the garage door", user_id="u"
    )
    top = next(m for m in result.memories if m.memory.id == long_id)
    assert top.excerpt is not None and FACT in top.excerpt
    assert len(top.excerpt) <= mem.config.excerpt_chars + 2  # the "…" marks
    assert top.memory.content == LONG


@pytest.mark.every_store
def test_forget_update_and_chunk_chars_zero(mem: Memory, location: str) -> None:
    [a, b] = mem.add(
        [{"role": "user", "content": LONG}, {"role": "user", "content": LONG + " Again."}],
        user_id="u",
    )
    assert set(mem.store.memory_chunks("default", [a, b])) == {a, b}
    mem.forget(a)
    assert set(mem.store.memory_chunks("default", [a, b])) == {b}
    # Searching with a's old window finds nothing of a any more.
    hits = dict(mem.store.vector_search(Scope("default", "u"), np.ones(256, np.float32) / 16, 10))
    assert a not in hits
    # New content: the old windows go, a long new text gets its own.
    mem.update(b, content="Now a short text.")
    assert mem.store.memory_chunks("default", [b]) == {}
    mem.update(b, content=FACT + " " + FILLER)
    again = mem.store.memory_chunks("default", [b])[b]
    assert [(c.start, c.end) for c in again] == message_windows(
        FACT + " " + FILLER, mem.config.chunk_chars
    )[: mem.config.window_limit]
    mem.close()
    with open_memory(location, chunk_chars=0) as off:
        [c] = off.add([{"role": "user", "content": FILLER + " off"}], user_id="u")
        assert off.store.memory_chunks("default", [c]) == {}
    with pytest.raises(Exception, match="chunk_chars"):
        Config(chunk_chars=50)


@pytest.mark.every_store
def test_every_role_gets_windows_and_a_fact_past_them_is_found_by_its_words(
    location: str,
) -> None:
    turn = [{"role": "user", "content": "Tell me about budgets."}]
    answer = {"role": "assistant", "content": LONG}
    report = {"role": "assistant", "content": f"{FILLER} {FILLER} {FACT}"}
    with open_memory(location) as mem:
        [_, a, r] = mem.add([*turn, answer, report], user_id="u")
        found = mem.store.memory_chunks("default", [a, r])
        assert set(found) == {a, r}  # what the assistant wrote is memory too
        assert len(found[r]) == mem.config.window_limit  # capped: the fact is past them
        hits = mem.search("spare key flowerpot garage", user_id="u", limit=3)
        assert {a, r} <= {h.id for h in hits}


@pytest.mark.every_store
def test_export_import_rebuilds_the_chunks(mem: Memory, tmp_path: Path, location: str) -> None:
    [a] = mem.add([{"role": "user", "content": LONG}], user_id="u")
    before = mem.store.memory_chunks("default", [a])[a]
    out = tmp_path / "export.jsonl"
    mem.export(out)
    mem.forget(user_id="u")
    assert mem.store.memory_chunks("default", [a]) == {}
    mem.import_(out)
    after = mem.store.memory_chunks("default", [a])[a]
    assert [(c.position, c.start, c.end) for c in after] == [
        (c.position, c.start, c.end) for c in before
    ]
    assert np.allclose(np.stack([c.embedding for c in after]), [c.embedding for c in before])


@pytest.mark.parametrize(
    "dst_kind", [pytest.param("postgres", marks=pytest.mark.postgres), "sqlite"]
)
def test_migrate_carries_the_chunks(
    dst_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = str(tmp_path / "src")
    if dst_kind == "sqlite":
        destination = str(tmp_path / "dst")
    else:
        destination = str(request.getfixturevalue("pg_server").new_database())
    with open_memory(source) as mem:
        [a] = mem.add([{"role": "user", "content": LONG}], user_id="u")
        before = mem.store.memory_chunks("default", [a])[a]
    report = migrate(source, destination)
    assert report.tables["memory_chunks"][0] == len(before)
    with Memory(config_for(destination), embedder=HashEmbedder()) as copy:
        after = copy.store.memory_chunks("default", [a])[a]
        assert [(c.start, c.end) for c in after] == [(c.start, c.end) for c in before]
        window = before[-1].embedding
        hits = dict(copy.store.vector_search(Scope("default", "u"), window, 3))
        assert hits[a] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.every_store
def test_the_real_model_finds_a_fact_past_its_window(location: str, minilm: MiniLMEmbedder) -> None:
    """With the real model (which reads ~256 word pieces), a fact deep in a long message is
    found by its window's vector; with one vector per message it is not."""
    story = (
        " ".join(
            f"On day {i} of the trip we walked through the old town and ate at a small cafe."
            for i in range(40)
        )
        + " My sister Lena works as a veterinary surgeon in Bristol and loves her job."
    )
    others = [
        "My brother is a software engineer in Leeds.",
        "We booked the train tickets for next month.",
        "The museum was closed on Monday.",
    ]
    query = "What does my sister do for a living?"
    scores = {}
    for size in (1000, 0):
        with open_memory(location, minilm, chunk_chars=size) as mem:
            mem.forget(user_id="u")
            ids = mem.add([{"role": "user", "content": t} for t in [story, *others]], user_id="u")
            qvec = minilm.embed([query])[0]
            hits = dict(mem.store.vector_search(Scope("default", "u"), qvec, 10))
            scores[size] = hits[ids[0]]
            if size:
                result = mem.recall(query, user_id="u", limit=3)
                top = next(m for m in result.memories if m.memory.id == ids[0])
                assert top.excerpt is not None and "veterinary surgeon" in top.excerpt
    assert scores[1000] > scores[0] + 0.1
