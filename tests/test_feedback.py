"""Memory.feedback: the MemWire alignment rule, once per recall, on real embeddings too."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np
import pytest

from engrammar import Config, HashEmbedder, Memory, NotFoundError, ValidationError
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.learn.alignment import alignment_deltas
from engrammar.models import Scope
from engrammar.store import EdgeAdjustment, EdgeBounds, EdgeDelta, RecallRecord, ReplyQuery


def _weights(mem: Memory, ids: list[str]) -> dict[tuple[str, str, str], float]:
    return {(e.src, e.dst, e.kind): e.weight for e in mem.store.edges_from("default", ids)}


@pytest.mark.every_store
def test_no_recall_means_nothing_to_do(mem: Memory) -> None:
    mem.add("I like green tea.", user_id="u")
    out = mem.feedback(response="Green tea it is.", user_id="u")
    assert (out["strengthened"], out["weakened"], out["consumed"]) == (0, 0, False)
    assert "no recall in this scope" in out["message"]


@pytest.mark.every_store
def test_a_recall_is_consumed_once(mem: Memory) -> None:
    ids = mem.add(["alpha beta gamma", "alpha beta delta", "beta gamma delta"], user_id="u")
    mem.recall("alpha beta", user_id="u")
    first = mem.feedback(response="alpha beta gamma delta", user_id="u")
    assert first["consumed"] is True
    assert first["strengthened"] + first["weakened"] > 0
    before = _weights(mem, ids)
    second = mem.feedback(response="alpha beta gamma delta", user_id="u")
    assert (second["strengthened"], second["weakened"], second["consumed"]) == (0, 0, False)
    assert "message" in second
    again = mem.feedback(response="alpha", user_id="u", recall_id=first["recall_id"])
    assert again["consumed"] is False and "already" in again["message"]
    assert _weights(mem, ids) == before


@pytest.mark.every_store
def test_without_a_recall_id_only_the_newest_recall_of_the_window_is_taken(mem: Memory) -> None:
    """A reply without ``recall_id`` goes to the scope's newest recall and says which; once
    that recall has had its reply, or when it is older than ``feedback_recall_window_s``, the
    reply is refused (naming the recall) instead of landing on an earlier, unrelated recall."""
    mem.add(["alpha beta gamma", "alpha beta delta"], user_id="u")
    earlier = mem.recall("alpha gamma", user_id="u")
    newest = mem.recall("alpha beta", user_id="u")
    first = mem.feedback(response="alpha beta gamma", user_id="u")
    assert (first["recall_id"], first["query"], first["consumed"]) == (
        newest.recall_id,
        "alpha beta",
        True,
    )
    again = mem.feedback(response="alpha beta gamma", user_id="u")
    assert again["consumed"] is False and again["recall_id"] == newest.recall_id
    assert "already received feedback" in again["message"]
    assert newest.recall_id in again["message"] and "'alpha beta'" in again["message"]
    # The earlier recall is still there for a reply that names it.
    named = mem.feedback(response="alpha gamma", user_id="u", recall_id=earlier.recall_id)
    assert named["consumed"] is True and named["query"] == "alpha gamma"

    # A recall made an hour ago (the default window is ten minutes).
    hour_ago = time.time() - 3600
    old = RecallRecord("an-old-recall", "default", "v", None, None, "old question", hour_ago, [])
    mem.store.save_recall(old)
    stale = mem.feedback(response="alpha", user_id="v")
    assert stale["consumed"] is False and stale["recall_id"] == "an-old-recall"
    assert "60 minutes ago" in stale["message"] and "feedback_recall_window_s" in stale["message"]
    assert mem.feedback(response="alpha", user_id="v", recall_id="an-old-recall")["consumed"]


def test_the_recall_window_is_a_setting(store_path: Path) -> None:
    config = Config(path=str(store_path), feedback_recall_window_s=0)
    with Memory(config, embedder=HashEmbedder()) as mem:
        mem.add("alpha beta", user_id="v")
        old = RecallRecord("r", "default", "v", None, None, "old", time.time() - 86_400 * 30, [])
        mem.store.save_recall(old)
        assert mem.feedback(response="alpha", user_id="v")["consumed"] is True  # 0: no limit
    with pytest.raises(ValidationError) as err:
        Config(path=str(store_path), feedback_recall_window_s=-1)
    assert err.value.field == "feedback_recall_window_s"


@pytest.mark.every_store
def test_arguments_are_checked(mem: Memory) -> None:
    mem.add("alpha beta", user_id="u")
    mem.recall("alpha", user_id="u")
    with pytest.raises(ValidationError) as err:
        mem.feedback(user_id="u")
    assert err.value.field == "response"
    with pytest.raises(ValidationError) as err:
        mem.feedback(response="a", assistant_response="b", user_id="u")
    assert err.value.field == "assistant_response"
    with pytest.raises(ValidationError):
        mem.feedback(response="   ", user_id="u")
    with pytest.raises(ValidationError):
        mem.feedback(response="ok")  # no scope
    with pytest.raises(NotFoundError):
        mem.feedback(response="ok", user_id="u", recall_id="nope")
    # The failed calls consumed nothing: MemWire's keyword works on the same recall.
    assert mem.feedback(assistant_response="alpha beta", user_id="u")["consumed"] is True


@pytest.mark.every_store
def test_feedback_acts_on_the_scope_of_the_recall(mem: Memory) -> None:
    mem.add(["alpha beta gamma", "alpha beta delta"], user_id="a")
    mem.add(["alpha beta gamma", "alpha beta delta"], user_id="b")
    mem.recall("alpha beta", user_id="a")
    assert mem.feedback(response="alpha beta", user_id="b")["consumed"] is False
    assert mem.feedback(response="alpha beta", user_id="a")["consumed"] is True


def test_only_changed_edges_are_written_and_weights_stay_in_bounds(store_path: Path) -> None:
    config = Config(path=str(store_path), feedback_strengthen_rate=1.0, edge_weight_max=0.9)
    with Memory(config, embedder=HashEmbedder()) as mem:
        ids = mem.add(["alpha beta gamma", "alpha beta gamma delta", "zeta eta theta"], user_id="u")
        edges = mem.store.edges_from("default", ids)
        untouched = {(e.src, e.dst, e.kind): e.updated_at for e in edges}
        result = mem.recall("alpha beta gamma", user_id="u")
        out = mem.feedback(response="alpha beta gamma delta", user_id="u")
        assert out["strengthened"] >= 1
        after = mem.store.edges_from("default", ids)
        assert all(config.edge_weight_min <= e.weight <= 0.9 for e in after)
        on_paths = {
            (p.nodes[i], p.nodes[i + 1], p.kinds[i])
            for p in result.paths
            for i in range(len(p.kinds))
        }
        for e in after:
            if (e.src, e.dst, e.kind) not in on_paths:
                assert e.updated_at == untouched[(e.src, e.dst, e.kind)]
        changed = [e for e in after if e.updated_at != untouched[(e.src, e.dst, e.kind)]]
        assert len(changed) == out["strengthened"] + out["weakened"]


@pytest.mark.every_store
def test_weakening_stops_at_the_floor(mem: Memory) -> None:
    ids = mem.add(["alpha beta gamma", "alpha beta gamma delta"], user_id="u")
    edge = mem.store.edges_from("default", ids)[0]
    changed = mem.store.adjust_edges(
        "default",
        EdgeAdjustment([EdgeDelta(edge.src, edge.dst, edge.kind, -5.0)], EdgeBounds(0.01, 1.0)),
    )
    assert changed is not None and changed[0].weight == pytest.approx(0.01)
    again = mem.store.adjust_edges(
        "default",
        EdgeAdjustment([EdgeDelta(edge.src, edge.dst, edge.kind, -5.0)], EdgeBounds(0.01, 1.0)),
    )
    assert again == []  # already at the floor: nothing written


CLIMB = "On weekends I go bouldering at the climbing gym."
ROUTE = "My favourite route there is a purple overhang problem."
BAKE = "On Sundays I bake sourdough bread for the neighbours."
UNWIND = "Baking bread is how I unwind after a long week."
OTHERS = [
    "I work as a nurse on the night shift.",
    "My car needs new tyres before winter.",
    "I read science fiction novels before bed.",
    "My sister lives in Lisbon.",
    "I am saving money for a new laptop.",
    "Our dog is afraid of thunderstorms.",
]
REPLY = (
    "You love bouldering at the climbing gym on weekends, especially that purple overhang route."
)


@pytest.mark.model
def test_replies_raise_the_path_they_agree_with_and_sink_the_other(
    store_path: Path, minilm: MiniLMEmbedder
) -> None:
    # Ranking settings pinned so that tuning the defaults elsewhere does not move this test.
    config = Config(
        path=str(store_path),
        graph_sequence_weight=0.5,
        graph_semantic_threshold=0.5,
        # Neighbour support and session evidence off: the rise this test watches comes from
        # the graph walk alone.
        ranking={
            "keyword_weight": 0.5,
            "graph_weight": 0.3,
            "graph_depth": 2,
            "graph_fanout": 3,
            "graph_seeds": 5,
            "graph_min_edge_weight": 0.2,
            "neighbour_weight": 0.0,
            "session_weight": 0.0,
            "time_weight": 0.0,
            "answer_weight": 0.0,
        },
    )
    with Memory(config, embedder=minilm) as mem:
        mem.add([CLIMB, ROUTE], user_id="bob", session_id="s1")
        mem.add([BAKE, UNWIND], user_id="bob", session_id="s2")
        for text in OTHERS:
            mem.add(text, user_id="bob")
        rounds = []
        for _ in range(6):
            result = mem.recall("What do you like doing on weekends?", user_id="bob")
            order = [m.content for m in result.memories]
            scores = {m.content: m.score for m in result.memories}
            rounds.append(
                (order.index(ROUTE) + 1, scores[ROUTE], order.index(UNWIND) + 1, scores[UNWIND])
            )
            out = mem.feedback(response=REPLY, user_id="bob")
            assert out["strengthened"] >= 1
        route_ranks = [r[0] for r in rounds]
        route_scores = [r[1] for r in rounds]
        unwind_ranks = [r[2] for r in rounds]
        unwind_scores = [r[3] for r in rounds]
        print(rounds)
        # The agreed path rises round after round ...
        assert all(b > a for a, b in itertools.pairwise(route_scores))
        assert route_ranks[-1] < route_ranks[0]
        # ... the misaligned one sinks, and the two swap places.
        assert unwind_scores[-1] < unwind_scores[0]
        assert all(b <= a for a, b in itertools.pairwise(unwind_scores))
        assert unwind_ranks[0] < route_ranks[0] and unwind_ranks[-1] > route_ranks[-1]


@pytest.mark.every_store
@pytest.mark.model
def test_the_side_of_a_tension_the_reply_agrees_with_is_strengthened(real_mem: Memory) -> None:
    (paris,) = real_mem.add("I live in Paris.", user_id="u", timestamp=1e9)
    (berlin,) = real_mem.add("I moved to Berlin last month.", user_id="u", timestamp=2e9)
    edges = {
        (e.src, e.dst, e.kind): e.weight
        for e in real_mem.store.edges_from("default", [paris, berlin])
    }
    assert (paris, berlin, "contradicts") in edges and (berlin, paris, "supersedes") in edges
    result = real_mem.recall("Where do you live?", user_id="u")
    assert result.tensions
    out = real_mem.feedback(
        response="Since you live in Berlin now, try the flea market at Mauerpark.", user_id="u"
    )
    assert out["tensions"] == [{"agreed": berlin, "other": paris}]
    after = {
        (e.src, e.dst, e.kind): e.weight
        for e in real_mem.store.edges_from("default", [paris, berlin])
    }
    assert after[(paris, berlin, "contradicts")] > edges[(paris, berlin, "contradicts")]
    assert after[(berlin, paris, "contradicts")] < edges[(berlin, paris, "contradicts")]
    assert out["strengthened"] >= 1 and out["weakened"] >= 1


# -- the pure rule -------------------------------------------------------------------------------
def _said(mem: Memory, *texts: str) -> list[str]:
    """The ids of ``texts`` added as the user's messages of user ``u``."""
    return mem.add([{"role": "user", "content": t} for t in texts], user_id="u")


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


RATES = {
    "strengthen_rate": 0.1,
    "weaken_rate": 0.05,
    "align_strengthen": 0.5,
    "align_weaken": 0.2,
}


def test_alignment_rule_strengthens_weakens_and_leaves_the_band() -> None:
    reply = _unit(1, 0, 0)
    vectors = {
        "a": _unit(1, 0, 0),  # cos 1
        "b": _unit(1, 0.2, 0),  # cos ~0.98
        "c": _unit(0, 1, 0),  # cos 0
        "d": _unit(1, 1.2, 0),  # cos ~0.64
    }
    paths = [
        {"nodes": ["a", "b"], "kinds": ["semantic"]},  # mean ~0.99: strengthen
        {"nodes": ["c", "c2"], "kinds": ["sequence"]},  # c2 forgotten: skipped
        {"nodes": ["b", "c"], "kinds": ["entity"]},  # mean ~0.49: the neutral band
        {"nodes": ["c", "d", "c"], "kinds": ["semantic", "semantic"]},  # ~0.21: band too
    ]
    deltas, report = alignment_deltas(paths, vectors, reply, **RATES)
    assert deltas == {("a", "b", "semantic"): pytest.approx(0.1 * report[0].alignment)}
    assert [r.action for r in report] == ["strengthen", "keep", "keep"]
    low = [{"nodes": ["a", "c"], "kinds": ["sequence"]}]
    deltas, report = alignment_deltas(low, {**vectors, "a": _unit(0, 0, 1)}, reply, **RATES)
    assert deltas == {("a", "c", "sequence"): -0.05} and report[0].action == "weaken"


def test_an_edge_on_an_aligned_path_is_not_weakened_by_another_path() -> None:
    reply = _unit(1, 0)
    vectors = {"a": _unit(1, 0), "b": _unit(1, 0.1), "z": _unit(-1, 0)}
    paths = [
        {"nodes": ["a", "b"], "kinds": ["semantic"]},
        {"nodes": ["z", "a", "b"], "kinds": ["semantic", "semantic"]},  # mean ~0.33... keep
        {"nodes": ["z", "z2"], "kinds": ["semantic"]},
    ]
    vectors["z2"] = _unit(-1, 0.1)
    deltas, _ = alignment_deltas(paths, vectors, reply, **RATES)
    assert deltas[("a", "b", "semantic")] > 0
    assert deltas[("z", "z2", "semantic")] == -0.05


def test_concurrent_feedback_consumes_a_recall_exactly_once(store_path: Path) -> None:
    import threading

    with Memory(Config(path=str(store_path)), embedder=HashEmbedder()) as first:
        first.add(["alpha beta gamma", "alpha beta delta", "alpha gamma delta"], user_id="u")
        first.recall("alpha beta", user_id="u")
        # A second Memory on the same file: another connection, as another process would have.
        with Memory(Config(path=str(store_path)), embedder=HashEmbedder()) as second:
            results: list[dict[str, object]] = []
            barrier = threading.Barrier(2)

            def run(mem: Memory) -> None:
                barrier.wait()
                results.append(mem.feedback(response="alpha beta gamma", user_id="u"))

            threads = [threading.Thread(target=run, args=(m,)) for m in (first, second)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert sorted(bool(r["consumed"]) for r in results) == [False, True]


@pytest.mark.every_store
def test_the_reply_feeds_the_learned_ranking(real_mem: Memory) -> None:
    """feedback(response=...) keeps what the reply drew on and what it left, tied to the recall:
    the same question later ranks the memory the reply used higher, a rating the reply
    contradicts is shrunk, and the recall is still consumed once."""
    mem = real_mem
    ids = _said(
        mem,
        "My sister Ana lives in Porto and teaches chemistry.",
        "Porto has lovely bridges over the river.",
        "I visited a chemistry museum once.",
        "Teachers in my town went on strike last year.",
    )
    question = "What does my sister do for a living?"
    before = mem.recall(question, user_id="u", limit=4)
    rank_before = [m.id for m in before.memories].index(ids[0])
    out = mem.feedback(response="Your sister Ana teaches chemistry in Porto.", user_id="u")
    assert ids[0] in out["drawn_on"]
    assert set(out["left"]) <= {m.id for m in before.memories} - set(out["drawn_on"])
    anything = mem.embedder.embed([question])[0]  # with a minimum of -2 every recall matches
    replies = mem.store.reply_facts(
        Scope("default", "u"), ReplyQuery(lambda: anything, -2.0, 0.0, 100)
    )
    assert {r.memory_id for r in replies if r.value > 0} == set(out["drawn_on"])
    assert all(r.recall_id == before.recall_id for r in replies)
    # Consumed once: a second reply to the same recall adds nothing.
    assert mem.feedback(response="Something else entirely.", user_id="u")["consumed"] is False
    assert len(
        mem.store.reply_facts(Scope("default", "u"), ReplyQuery(lambda: anything, -2.0, 0.0, 100))
    ) == len(replies)
    after = mem.recall(question, user_id="u", limit=4)
    top = next(m for m in after.memories if m.id == ids[0])
    assert top.components["learned_reply"] > 0
    assert [m.id for m in after.memories].index(ids[0]) <= rank_before
    # A paraphrase far from the question does not inherit the reply's signals.
    other = mem.search("bridges over the river", user_id="u", limit=4)
    assert all("learned_reply" not in m.components for m in other)
    # forget(user_id=...) takes the reply signals with the user's other records.
    mem.forget(user_id="u")
    assert (
        mem.store.reply_facts(Scope("default", "u"), ReplyQuery(lambda: anything, -2.0, 0.0, 100))
        == []
    )


def test_a_rating_and_the_reply_of_its_recall_weigh_each_other(
    store_path: Path, minilm: MiniLMEmbedder
) -> None:
    # The reply draws on its single best match here, so the other recalled memory is "left".
    mem = Memory(Config(path=str(store_path), feedback_reply_top=1), embedder=minilm)
    ids = _said(
        mem, "The deploy script lives in tools/deploy.sh.", "We deploy on Fridays after lunch."
    )
    question = "Where is the deploy script?"
    r = mem.recall(question, user_id="u", limit=2)
    mem.feedback(response="It lives in tools/deploy.sh.", user_id="u", recall_id=r.recall_id)
    left = [m.id for m in r.memories if m.id != ids[0]]
    assert left, "both memories should be recalled"
    cfg = mem.config
    lone = cfg.feedback_max_adjustment / (1 + cfg.feedback_min_samples)
    # An acceptance of the memory the reply did not use: the acceptance counts in full, the
    # reply's silence (-1) with feedback_conflict_weight of its weight, so the memory gains
    # less than a lone acceptance would give it.
    mem.rate_memory(left[0], "accepted", recall_id=r.recall_id)
    item = next(m for m in mem.recall(question, user_id="u", limit=2).memories if m.id == left[0])
    w = cfg.feedback_conflict_weight
    expected = cfg.feedback_max_adjustment * (1 - w) / (1 + w + cfg.feedback_min_samples)
    assert item.components["learned"] == pytest.approx(expected, abs=1e-5)
    assert 0 < item.components["learned"] < lone
    # The rating the reply confirms applies with more than a lone rating's 1/(1 + N).
    mem.rate_memory(ids[0], "accepted", recall_id=r.recall_id)
    item = next(m for m in mem.recall(question, user_id="u", limit=2).memories if m.id == ids[0])
    assert lone < item.components["learned"] <= cfg.feedback_max_adjustment
    mem.close()


def test_a_rating_for_another_named_period_does_not_count(
    store_path: Path, minilm: MiniLMEmbedder
) -> None:
    mem = Memory(Config(path=str(store_path)), embedder=minilm)
    ids = _said(
        mem,
        "We went camping by the lake with the kids.",
        "The tent leaked on the second night of the trip.",
    )
    june = "When did I go camping in June?"
    r = mem.recall(june, user_id="u", limit=2)
    mem.rate_memory(ids[0], "accepted", recall_id=r.recall_id)

    def learned(question: str) -> float:
        found = mem.recall(question, user_id="u", limit=2).memories
        return next(m for m in found if m.id == ids[0]).components.get("learned", 0.0)

    # The question it was given for, and one that names no time, learn from the acceptance.
    assert learned(june) > 0
    assert learned("When did I go camping?") > 0
    # What was right for June says nothing about July, however alike the two questions read.
    july = "When did I go camping in July?"
    assert learned(july) == 0.0
    # Both the recall and explain say that a rating was left out, and why.
    found = mem.recall(july, user_id="u", limit=2).memories
    assert next(m for m in found if m.id == ids[0]).components["learned_other_period"] == 1.0
    why = mem.explain(july, ids[0], user_id="u")
    assert why["learned"] == {"learned_other_period": 1.0}
    assert "learned_other_period" not in mem.explain(june, ids[0], user_id="u")["learned"]
    mem.close()
