"""The ranking effect of feedback records, as a pure function (no store, no model)."""

from __future__ import annotations

import numpy as np
import pytest

from engrammar.learn.scoring import (
    EventFacts,
    LearnParams,
    PairFacts,
    RatingFacts,
    ReviewFacts,
    learned_ranking,
)

NOW = 1_000_000.0
PARAMS = LearnParams(
    half_life_days=30,
    min_samples=3,
    max_adjustment=0.5,
    context_min=0.4,
    context_full=0.8,
    same_output=0.9,
)


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs + (0.0,) * (4 - len(xs)), dtype=np.float32)
    return v / np.linalg.norm(v)


Q = unit(1, 0)  # the query
CTX = unit(1, 0.1)  # a past context very close to it
FAR = unit(0, 0, 1)  # an unrelated context
AI = unit(0, 1)  # the agent's first output
FIX = unit(0, 0, 0, 1)  # the corrected output


def event(state: str = "corrected", reviews: list[ReviewFacts] | None = None) -> EventFacts:
    return EventFacts(
        event_id="e",
        state=state,
        reason="4xx never heals",
        created_at=NOW,
        context_vec=CTX,
        ai_output_vec=AI,
        corrected_vec=FIX,
        answers={"corrected": "fix", "ai_output": "ai"} if reviews else {"corrected": "fix"},
        reviews=reviews or [],
    )


def rank(cands: list[tuple[str, float]], vecs: dict[str, np.ndarray], **records: list) -> list:
    return learned_ranking(
        cands,
        Q,
        vecs,
        records.get("events", []),
        records.get("pairs", []),
        records.get("ratings", []),
        PARAMS,
        NOW,
        replies=records.get("replies", []),
    )


def test_corrected_decision_comes_first_and_rejected_output_is_marked() -> None:
    cands = [("old", 0.9), ("other", 0.8)]
    vecs = {"old": AI, "other": unit(1, 1, 1)}
    out = rank(cands, vecs, events=[event()])
    assert out[0].id == "fix" and out[0].prior_decision and out[0].injected
    assert out[0].note == "prior decision (corrected): 4xx never heals"
    old = next(s for s in out if s.id == "old")
    assert old.adjustment.value < 0 and old.note and old.note.startswith("rejected before")


def test_unrelated_context_does_nothing() -> None:
    far = event()
    far.context_vec = FAR
    out = rank([("a", 0.5)], {"a": AI}, events=[far])
    assert [s.id for s in out] == ["a"] and out[0].score == 0.5


def test_reversed_review_flips_which_output_stands() -> None:
    review = ReviewFacts("adopted", "success", 1.0, True, NOW, "30 s is what merchants want")
    out = rank(
        [("fix", 0.9), ("ai", 0.4)], {"fix": FIX, "ai": AI}, events=[event(reviews=[review])]
    )
    assert out[0].id == "ai" and out[0].prior_decision
    assert "30 s is what merchants want" in (out[0].note or "")
    fix = next(s for s in out if s.id == "fix")
    assert not fix.prior_decision and fix.adjustment.value < 0


def test_failed_review_takes_the_decision_off_the_top() -> None:
    review = ReviewFacts("corrected", "failure", 1.0, False, NOW)
    reviews = [review, review, review]
    out = rank([("x", 0.5)], {"x": unit(1, 1)}, events=[event(reviews=reviews)])
    # Failed: no longer offered as the decision, nor surfaced when search missed it.
    assert [s.id for s in out] == ["x"]


def test_one_failed_review_means_the_decision_no_longer_stands() -> None:
    """Adopted, then failed in practice: not a prior decision, ranked below
    a memory of equal relevance, noted as failed; a later success makes it stand again."""
    failure = ReviewFacts("corrected", "failure", 1.0, False, NOW)
    vecs = {"fix": FIX, "other": unit(1, 1)}
    out = rank([("fix", 0.5), ("other", 0.5)], vecs, events=[event(reviews=[failure])])
    assert [s.id for s in out] == ["other", "fix"]
    fix = out[1]
    assert not fix.prior_decision and fix.adjustment.value < 0
    assert fix.note == "prior decision (corrected) failed when reviewed"
    # Not surfaced when search missed it.
    missed = rank([("other", 0.5)], vecs, events=[event(reviews=[failure])])
    assert [s.id for s in missed] == ["other"]
    success = ReviewFacts("corrected", "success", 1.0, False, NOW + 1)
    again = rank([("fix", 0.5), ("other", 0.5)], vecs, events=[event(reviews=[failure, success])])
    assert again[0].id == "fix" and again[0].prior_decision


def test_pair_prefers_accepted_and_demotes_rejected_text() -> None:
    pair = PairFacts("p", 1.0, NOW, CTX, FIX, AI, "pref")
    out = rank([("same-as-rejected", 0.9)], {"same-as-rejected": AI}, pairs=[pair])
    assert out[0].id == "pref"
    assert out[1].adjustment.value < 0


def test_a_pairs_own_memory_ranks_only_where_its_context_matches() -> None:
    vecs = {"pref": FIX, "other": AI}
    matching = PairFacts("p", 1.0, NOW, CTX, FIX, AI, "pref")
    kept = rank([("pref", 0.3), ("other", 0.5)], vecs, pairs=[matching])
    assert [s.id for s in kept] == ["pref", "other"]
    # Search found it by its text, but the choice was made for another context: left out.
    elsewhere = PairFacts("p", 1.0, NOW, FAR, FIX, AI, "pref")
    left = rank([("pref", 0.9), ("other", 0.5)], vecs, pairs=[elsewhere])
    assert [s.id for s in left] == ["other"]


def test_contextual_rating_scales_with_the_match() -> None:
    near = RatingFacts("r1", "a", "rejected", 1.0, NOW, CTX)
    far = RatingFacts("r2", "b", "rejected", 1.0, NOW, FAR)
    glob = RatingFacts("r3", "c", "accepted", 1.0, NOW, None)
    out = {
        s.id: s
        for s in rank(
            [("a", 0.5), ("b", 0.5), ("c", 0.5)],
            {"a": FAR, "b": FAR, "c": FAR},
            ratings=[near, far, glob],
        )
    }
    assert out["a"].score < 0.5
    assert out["b"].score == 0.5
    assert out["c"].score > 0.5


def test_reply_signals_confirm_or_shrink_the_ratings_of_their_recall() -> None:
    from engrammar.learn.scoring import ReplyFacts

    def score(rating: str, reply: float | None) -> float:
        ratings = [RatingFacts("r", "a", rating, 1.0, NOW, CTX, "rec")]
        replies = [] if reply is None else [ReplyFacts("a", "rec", reply, NOW, CTX)]
        out = rank([("a", 0.5)], {"a": FAR}, ratings=ratings, replies=replies)
        return float(out[0].score)

    alone = score("accepted", None)
    confirmed = score("accepted", 1.0)
    contradicted = score("accepted", -1.0)
    assert confirmed > alone > contradicted > 0.5
    # The reply only left what the user accepted: the acceptance counts in full, the reply's
    # -1 with conflict_weight (0.25) of its weight. One acceptance alone is shrunk to
    # 1 / (1 + 3) of the bound (0.5); with the reply the mean is (1 - 0.25) / (1.25 + 3).
    assert alone == pytest.approx(0.5 * (1 + 0.5 / 4))
    assert contradicted == pytest.approx(0.5 * (1 + 0.5 * 0.75 / 4.25))
    # A rejection of what the reply drew on is the likelier mistake: both keep conflict_weight
    # of their weight and cancel, so a flipped rejection cannot sink the memory.
    assert score("rejected", 1.0) == pytest.approx(0.5)
    assert score("rejected", -1.0) < score("rejected", None) < 0.5


def test_a_memory_a_past_reply_drew_on_is_surfaced_for_the_same_question_only() -> None:
    from engrammar.learn.scoring import ReplyFacts

    drawn = [ReplyFacts("used", "rec", 1.0, NOW, Q)]
    out = rank([("a", 0.6), ("b", 0.4)], {"a": FAR, "b": FAR}, replies=drawn)
    ids = [s.id for s in out]
    # Surfaced at the level of the recall's reply_top-th candidate, then lifted by its signal.
    assert ids == ["a", "used", "b"]
    assert out[1].injected and out[1].components["learned_reply"] > 0
    elsewhere = [ReplyFacts("used", "rec", 1.0, NOW, FAR)]
    out = rank([("a", 0.6), ("b", 0.4)], {"a": FAR, "b": FAR}, replies=elsewhere)
    assert "used" not in {s.id for s in out}


def test_acceptance_carries_to_a_related_question_a_rejection_does_not() -> None:
    # A related past question: cosine about 0.71 with the query, inside the accepting ramp
    # (0.5 to 0.85), below the rejecting one (0.85 to 0.98).
    related = unit(1, 1)

    def rating(memory_id: str, verdict: str, ctx: np.ndarray) -> RatingFacts:
        return RatingFacts(f"r-{memory_id}-{verdict}", memory_id, verdict, 1.0, NOW, ctx, None)

    cands = [("a", 0.8), ("b", 0.8)]
    vecs = {"a": unit(0, 0, 1), "b": unit(0, 0, 0, 1)}
    out = {s.id: s for s in rank(cands, vecs, ratings=[rating("a", "accepted", related)])}
    assert out["a"].adjustment.value > 0
    out = {s.id: s for s in rank(cands, vecs, ratings=[rating("b", "rejected", related)])}
    assert out["b"].adjustment.value == 0
    # The same question: both count, with the same size.
    up = {s.id: s for s in rank(cands, vecs, ratings=[rating("a", "accepted", Q)])}["a"]
    down = {s.id: s for s in rank(cands, vecs, ratings=[rating("b", "rejected", Q)])}["b"]
    assert up.adjustment.value == pytest.approx(-down.adjustment.value)
    # A correction says the memory misleads: it carries like an acceptance, with its sign.
    out = {s.id: s for s in rank(cands, vecs, ratings=[rating("b", "corrected", related)])}
    assert out["b"].adjustment.value < 0


def test_a_carried_verdict_needs_the_memory_as_close_to_the_query_as_to_the_rated_one() -> None:
    from dataclasses import replace

    from engrammar.learn.scoring import memory_match

    related = unit(1, 1)  # a past question inside the accepting ramp (cosine 0.71 with Q)
    # "on": closer to the query than to the rated question (cosines 0.71 and 0.5); "off":
    # about what the rated question asked, far less about the query (0.97 with it, 0.51 with Q).
    on, off = unit(1, 0, 1), unit(0.6, 1)
    assert float(on @ Q) >= float(on @ related)
    assert float(off @ related) - float(off @ Q) > PARAMS.rating_memory_margin
    cands = [("on", 0.8), ("off", 0.8)]
    vecs = {"on": on, "off": off}

    def adjustments(ctx: np.ndarray, params: LearnParams = PARAMS) -> dict[str, float]:
        ratings = [RatingFacts(f"r-{m}", m, "accepted", 1.0, NOW, ctx, None) for m in ("on", "off")]
        out = learned_ranking(cands, Q, vecs, [], [], ratings, params, NOW)
        return {s.id: s.adjustment.value for s in out}

    carried = adjustments(related)
    assert carried["on"] > 0
    assert carried["off"] == 0
    # The rated question itself: both count in full, the same.
    same = adjustments(Q)
    assert same["on"] == pytest.approx(same["off"])
    assert same["on"] > carried["on"]
    # 0 switches the rule off: the rating carries by the questions' likeness alone.
    off_rule = adjustments(related, replace(PARAMS, rating_memory_margin=0.0))
    assert off_rule["off"] == pytest.approx(off_rule["on"])
    assert off_rule["on"] == pytest.approx(carried["on"])
    # Linear in between.
    assert memory_match(0.5, 0.55, 0.1) == pytest.approx(0.5)
    assert memory_match(0.6, 0.55, 0.1) == 1.0 and memory_match(0.4, 0.55, 0.1) == 0.0


def test_a_loss_carries_only_where_the_memory_is_no_closer_to_the_query() -> None:
    """A rejection, or a reply that left a memory, given for a question nearly like the query:
    it sinks the memory for the query in full where the memory is no closer to the query than
    to that question, and not at all where it is closer by ``rating_memory_margin``. ("When did
    Caroline apply to adoption agencies?" rejected the turn saying why she chose the agency; it
    is not sunk for "Why did Caroline choose the adoption agency?".) A reply's gain carries the
    other way round, like an acceptance."""
    from engrammar.learn.scoring import ReplyFacts, carried

    rated = unit(1, 0.3)  # a past question inside the reply ramp (cosine 0.96 with Q)
    assert PARAMS.reply_context_min < float(rated @ Q) < PARAMS.reply_context_full
    # "near": far closer to the query than to the rated question; "rated": the reverse.
    near, about = unit(1, -1), unit(1, 1)
    assert float(near @ Q) - float(near @ rated) > PARAMS.rating_memory_margin
    assert float(about @ rated) - float(about @ Q) > PARAMS.rating_memory_margin
    cands = [("near", 0.8), ("about", 0.8)]
    vecs = {"near": near, "about": about}

    def adjustments(ctx: np.ndarray, value: float, kind: str) -> dict[str, float]:
        ratings, replies = [], []
        for m in vecs:
            if kind == "rating":
                verdict = "accepted" if value > 0 else "rejected"
                ratings.append(RatingFacts(f"r-{m}", m, verdict, 1.0, NOW, ctx, None))
            else:
                replies.append(ReplyFacts(m, "rec", value, NOW, ctx))
        out = learned_ranking(cands, Q, vecs, [], [], ratings, PARAMS, NOW, replies=replies)
        return {s.id: s.adjustment.value for s in out}

    for kind in ("rating", "reply"):
        lost = adjustments(rated, -1.0, kind)
        assert lost["near"] == 0, kind
        assert lost["about"] < 0, kind
        # The rated question itself: both lose, the same.
        same = adjustments(Q, -1.0, kind)
        assert same["near"] == pytest.approx(same["about"])
        assert same["near"] < 0
    # A reply's gain carries by the questions' likeness alone (placed, as a drawn-on memory).
    gained = adjustments(rated, 1.0, "reply")
    assert gained["near"] > 0 and gained["about"] > 0
    # A rejection the likeness fades still disputes the reply of its recall that drew on the
    # memory: the memory is not placed among the query's best on that reply's word.
    low = [("top", 0.9), ("a", 0.8), ("b", 0.7), ("c", 0.6), ("d", 0.5), ("near", 0.2)]
    lvecs = {m: unit(0, 0, 1, i) for i, m in enumerate(["top", "a", "b", "c", "d"], 1)}
    lvecs["near"] = near
    drew = [ReplyFacts("near", "rec", 1.0, NOW, rated)]
    wrong = [RatingFacts("w", "near", "rejected", 1.0, NOW, rated, "rec")]
    out = {
        s.id: s for s in learned_ranking(low, Q, lvecs, [], [], wrong, PARAMS, NOW, replies=drew)
    }
    assert not out["near"].adjustment.placed_by
    assert out["near"].score < 0.5
    # Linear in between, mirrored by sign; no vector, or the margin 0: in full.
    assert carried(-1.0, Q, rated, unit(1, -0.2), PARAMS) == pytest.approx(
        1 - (float(unit(1, -0.2) @ Q) - float(unit(1, -0.2) @ rated)) / PARAMS.rating_memory_margin
    )
    assert carried(-1.0, Q, rated, None, PARAMS) == 1.0
    from dataclasses import replace

    assert carried(-1.0, Q, rated, near, replace(PARAMS, rating_memory_margin=0.0)) == 1.0


def test_without_records_the_ranking_is_unchanged() -> None:
    cands = [("a", 0.9), ("b", 0.7), ("c", 0.7), ("d", 0.1)]
    vecs = {"a": Q, "b": CTX, "c": FAR, "d": AI}
    for params in (PARAMS, LearnParams(**{**PARAMS.__dict__, "rating_memory_margin": 0.0})):
        out = learned_ranking(cands, Q, vecs, [], [], [], params, NOW)
        assert [(s.id, s.score) for s in out] == cands
        assert all(s.adjustment.value == 0 and not s.injected for s in out)


def test_a_memory_accepted_for_the_same_question_is_placed_among_its_best() -> None:
    from dataclasses import replace

    from engrammar.learn.scoring import ReplyFacts

    levels = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]  # reply_top 5: the 5th level is 0.5
    cands = [(f"m{i}", r) for i, r in enumerate(levels)]
    vecs = {i: FAR for i, _ in cands}

    def place(ratings: list[RatingFacts], params: LearnParams = PARAMS, **records: list) -> int:
        out = learned_ranking(
            cands, Q, vecs, [], [], ratings, params, NOW, replies=records.get("replies", [])
        )
        return [s.id for s in out].index("m6") + 1

    accepted = RatingFacts("r", "m6", "accepted", 1.0, NOW, Q, "rec")
    whole = replace(PARAMS, anchor_bound="off")
    # Rated for this question: at least at the 5th candidate's level, then lifted by its
    # signal above it. Its bounded adjustment alone (+12.5 % for one rating) leaves it last.
    assert place([accepted], whole) == 5
    out = learned_ranking(cands, Q, vecs, [], [], [accepted], whole, NOW)
    lifted = next(s for s in out if s.id == "m6")
    assert lifted.components["accepted_level"] == pytest.approx(0.5)
    assert lifted.score == pytest.approx(0.5 * (1 + lifted.adjustment.value))
    assert place([accepted], replace(PARAMS, rating_anchor=False)) == 7
    # Within the source's bound (the default): the placement and the rating's adjustment
    # together move the score by exactly max_adjustment, no further: 0.3 -> 0.45.
    assert place([accepted]) == 6
    out = learned_ranking(cands, Q, vecs, [], [], [accepted], PARAMS, NOW)
    bounded = next(s for s in out if s.id == "m6")
    assert bounded.score == pytest.approx(0.3 * (1 + PARAMS.max_adjustment))
    assert bounded.relevance == pytest.approx(0.3 * 1.5 / 1.125)
    assert bounded.adjustment.placed_by == {None: pytest.approx(1.5 / 1.125 - 1)}
    assert bounded.components["learned_placement"] == pytest.approx(1.5 / 1.125 - 1)
    # Accepted for a related question only (cosine 0.71: the reply ramp starts at 0.85): its
    # adjustment carries, the level does not.
    assert place([replace(accepted, context_vec=unit(1, 1))]) == 7
    # The reply of the same recall left it: a disputed acceptance places nothing.
    left = [ReplyFacts("m6", "rec", -1.0, NOW, Q)]
    assert place([accepted], replies=left) == 7
    # Rejected more than accepted for this question: no gain to place.
    rejected = [
        RatingFacts(f"x{i}", "m6", "rejected", 1.0, NOW - 600 * i, Q, f"rec{i}") for i in (1, 2)
    ]
    assert place([accepted, *rejected]) == 7
    # A rating without a question says nothing about this one in particular.
    assert place([replace(accepted, context_vec=None)]) == 7


def test_one_source_moves_a_memory_at_most_by_the_bound_two_sources_each_within_theirs() -> None:
    """feedback_anchor_bound: what one source's acceptances (and with ``all`` its replies) do to
    a memory, its share of the adjustment and its placement together, stays within
    max_adjustment of the score before feedback, however many records it sends; a second source
    places within its own bound (the two do not add up their placements)."""
    from dataclasses import replace

    from engrammar.learn.scoring import LearnedScore, ReplyFacts

    levels = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.2]
    cands = [(f"m{i}", r) for i, r in enumerate(levels)]
    vecs = {i: FAR for i, _ in cands}
    every = replace(PARAMS, anchor_bound="all")

    def target(
        ratings: list[RatingFacts], replies: list[ReplyFacts], params: LearnParams = PARAMS
    ) -> LearnedScore:
        out = learned_ranking(cands, Q, vecs, [], [], ratings, params, NOW, replies=replies)
        return next(s for s in out if s.id == "m6")

    flood = [
        RatingFacts(f"f{i}", "m6", "accepted", 1.0, NOW - i, Q, f"rf{i}", "flood")
        for i in range(1000)
    ]
    drew = [ReplyFacts("m6", f"rf{i}", 1.0, NOW - i, Q, "flood") for i in range(50)]
    for ratings, replies, params in ((flood, [], PARAMS), (flood, drew, every)):
        flooded = target(ratings, replies, params)
        assert flooded.score == pytest.approx(0.2 * (1 + PARAMS.max_adjustment))
        assert set(flooded.adjustment.placed_by) == {"flood"}
    # Taken whole, the same records place it among the best five (the 5th level is 0.5); so
    # do the replies under the default (``ratings``: only an acceptance's placement is bounded).
    assert target(flood, [], replace(PARAMS, anchor_bound="off")).score > 0.5
    assert target(flood, drew).score > 0.5
    # A second source: its placement is bounded by its own share, not added to the first's.
    user = RatingFacts("u", "m6", "accepted", 1.0, NOW - 7200, Q, "ru", "user")
    both = target([*flood, user], [])
    assert set(both.adjustment.placed_by) == {"flood", "user"}
    for origin, lift in both.adjustment.placed_by.items():
        share = max(0.0, both.adjustment.by_origin[origin])
        assert (1 + lift) * (1 + share) <= 1 + PARAMS.max_adjustment + 1e-9
    assert both.relevance == pytest.approx(0.2 * (1 + max(both.adjustment.placed_by.values())))
    # A memory search missed, drawn on by a reply: with ``all`` placed from the last
    # candidate's level, within the bound; by default at the 5th candidate's level.
    missing = [ReplyFacts("gone", "rr", 1.0, NOW, Q, "user")]
    for params, most in ((every, 0.2 * (1 + PARAMS.max_adjustment)), (PARAMS, 0.5 * 1.5)):
        out = learned_ranking(cands, Q, vecs, [], [], [], params, NOW, replies=missing)
        gone = next(s for s in out if s.id == "gone")
        assert gone.injected and gone.adjustment.placed_by["user"] > 0
        assert gone.score <= most + 1e-9


def test_a_rejection_by_the_memorys_own_user_puts_it_below_the_next_one() -> None:
    """However far apart the scores, the memory goes one place down (below the next memory
    not rejected so), for the rated question and nearly the same ones; a flood of the same
    rejections moves it no further; someone else's rejection and a far question leave only
    the bounded signal."""
    from dataclasses import replace

    cands = [("top", 1.0), ("next", 0.4), ("last", 0.3)]
    vecs = {"top": unit(1, 0.3), "next": unit(1, 0.6), "last": unit(1, 1)}
    wrong = RatingFacts("w", "top", "rejected", 1.0, NOW, Q, "rec", "key:alice", None, "alice")

    def order(ratings: list[RatingFacts], query: np.ndarray = Q) -> list[str]:
        out = learned_ranking(cands, query, vecs, [], [], ratings, PARAMS, NOW)
        scores = [s.score for s in out]
        assert scores == sorted(scores, reverse=True)  # later stages keep the order
        return [s.id for s in out]

    assert order([replace(wrong, own=False)]) == ["top", "next", "last"]
    assert order([replace(wrong, own=True)]) == ["next", "top", "last"]
    flood = [replace(wrong, rating_id=f"w{i}", own=True, created_at=NOW - i) for i in range(50)]
    assert order(flood) == ["next", "top", "last"]
    assert order([replace(wrong, own=True)], unit(0, 0, 1)) == ["top", "next", "last"]
    # A nearly identical question (the rejection's ramp past its middle): placed, unless the
    # memory is closer to it than to the rejected one (then it may be what this question asks
    # for; only the bounded signal).
    middle = (PARAMS.reply_context_min + PARAMS.reply_context_full) / 2
    assert float(unit(1, -0.25) @ Q) > middle
    assert order([replace(wrong, own=True)], unit(1, -0.25)) == ["next", "top", "last"]
    assert order([replace(wrong, own=True)], unit(1, 0.25)) == ["top", "next", "last"]
    # A question only a little like the rejected one (inside the ramp, below its middle): only
    # the bounded signal, although the memory is no closer to it than to the rejected one.
    partly = unit(1, -0.55)
    assert PARAMS.reply_context_min < float(partly @ Q) < middle
    assert float(vecs["top"] @ partly) < float(vecs["top"] @ Q)
    assert order([replace(wrong, own=True)], partly) == ["top", "next", "last"]
    # Without a question (the inspector's "Keep this one" on the other side): everywhere.
    assert order([replace(wrong, own=True, context_vec=None)], FAR) == ["next", "top", "last"]
    # Two rejected in a row keep their order below the next.
    both = [replace(wrong, own=True), replace(wrong, rating_id="n", memory_id="next", own=True)]
    assert order(both) == ["last", "top", "next"]
