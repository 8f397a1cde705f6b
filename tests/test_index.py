"""The in-process scope index: exact search, the approximate IVF path, BM25."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engrammar.engine.filters import parse_filters
from engrammar.recall import keyword
from engrammar.recall.keyword import BM25Index, pack_terms
from engrammar.recall.text import terms
from engrammar.store.base import ChunkVector, Completed
from engrammar.store.sqlite.index import ContextIndex, IndexRow, ScopeIndex, Within


def _clustered(n: int, dim: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, dim))
    x = centres[rng.integers(0, 40, n)] + 0.35 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_ivf_finds_nearly_all_exact_neighbours() -> None:
    dim, n = 64, 5000
    vecs = _clustered(n, dim)
    exact = ScopeIndex(dim, 1.2, 0.1, ann_threshold=10**9)
    approx = ScopeIndex(dim, 1.2, 0.1, ann_threshold=1000)
    for i, v in enumerate(vecs):
        row = IndexRow(f"m{i}", None, None, 0.0, f"text {i}", v)
        exact.upsert(row)
        approx.upsert(row)
    queries = _clustered(50, dim, seed=7)
    overlap = []
    for q in queries:
        want = {i for i, _ in exact.vector_search(q, 10)}
        got = {i for i, _ in approx.vector_search(q, 10)}
        overlap.append(len(want & got) / 10)
    assert np.mean(overlap) >= 0.9
    # Vectors added after the IVF was built are still found.
    fresh = IndexRow("late", None, None, 0.0, "late", queries[0])
    approx.upsert(fresh)
    assert approx.vector_search(queries[0], 1)[0][0] == "late"


def test_filters_apply_to_vector_and_keyword_search() -> None:
    idx = ScopeIndex(4, 1.2, 0.1)
    v = np.array([1, 0, 0, 0], dtype=np.float32)
    idx.upsert(IndexRow("a", "agent1", "s1", 0.0, "blue kite", v))
    idx.upsert(IndexRow("b", "agent2", "s1", 0.0, "blue kite", v))
    assert [i for i, _ in idx.vector_search(v, 5, Within(agent_id="agent2"))] == ["b"]
    assert [i for i, _ in idx.keyword_search(terms("kite"), 5, Within(session_id="s1"))] in (
        ["a", "b"],
        ["b", "a"],
    )
    assert idx.keyword_search(terms("kite"), 5, Within(session_id="s2")) == []


def test_bm25_prefers_rarer_terms_and_ignores_stop_words() -> None:
    bm = BM25Index(k1=1.2, b=0.0)
    docs = ["the cat sat", "the dog sat", "the cat and the dog", "a zebra"]
    for i, d in enumerate(docs):
        bm.add(i, terms(d))
    assert terms("The cats were sitting") == ["cat", "sit"]
    s = bm.scores(terms("zebra cat"), len(docs))
    assert s[3] > s[0] > 0 and s[1] == 0
    bm.remove(3, terms(docs[3]))
    assert bm.scores(terms("zebra"), len(docs))[3] == 0


def test_context_index_matches_recent_similar_queries_and_prunes_old_ones() -> None:
    dim = 8
    index = ContextIndex(dim)
    rng = np.random.default_rng(3)
    base = rng.standard_normal(dim).astype(np.float32)
    base /= np.linalg.norm(base)
    for i in range(3000):
        v = rng.standard_normal(dim).astype(np.float32)
        v /= np.linalg.norm(v)
        # Every signal row of a recall carries its query; only the first one counts.
        index.add(2 * i + 1, f"r{i}", float(i), base if i % 500 == 0 else v)
        index.add(2 * i + 2, f"r{i}", float(i), v)
    assert len(index) == 3000 and index.last_seq == 6000 and index.newest == 2999.0
    near = {r for _, r in index.matching(base, 0.99, 0.0)}
    assert near == {f"r{i}" for i in range(0, 3000, 500)}
    assert {r for _, r in index.matching(base, 0.99, 1200.0)} == {"r1500", "r2000", "r2500"}
    vector = index.vector("r500")
    assert vector is not None and np.allclose(vector, base)
    index.prune(1200.0)  # 1,200 older recalls: over 1,024, under half of 3,000: kept
    assert len(index) == 3000
    index.prune(2000.0)  # 2,000 older: pruned
    assert len(index) == 1000 and index.vector("r500") is None
    assert {r for _, r in index.matching(base, 0.99, 0.0)} == {"r2000", "r2500"}
    index.add(6001, "new", 3000.0, base)
    assert index.matching(base, 0.99, 0.0)[-1] == (6001, "new")


def test_a_filter_on_more_keys_than_value_indexes_rebuilds_none() -> None:
    rng = np.random.default_rng(3)
    idx = ScopeIndex(4, 1.2, 0.1)
    kept = {}
    for i in range(300):
        meta = {f"k{j}": int(rng.choice(3, p=[0.49, 0.49, 0.02])) for j in range(32)}
        v = rng.normal(size=4).astype(np.float32)
        idx.upsert(IndexRow(f"m{i}", None, None, 0.0, f"note {i}", v / np.linalg.norm(v),
                            metadata=meta))  # fmt: skip
        kept[f"m{i}"] = meta
    query = np.array([1, 0, 0, 0], dtype=np.float32)

    def search(keys: int) -> set[str]:
        where = parse_filters({"metadata": {f"k{j}": {"in": [0, 1]} for j in range(keys)}})
        assert where is not None
        found = {i for i, _ in idx.vector_search(query, 300, Within(where=where))}
        # The same rows as the filter's own row-by-row check.
        assert found == {m for m, meta in kept.items() if where.matches_fields("message", "user",
                         0.0, meta)}  # fmt: skip
        return found

    search(16)  # fits: one value index per key, kept
    built = dict(idx._by_value)
    assert len(built) == 16
    for _ in range(2):
        assert search(32)  # uses those 16, reads the other 16 keys row by row
        assert search(16)
        # Nothing rebuilt, nothing evicted: the same indexes every time.
        assert idx._by_value.keys() == built.keys()
        assert all(idx._by_value[k] is postings for k, postings in built.items())


def _bm25_one_term_at_a_time(
    bm: BM25Index, docs: dict[int, list[str]], query: list[str], size: int
) -> np.ndarray:
    """BM25 as its formula reads, a term at a time in float32, over the live ``docs``."""
    out = np.zeros(size, dtype=np.float32)
    n = len(docs)
    avg = max(sum(map(len, docs.values())) / n, 1e-9)
    for term in dict.fromkeys(query):
        holding = {slot: d.count(term) for slot, d in docs.items() if term in d}
        if not holding:
            continue
        slots = np.array(sorted(holding), dtype=np.int64)
        tfs = np.array([holding[s] for s in sorted(holding)], dtype=np.float32)
        lengths = np.array([len(docs[s]) for s in sorted(holding)], dtype=np.float32)
        idf = math.log(1.0 + (n - len(holding) + 0.5) / (len(holding) + 0.5))
        norm = bm.k1 * (1.0 - bm.b + bm.b * lengths / avg)
        weight = idf * tfs * (bm.k1 + 1.0) / (tfs + norm)
        keep = slots < size
        out[slots[keep]] += query.count(term) * weight[keep]
    return out


def test_bm25_scores_stay_exact_as_the_index_changes() -> None:
    """Scores equal the formula's, bit for bit, for queries repeating terms and terms sharing
    documents, and stay so after every kind of change (a term's weights are kept between
    queries only while the index is unchanged)."""
    texts = [
        "garden shed garden dog",
        "the dog sleeps in the shed",
        "a kite over the garden",
        "dog dog dog",
        "shed",
        "kite festival by the lake, the garden too",
    ]
    bm = BM25Index(k1=1.2, b=0.4)
    docs: dict[int, list[str]] = {}
    bm.add_many(0, pack_terms([terms(t) for t in texts]))
    docs.update((i, terms(t)) for i, t in enumerate(texts))
    queries = [terms(q) for q in ("garden dog", "dog dog shed", "kite garden lake shed", "moon")]

    def same(size: int) -> None:
        for q in queries:
            for _ in range(2):  # asked again: the kept weights
                want = _bm25_one_term_at_a_time(bm, docs, q, size)
                assert np.array_equal(bm.scores(q, size), want), (q, size)

    same(len(texts))
    same(3)  # slots past ``size`` are left out
    changes = [
        lambda: (
            bm.add(6, terms("garden garden kite")),
            docs.update({6: terms("garden garden kite")}),
        ),
        lambda: (bm.remove(1, docs[1]), docs.pop(1)),
        lambda: (
            bm.add_many(7, pack_terms([terms("shed dog"), terms("lake")])),
            docs.update({7: terms("shed dog"), 8: terms("lake")}),
        ),
        lambda: (bm.remove(3, docs[3]), docs.pop(3)),
    ]
    for change in changes:
        change()
        same(max(docs) + 1)


def test_searches_mask_removed_and_filtered_memories() -> None:
    """With every slot live and the whole partition asked, searches mask nothing; a removed
    memory or a narrower scope is still left out of both searches."""
    idx = ScopeIndex(4, 1.2, 0.1)
    v = np.array([1, 0, 0, 0], dtype=np.float32)
    w = np.array([0.6, 0.8, 0, 0], dtype=np.float32)
    for i in range(6):
        idx.upsert(
            IndexRow(f"m{i}", f"agent{i % 2}", None, 0.0, f"blue kite {i}", v if i % 3 else w)
        )
    assert {i for i, _ in idx.vector_search(v, 10)} == {f"m{i}" for i in range(6)}
    assert {i for i, _ in idx.keyword_search(terms("kite"), 10)} == {f"m{i}" for i in range(6)}
    idx.remove("m1")
    idx.remove("m4")
    live = {"m0", "m2", "m3", "m5"}
    assert {i for i, _ in idx.vector_search(v, 10)} == live
    assert {i for i, _ in idx.keyword_search(terms("kite"), 10)} == live
    assert {i for i, _ in idx.vector_search(v, 10, Within(agent_id="agent1"))} == {"m3", "m5"}
    assert {i for i, _ in idx.keyword_search(terms("blue"), 10, Within(agent_id="agent0"))} == {
        "m0",
        "m2",
    }
    # Best first, a memory's own vector and score.
    hits = idx.vector_search(v, 10)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert dict(hits)["m2"] == 1.0 and abs(dict(hits)["m0"] - 0.6) < 1e-6


def test_agent_and_session_scopes_stay_right_through_changes() -> None:
    """A search within an agent or a session keeps exactly that agent's or session's live
    memories, after adds, removals, re-adds, a compaction and a bulk load."""
    rng = np.random.default_rng(5)
    idx = ScopeIndex(8, 1.2, 0.1)
    live: dict[str, tuple[str | None, str | None]] = {}

    def add(i: int, agent: str | None, session: str | None) -> None:
        vec = rng.normal(size=8).astype(np.float32)
        idx.upsert(
            IndexRow(f"m{i}", agent, session, 0.0, f"note {i} kite", vec / np.linalg.norm(vec))
        )
        live[f"m{i}"] = (agent, session)

    def check(index: ScopeIndex) -> None:
        query = rng.normal(size=8).astype(np.float32)
        for agent in (None, "a0", "a1", "a2", "nobody"):
            for session in (None, "s0", "s3", "none-such"):
                want = {
                    m
                    for m, (a, s) in live.items()
                    if (agent is None or a == agent) and (session is None or s == session)
                }
                within = Within(agent, session)
                assert {m for m, _ in index.vector_search(query, 1000, within)} == want
                assert {m for m, _ in index.keyword_search(terms("kite"), 1000, within)} == want
                assert index.term_postings(terms("kite"), 1000, within)[0] == len(want)

    for i in range(300):
        add(i, None if i % 4 == 3 else f"a{i % 3}", None if i % 5 == 4 else f"s{i % 7}")
    check(idx)
    for i in range(0, 300, 3):
        idx.remove(f"m{i}")
        del live[f"m{i}"]
    add(300, "a2", "s3")
    add(5, "a0", "s0")  # a re-add under another agent and session
    check(idx)
    for i in range(1, 200):  # past half removed: the index compacts
        if f"m{i}" in live:
            idx.remove(f"m{i}")
            del live[f"m{i}"]
    assert len(idx._ids) < 300  # compacted: the removed slots are gone
    check(idx)
    add(301, "a1", "s3")
    check(idx)


def test_bm25_scores_stay_exact_when_the_kept_weights_overflow(monkeypatch: Any) -> None:
    """Past the number of terms whose weights are kept, the kept ones are forgotten: a query
    mixing terms kept before with new ones still scores every term."""
    monkeypatch.setattr(keyword, "_WEIGHTS_KEPT", 3)
    texts = ["garden shed dog", "kite lake dog", "shed kite", "moon garden lake"]
    bm = BM25Index(k1=1.2, b=0.4)
    docs = {i: terms(t) for i, t in enumerate(texts)}
    for i, d in docs.items():
        bm.add(i, d)
    for q in ("garden shed", "dog", "garden kite lake moon", "shed dog moon", "garden shed"):
        want = _bm25_one_term_at_a_time(bm, docs, terms(q), len(texts))
        assert np.array_equal(bm.scores(terms(q), len(texts)), want), q


def test_searches_end_each_list_with_the_other_lists_hits_it_missed() -> None:
    """``searches`` gives both searches' lists, the vector list followed by every keyword hit
    it missed with its exact cosine (its own vector's, or its best window's if higher: each
    ``vector.dot(query)``), best first, and the keyword list by every vector hit it missed
    that holds a query term with its BM25 score (``keyword_scores``), best first, ties in the
    vector list's order; right through adds, removals, updates and filters."""
    rng = np.random.default_rng(11)
    dim = 16
    idx = ScopeIndex(dim, 1.2, 0.1)
    held: dict[str, tuple[str, np.ndarray, list[ChunkVector]]] = {}

    def unit() -> np.ndarray:
        v = rng.normal(size=dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def add(i: int) -> None:
        windows = [ChunkVector(p, 0, 1, unit()) for p in range(1, 1 + i % 3)]
        text = f"kite {i}" + " lake" * (i % 3)  # BM25 scores of three values: ties
        row = IndexRow(f"m{i}", f"a{i % 2}", None, 0.0, text, unit(), chunks=windows)
        idx.upsert(row)
        held[row.id] = (row.agent_id or "", row.embedding, windows)

    def check() -> None:
        query = unit()
        for within in (Within(), Within(agent_id="a1")):
            keyword, vector = idx.searches(terms("kite lake"), query, 5, within)
            assert isinstance(keyword, Completed) and isinstance(vector, Completed)
            assert keyword[:5] == idx.keyword_search(terms("kite lake"), 5, within)
            assert vector[:5] == idx.vector_search(query, 5, within)
            in_keyword = {m for m, _ in keyword[:5]}
            unscored = [m for m, _ in vector[:5] if m not in in_keyword]
            scores = idx.keyword_scores(terms("kite lake"), unscored)
            scored = [(m, scores[m]) for m in unscored if m in scores]
            assert keyword[5:] == sorted(scored, key=lambda h: h[1], reverse=True)
            assert len(keyword) > 5  # every memory holds a query term: some are missed
            seen = {m for m, _ in vector[:5]}
            missed = [m for m, _ in keyword[:5] if m not in seen]
            want = []
            for m in missed:
                agent, own, windows = held[m]
                assert within.agent_id in (None, agent)
                best = float(own.dot(query))
                want.append((m, max([best, *(float(w.embedding.dot(query)) for w in windows)])))
            assert vector[5:] == sorted(want, key=lambda h: h[1], reverse=True)
            assert len(vector) > 5  # the query term is in every memory: some are missed

    for i in range(40):
        add(i)
    check()
    for i in range(0, 40, 4):
        idx.remove(f"m{i}")
        del held[f"m{i}"]
    check()
    for i in (1, 5, 9):  # updated: new vectors and windows
        add(i)
    check()


def test_term_postings_of_an_empty_scope_and_of_one_emptied() -> None:
    # A new scope's first add asks for every term of its batch: answered at once, as the
    # scan of each term's (empty) postings answered it; a scope whose memories are all gone
    # answers the same.
    index = ScopeIndex(4, 1.2, 0.1, ann_threshold=10**9)
    wanted = ["kite", "lake", "kite"]
    assert index.term_postings(wanted, 8) == (0, {"kite": (0, []), "lake": (0, [])})
    vector = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    index.upsert(IndexRow("m1", None, None, 0.0, "a kite by the lake", vector))
    assert index.term_postings(terms("kite lake"), 8) == (
        1,
        {"kite": (1, ["m1"]), "lake": (1, ["m1"])},
    )
    index.remove("m1")
    assert index.term_postings(wanted, 8) == (0, {"kite": (0, []), "lake": (0, [])})
