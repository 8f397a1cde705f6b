"""The embedded store on real files: migrations, reopening, several processes at once."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.models import Scope
from engrammar.store import SearchQuery
from engrammar.store.sqlite.migrations import MIGRATIONS
from engrammar.store.sqlite.store import SQLiteStore


def _open(path: Path) -> Memory:
    return Memory(Config(path=str(path)), embedder=HashEmbedder())


def test_migrations_are_recorded_once(store_path: Path) -> None:
    _open(store_path).close()
    _open(store_path).close()
    store = SQLiteStore(store_path / "engrammar.db")
    assert store.applied_migrations() == [m.__name__ for m in MIGRATIONS]
    assert store.integrity_check() == "ok"
    store.close()
    with sqlite3.connect(store_path / "engrammar.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _child_add(path: str, n: int, tag: str) -> None:
    m = _open(Path(path))
    for i in range(n):
        m.add(f"{tag} memory number {i}", user_id="shared")
    m.close()


def _child_recall(path: str, query: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    m = _open(Path(path))
    hits = m.search(query, user_id="shared", limit=3)
    out.put([h.content for h in hits])
    m.close()


@pytest.mark.processes
def test_reopening_in_another_process_restores_everything(store_path: Path) -> None:
    m = _open(store_path)
    ids = m.add(["the red kite flies", "blue whales sing"], user_id="shared")
    m.update(ids[1], "blue whales sing at night")
    m.recall("kite", user_id="shared")
    m.close()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child_recall, args=(str(store_path), "whales at night", q))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert q.get(timeout=5)[0] == "blue whales sing at night"


@pytest.mark.processes
def test_several_processes_write_one_store_and_readers_see_new_writes(store_path: Path) -> None:
    reader = _open(store_path)
    reader.add("seed memory", user_id="shared")
    assert len(reader.search("memory", user_id="shared", limit=100)) == 1
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_child_add, args=(str(store_path), 25, f"w{i}")) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    # The long-lived reader's in-process index picks up the other processes' commits.
    hits = reader.search("memory number", user_id="shared", limit=200)
    assert len(hits) == 76
    assert reader.stats(user_id="shared")["memories"] == 76
    reader.close()
    store = SQLiteStore(store_path / "engrammar.db")
    assert store.integrity_check() == "ok"
    store.close()


def test_vectors_survive_as_float32(store_path: Path) -> None:
    m = _open(store_path)
    (mid,) = m.add("persistence check", user_id="u")
    expected = m.embedder.embed(["persistence check"])[0]
    m.close()
    store = SQLiteStore(store_path / "engrammar.db")
    got = store.vectors("default", [mid])[mid]
    assert got.dtype == np.float32 and np.allclose(got, expected)
    store.close()


def test_a_rows_metadata_is_decoded_once_and_each_record_gets_its_own(store_path: Path) -> None:
    from engrammar.store.sqlite.search import _flat_metadata

    m = _open(store_path)
    (flat,) = m.add(
        [{"role": "user", "content": "a", "metadata": {"turn_id": "D1:1"}}], user_id="u"
    )
    (deep,) = m.add([{"role": "user", "content": "b", "metadata": {"tags": ["x"]}}], user_id="u")
    first = m.store.get_memories("default", [flat, deep])
    hits = _flat_metadata.cache_info().hits
    again = m.store.get_memories("default", [flat, deep])
    assert _flat_metadata.cache_info().hits > hits  # the flat object was not decoded again
    for i, meta in ((flat, {"turn_id": "D1:1"}), (deep, {"tags": ["x"]})):
        assert first[i].metadata == again[i].metadata == meta
        assert first[i].metadata is not again[i].metadata
    # A caller changing its record changes no one else's.
    first[flat].metadata["turn_id"] = "changed"
    first[deep].metadata["tags"].append("y")
    assert m.get(flat).metadata == {"turn_id": "D1:1"} and m.get(deep).metadata == {"tags": ["x"]}
    m.close()


def test_a_scopes_load_keeps_its_rows_as_the_table_holds_them(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engrammar.models import Scope
    from engrammar.store.sqlite import search
    from engrammar.store.tables import MEMORY_COLUMNS

    writer = _open(store_path)
    ids = writer.add(
        [
            {"role": "user", "content": "I moved to Berlin in May.", "name": "Ana"},
            {"role": "assistant", "content": "Berlin is lovely in spring."},
            "I moved to Hamburg in June.",  # replaces the first (valid_until, superseded_by)
        ],
        user_id="u",
    )
    writer.add("Someone else's memory.", user_id="v")
    m = _open(store_path)
    store = m.store
    assert isinstance(store, SQLiteStore)

    def table(memory_id: str) -> tuple[object, ...]:
        with sqlite3.connect(store_path / "engrammar.db") as conn:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()
        return tuple(row)

    store._partitions(Scope("default", "u"))  # loads the scope's index (as a search does)
    assert set(store._rows) == set(ids)  # the loaded scope's rows, no one else's
    assert all(store._rows[i] == table(i) for i in ids)
    statements: list[str] = []
    for conn in store._all_conns:
        conn.set_trace_callback(statements.append)
    got = store.get_memories("default", ids)
    assert not [s for s in statements if "FROM memories" in s]
    assert got[ids[0]].metadata == {"speaker": "Ana"} and got[ids[1]].role == "assistant"
    # What another handle changes after the load is read again, not served from the load.
    writer.update(ids[1], "Berlin is lovely in autumn.")
    writer.forget(ids[2])
    now = store.get_memories("default", ids)
    assert now[ids[1]].content == "Berlin is lovely in autumn."
    assert ids[2] not in now
    assert store._rows[ids[1]] == table(ids[1])
    writer.close()
    m.close()
    # A load fills only the room the row cache has: it pushes out no row read before.
    monkeypatch.setattr(search, "_ROW_CACHE", 2)
    small = _open(store_path)
    (v_id,) = [r.id for r in small.list(user_id="v")]
    small.store.get_memories("default", [v_id])
    small.store._partitions(Scope("default", "u"))  # loads the scope's index, reads no row
    assert list(small.store._rows) == [ids[1], v_id]  # the newest of u's, least recent first
    small.close()


def test_a_recall_reads_feedback_tables_only_where_the_scope_has_records(store_path: Path) -> None:
    m = _open(store_path)
    tea, _ = m.add(["I like green tea.", "I moved to Berlin in May."], user_id="u")
    m.recall("green tea", user_id="u")  # this thread's connection is open
    statements: list[str] = []
    for conn in m.store._all_conns:
        conn.set_trace_callback(statements.append)

    def reads(table: str) -> int:
        return sum(f"FROM {table}" in s and "EXISTS" not in s for s in statements)

    m.recall("green tea", user_id="u")
    assert reads("memory_ratings") == reads("feedback_events") == 0
    # Another user's rating is not this user's: still nothing to read.
    m.rate_memory(tea, "rejected", context="green tea", user_id="v")
    statements.clear()
    m.recall("green tea", user_id="u")
    assert reads("memory_ratings") == 0
    # The user's own rating is read, and the learned ranking acts on it.
    m.rate_memory(tea, "rejected", context="green tea", user_id="u")
    statements.clear()
    got = m.recall("green tea", user_id="u")
    assert reads("memory_ratings") >= 1 and reads("feedback_events") == 0
    rated = next(x for x in got.memories if x.id == tea)
    assert rated.components["learned_rating"] < 0
    m.close()


def test_a_recall_rereads_only_what_changed_since_the_last(store_path: Path) -> None:
    # A recall writes its record on the connection the caches are synced on, whose
    # data_version its own commits leave as it was: the next recall finds nothing changed and
    # reads no change log, no reply signals, no knowledge and no feedback probe.
    m = _open(store_path)
    (train, _) = m.add(
        ["The train to Hamburg leaves at nine.", "I moved to Berlin in May."], user_id="u"
    )
    m.recall("the train", user_id="u")
    statements: list[str] = []
    for conn in m.store._all_conns:
        conn.set_trace_callback(statements.append)
    m.recall("the train", user_id="u")
    assert statements.count("PRAGMA data_version") == 1  # whether anything changed: once
    for table in ("memory_changes", "reply_signals", "knowledge_chunks", "feedback_events"):
        assert not [s for s in statements if table in s], table
    assert not [s for s in statements if "kind = 'preference'" in s]  # the index knows: none
    assert sum(s.startswith("INSERT INTO recalls") for s in statements) == 1
    # What another handle changes is still seen: a memory, knowledge, a rating.
    other = _open(store_path)
    (new,) = other.add("I started learning the cello.", user_id="u")
    other.add_knowledge("Handbook", ["Cello lessons are on Tuesdays."], user_id="u")
    got = m.recall("cello", user_id="u")
    assert new in [x.id for x in got.memories] and got.knowledge
    before = next(x for x in m.recall("the train", user_id="u").memories if x.id == train)
    assert "learned_rating" not in before.components
    other.rate_memory(train, "rejected", context="the train", user_id="u")
    other.close()
    rated = next(x for x in m.recall("the train", user_id="u").memories if x.id == train)
    assert rated.components["learned_rating"] < 0
    # And so is what this handle records: its rating after a recall counts at the next one.
    m.rate_memory(new, "rejected", context="cello", user_id="u")
    cello = next(x for x in m.recall("cello", user_id="u").memories if x.id == new)
    assert cello.components["learned_rating"] < 0
    m.close()


def test_edges_are_read_once_until_the_database_changes(store_path: Path) -> None:
    from engrammar.store.sql.store import SQLStore

    m = _open(store_path)
    ids = m.add(
        [
            "I moved to Berlin in May.",
            "The flat in Berlin has a balcony.",
            "My sister visits Berlin in June.",
            "I play the cello on Tuesdays.",
        ],
        user_id="u",
    )
    store = m.store
    assert isinstance(store, SQLiteStore)

    def as_read(wanted: list[str], min_weight: float = 0.0, kind: str | None = None) -> None:
        # What the database answers, in the order it answers it.
        got = store.edges_from("default", wanted, min_weight, kind)
        assert got == SQLStore.edges_from(store, "default", wanted, min_weight, kind)

    for order in (ids, ids[::-1], [ids[2], ids[0]]):
        for min_weight, kind in ((0.0, None), (0.5, None), (0.0, "sequence")):
            as_read(order, min_weight, kind)
    assert store.edges_from("default", ids)  # the sequence edges at least
    m.recall("Who lives in Berlin?", user_id="u")
    statements: list[str] = []
    for conn in store._all_conns:
        conn.set_trace_callback(statements.append)
    m.recall("Who lives in Berlin?", user_id="u")
    assert not [s for s in statements if "FROM edges" in s]
    # A reply moves edge weights (the writer's commit): the next read sees them.
    before = {(e.src, e.dst, e.kind): e.weight for e in store.edges_from("default", ids)}
    m.feedback("You moved to Berlin in May and your flat has a balcony.", user_id="u")
    after = {(e.src, e.dst, e.kind): e.weight for e in store.edges_from("default", ids)}
    assert after != before
    as_read(ids)
    # So do another handle's new memories and their edges.
    other = _open(store_path)
    new = other.add(["Berlin winters are cold.", "I bought a coat for them."], user_id="u")
    other.close()
    fresh = SQLStore.edges_from(store, "default", [*ids, *new])
    assert any(e.src in new for e in fresh)
    assert store.edges_from("default", [*ids, *new]) == fresh
    m.close()


def test_index_follows_updates_and_forgets_from_another_handle(store_path: Path) -> None:
    a, b = _open(store_path), _open(store_path)
    (mid,) = a.add("original wording about sailing", user_id="u")
    assert b.search("sailing", user_id="u")[0].id == mid
    a.update(mid, "new wording about climbing")
    assert b.search("climbing", user_id="u")[0].id == mid
    from engrammar.models import Scope

    # The old wording is gone from the other handle's keyword index.
    assert b.store.keyword_search(Scope("default", "u"), "sailing", 5) == []
    a.forget(mid)
    assert b.search("climbing", user_id="u") == []
    a.close()
    b.close()


def test_fts5_search(store_path: Path) -> None:
    m = _open(store_path)
    m.add(["Running shoes for the marathon", "A quiet evening with tea"], user_id="u")
    store = m.store
    assert isinstance(store, SQLiteStore)
    from engrammar.models import Scope

    hits = store.fts_search(Scope("default", "u"), 'marathon "runs" OR *', 5)
    assert [h[0] for h in hits] and len(hits) == 1
    m.close()


def test_index_compacts_after_many_forgets(store_path: Path) -> None:
    m = _open(store_path)
    ids = m.add([f"item {i} alpha" for i in range(600)], user_id="u")
    m.search("alpha", user_id="u")
    m.forget(ids[:500])
    hits = m.search("item alpha", user_id="u", limit=200)
    assert len(hits) == 100
    assert {h.id for h in hits} == set(ids[500:])
    m.close()


def test_a_users_searches_end_each_list_with_the_other_lists_hits_it_missed(
    store_path: Path,
) -> None:
    """One partition's searches complete both lists themselves, with the cosines recall would
    compute from the stored vectors and the BM25 scores ``keyword_scores`` gives
    (``Store.searches``)."""
    m = _open(store_path)
    words = ["river", "stones", "garden", "weather", "sea", "lamp", "train"]
    texts = [f"kite {words[i % 7]} {words[i * 3 % 7]} {i}" for i in range(30)]
    m.add([*texts, *(f"{words[i]} only" for i in range(7))], user_id="u")
    scope = Scope("default", "u")
    query = HashEmbedder().embed(["stones in the river"])[0]
    keyword, vector = m.store.searches(scope, SearchQuery(("kite",), query, 4))
    assert vector[:4] == m.store.vector_search(scope, query, 4)
    assert keyword[:4] == m.store.keyword_search(scope, "kite", 4)
    in_keyword = {i for i, _ in keyword[:4]}
    scores = m.store.keyword_scores(scope, ["kite"], [i for i, _ in vector[:4]])
    scored = [(i, scores[i]) for i, _ in vector[:4] if i in scores and i not in in_keyword]
    assert scored and keyword[4:] == sorted(scored, key=lambda h: h[1], reverse=True)
    missed = [i for i, _ in keyword[:4] if i not in dict(vector[:4])]
    assert missed
    stored = m.store.vectors("default", missed)
    want = [(i, float(stored[i].dot(query))) for i in missed]
    assert vector[4:] == sorted(want, key=lambda h: h[1], reverse=True)
    m.close()


def test_a_batch_is_written_as_its_rows_one_by_one(tmp_path: Path) -> None:
    # add_memories writes a batch's memories, windows and history lines table by table (one
    # statement each) after reading the stored dedup keys at once: what it writes must be
    # what writing the rows one at a time writes, repeats (stored and within the batch) and
    # edges renamed to the memory kept included.
    from engrammar.store import ChunkVector, NewEdge, NewMemory

    def row(n: int, text: str, windows: int = 0) -> NewMemory:
        vector = np.eye(8, dtype=np.float32)[n % 8]
        chunks = tuple(ChunkVector(k + 1, k * 10, k * 10 + 9, vector) for k in range(windows))
        return NewMemory(
            id=f"m{n}",
            workspace="w",
            user_id="u",
            agent_id=None,
            session_id="s",
            role="user",
            content=text,
            kind="message",
            created_at=100.0 + n,
            metadata={"speaker": "Ann"} if n % 2 else {},
            dedup_key=f"key-{text}",
            embedding=vector,
            chunks=chunks,
        )

    first = [row(0, "stored before"), row(1, "also stored", 2)]
    batch = [row(2, "new one", 3), row(3, "stored before"), row(4, "new two"), row(5, "new one")]
    edges = [NewEdge("m2", "m3", "semantic", 0.5), NewEdge("m5", "m4", "sequence", 0.4)]
    edges += [NewEdge("m4", "m1", "entity", 0.3), NewEdge("m2", "m5", "semantic", 0.9)]
    stores = [SQLiteStore(tmp_path / "batch.db"), SQLiteStore(tmp_path / "one.db")]
    whole, single = stores
    whole.add_memories(first)
    single.add_memories(first)
    got = whole.add_memories(batch, edges)
    one = [single.add_memories([r])[0] for r in batch]
    kept = {"m3": "m0", "m5": "m2"}  # each repeat is the memory stored first
    single.add_memories(
        [],
        [NewEdge(kept.get(e.src, e.src), kept.get(e.dst, e.dst), e.kind, e.weight) for e in edges],
    )
    assert got == one == [("m2", True), ("m0", False), ("m4", True), ("m2", False)]

    def rows(store: SQLiteStore) -> list[list[tuple[object, ...]]]:
        return [
            store._read(sql)
            for sql in (
                "SELECT seq, id, content, metadata, dedup_key, embedding, index_terms "
                "FROM memories ORDER BY seq",
                "SELECT rev, memory_id, op, after FROM memory_changes ORDER BY rev",
                "SELECT seq, memory_id, position, start_char, end_char, embedding "
                "FROM memory_chunks ORDER BY seq",
                "SELECT src, dst, kind, weight FROM edges ORDER BY src, dst, kind",
                "SELECT rowid, content FROM memories_fts ORDER BY rowid",
            )
        ]

    assert rows(whole) == rows(single)
    assert [e[:3] for e in rows(whole)[3]] == [
        ("m2", "m0", "semantic"),
        ("m2", "m4", "sequence"),
        ("m4", "m1", "entity"),
    ]
    for store in stores:
        store.close()
