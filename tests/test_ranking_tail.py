"""Fusion and the candidates below the refined head: made into objects only when a stage reads
them, ranked exactly as if every one had been made."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engrammar import Config, HashEmbedder, Memory, RankingProfile
from engrammar.engine import ranking
from engrammar.engine.ranking import (
    REFINE_DEPTH,
    Ranked,
    _best_first,
    _leading,
    _Listed,
    _ranked,
    _Tail,
)
from engrammar.models import Scope
from engrammar.recall.fusion import Candidate, fused

_IDS = st.sampled_from([f"m{i:02d}" for i in range(12)])
# Few distinct values: equal scores are common, -0.0 and negative cosines among them.
_COSINES = st.sampled_from([0.9, 0.5, 0.5, 0.25, 0.0, -0.0, -0.3])
_BM25 = st.sampled_from([3.0, 1.5, 1.5, 0.75, 0.2])
_HITS = st.tuples(
    st.lists(st.tuples(_IDS, _COSINES), max_size=10),
    st.lists(st.tuples(_IDS, _BM25), max_size=10),
    st.sampled_from([0.0, 0.3, 0.5, 1.0]),
)


def _reference(
    vector_hits: list[tuple[str, float]], keyword_hits: list[tuple[str, float]], weight: float
) -> list[tuple[object, ...]]:
    """Fusion as one pass over each list, a candidate per hit (an id given twice counts as its
    last), best first by relevance, equal ones by id."""
    if not keyword_hits:
        weight = 0.0
    elif not vector_hits:
        weight = 1.0
    top_vec = max([0.0, *(s for _, s in vector_hits)]) or 1.0
    top_kw = max((s for _, s in keyword_hits), default=0.0) or 1.0
    found: dict[str, list[object]] = {}
    for rank, (memory_id, sim) in enumerate(vector_hits):
        found[memory_id] = [sim, 0.0, rank, None]
    for rank, (memory_id, score) in enumerate(keyword_hits):
        found.setdefault(memory_id, [0.0, 0.0, None, None])[1:4:2] = [score, rank]
    out = []
    for memory_id, (vector, keyword, v_rank, k_rank) in found.items():
        assert isinstance(vector, float) and isinstance(keyword, float)
        rel = (1 - weight) * (max(vector, 0.0) / top_vec) + weight * (keyword / top_kw)
        comps = [("vector", vector), ("keyword", keyword), ("relevance", rel)]
        out.append((memory_id, vector, keyword, v_rank, k_rank, rel, comps))
    return sorted(out, key=lambda c: (-c[5], c[0]))  # type: ignore[operator]


def _facts(cands: list[Candidate]) -> list[tuple[object, ...]]:
    return [
        (
            c.id,
            c.vector,
            c.keyword,
            c.vector_rank,
            c.keyword_rank,
            c.relevance,
            list(c.components.items()),
        )
        for c in cands
    ]


@given(_HITS)
def test_fusion_scores_each_hit_once_and_orders_equal_ones_by_id(
    hits: tuple[list[tuple[str, float]], list[tuple[str, float]], float],
) -> None:
    vector_hits, keyword_hits, weight = hits
    found = fused(vector_hits, keyword_hits, keyword_weight=weight)
    made = [found.candidate(memory_id) for memory_id in found.ids]
    assert _facts(made) == _reference(vector_hits, keyword_hits, weight)
    cosines = [
        max(c[1], 0.0) for c in _reference(vector_hits, keyword_hits, weight) if c[3] is not None
    ]
    assert found.best_vector() == max([0.0, *cosines])
    for cand in made:  # each call makes a new candidate: a stage may change the one it took
        again = found.candidate(cand.id)
        assert again is not cand and again.components is not cand.components
        assert _facts([again]) == _facts([cand])


# A head candidate's relevance changed by refinement: x (1 + change), or made equal to that
# of the tail candidate at an index (modulo the tail's length).
_CHANGES = st.lists(st.one_of(st.sampled_from([0.0, -0.5, 0.4]), st.integers(0, 9)), max_size=8)


@given(_HITS, st.integers(0, 6), _CHANGES)
def test_the_tail_merges_with_the_head_as_one_sorted_list_would(
    hits: tuple[list[tuple[str, float]], list[tuple[str, float]], float],
    depth: int,
    changes: list[float | int],
) -> None:
    """The head changed (relevances up and down, some below the tail, some equal to a tail
    candidate's), the tail as fused: the first ``n`` of both merged are those of one stably
    sorted list, and the ranked items of both are those of one list sorted by score and id."""
    vector_hits, keyword_hits, weight = hits
    found = fused(vector_hits, keyword_hits, keyword_weight=weight)
    head = [found.candidate(i) for i in found.ids[:depth]]
    below = [found.candidate(i) for i in found.ids[depth:]]
    for cand, change in zip(head, changes, strict=False):
        if isinstance(change, int):
            cand.relevance = below[change % len(below)].relevance if below else 0.0
        else:
            cand.relevance *= 1.0 + change
    whole = sorted(sorted(head, key=lambda c: -c.relevance) + below, key=lambda c: -c.relevance)
    for n in range(len(whole) + 1):
        tail = _Tail(found, depth)
        first = _leading(sorted(head, key=lambda c: -c.relevance), tail, n)
        assert _facts(first) == _facts(whole[:n])
        assert tail.ids() == [c.id for c in below if c.id not in {f.id for f in first}]
    for graph_weight in (None, 0.1):
        tail = _Tail(found, depth)
        made = _best_first(_ranked(sorted(head, key=lambda c: -c.relevance), graph_weight, {}))
        listed = _Listed(made, tail, graph_weight)
        every = _best_first(_ranked([*head, *below], graph_weight, {}))
        assert listed.ids == [item.id for item in every]
        assert _items(list(_Listed(made, _Tail(found, depth), graph_weight))) == _items(every)
        assert _items(listed[:]) == _items(every)
        assert _items([listed[k] for k in range(len(listed))]) == _items(every)


def _items(items: list[Ranked]) -> list[tuple[object, ...]]:
    return [(i.id, i.score, i.via, list(i.components.items())) for i in items]


def _every_one_made(*args: Any) -> tuple[list[Candidate], _Tail]:
    """``_candidates`` with the whole list made at once, as one list sorted stably by
    relevance (the tail left empty): what every later stage ranked before the tail."""
    head, tail = _CANDIDATES(*args)
    whole = head + [tail.take(memory_id) for memory_id in tail.ids()]
    return sorted(whole, key=lambda c: -c.relevance), _Tail(tail.fused, len(tail.fused))


_CANDIDATES = ranking._candidates


def test_what_lies_below_the_head_ranks_as_everything_made_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scope of many more candidates than the refined head (some of them messages that
    only ask, sequence and similarity edges between all): every ranking, cut short or long,
    with a memory from below the cut explained, is the one made from every candidate made at
    once, item for item."""
    for k, profile in enumerate(({"neighbour_weight": 0.3}, {"keyword_weight": 0.9})):
        _same_rankings(tmp_path / str(k), profile, monkeypatch)


def _same_rankings(path: Path, profile: dict[str, float], monkeypatch: pytest.MonkeyPatch) -> None:
    config = Config(path=str(path), candidate_pool=80, ranking=RankingProfile(**profile))
    with Memory(config, embedder=HashEmbedder()) as m:
        texts = [f"kite {i % 7} lake {i % 5} note {i}" for i in range(150)]
        texts[60:80] = [f"Did the kite {i} fly over the lake?" for i in range(20)]  # only ask
        texts[140:150] = [f"kyte laake {i}" for i in range(10)]  # like the words, not them
        # Two speakers in turn: each message replies to the one before (sequence edges).
        m.add(
            [{"role": "user", "name": "AB"[i % 2], "content": t} for i, t in enumerate(texts)],
            user_id="u",
            session_id="s",
        )
        engine, scope = m._engine, Scope("default", "u")

        def ranked(query: str, limit: int, focus: str | None = None) -> list[object]:
            with ranking.session(engine, query, whole=False):
                parsed = ranking.query_at(query, 1.8e9)
                found = ranking.rank(
                    engine, scope, parsed, engine.config.ranking, limit, focus=focus
                )
            walks = [(w.nodes, w.score) for w in found.walks]
            return [_items(found.items), found.beyond, walks, found.seeds, found.match]

        queries = ("kite lake 3", "note 140 kite", "Did the kite fly?")
        for query in queries:
            _same(query, ranked, monkeypatch)
        # Feedback on each: the learned ranking re-ranks every candidate.
        for query in queries:
            m.recall(query, user_id="u", limit=5)
            m.feedback(f"{query}: yes, note 12 and note 40", user_id="u")
        # Learned scores decay with the clock: one instant for both rankings of a question.
        now = time.time()
        monkeypatch.setattr(time, "time", lambda: now)
        whole = ranked(queries[0], 200, None)[0]
        assert isinstance(whole, list)
        assert any(name.startswith("learned") for item in whole for name, _ in item[3])
        for query in queries:
            _same(query, ranked, monkeypatch)


def _same(
    query: str, ranked: Callable[[str, int, str | None], list[object]], patch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[int, str | None]] = [(limit, None) for limit in (3, 35, 200)]
    whole = ranked(query, 200, None)[0]
    assert isinstance(whole, list) and len(whole) > REFINE_DEPTH + 40
    searched = [item[0] for item in whole if item[2] == "search"]
    asked += [(10, memory_id) for memory_id in (*searched[25:27], *searched[-3:])]
    lazy = [ranked(query, limit, focus) for limit, focus in asked]
    with patch.context() as patched:
        patched.setattr(ranking, "_candidates", _every_one_made)
        assert lazy == [ranked(query, limit, focus) for limit, focus in asked]
