"""The memory graph: edges at add time and paths at recall time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.models import Edge
from engrammar.recall.graph import (
    _SENTENCE_START,
    EdgeProposal,
    Walk,
    _starts_sentence,
    batch_semantic_edges,
    batch_similarities,
    best_support,
    cap_edges,
    entities,
    expand,
    nearest,
    salient_term_edges,
    sequence_edges,
    stored_semantic_edges,
)
from engrammar.recall.text import terms
from engrammar.store import EdgeAdjustment, EdgeBounds, EdgeDelta


def _edges(mem: Memory, ids: list[str]) -> list[Edge]:
    return mem.store.edges_from("default", ids)


# -- pure edge selection ---------------------------------------------------------------------
def semantic_edges(
    ids: list[str],
    vectors: np.ndarray,
    hits: list[list[tuple[str, float]]],
    threshold: float,
    lo: float,
    hi: float,
    per_memory: int | None = None,
) -> list[EdgeProposal]:
    """A batch's semantic edges, to stored memories and among itself, as ``add`` proposes them."""
    out = stored_semantic_edges(ids, hits, threshold, lo, hi)
    for start, block in batch_similarities(vectors):
        out += batch_semantic_edges(ids, start, block, threshold, lo, hi, per_memory)
    return out


def test_semantic_edges_both_ways_above_threshold() -> None:
    vecs = np.array([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32)
    out = semantic_edges(["a", "b", "c"], vecs, [[("old", 0.9)], [("old", 0.3)], []], 0.7, 0.01, 1)
    pairs = {(p.src, p.dst) for p in out}
    assert pairs == {("a", "old"), ("old", "a"), ("a", "b"), ("b", "a")}
    assert all(0.01 <= p.weight <= 1 for p in out)


def test_semantic_edges_per_memory_keep_the_same_capped_edges() -> None:
    # A batch of near-duplicates (three tight clusters): proposing each memory's nearest only
    # must leave cap_edges with exactly the edges that proposing every pair gives.
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((3, 16))
    vecs = np.concatenate([c + 0.15 * rng.standard_normal((20, 16)) for c in centres])
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    ids = [f"n{i}" for i in range(len(vecs))]
    hits = [[("old", 0.6)] for _ in ids]
    every = semantic_edges(ids, vecs, hits, 0.5, 0.01, 1.0)
    nearest = semantic_edges(ids, vecs, hits, 0.5, 0.01, 1.0, per_memory=5)
    assert len(nearest) < len(every)
    kept = cap_edges(nearest, set(ids), {"old": 0}, 5)
    assert {(p.src, p.dst, p.weight) for p in kept} == {
        (p.src, p.dst, p.weight) for p in cap_edges(every, set(ids), {"old": 0}, 5)
    }


@pytest.mark.parametrize("n", [5, 9, 10, 300])
def test_nearest_partitions_each_row_as_alone(n: int) -> None:
    # The batch's neighbours are found for a whole block at once; each row must come out as
    # argpartition of that row alone gives it (the same columns, in the same order), ties
    # (repeated vectors) included, so the edges and the pairs judged stay the same.
    rng = np.random.default_rng(n)
    vecs = rng.standard_normal((n, 8)).astype(np.float32)
    vecs[rng.integers(0, n, n // 2)] = vecs[0]
    block = vecs @ vecs.T
    near, values = nearest(block, 9)
    for r, row in enumerate(block):
        alone = np.argpartition(-row, 8)[:9] if n > 9 else np.arange(n)
        assert near[r].tolist() == alone.tolist()
        assert values[r].tolist() == row[alone].tolist()


def test_salient_term_edges_with_the_terms_given_are_the_same() -> None:
    texts = [
        "Caroline went to the LGBTQ support group in Boston.",
        "Melanie painted a sunrise by the lake.",
        "Caroline said the support group in Boston helped.",
        "The lake was calm; Melanie painted again.",
    ]
    ids = [f"n{i}" for i in range(len(texts))]
    postings = {"boston": (2, ["s1", "s2"]), "lake": (1, ["s3"]), "paint": (40, ["s4"])}
    args = (ids, texts, 100, postings, 0.05, 0.01, 1.0, 2)
    given = salient_term_edges(*args, [terms(t) for t in texts])
    assert given == salient_term_edges(*args)
    assert {(p.src, p.dst) for p in given} >= {("n0", "n2"), ("n1", "n3"), ("n0", "s1")}


def test_sequence_edges_chain_the_conversation() -> None:
    out = sequence_edges(["b", "c"], "a", 0.5)
    assert {(p.src, p.dst) for p in out} == {("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")}
    assert sequence_edges(["x"], None, 0.5) == []


def test_entities_skip_sentence_starts() -> None:
    assert entities("Yesterday I met Caroline at the Louvre. Then we left.") == {"carolin", "louvr"}


def test_rare_terms_link_and_common_terms_do_not() -> None:
    # 100 stored memories: "coffee" is in 60 of them (a hub), "zanzibar" in one.
    postings = {"coffe": (60, ["c1", "c2"]), "zanzibar": (1, ["z1"])}
    out = salient_term_edges(
        ["new"], ["coffee in Zanzibar"], 100, postings, 0.02, 0.01, 1.0, per_memory=8
    )
    assert {(p.src, p.dst) for p in out} == {("new", "z1"), ("z1", "new")}


def test_cap_keeps_the_strongest_and_respects_existing_degree() -> None:
    props = [EdgeProposal("n", f"d{i}", "semantic", i / 10) for i in range(10)]
    props += [EdgeProposal("n", "s", "sequence", 0.05), EdgeProposal("old", "n", "semantic", 0.9)]
    kept = cap_edges(props, {"n"}, {"old": 3}, cap=3)
    assert [(p.dst, p.kind) for p in kept if p.src == "n"] == [
        ("s", "sequence"),
        ("d9", "semantic"),
        ("d8", "semantic"),
    ]
    assert not [p for p in kept if p.src == "old"]  # already at its cap
    # ... but a stored memory always links on to the next message of its conversation.
    props.append(EdgeProposal("old", "n", "sequence", 0.5))
    kept = cap_edges(props, {"n"}, {"old": 3}, cap=3)
    assert [(p.dst, p.kind) for p in kept if p.src == "old"] == [("n", "sequence")]


def test_expand_follows_the_strongest_edges_without_cycles() -> None:
    edges = [
        Edge("s", "a", "semantic", 0.9, 0),
        Edge("s", "b", "semantic", 0.5, 0),
        Edge("s", "c", "entity", 0.3, 0),
        Edge("s", "a", "sequence", 0.4, 0),
        Edge("a", "s", "semantic", 0.9, 0),
    ]
    step = expand([Walk(["s"], score=1.0)], edges, fanout=2)
    assert [(w.nodes, w.kinds) for w in step] == [
        (["s", "a"], ["semantic"]),
        (["s", "b"], ["semantic"]),
    ]
    assert expand(step[:1], edges, fanout=2) == []  # a -> s would revisit the seed
    support = best_support(step)
    assert support["a"].score == pytest.approx(0.9)


# -- edges at add time -----------------------------------------------------------------------
def test_add_links_a_conversation_in_one_transaction(mem: Memory) -> None:
    first = mem.add(["alpha beta gamma", "omega psi chi"], user_id="u", session_id="s")
    second = mem.add(["rho sigma tau"], user_id="u", session_id="s")
    kinds = {(e.src, e.dst): e.kind for e in _edges(mem, first + second) if e.kind == "sequence"}
    assert kinds[(first[0], first[1])] == "sequence"
    assert kinds[(first[1], first[0])] == "sequence"
    assert kinds[(first[1], second[0])] == "sequence"  # to the previous message of the session
    cfg = mem.config
    assert all(cfg.edge_weight_min <= e.weight <= cfg.edge_weight_max for e in _edges(mem, first))


def test_no_edges_across_users_or_sessions_of_other_owners(mem: Memory) -> None:
    a = mem.add(["alpha beta gamma delta"], user_id="a", session_id="s")
    b = mem.add(["alpha beta gamma delta epsilon"], user_id="b", session_id="s")
    assert all(e.dst not in b for e in _edges(mem, a))
    assert all(e.dst not in a for e in _edges(mem, b))


def test_similar_memories_get_semantic_edges(mem: Memory) -> None:
    (x,) = mem.add("the quarterly budget review meeting", user_id="u")
    (y,) = mem.add("the quarterly budget review meeting notes", user_id="u")
    (z,) = mem.add("purple elephants dance", user_id="u")
    kinds = {(e.src, e.dst, e.kind) for e in _edges(mem, [x, y, z])}
    assert (y, x, "semantic") in kinds and (x, y, "semantic") in kinds
    assert not any(z in (s, d) for s, d, k in kinds if k == "semantic")


def test_shared_names_link_and_stop_words_never_do(mem: Memory) -> None:
    # Two messages sharing only function words and one sharing a rare name.
    (a,) = mem.add("Then I was there with them because it was what we had.", user_id="u")
    (b,) = mem.add("It was what they had, and then we were there too.", user_id="u")
    fillers = mem.add([f"filler number {i} about topic{i}" for i in range(40)], user_id="u")
    (c,) = mem.add("Dinner with Okonkwo tomorrow.", user_id="u")
    (d,) = mem.add("Okonkwo sent photos.", user_id="u")
    entity = {(e.src, e.dst) for e in _edges(mem, [a, b, c, d, *fillers]) if e.kind == "entity"}
    assert (d, c) in entity and (c, d) in entity
    assert (a, b) not in entity and (b, a) not in entity


def test_a_word_in_many_memories_is_no_hub(mem: Memory) -> None:
    ids = []
    for i in range(30):
        ids += mem.add(f"coffee note{i} word{i}", user_id="u")
    (last,) = mem.add("coffee tomorrow", user_id="u")
    assert not [e for e in _edges(mem, [last]) if e.kind == "entity"]


def test_edges_per_memory_are_capped(store_path: Path) -> None:
    config = Config(path=str(store_path), graph_max_edges_per_memory=4)
    with Memory(config, embedder=HashEmbedder()) as mem:
        ids = []
        for i in range(15):
            ids += mem.add(f"weekly team sync about the roadmap item {i}", user_id="u")
        counts = mem.store.edge_counts("default", ids)
        assert max(counts.values()) <= 4
        assert sum(counts.values()) > 0


def test_forget_removes_the_edges(mem: Memory) -> None:
    ids = mem.add(["alpha beta gamma", "alpha beta delta", "alpha beta epsilon"], user_id="u")
    assert any(e.dst == ids[1] for e in _edges(mem, ids))
    mem.forget(ids[1], user_id="u")
    assert not [e for e in _edges(mem, ids) if ids[1] in (e.src, e.dst)]
    assert not mem.store.edges_to("default", [ids[1]])


def test_graph_settings_are_validated(store_path: Path) -> None:
    with pytest.raises(ValidationError) as err:
        Config(path=str(store_path), ranking={"graph_depth": 9})
    assert err.value.field == "ranking.graph_depth"
    with pytest.raises(ValidationError) as err:
        Config(path=str(store_path), graph_semantic_threshold=2.0)
    assert err.value.field == "graph_semantic_threshold"
    with pytest.raises(ValidationError) as err:
        Config(path=str(store_path), ranking={"graph_fanout": 0})
    assert err.value.field == "ranking.graph_fanout"
    with pytest.raises(ValidationError) as err:
        Config(path=str(store_path), graph_term_max_df=0)
    assert err.value.field == "graph_term_max_df"


# -- paths at recall time --------------------------------------------------------------------
def test_recall_returns_paths_and_graph_components(mem: Memory) -> None:
    ids = mem.add(
        ["alpha beta gamma", "zeta eta theta", "alpha beta delta"], user_id="u", session_id="s"
    )
    result = mem.recall("alpha beta", user_id="u")
    assert result.paths
    for path in result.paths:
        assert len(path.nodes) == len(path.weights) + 1 == len(path.kinds) + 1
        assert set(path.nodes) <= set(ids)
        assert path.score > 0
    for item in result.memories:
        assert {"vector", "keyword", "relevance", "graph", "final", "rank"} <= set(item.components)
    record = mem.store.get_recall(mem._scope("u", None, None, None), result.recall_id)
    assert record is not None and len(record.paths) == len(result.paths)


def test_connected_memories_enter_through_paths(store_path: Path) -> None:
    # A candidate pool of one: only the graph can bring up the second memory.
    config = Config(path=str(store_path), candidate_pool=1)
    with Memory(config, embedder=HashEmbedder()) as mem:
        ids = mem.add(["alpha beta gamma", "zeta eta theta"], user_id="u", session_id="s")
        result = mem.recall("alpha beta gamma", user_id="u")
        assert [m.id for m in result.memories] == ids
        assert result.memories[1].via == "graph"
        assert result.memories[1].components["graph"] > 0


def test_graph_can_be_switched_off(store_path: Path) -> None:
    config = Config(path=str(store_path), ranking={"graph_depth": 0})
    with Memory(config, embedder=HashEmbedder()) as mem:
        mem.add(["alpha beta gamma", "zeta eta theta", "alpha delta"], user_id="u", session_id="s")
        result = mem.recall("alpha beta", user_id="u")
        assert result.paths == []
        assert all(m.components["graph"] == 0 for m in result.memories)
        search = mem.search("alpha beta", user_id="u")
        assert [m.id for m in result.memories] == [m.id for m in search]


def test_edge_weights_change_what_surfaces(mem: Memory) -> None:
    left, seed, right = mem.add(
        ["lambda mu nu", "alpha beta gamma", "kappa xi omicron"], user_id="u", session_id="s"
    )
    mem.add("pi rho sigma", user_id="u")  # unconnected
    # Below graph_min_edge_weight the edge to "left" is not followed: "right" is reached and
    # "left", which matches the query in no other way, is not returned at all.
    mem.store.adjust_edges(
        "default", EdgeAdjustment([EdgeDelta(seed, left, "sequence", -1.0)], EdgeBounds(0.01, 1.0))
    )
    weighted = {"graph_weight": 0.1}
    before = [m.id for m in mem.recall("alpha beta gamma", user_id="u", profile=weighted).memories]
    assert right in before and left not in before
    # Learned strength on the edge to "left" lifts it above "right".
    mem.store.adjust_edges(
        "default", EdgeAdjustment([EdgeDelta(seed, left, "sequence", 2.0)], EdgeBounds(0.01, 1.0))
    )
    after = [m.id for m in mem.recall("alpha beta gamma", user_id="u", profile=weighted).memories]
    assert after.index(left) < after.index(right)


def test_recall_respects_the_session_filter_along_paths(mem: Memory) -> None:
    mem.add(["alpha beta gamma"], user_id="u", session_id="s1")
    other = mem.add(["alpha beta gamma delta"], user_id="u", session_id="s2")
    result = mem.recall("alpha beta", user_id="u", session_id="s1")
    assert not set(other) & {m.id for m in result.memories}
    assert not any(set(other) & set(p.nodes) for p in result.paths)


def test_graph_weight_zero_keeps_paths_but_not_their_influence(store_path: Path) -> None:
    config = Config(path=str(store_path), ranking={"graph_weight": 0.0})
    with Memory(config, embedder=HashEmbedder()) as mem:
        mem.add(["alpha beta gamma", "zeta eta theta", "alpha delta"], user_id="u", session_id="s")
        result = mem.recall("alpha beta", user_id="u")
        assert result.paths  # feedback can still learn from them
        search = mem.search("alpha beta", user_id="u")
        assert [m.id for m in result.memories] == [m.id for m in search]


# -- the store methods the graph uses ----------------------------------------------------------
def test_store_graph_reads(mem: Memory) -> None:
    ids = mem.add(
        ["zanzibar spice market", "zanzibar beaches", "tea time", "coffee time"],
        user_id="u",
        session_id="s",
    )
    other = mem.add("zanzibar again", user_id="v")
    scope = mem._scope("u", None, None, None)
    latest = mem.store.latest_memories(scope, 2)
    assert [r.id for r in latest] == [ids[3], ids[2]]
    n, postings = mem.store.term_postings(scope, ["zanzibar", "time", "absent"], 1)
    assert n == 4
    assert postings["zanzibar"] == (2, [ids[1]])  # df over the scope, newest id first
    assert postings["time"][0] == 2
    assert postings["absent"] == (0, [])
    assert other[0] not in postings["zanzibar"][1]
    edges_in = mem.store.edges_to("default", [ids[1]])
    assert edges_in and all(e.dst == ids[1] for e in edges_in)
    counts = mem.store.edge_counts("default", [*ids, "missing"])
    assert counts["missing"] == 0
    assert counts[ids[0]] == len(mem.store.edges_from("default", [ids[0]]))


@given(st.text(alphabet=st.sampled_from(list('ab .!?:;"\n\t\u2003')), max_size=30))
def test_sentence_start_reads_backwards_as_the_pattern_reads_the_prefix(text: str) -> None:
    for start in range(len(text) + 1):
        expected = _SENTENCE_START.search(text[:start]) is not None
        assert _starts_sentence(text, start) == expected
