"""Read sessions of the PostgreSQL store (store/postgres/reads.py): a recall in few round trips,
with every answer equal to what the plain reads give."""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator
from typing import Any

import pytest

from engrammar import Config, HashEmbedder, Memory
from engrammar.store import MemoryUpdate, ReadPlan
from engrammar.store.postgres.search import PostgresSearch
from engrammar.store.postgres.store import PostgresStore

pytestmark = pytest.mark.postgres

SPEAKERS = ("Caroline", "Melanie")
SESSIONS = [
    [
        "I went to a support group yesterday and it helped a lot.",
        "That sounds wonderful, what did you talk about?",
        "We talked about adoption agencies and counseling.",
        "I have been painting sunsets by the lake lately.",
        "My kids love camping in the mountains every summer.",
    ],
    [
        "I signed up for a pottery class on Saturday.",
        "Pottery sounds relaxing, I prefer running marathons.",
        "The adoption interview is next week, I am nervous.",
        "You will do great, the counseling helped you prepare.",
        "We camped by the lake and watched the meteor shower.",
    ],
    [
        "I no longer paint, I switched to photography this spring.",
        "Photography of the mountains must be beautiful.",
        "My daughter wants to join the running club at school.",
        "The support group meets every Tuesday evening now.",
        "I finished my first marathon in four hours!",
    ],
]
QUERIES = [
    "When did Caroline go to the support group?",
    "What does Melanie like to do with her kids?",
    "Does Caroline still paint?",
    "What class did Caroline sign up for?",
    "marathon",
]


def _fill(mem: Memory) -> None:
    for n, turns in enumerate(SESSIONS, 1):
        mem.add(
            [
                {"role": "user", "name": SPEAKERS[i % 2], "content": text}
                for i, text in enumerate(turns)
            ],
            user_id="u1",
            session_id=f"s{n}",
        )


@contextlib.contextmanager
def _plain() -> Iterator[None]:
    """Every read goes to the server on its own (the session switched off)."""
    original = PostgresSearch.reading
    PostgresSearch.reading = lambda self, *args, **kw: contextlib.nullcontext()  # type: ignore[method-assign, assignment, misc]
    try:
        yield
    finally:
        PostgresSearch.reading = original  # type: ignore[method-assign]


def _same_search_and_explain(mem: Memory, query: str, limit: int, target: str) -> None:
    """Search and explain answer the same with the session's reads as with the plain ones."""
    fast_search = mem.search(query, user_id="u1", limit=limit)
    with _plain():
        slow_search = mem.search(query, user_id="u1", limit=limit)
    assert _rounded([(m.id, m.score, m.components) for m in fast_search]) == _rounded(
        [(m.id, m.score, m.components) for m in slow_search]
    )
    fast_explain = mem.explain(query, target, user_id="u1")
    with _plain():
        slow_explain = mem.explain(query, target, user_id="u1")
    assert _rounded(fast_explain) == _rounded(slow_explain)


class _Close(float):
    """A float equal to another within a relative 1e-5: learned scores decay with time, so
    two recalls a few milliseconds apart differ in the tenth digit, and vector hits found in
    process (store/postgres/local.py) agree with the server's distances to ~1e-7. Scores are
    rounded to six places in ``to_dict``, so such a difference can also show as one unit in the
    sixth place."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and math.isclose(self, other, rel_tol=1e-5, abs_tol=1.5e-6)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = float.__hash__


def _rounded(value: Any) -> Any:
    """``value`` with its floats compared within a relative 1e-5 (:class:`_Close`)."""
    if isinstance(value, float):
        return _Close(value)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items() if k != "recall_id"}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def _recall_view(result: Any) -> Any:
    return _rounded(result.to_dict())


class _Exchanges:
    """Counts the store's calls to the server (one statement or one pipelined batch each)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        original = PostgresStore._tx

        def counting(store: PostgresStore, *args: Any, **kw: Any) -> Any:
            self.n += 1
            return original(store, *args, **kw)

        monkeypatch.setattr(PostgresStore, "_tx", counting)


@pytest.mark.parametrize("with_feedback", [False, True])
def test_session_answers_equal_plain_reads(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, with_feedback: bool
) -> None:
    # Thresholds at the floor: with the test embedder every preference and passage shows.
    config = Config(store=pg_url, knowledge_min_score=0.0, preferences_min_similarity=-1.0)
    mem = Memory(config, embedder=HashEmbedder())
    try:
        _fill(mem)
        if with_feedback:
            # ... and the other things a recall reads: standing preferences, knowledge.
            mem.add(content="I prefer tea to coffee in the morning.", kind="preference",
                    user_id="u1")  # fmt: skip
            mem.add_knowledge("club", ["The running club meets on Mondays at the school."],
                              user_id="u1")  # fmt: skip
            first = mem.recall(QUERIES[0], user_id="u1", limit=3)
            mem.rate_memory(first.memories[0].id, "accepted", user_id="u1")
            mem.feedback(response=first.memories[1].content, user_id="u1")
        count = _Exchanges(monkeypatch)
        for query in QUERIES:
            for limit in (3, 10):
                count.n = 0
                fast = mem.recall(query, user_id="u1", limit=limit)
                fast_trips = count.n
                with _plain():
                    count.n = 0
                    slow = mem.recall(query, user_id="u1", limit=limit)
                    slow_trips = count.n
                assert _recall_view(fast) == _recall_view(slow), query
                if with_feedback:
                    assert fast.knowledge and fast.preferences
                assert fast_trips < slow_trips
                # keyword search, the pipelined neighbourhood, the recall record; at most two
                # reads the neighbourhood did not hold; with feedback records, one more: the
                # learned ranking's reads (records and reply signals) in one exchange
                assert fast_trips <= (6 if with_feedback else 5), (query, fast_trips)
                _same_search_and_explain(mem, query, limit, fast.memories[-1].id)
    finally:
        mem.close()


# A message longer than chunk_chars and excerpt_chars: chunk vectors, a best window, an excerpt.
LONG = " ".join(
    [
        "I kept a diary of the whole trip and here is the long version of it.",
        *(f"On day {d} we walked along the coast and talked about everything." for d in range(25)),
        "Near the end Caroline found a small pottery studio by the harbour and bought a bowl.",
        *(f"Evening {d} was quiet, with soup and old films at the cabin." for d in range(12)),
    ]
)
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"kind": "message"},
    {"role": "user"},
    {"metadata": {"topic": "trip"}},
    {"metadata": {"topic": {"in": ["trip", "hobby"]}}, "kind": ["message", "fact"]},
    {"since": 0, "until": 4_000_000_000},
    {"kind": "preference"},
]


def test_session_with_filters_and_chunk_vectors_equals_plain_reads(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filters (search, the graph, the preferences slot), min_score and a long message with
    chunk vectors (best-window scoring, excerpt): the session's answers equal the plain reads'."""
    config = Config(store=pg_url, knowledge_min_score=0.0, preferences_min_similarity=-1.0)
    mem = Memory(config, embedder=HashEmbedder())
    try:
        _fill(mem)
        long_id = mem.add(LONG, user_id="u1", metadata={"topic": "trip"})[0]
        assert long_id is not None
        assert mem.store.memory_chunks(mem.config.workspace, [long_id])
        mem.add("Caroline's hobby is pottery now.", user_id="u1", kind="fact",
                metadata={"topic": "hobby"})  # fmt: skip
        mem.add(content="I prefer short answers about trips.", kind="preference", user_id="u1",
                metadata={"topic": "trip"})  # fmt: skip
        count = _Exchanges(monkeypatch)
        queries = [*QUERIES, "pottery studio by the harbour", "what did we eat in the evenings"]
        for query in queries:
            for filters in FILTERS:
                for min_score in (0.0, 0.2):
                    count.n = 0
                    fast = mem.recall(query, user_id="u1", limit=5, filters=filters,
                                      min_score=min_score)  # fmt: skip
                    fast_trips = count.n
                    with _plain():
                        count.n = 0
                        slow = mem.recall(query, user_id="u1", limit=5, filters=filters,
                                          min_score=min_score)  # fmt: skip
                        slow_trips = count.n
                    assert _recall_view(fast) == _recall_view(slow), (query, filters)
                    assert fast_trips <= slow_trips, (query, filters)
                fast_search = mem.search(query, user_id="u1", limit=5, filters=filters)
                with _plain():
                    slow_search = mem.search(query, user_id="u1", limit=5, filters=filters)
                assert _rounded(
                    [(m.id, m.score, m.components, m.excerpt) for m in fast_search]
                ) == _rounded([(m.id, m.score, m.components, m.excerpt) for m in slow_search])
        # the long message is found by a window past its first, and shown by its excerpt
        found = mem.recall("pottery studio by the harbour", user_id="u1", limit=5,
                           filters={"metadata": {"topic": "trip"}})  # fmt: skip
        assert found.memories[0].id == long_id
        assert found.memories[0].excerpt and "harbour" in found.memories[0].excerpt
    finally:
        mem.close()


def test_dense_graph_session_reads_only_likely_rows_and_equals_plain_reads(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memories that share most of their words link to many others: a likely seed has more
    neighbours than the walk follows, so the prefetch reads some nodes' edges without their
    records and vectors. Whatever the walk then reaches is read on demand, and the recall,
    search and explain answers equal the plain reads'."""
    from engrammar.store.postgres import reads as postgres_reads

    monkeypatch.setattr(postgres_reads, "_WALK_GUESS", 1)  # fewer likely nodes: more misses
    monkeypatch.setattr(postgres_reads, "_HOP2_GUESS", 1)
    # The prefetch's guesses, not the scope's graph held in process (test_postgres_graph.py).
    monkeypatch.setattr(PostgresStore, "_graph_cache", False)
    # A small pool: most memories are no candidate, and reach the recall through the graph.
    mem = Memory(Config(store=pg_url, candidate_pool=4), embedder=HashEmbedder())
    try:
        topics = ["garden", "kitchen", "harbour", "studio"]
        for n in range(6):
            mem.add(
                [
                    {"role": "user", "name": SPEAKERS[i % 2],
                     "content": f"We talked about the {topics[(n + i) % 4]} and the "
                                f"{topics[(n + 2 * i) % 4]} plans for week {i} of trip {n}."}
                    for i in range(6)
                ],
                user_id="u1",
                session_id=f"t{n}",
            )  # fmt: skip
        store = mem.store
        assert isinstance(store, PostgresStore)
        ws = mem.config.workspace
        ids = [m.id for m in mem.list(user_id="u1", limit=100)]
        degree = {i: len(store.edges_from(ws, [i])) for i in ids}
        assert max(degree.values()) > 3  # seeds with more neighbours than the walk follows
        count = _Exchanges(monkeypatch)
        queries = ["garden plans", "What did Caroline say about the harbour?", "studio week 3"]
        edges_only = 0
        for query in queries:
            with store.reading(ReadPlan(0.0)):
                mem.recall(query, user_id="u1", limit=5)
                snap = store._snap()
                assert snap is not None and snap.prefetched
                full = [*snap.out_edges, *snap.narrow_edges]
                edges_only += sum(i not in snap.records for i in full)
            count.n = 0
            fast = mem.recall(query, user_id="u1", limit=5)
            fast_trips = count.n
            with _plain():
                count.n = 0
                slow = mem.recall(query, user_id="u1", limit=5)
                slow_trips = count.n
            assert _recall_view(fast) == _recall_view(slow), query
            assert fast_trips < slow_trips, query
            _same_search_and_explain(mem, query, 5, fast.memories[-1].id)
        assert edges_only  # some nodes came with their edges only: the misses were exercised
    finally:
        mem.close()


def test_feedback_reads_the_recall_with_its_memories_in_one_exchange(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In feedback's read session the recall row comes with the records and vectors of the
    memories it names (shown, on its paths): no exchange of its own for their vectors, and the
    feedback's outcome equals the plain reads'."""
    # Two workspaces filled alike: feedback changes the graph, so the plain reads get a store
    # in the state the session's reads saw. Ids differ between them; contents stand in.
    mems = [
        Memory(Config(store=pg_url, workspace=w), embedder=HashEmbedder())
        for w in ("fast", "plain")
    ]
    try:
        names: list[str] = []
        original = PostgresStore._tx

        def naming(store: PostgresStore, what: str, *args: Any, **kw: Any) -> Any:
            names.append(what)
            return original(store, what, *args, **kw)

        outcomes = []
        counts = []
        for mem, plain in zip(mems, (False, True), strict=True):
            _fill(mem)
            first = mem.recall(QUERIES[0], user_id="u1", limit=5)
            assert first.paths  # the graph named memories beyond those shown
            reply = f"{first.memories[0].content} And {first.memories[1].content}"
            contents = {m.id: m.content for m in mem.list(user_id="u1", limit=100)}
            names.clear()
            with monkeypatch.context() as patch:
                patch.setattr(PostgresStore, "_tx", naming)
                with _plain() if plain else contextlib.nullcontext():
                    outcome = mem.feedback(response=reply, user_id="u1", recall_id=first.recall_id)
            counts.append(len(names))
            if not plain:
                assert names[0] == "reading the recall"
                assert names[1] not in ("get", "reading vectors"), names
            outcomes.append(_rounded(_by_content(outcome, contents)))
        assert outcomes[0] == outcomes[1]
        assert counts[0] < counts[1], counts
    finally:
        for mem in mems:
            mem.close()


def _by_content(value: Any, contents: dict[str, str]) -> Any:
    """``value`` with every memory id replaced by that memory's content, and the recall's own
    id left out."""
    if isinstance(value, str):
        return contents.get(value, value)
    if isinstance(value, dict):
        return {k: _by_content(v, contents) for k, v in value.items() if k != "recall_id"}
    if isinstance(value, list | tuple):
        return [_by_content(v, contents) for v in value]
    return value


def test_session_is_per_thread_and_ends_with_the_block(pg_url: str) -> None:
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        _fill(mem)
        store = mem.store
        assert isinstance(store, PostgresStore)
        ids = [m.id for m in mem.list(user_id="u1")][:3]
        with store.reading():
            before = store.get_memories(mem.config.workspace, ids)
            assert store._snap() is not None
        assert store._snap() is None
        mem.update(ids[0], content="An entirely new sentence about gardening.")
        after = store.get_memories(mem.config.workspace, ids)
        assert after[ids[0]].content != before[ids[0]].content  # nothing cached across calls
    finally:
        mem.close()


def _term_counts(url: str) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """keyword_terms as kept by the trigger, and recounted from the active rows."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        kept = {
            (r[0], r[1]): int(r[2])
            for r in conn.execute("SELECT user_key, term, df FROM keyword_terms WHERE df > 0")
        }
        counted = {
            (r[0], r[1]): int(r[2])
            for r in conn.execute(
                "SELECT coalesce(m.user_id, ''), u.lexeme, count(*) FROM memories m "
                "CROSS JOIN LATERAL unnest(m.terms) AS u WHERE m.status = 'active' "
                "GROUP BY 1, 2"
            )
        }
    return kept, counted


def test_keyword_rare_terms_first_equals_the_exact_ranking(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Document frequencies kept by the trigger stay exact through add, update, status change
    and forget; the rare-first search (one user's partition) ranks as the exact query does,
    whether it prunes the common terms or falls back."""
    from engrammar.engine.filters import parse_filters
    from engrammar.models import Scope
    from engrammar.store.postgres import keyword as postgres_keyword

    # A small budget (20 x k rows): at k = 1 or 2 "melani" (in every memory) is a common term.
    monkeypatch.setattr(postgres_keyword, "RARE_BUDGET", 0)
    mem = Memory(Config(store=pg_url), embedder=HashEmbedder())
    try:
        ids = mem.add(
            [{"role": "user", "name": "Melanie", "content": f"I like painting, picture {i}.",
              "metadata": {"n": i % 3}} for i in range(50)]
            + [{"role": "user", "name": "Melanie", "content": f"My hobby is pottery, bowl {i}."}
               for i in range(10)],
            user_id="u1",
        )  # fmt: skip
        mem.add("Caroline has no hobby but running.", user_id="u2")
        mem.update(ids[0], content="I gave up painting for a pottery hobby.")
        mem.forget(ids[1])
        store = mem.store
        assert isinstance(store, PostgresStore)
        store.update_memory(
            mem.config.workspace, ids[2], MemoryUpdate(status="superseded", reason="test")
        )
        kept, counted = _term_counts(pg_url)
        assert kept == counted
        ws = mem.config.workspace
        user, everyone = Scope(ws, "u1"), Scope(ws)  # one partition vs the exact query
        narrow = parse_filters({"metadata": {"n": {"in": [0, None]}}})
        for query in ("Melanie hobby", "pottery painting", "hobby", "Melanie", "nothing here"):
            for k, where in itertools.product((1, 2, 5, 100), (None, narrow)):
                fast = store.keyword_search(user, query, k, where)
                exact = store.keyword_search(everyone, query, 200, where)
                exact_user = [
                    h for h in exact if store.get_memories(ws, [h[0]])[h[0]].user_id == "u1"
                ]
                assert [h[0] for h in fast] == [h[0] for h in exact_user[:k]] or [
                    round(h[1], 9) for h in fast
                ] == [round(h[1], 9) for h in exact_user[:k]], (query, k, where)
    finally:
        mem.close()


def test_narrow_edge_lists_and_head_guess_equal_plain_reads(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prefetch reads every out-edge only of the nodes a walk is likely to leave (the
    guessed seeds and where their strongest edges lead); the other full nodes come with their
    sequence / supersedes / contradicts edges, and the conversation neighbours are read ahead
    for the guessed head of the fused candidates only. Guesses cut to the bone (one seed, no
    margin) make misses: each is read on demand and every answer equals the plain reads'."""
    from engrammar.engine.ranking import session
    from engrammar.store.postgres import reads as postgres_reads

    monkeypatch.setattr(postgres_reads, "_SEED_GUESS", 1)
    monkeypatch.setattr(postgres_reads, "HEAD_MARGIN", -8)  # head guess: refine depth - 8
    monkeypatch.setattr(PostgresStore, "_graph_cache", False)  # the prefetch's guesses
    mem = Memory(Config(store=pg_url, candidate_pool=12), embedder=HashEmbedder())
    try:
        _fill(mem)
        # a contradiction between two memories (a tensions read of the results' edges)
        mem.add("I love painting.", user_id="u1", session_id="s9")
        mem.add("I hate painting.", user_id="u1", session_id="s9")
        store = mem.store
        assert isinstance(store, PostgresStore)
        ws = mem.config.workspace
        narrow_seen = False
        for query in [*QUERIES, "painting"]:
            fast = mem.recall(query, user_id="u1", limit=5)
            with _plain():
                slow = mem.recall(query, user_id="u1", limit=5)
            assert _recall_view(fast) == _recall_view(slow), query
            _same_search_and_explain(mem, query, 5, fast.memories[-1].id)
            # a session as recall opens it: some full nodes hold their narrow kinds only
            with session(mem._engine, query):
                mem.recall(query, user_id="u1", limit=5)
                snap = store._snap()
                assert snap is not None and snap.plan.refine is not None
                narrow = [i for i in snap.narrow_edges if i not in snap.out_edges]
                if narrow:
                    narrow_seen = True
                    some = narrow[:3]
                    got_seq = store.edges_from(ws, some, kind="sequence")
                    got_all = store.edges_from(ws, some)  # read on demand
            if narrow:
                with _plain():
                    assert got_seq == store.edges_from(ws, some, kind="sequence")
                    assert got_all == store.edges_from(ws, some)
        assert narrow_seen
    finally:
        mem.close()
