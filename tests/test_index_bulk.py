"""A partition's bulk load (``ScopeIndex.extend``, ``BM25Index.add_many``, ``pack_terms``)
builds the same index as adding its rows one at a time: same terms, postings, lengths, and
the same ids, order and scores from every search, on a real SQLite file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from engrammar import Config, HashEmbedder, Memory
from engrammar.recall.keyword import BM25Index, pack_terms
from engrammar.recall.text import index_text, terms
from engrammar.store.sqlite.index import ScopeIndex, Within
from engrammar.store.sqlite.index_terms import read_terms, stored_terms
from engrammar.store.sqlite.migrations import MIGRATIONS
from engrammar.store.sqlite.search import SQLiteSearch
from engrammar.store.sqlite.store import SQLiteStore

AWKWARD = [
    "The cats were sitting on Caroline's mat, weren't they?",
    "",
    "   \t\n ",
    "İstanbul in 2023 — 3 KELVIN (\u212a) degrees; don't o'clock 'quoted' rock'n'roll",
    "hello,world...again!!! e-mail: me@example.com #tag 10:30am",
    "\x1cbetween\x1dcontrol\x1eseparators\x1f and\u2003em\u00a0spaces",
    "ΣΊΣΥΦΟΣ Straße naïve café œuvre ﬁne",
    "a\x00nul inside",
    "the the the and of",
    "Running runners ran; running ran runs.",
]


def test_packed_terms_unpack_to_the_same_lists() -> None:
    texts = AWKWARD * 3 + [f"note {i} on the garden, dog {i % 7}" for i in range(50)]
    for batch in (texts, texts[:1], [""], []):
        packed = pack_terms([terms(t) for t in batch])
        assert len(packed) == len(batch)
        assert [packed[i] for i in range(len(batch))] == [terms(t) for t in batch]


def _same_bm25(a: BM25Index, b: BM25Index, size: int, queries: list[list[str]]) -> None:
    assert len(a) == len(b)
    for q in queries:
        assert np.array_equal(a.scores(q, size), b.scores(q, size))
        for t in q:
            assert a.df(t) == b.df(t) and a.postings(t) == b.postings(t)


def test_bm25_add_many_equals_add() -> None:
    docs = [terms(t) for t in AWKWARD + [f"garden dog {i % 5} shed {i % 3}" for i in range(40)]]
    one, many = BM25Index(1.2, 0.1), BM25Index(1.2, 0.1)
    for i, d in enumerate(docs):
        one.add(i, d)
    many.add_many(0, pack_terms(docs))
    queries = [terms("garden dog 3"), terms("cats sitting"), terms("shed shed 2 nothing")]
    _same_bm25(one, many, len(docs), queries)
    # Changes after the bulk add: removals, re-adds and a second bulk add.
    for index in (one, many):
        index.remove(3, docs[3])
        index.remove(12, docs[12])
        index.add(len(docs), terms("garden shed"))
    more = [terms("dog dog garden"), terms("cats")]
    for i, d in enumerate(more):
        one.add(len(docs) + 1 + i, d)
    many.add_many(len(docs) + 1, pack_terms(more))
    _same_bm25(one, many, len(docs) + 3, queries)


def test_bm25_add_many_of_documents_without_terms() -> None:
    one, many = BM25Index(1.2, 0.1), BM25Index(1.2, 0.1)
    docs = [terms("the and of"), [], terms("is it")]
    for i, d in enumerate(docs):
        one.add(i, d)
    many.add_many(0, pack_terms(docs))
    assert len(many) == 3 and many._total_len == 0
    _same_bm25(one, many, 3, [terms("anything")])
    for index in (one, many):
        index.add(3, terms("garden"))
    _same_bm25(one, many, 4, [terms("garden")])


def _rows(store: Any, user: str) -> list[tuple[Any, ...]]:
    return store._sync_conn.execute(
        "SELECT id, agent_id, session_id, created_at, content, embedding, metadata, kind, role "
        "FROM memories WHERE workspace = 'default' AND user_id IS ? AND status = 'active' "
        "ORDER BY seq",
        (user,),
    ).fetchall()


def _one_by_one(store: Any, user: str) -> ScopeIndex:
    index = ScopeIndex(store._dimension(), store._k1, store._b, store._ann_threshold)
    for row in _rows(store, user):
        chunks = store.memory_chunks("default", [row[0]]).get(row[0])
        index.upsert(SQLiteSearch._index_row(row, chunks))
    return index


def _same_index(bulk: ScopeIndex, ref: ScopeIndex, queries: list[str]) -> None:
    n = len(ref._ids)
    assert bulk._ids == ref._ids and bulk._slot == ref._slot
    assert [bulk._doc_terms(s) for s in range(n)] == [ref._doc_terms(s) for s in range(n)]
    assert np.array_equal(bulk._vectors[:n], ref._vectors[:n])
    assert np.array_equal(bulk._created[:n], ref._created[:n])
    assert bulk._metadata == ref._metadata and bulk.nbytes > 0
    assert bulk._metadata_bytes == ref._metadata_bytes
    assert bulk._agents == ref._agents and bulk._sessions == ref._sessions
    assert np.array_equal(bulk._owners[: bulk._n_chunks], ref._owners[: ref._n_chunks])
    assert np.array_equal(bulk._chunks[: bulk._n_chunks], ref._chunks[: ref._n_chunks])
    embedder = HashEmbedder()
    for text in queries:
        q = terms(text)
        _same_bm25(bulk._bm25, ref._bm25, n, [q])
        for within in (Within(), Within(session_id="s1")):
            assert bulk.keyword_search(q, 50, within) == ref.keyword_search(q, 50, within)
        vector = embedder.embed([text])[0]
        assert bulk.vector_search(vector, 20) == ref.vector_search(vector, 20)
        assert bulk.term_postings(q, 5) == ref.term_postings(q, 5)
        # Kinds and roles are coded per index: the same rows pass the same filter.
        for name in ("message", "user", "assistant"):
            codes = [bulk._codes.get(name), ref._codes.get(name)]
            picked = [
                (index._kind_codes[:n] == c) | (index._role_codes[:n] == c)
                for index, c in zip((bulk, ref), codes, strict=True)
            ]
            assert np.array_equal(*picked)


def test_bulk_loaded_partition_equals_one_by_one(tmp_path: Path) -> None:
    queries = [
        "garden shed dog",
        "Where does Caroline live?",
        "cats sitting on the mat",
        "Melanie painted a sunrise at the lake",
        "nothing matches zyzzyva",
    ]
    memory = Memory(Config(path=str(tmp_path / "store")), embedder=HashEmbedder())
    try:
        for s in range(4):
            memory.add(
                [
                    {"role": "user", "name": "Caroline", "content": f"I went to the garden {s}."},
                    {"role": "assistant", "content": f"The shed and dog {s} sound lovely."},
                    {
                        "role": "user",
                        "name": "Melanie",
                        "content": "I painted a sunrise at the lake.",
                    },
                    *(
                        {"role": "user", "content": t}
                        for t in AWKWARD
                        if t.strip() and "\x00" not in t
                    ),
                ],
                user_id="u",
                session_id=f"s{s}",
                metadata={"topic": f"t{s % 2}"},
            )
        long_text = " ".join(
            f"sentence {i} about the garden shed and the lake." for i in range(400)
        )
        memory.add(long_text, user_id="u", session_id="s1")
        memory.add("another user's garden", user_id="v")
        gone = memory.recall("dog 2", user_id="u").memories[0].id
        memory.forget(gone, user_id="u")
        store: Any = memory.store
        with store._index_lock:
            bulk = store._load_partition("default", "u")
        ref = _one_by_one(store, "u")
        assert bulk._n_chunks > 0 and len(bulk) == len(ref) > 30
        _same_index(bulk, ref, queries)
        # Both changed the same way afterwards (a removal and a re-add through the log).
        victim = ref._ids[5]
        for index in (bulk, ref):
            index.remove(victim)
            index.upsert(SQLiteSearch._index_row(_rows(store, "u")[0]))
        _same_index(bulk, ref, queries)
    finally:
        memory.close()


def _stored(store: Any) -> dict[str, tuple[str, str | None]]:
    """Each memory's index text and stored terms."""
    out = {}
    for memory_id, content, metadata, stored in store._sync_conn.execute(
        "SELECT id, content, metadata, index_terms FROM memories"
    ):
        speaker = json.loads(metadata).get("speaker")
        out[memory_id] = (index_text(content, speaker), stored)
    return out


def test_stored_terms_are_current_or_not_used(tmp_path: Path) -> None:
    memory = Memory(Config(path=str(tmp_path / "store")), embedder=HashEmbedder())
    try:
        ids = memory.add(
            [
                {"role": "user", "name": "Caroline", "content": "I adopted two cats."},
                {"role": "user", "content": "The lake at sunrise, the the and."},
                {"role": "user", "content": "Running to the shed."},
                {"role": "user", "content": "Painting by the lake."},
            ],
            user_id="u",
        )
        store: Any = memory.store
        for text, stored in _stored(store).values():
            assert stored is not None and stored == stored_terms(text)
            assert read_terms([text], [stored]) == [terms(text)]
        # Changed text and speaker: the stored terms follow.
        memory.update(ids[0], metadata={"speaker": "Melanie"})
        memory.update(ids[2], "Walking to the garden.")
        for text, stored in _stored(store).values():
            assert stored == stored_terms(text)
        assert "melani" in read_terms(*zip(_stored(store)[ids[0]], strict=True))[0]
        # An update that leaves the terms as they were (an older release's) empties them.
        with store._write() as conn:
            conn.execute("UPDATE memories SET content = 'Swimming' WHERE id = ?", (ids[1],))
            conn.execute("UPDATE memories SET metadata = '{}' WHERE id = ?", (ids[0],))
        found = _stored(store)
        assert found[ids[0]][1] is None and found[ids[1]][1] is None
        assert found[ids[3]][1] == stored_terms("Painting by the lake.")
        # Terms of another analyser are not read.
        text = "Painting by the lake."
        assert read_terms([text], ["00000000 paint"]) == [terms(text)] != [["paint"]]
        with store._index_lock:
            bulk = store._load_partition("default", "u")
        _same_index(bulk, _one_by_one(store, "u"), ["cats", "lake sunrise", "garden swimming"])
    finally:
        memory.close()


def test_migration_fills_the_terms_of_stored_memories(tmp_path: Path) -> None:
    file = tmp_path / "old.db"
    older = [m for m in MIGRATIONS if m.__name__ < "m013"]
    conn = sqlite3.connect(file, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    for migration in older:
        migration(conn)
        conn.execute("INSERT INTO migrations VALUES (?, 0)", (migration.__name__,))
    rows = [
        ("a", "I adopted two cats.", '{"speaker": "Caroline"}'),
        ("b", "the and of", "{}"),
        ("c", "Running to the lake.", '{"speaker": 3}'),
    ]
    for memory_id, content, metadata in rows:
        conn.execute(
            "INSERT INTO memories (id, workspace, user_id, role, content, kind, status, "
            "created_at, updated_at, metadata, dedup_key, embedding) "
            "VALUES (?, 'default', 'u', 'user', ?, 'message', 'active', 0, 0, ?, ?, ?)",
            (memory_id, content, metadata, memory_id, np.zeros(8, np.float32).tobytes()),
        )
    conn.execute("COMMIT")
    conn.close()
    store = SQLiteStore(file)
    try:
        found = {
            r[0]: r[1] for r in store._sync_conn.execute("SELECT id, index_terms FROM memories")
        }
        assert found == {
            "a": stored_terms("Caroline: I adopted two cats."),
            "b": stored_terms("the and of"),
            "c": stored_terms("Running to the lake."),
        }
        assert read_terms(["the and of"], [found["b"]]) == [[]]
    finally:
        store.close()
