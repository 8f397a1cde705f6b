"""PostgreSQL keyword search over ``keyword_postings`` (migration m016, store/postgres/keyword.py):
the keyword tables kept exact through every write path (inserts by one statement trigger,
migration m018), and the pruned statement's top k equal to
the exact BM25 statement's, ids and scores, whether it prunes the common terms or falls back."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import psycopg
import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.models import Scope
from engrammar.recall.text import terms
from engrammar.store import MemoryUpdate, NewEdge, NewMemory
from engrammar.store.postgres import keyword as postgres_keyword
from engrammar.store.postgres.keyword import keyword_query
from engrammar.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

WORDS = ["garden", "violin", "harbour", "pottery", "marathon", "lantern", "orchard", "comet"]


def _postings(url: str) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """The keyword tables (postings, terms' document counts, partitions' sizes) as the
    triggers keep them, and recomputed from the active rows (a row each, tagged by table)."""
    with psycopg.connect(url, autocommit=True) as conn:
        kept = set(
            conn.execute(
                "SELECT 'p', workspace, user_key, term, seq, tf, doc_len FROM keyword_postings "
                "UNION ALL SELECT 't', workspace, user_key, term, df, 0, 0 FROM keyword_terms "
                "WHERE df > 0 UNION ALL SELECT 's', workspace, user_key, '', n, total_len, 0 "
                "FROM keyword_stats WHERE n > 0"
            ).fetchall()
        )
        counted = set(
            conn.execute(
                "WITH a AS (SELECT * FROM memories WHERE status = 'active') "
                "SELECT 'p', m.workspace, coalesce(m.user_id, ''), u.lexeme, m.seq, "
                "cardinality(u.positions), m.doc_len FROM a m "
                "CROSS JOIN LATERAL unnest(m.terms) AS u "
                "UNION ALL SELECT 't', m.workspace, coalesce(m.user_id, ''), u.lexeme, count(*), "
                "0, 0 FROM a m CROSS JOIN LATERAL unnest(m.terms) AS u GROUP BY 2, 3, 4 "
                "UNION ALL SELECT 's', workspace, coalesce(user_id, ''), '', count(*), "
                "sum(doc_len), 0 FROM a GROUP BY 2, 3"
            ).fetchall()
        )
    return kept, counted


def test_postings_stay_exact_through_every_write_path(pg_url: str, tmp_path: Any) -> None:
    """add (one and many, a batch with repeated words and a repeated message), update of
    content and of metadata, a status change, supersede, forget of ids and of a whole user,
    a feedback correction and its undo, import."""
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        ids = mem.add(
            [{"role": "user", "content": f"{WORDS[i % 8]} and {WORDS[(i * 3) % 8]} talk {i}"}
             for i in [*range(30), 0]],
            user_id="u1",
        )  # fmt: skip
        assert ids[30] == ids[0] and len(set(ids)) == 30
        mem.add("The comet over the orchard was bright.", user_id="u2")
        mem.add("A lantern in the harbour.", agent_id="a1")  # no user
        steps = [
            lambda: mem.update(ids[0], content="An entirely new sentence about violin lessons."),
            lambda: mem.update(ids[3], metadata={"n": 1}),
            lambda: mem.forget(ids[1]),
            lambda: mem.forget([ids[4], ids[5]]),
        ]
        store = mem.store
        assert isinstance(store, PostgresStore)
        ws = mem.config.workspace
        steps.append(
            lambda: store.update_memory(
                ws, ids[2], MemoryUpdate(status="superseded", reason="test")
            )
        )
        for step in steps:
            step()
            kept, counted = _postings(pg_url)
            assert kept == counted and kept
        # Supersede: an add whose memory replaces an older one (a supersedes edge).
        vec = np.ones(256, dtype=np.float32) / 16.0  # HashEmbedder's dimension
        store.add_memories(
            [NewMemory("n0", ws, "u1", None, None, "user", "Violin lessons moved to Monday.",
                       "message", 1e10, {}, "n0", vec)],
            [NewEdge("n0", ids[7], "supersedes", 0.5)],
        )  # fmt: skip
        with psycopg.connect(pg_url, autocommit=True) as conn:
            row = conn.execute("SELECT superseded_by FROM memories WHERE id = %s", (ids[7],))
            assert row.fetchone() == ("n0",)
        kept, counted = _postings(pg_url)
        assert kept == counted
        record = mem.rate_memory(ids[6], "corrected", "garden talk moved to Tuesdays", user_id="u1")
        kept, counted = _postings(pg_url)
        assert kept == counted
        out = mem.undo(record.id)
        assert out["memories_removed"]
        kept, counted = _postings(pg_url)
        assert kept == counted
        export = tmp_path / "u1.jsonl"
        mem.export(str(export), user_id="u1")
        assert mem.forget(user_id="u1") > 0
        kept, counted = _postings(pg_url)
        assert kept == counted and all(k[2] != "u1" for k in kept)
        mem.import_(str(export))
        kept, counted = _postings(pg_url)
        assert kept == counted and any(k[2] == "u1" for k in kept)
    finally:
        mem.close()


def _rows(n: int) -> list[NewMemory]:
    """One user: "melani" in every memory (a common term), the other words rarer and rarer,
    lengths and term frequencies varied so that scores rarely tie."""
    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    out = []
    for i in range(n):
        words = ["Melanie"] * (1 + i % 3)
        words += [WORDS[j] for j in range(8) if i % (j + 2) == 0] * (1 + i % 2)
        words += [f"filler{i % 13}"] * (i % 5)
        out.append(NewMemory(f"m{i}", "default", "u", None, None, "user", " ".join(words),
                             "message", float(i), {}, f"m{i}", vecs[i]))  # fmt: skip
    return out


def _same(exact: list[Any], other: list[Any]) -> bool:
    """Equal ids and scores (1e-9); ids may differ only among rows of equal exact score."""
    if len(exact) != len(other):
        return False
    for a, b in zip(exact, other, strict=True):
        if abs(a[1] - b[1]) > 1e-9:
            return False
    for _, group in itertools.groupby(range(len(exact)), key=lambda i: round(exact[i][1], 9)):
        idx = list(group)
        if idx[-1] != len(exact) - 1 and {exact[i][0] for i in idx} != {other[i][0] for i in idx}:
            return False
    return True


def test_postings_first_returns_the_exact_top_k(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_url, pool_size=2, bm25_k1=1.2, bm25_b=0.5)
    try:
        store.check_embedder("synthetic", 8)
        store.add_memories(_rows(400))
        store.add_memories([NewMemory("x0", "default", "v", None, None, "user",
                                      "Melanie garden comet", "message", 0.0, {}, "x0",
                                      np.ones(8, dtype=np.float32))])  # fmt: skip
        scope = Scope("default", "u")
        branches = set()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            for budget in (0, 60, 2000):
                monkeypatch.setattr(postgres_keyword, "RARE_BUDGET", budget)
                for query, k in itertools.product(
                    ("Melanie garden", "Melanie comet lantern", "comet", "Melanie",
                     "orchard filler3 violin", "Melanie Melanie pottery", "nothing here"),
                    (1, 3, 10, 50, 500),
                ):  # fmt: skip
                    words = terms(query)
                    exact = keyword_query(scope, words, k, k1=1.2, b=0.5, plan="exact")
                    fast = keyword_query(scope, words, k, k1=1.2, b=0.5)
                    if exact is None or fast is None:
                        continue
                    want = conn.execute(*exact).fetchall()
                    got = conn.execute(*fast).fetchall()
                    assert _same(want, got), (query, k, budget)
                    assert [(r[0], r[1]) for r in got] == store.keyword_search(scope, query, k)
                    head = fast[0].partition("SELECT m.id, x.score, x.seq FROM summed x")[0]
                    row = conn.execute(head + "SELECT bool_or(ess) FROM essential", fast[1])
                    two = row.fetchone()
                    assert two is not None
                    branches.add((bool(two[0]), bool(want)))
        # Searches that kept to the first pass and searches that read common terms' postings.
        assert (False, True) in branches and (True, True) in branches
    finally:
        store.close()


def _postings_from_memories(url: str, user: str, terms: list[str], limit: int) -> Any:
    """``term_postings`` as the general statement reads it: every active memory of the
    user's scope that holds each term (``@@``), newest first."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT t.term, count(*), (array_agg(m.id ORDER BY m.seq DESC))[1:%s] "
            "FROM unnest(%s::text[]) AS t(term) JOIN memories m "
            "ON m.terms @@ (quote_literal(t.term))::tsquery WHERE m.workspace = 'default' "
            "AND m.user_id = %s AND m.status = 'active' GROUP BY t.term",
            (limit, terms, user),
        ).fetchall()
    return {term: (df, list(ids)) for term, df, ids in rows}


def test_term_postings_of_a_user_scope_come_from_the_keyword_tables(pg_url: str) -> None:
    """A user's scope reads ``term_postings`` from ``keyword_terms`` and ``keyword_postings``:
    the same document counts and newest ids as reading the memories, after adds (a term in
    every memory, rare ones, one absent), forgets and an update, with another user's and an
    agent's memories beside them; a scope with an agent key reads the memories."""
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        ids = mem.add(
            [{"role": "user", "content": f"Melanie said {WORDS[i % 8]} {WORDS[(i * 5) % 7]} {i}"}
             for i in range(40)],
            user_id="u1",
        )  # fmt: skip
        mem.add([f"Melanie and the {w}" for w in WORDS], user_id="u2")
        mem.add("Melanie's garden lantern.", user_id="u1", agent_id="a1")
        mem.forget([ids[3], ids[11]])
        mem.update(ids[5], content="Nothing about her any more, only a comet.")
        store = mem.store
        assert isinstance(store, PostgresStore)
        words = sorted({"melani", "garden", "comet", "lantern", "absent", "3", "39", *WORDS})
        for limit in (1, 8, 100):
            n, found = store.term_postings(Scope("default", "u1"), words, limit)
            assert n == 39  # 41 memories of u1, two forgotten
            expected = _postings_from_memories(pg_url, "u1", words, limit)
            assert {t: v for t, v in found.items() if v[0]} == expected
            assert found["absent"] == (0, [])
            assert found["melani"][0] == 38 and len(found["melani"][1]) == min(limit, 38)
        n, found = store.term_postings(Scope("default", "u1", "a1"), ["lantern"], 8)
        assert n == 1 and found["lantern"][0] == 1
    finally:
        mem.close()
