"""An add's write begun ahead on PostgreSQL (``PostgresIngest.add_ahead``): its rows are
inserted while the edges are built, in the transaction that commits them; the result equals
the write made at the end, and an add that fails or meets a duplicate on the way leaves
nothing of that transaction."""

from __future__ import annotations

import itertools
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.engine import ingest
from engrammar.errors import StoreError
from engrammar.store.postgres.ingest import Renames
from engrammar.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

TURNS = [
    "I went to a support group yesterday and it helped a lot.",
    "That sounds wonderful, what did you talk about at the group?",
    "We talked about adoption agencies and counseling.",
    "I have been painting sunsets by the lake lately, the lake is calm.",
    "My kids love camping in the mountains every summer.",
    "The adoption interview is next week, I am nervous.",
    # Contradicting an earlier message: a ``supersedes`` edge written with the rows.
    "My kids hate camping in the mountains every summer.",
    "A long message about the lake. " * 12,  # chunk vectors
]


def _count(store: PostgresStore, sql: str, args: tuple[Any, ...] = ()) -> int:
    def run(conn: Any) -> int:
        return int(conn.execute(sql, args).fetchone()[0])

    return store._tx("count", run, transaction=False)


def _open_early(store: PostgresStore) -> int:
    """Other client sessions of this database with a write in an open transaction (a write
    begun ahead: in pipeline mode the backend shows as active until the Sync). Autovacuum's
    workers are left out: an ANALYZE of this database holds a transaction id of its own while
    it writes its statistics, whenever the server's timing runs it."""
    return _count(
        store,
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL "
        "AND backend_type = 'client backend'",
    )


def _state(store: PostgresStore, user: str) -> tuple[Any, ...]:
    """What one user's adds left, ids replaced by their position in TURNS."""

    def run(conn: Any) -> tuple[Any, ...]:
        rows = conn.execute(
            "SELECT id, content, valid_until IS NOT NULL, superseded_by FROM memories "
            "WHERE user_id = %s ORDER BY seq",
            (user,),
        ).fetchall()
        pos = {r[0]: i for i, r in enumerate(rows)}
        edges = sorted(
            (pos[s], pos[d], k, round(w, 9))
            for s, d, k, w in conn.execute(
                "SELECT src, dst, kind, weight FROM edges WHERE src = ANY(%s)", (list(pos),)
            )
        )
        history = sorted(
            (pos[m], op, after if op == "add" else None)
            for m, op, after in conn.execute(
                "SELECT memory_id, op, after FROM memory_changes WHERE memory_id = ANY(%s)",
                (list(pos),),
            )
        )
        chunks = conn.execute(
            "SELECT count(*) FROM memory_chunks WHERE memory_id = ANY(%s)", (list(pos),)
        ).fetchone()[0]
        stats = conn.execute(
            "SELECT n, total_len FROM keyword_stats WHERE user_key = %s", (user,)
        ).fetchone()
        superseded = [(r[1], r[2], pos.get(r[3])) for r in rows]
        return superseded, edges, history, chunks, stats

    return store._tx("state", run, transaction=False)


def _holds_a_write(store: PostgresStore, pid: int) -> bool:
    """Whether the server session ``pid`` is in a transaction that has written (an xid)."""
    return bool(
        _count(
            store,
            "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND backend_xid IS NOT NULL",
            (pid,),
        )
    )


def _until_no_write_is_open(store: PostgresStore) -> int:
    """``_open_early`` once it is 0, or after a minute: a transaction the server has not yet
    finished on a loaded machine ends on its own, one left open does not."""
    deadline = time.monotonic() + 60
    while (open_now := _open_early(store)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return open_now


def test_write_begun_ahead_equals_the_write_at_the_end(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same conversation added with the write begun ahead and without: the same rows,
    graph (semantic, sequence, term, contradiction and ``supersedes`` edges), history, chunk
    vectors and keyword statistics; the write ahead is open while the edges are built."""
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    # The server sessions each add's rows were queued on, in order.
    queued: list[int] = []
    queue_new = PostgresStore._queue_new

    def queueing(self: PostgresStore, conn: Any, *a: Any, **k: Any) -> Any:
        queued.append(conn.info.backend_pid)
        return queue_new(self, conn, *a, **k)

    # Per add: whether its rows were queued before ``add_memories`` on a session that then
    # held an open write (judged on that session alone: whatever else the server is still
    # finishing does not count).
    seen: list[bool] = []
    original = PostgresStore.add_memories

    def watching(self: PostgresStore, *a: Any, **k: Any) -> Any:
        begun = list(queued)
        queued.clear()
        open_ahead = False
        if begun:
            # The rows were sent, not awaited: the server gets to them (an xid) on its own,
            # as soon as it gets the processor (a loaded machine may take seconds).
            deadline = time.monotonic() + 60
            while not (open_ahead := _holds_a_write(self, begun[-1])):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
        seen.append(open_ahead)
        try:
            return original(self, *a, **k)
        finally:
            # What add_memories queues itself (the write made at the end) was not begun
            # ahead: the next add must not wait for that committed session's write.
            queued.clear()

    monkeypatch.setattr(PostgresStore, "_queue_new", queueing)
    monkeypatch.setattr(PostgresStore, "add_memories", watching)
    try:
        for text in TURNS:
            mem.add(text, user_id="ahead", session_id="s1")
        assert seen == [True] * len(TURNS)  # begun before add_memories was called
        seen.clear()
        queued.clear()
        monkeypatch.setattr(PostgresStore, "_write_ahead", False)
        for text in TURNS:
            mem.add(text, user_id="end", session_id="s1")
        assert seen == [False] * len(TURNS)
        ahead = _state(store, "ahead")
        assert ahead == _state(store, "end")
        assert any(k == "supersedes" for _, _, k, _ in ahead[1]) and ahead[3] > 0
        assert _until_no_write_is_open(store) == 0
    finally:
        mem.close()


def test_write_begun_ahead_meets_a_duplicate(pg_url: str) -> None:
    """A message the scope holds already: the INSERT sent ahead fails on the unique key, that
    transaction rolls back, and the add collapses onto the stored memory as usual."""
    mem = Memory(Config(store=pg_url, pool_size=1), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    try:
        first = mem.add(TURNS[:3], user_id="u1", session_id="s1")
        before = _state(store, "u1")
        again = mem.add(TURNS[1], user_id="u1", session_id="s1")
        assert again == [first[1]]
        assert _state(store, "u1") == before
        # A batch with one new message and one stored: the new one lands, once.
        out = mem.add([TURNS[3], TURNS[2]], user_id="u1", session_id="s1")
        assert out[1] == first[2] and out[0] not in first
        assert _count(store, "SELECT count(*) FROM memories WHERE user_id = 'u1'") == 4
        assert _count(store, "SELECT count(*) FROM memory_changes WHERE memory_id = %s", (out[0],))
        assert _until_no_write_is_open(store) == 0
    finally:
        mem.close()


def _watch_writes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The writes an add makes besides the one begun ahead: per ``_adder`` call, whether it
    took every row as new (``fresh``) or collapsed duplicates on the server."""
    calls: list[bool] = []
    original = PostgresStore._adder

    def adder(self: PostgresStore, rows: Any, edges: Any, fresh: bool = False) -> Any:
        calls.append(fresh)
        return original(self, rows, edges, fresh)

    monkeypatch.setattr(PostgresStore, "_adder", adder)
    return calls


def test_batch_repeating_a_message_is_written_once_in_one_go(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that says the same thing twice ("Take care!" at the end of two sessions): the
    repeat takes its first occurrence's id without a failed write (neither the write begun
    ahead nor the one-round-trip write falls back to the collapsing write), and leaves what
    that collapsing write leaves."""
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    batch = [TURNS[0], TURNS[4], TURNS[0], TURNS[6], TURNS[4], TURNS[0]]
    calls = _watch_writes(monkeypatch)
    try:
        ids = mem.add(batch, user_id="ahead", session_id="s1")
        assert ids[2] == ids[5] == ids[0] and ids[4] == ids[1] and len(set(ids)) == 3
        assert calls == []  # the write begun ahead took the batch
        monkeypatch.setattr(PostgresStore, "_write_ahead", False)
        again = mem.add(batch, user_id="one trip", session_id="s1")
        assert again[2] == again[0] and again[4] == again[1] and len(set(again)) == 3
        assert calls == [True]  # and no collapsing write after it
        # The collapsing write, as a batch without the early check takes it.
        monkeypatch.setattr(
            "engrammar.store.postgres.store.collapse_repeats", lambda rows: (list(rows), Renames())
        )
        monkeypatch.setattr(PostgresStore, "_early_write", _no_early_write)
        mem.add(batch, user_id="collapsing", session_id="s1")
        assert calls[1:] == [True, False]
        expected = _state(store, "collapsing")
        assert _state(store, "ahead") == expected
        assert _state(store, "one trip") == expected
        assert len(expected[0]) == 3 and any(k == "supersedes" for _, _, k, _ in expected[1])
        assert _until_no_write_is_open(store) == 0
    finally:
        mem.close()


def test_searches_sent_ahead_with_the_write_beside_them(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of at least ``_search_ahead_min`` messages: its searches go on a worker while
    the batch's own pairs are judged, and its write begins beside them; what it leaves
    equals searching when asked and writing at the end, also with one pooled connection
    (the write then waits for the search's)."""
    rounds = ["violin", "harbour", "pottery", "marathon", "lantern"]
    batch = [f"{TURNS[i % len(TURNS)]} ({rounds[i // len(TURNS)]})" for i in range(40)]
    # Memories as near as each other are ranked by id (and edges past a memory's cap left
    # out by it): ids counted per user, so that every way of adding breaks ties alike.
    count = itertools.count()
    ids = SimpleNamespace(uuid4=lambda: SimpleNamespace(hex=f"{user}-{next(count):08d}"))
    monkeypatch.setattr(ingest, "uuid", ids)
    sent: list[bool] = []
    original = PostgresStore.search_ahead

    def watching(self: PostgresStore, *a: Any, **k: Any) -> None:
        original(self, *a, **k)
        snap = self._local.add
        sent.append(snap.searching is not None and snap.write is not None)

    monkeypatch.setattr(PostgresStore, "search_ahead", watching)
    states = []
    for user, pool, ahead in (("ahead", 4, True), ("single", 1, True), ("asked", 4, False)):
        mem = Memory(Config(store=pg_url, pool_size=pool), embedder=HashEmbedder())
        store = mem.store
        assert isinstance(store, PostgresStore)
        try:
            if not ahead:
                monkeypatch.setattr(PostgresStore, "_search_ahead_min", 10**9)
                monkeypatch.setattr(PostgresStore, "_write_ahead", False)
            sent.clear()
            count = itertools.count()
            mem.add(TURNS[:5], user_id=user, session_id="s1")  # below the minimum
            mem.add(batch, user_id=user, session_id="s1")
            assert sent == [False, ahead]
            assert _until_no_write_is_open(store) == 0
            states.append(_state(store, user))
        finally:
            mem.close()
    assert states[0] == states[1] == states[2]
    assert any(k == "supersedes" for _, _, k, _ in states[0][1])


def test_batch_repeating_stored_messages_is_written_in_one_go(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages the scope holds already ("ok", "thanks"): the add's first exchange reads which
    of its rows' dedup keys are stored, so the write begun ahead takes those as duplicates (no
    failed write, no rerun) and leaves what the collapsing write leaves. A stored duplicate
    deleted before the write commits makes it roll back, and the add write as usual."""
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    calls = _watch_writes(monkeypatch)
    batch = [TURNS[5], TURNS[0], TURNS[6], TURNS[2]]
    try:
        for user in ("ahead", "collapsing"):
            first = mem.add(TURNS[:3], user_id=user, session_id="s1")
            calls.clear()
            if user == "collapsing":
                monkeypatch.setattr(PostgresStore, "_early_write", _no_early_write)
            out = mem.add(batch, user_id=user, session_id="s1")
            assert out[1] == first[0] and out[3] == first[2]
            assert out[0] not in first and out[2] not in first
            assert calls == ([] if user == "ahead" else [True, False])
        assert _state(store, "ahead") == _state(store, "collapsing")
        monkeypatch.undo()
        # Deleted between the first exchange and the write's commit: written anew.
        calls = _watch_writes(monkeypatch)
        first = mem.add(TURNS[:2], user_id="gone", session_id="s1")
        begin = PostgresStore._begin_write

        def forgetting(self: PostgresStore, snap: Any) -> None:
            assert snap.stored == {r.dedup_key: first[1] for r in snap.rows[1:]}
            mem.forget(first[1])
            begin(self, snap)

        monkeypatch.setattr(PostgresStore, "_begin_write", forgetting)
        calls.clear()
        out = mem.add([TURNS[4], TURNS[1]], user_id="gone", session_id="s1")
        assert out[1] != first[1] and mem.get(out[1]).content == TURNS[1]
        assert calls == [True]
        assert _until_no_write_is_open(store) == 0
    finally:
        mem.close()


def _no_early_write(self: PostgresStore, *args: Any) -> Any:
    raise RuntimeError("no write ahead")
    yield  # a generator, as the method it stands for


def test_add_failing_after_its_write_began_leaves_nothing(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine fails between the searches and the write: the rows inserted ahead roll
    back (no memory, history, chunk vector or keyword statistics left), and the pooled
    connection serves the next add."""
    mem = Memory(Config(store=pg_url, pool_size=1), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    try:
        mem.add(TURNS[:2], user_id="u1", session_id="s1")
        before = _state(store, "u1")
        began: list[int] = []

        def failing(*a: Any, **k: Any) -> Any:
            began.append(1 if store._local.add.write is not None else 0)
            raise RuntimeError("the tension rules broke")

        with monkeypatch.context() as patch:
            patch.setattr(ingest, "_stored_pairs", failing)
            with pytest.raises(RuntimeError, match="tension rules"):
                mem.add(TURNS[7], user_id="u1", session_id="s1")
        assert began == [1]
        assert _state(store, "u1") == before
        assert _until_no_write_is_open(store) == 0
        assert len(mem.add(TURNS[2], user_id="u1", session_id="s1")) == 1
        assert _count(store, "SELECT count(*) FROM memories WHERE user_id = 'u1'") == 3
    finally:
        mem.close()


@pytest.mark.parametrize("pool", [1, 4])
def test_add_failing_while_its_searches_travel_leaves_nothing(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, pool: int
) -> None:
    """A batch searched ahead whose tension rules fail on its own pairs, while the searches
    are out and the write has begun beside them: the searches end, the rows inserted roll
    back, and the pooled connections serve the next add."""
    mem = Memory(Config(store=pg_url, pool_size=pool), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    batch = [f"{TURNS[i % len(TURNS)]} (round {i // len(TURNS)})" for i in range(20)]
    user = f"fail{pool}"
    try:
        mem.add(TURNS[:2], user_id=user, session_id="s1")
        before = _state(store, user)
        began: list[bool] = []

        def failing(*a: Any, **k: Any) -> Any:
            snap = store._local.add
            began.append(snap.searching is not None and snap.write is not None)
            raise RuntimeError("the tension rules broke")

        with monkeypatch.context() as patch:
            patch.setattr(ingest, "_batch_pairs", failing)
            with pytest.raises(RuntimeError, match="tension rules"):
                mem.add(batch, user_id=user, session_id="s1")
        assert began == [True]
        assert _state(store, user) == before
        assert _until_no_write_is_open(store) == 0
        assert len(mem.add(batch, user_id=user, session_id="s1")) == 20
        assert _count(store, "SELECT count(*) FROM memories WHERE user_id = %s", (user,)) == 22
    finally:
        mem.close()


def test_write_begun_ahead_that_fails_at_commit_writes_once(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transaction begun ahead fails when its edges are sent (a statement the server
    refuses): it rolls back and the write runs again as usual, landing once."""
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    calls: list[int] = []
    original = PostgresStore._write_edges

    def refusing(conn: Any, *a: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            conn.execute("SELECT 1 / 0")
        original(conn, *a)

    monkeypatch.setattr(PostgresStore, "_write_edges", staticmethod(refusing))
    monkeypatch.setattr(PostgresStore, "_insert_edges", staticmethod(refusing))
    try:
        ids = mem.add(TURNS[:3], user_id="u1", session_id="s1")
        assert len(calls) == 2  # the write ahead refused, the usual write
        assert _count(store, "SELECT count(*) FROM memories WHERE user_id = 'u1'") == 3
        assert _count(store, "SELECT count(*) FROM memory_changes WHERE op = 'add'") == 3
        assert store.edges_from("default", ids)
        assert _until_no_write_is_open(store) == 0
    finally:
        mem.close()


def test_concurrent_adds_with_writes_begun_ahead(pg_url: str) -> None:
    """Four threads adding to one user at once (each holding its keyword statistics' row
    while it builds its edges): every message lands once, the statistics stay exact."""
    mem = Memory(Config(store=pg_url, pool_size=4), embedder=HashEmbedder())
    store = mem.store
    assert isinstance(store, PostgresStore)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i, text in enumerate(TURNS):
                mem.add(f"{text} ({t}.{i})", user_id="u1", session_id=f"s{t}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        n = 4 * len(TURNS)
        assert _count(store, "SELECT count(*) FROM memories WHERE user_id = 'u1'") == n
        assert _count(store, "SELECT n FROM keyword_stats WHERE user_key = 'u1'") == n
        assert _until_no_write_is_open(store) == 0
    finally:
        mem.close()


def test_store_error_names_the_add(pg_url: str) -> None:
    """A closed store refuses an add before anything is begun."""
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    mem.store.close()
    with pytest.raises(StoreError, match="closed"):
        mem.add(TURNS[0], user_id="u1", session_id="s1")
