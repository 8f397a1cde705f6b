"""Ranking effect of feedback records: which memories rise, fall or surface as prior decisions.

Pure: the store hands over facts (records with their vectors), ``Memory`` hands over the query
vector and the candidates; :func:`learned_ranking` returns new scores, every part explained.

How each record acts on a recall whose query matches its context (``match`` in [0, 1], see
:func:`~engrammar.learn.rates.context_match`; an event matches by its context or by what was
answered for it, the closest of the three):

* **Feedback event** (corrected / adopted / rejected). Its *verdict* is the ``final_decision`` of
  its latest review, else its ``state``. The *standing answer* is the corrected output
  (corrected) or the AI output (adopted); a rejected event has none. The decision memory of the
  standing answer is surfaced (injected if search missed it), ranked ahead of ordinary memories
  and marked ``prior decision`` with the reason; it gains a +1 signal. Answers that no longer
  stand (the other side of a reversed review) and any memory that is the same text as a
  non-standing output get -1 signals, so a rejected output is never offered as the answer.
* **Decision review.** A review agreeing with the current verdict adds its outcome (success +1,
  partial +0.5, failure -1) × confidence to the standing answer. A reversed review changes the
  verdict, which flips which answer stands. When the latest review reports ``failure`` the
  decision *failed*: it loses its +1, is neither surfaced nor ranked as a prior decision, and
  keeps the reviews' negative signals (noted ``prior decision (...) failed when reviewed``).
* **Preference pair.** The accepted output's memory gains +w (injected when search missed it);
  memories that are the same text as the accepted output gain +w, as the rejected one lose w.
  The pair's own memory stands for the choice made for its context, not for something said:
  it ranks only where that context matches the query and is left out elsewhere (its text
  alone, "Three bullets", would otherwise surface in recalls it has nothing to do with).
* **Memory rating.** accepted +1, corrected -0.5, rejected -1, times its weight; a rating with a
  context counts in proportion to the match (:func:`rating_match`: accepted and corrected say
  something about the memory and carry to related questions that are as close to the memory
  as the rated one, rejected only about nearly that question and where the memory is no
  closer to the query than to it), one without counts everywhere.
  A rejection by the memory's own user (the inspector's "Wrong", "Keep this one" on the
  other side of a tension) is a person saying "not this, here": besides its bounded signal,
  for the query it was given for and near-identical ones (the rejection's ramp; everywhere
  without a context) the memory is placed below the next memory not rejected so
  (:func:`rejected_below`), whatever the scores. One place, however many rejections: a flood
  moves it no further, and signals from other sources stay within their bound.
* **Reply signal** (``feedback(response=...)``). The memories the reply drew on (its best
  matches in the recall's scope) gain +1, the recalled memories it did not draw on -1, each
  ``reply_weight`` times the context match (a -1, like a rejection, only where the memory is no
  closer to the query than to the reply's question, :func:`carried`). The reply is an
  independent witness of the ratings
  of the same recall. Where the two disagree, the weaker word keeps only ``conflict_weight`` of
  its weight: a rejection or correction of a memory the reply drew on (the reply's signal
  too), and the reply's -1 on a memory the user accepted (the reply was merely silent on it;
  the acceptance counts in full). A rating the reply confirms is corroborated (less shrinkage,
  see ``rates``). A memory drawn on for a
  matching question is placed at least at the level of the ``reply_top``-th candidate.

All signals of a memory are aggregated by :func:`~engrammar.learn.rates.aggregate` (decay,
shrinkage, bound); the score becomes ``relevance × (1 + adjustment)``. A placement (the
``reply_top`` level an acceptance or a reply puts a memory at) may count inside its source's
bound (``anchor_bound``: ``ratings``, the default, an acceptance's; ``all``, a reply's too;
``off``, none; :func:`_placed`): one source then moves a memory's score by at most
``max_adjustment`` of it, its share of the adjustment and its placement together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .rates import Adjustment, Signal, aggregate, context_match

__all__ = [
    "EventFacts",
    "LearnParams",
    "LearnedScore",
    "PairFacts",
    "RatingFacts",
    "ReplyFacts",
    "ReviewFacts",
    "carried",
    "learned_ranking",
    "memory_match",
    "rating_match",
    "rejected_below",
    "standing_answer",
    "verdict",
]

# An own user's rejection places the memory (one place down, whatever the scores) only where
# it counts at least this much (its ramp past the middle): a move that is all or nothing needs
# a question more like the rejected one than not.
_PLACING_MATCH = 0.5
OUTCOME_VALUE = {"success": 1.0, "partial": 0.5, "unknown": 0.0, "failure": -1.0}
VERDICT_VALUE = {"accepted": 1.0, "corrected": -0.5, "rejected": -1.0}


@dataclass
class ReviewFacts:
    final_decision: str
    outcome: str
    confidence: float
    reversed: bool
    created_at: float
    reason: str | None = None
    review_id: str = ""
    source: str | None = None


@dataclass
class EventFacts:
    event_id: str
    state: str
    reason: str | None
    created_at: float
    context_vec: np.ndarray
    ai_output_vec: np.ndarray
    corrected_vec: np.ndarray | None
    answers: dict[str, str]  # "corrected" / "ai_output" -> decision memory id
    reviews: list[ReviewFacts] = field(default_factory=list)  # oldest first
    ai_output: str = ""
    corrected: str | None = None
    source: str | None = None


@dataclass
class PairFacts:
    pair_id: str
    weight: float
    created_at: float
    context_vec: np.ndarray
    accepted_vec: np.ndarray
    rejected_vec: np.ndarray
    memory_id: str | None
    accepted_output: str = ""
    rejected_output: str = ""
    source: str | None = None


@dataclass
class RatingFacts:
    rating_id: str
    memory_id: str
    verdict: str
    weight: float
    created_at: float
    context_vec: np.ndarray | None
    recall_id: str | None = None
    source: str | None = None
    context: str | None = None  # the question it was rated for (a recall's query)
    user_id: str | None = None  # whose rating it is
    own: bool = False  # given by the rated memory's own user (see ``rejected_below``)


@dataclass
class ReplyFacts:
    """What a reply sent through ``feedback`` said about one memory of its recall's scope."""

    memory_id: str
    recall_id: str
    value: float  # +1 the reply drew on it, -1 recalled but not drawn on
    created_at: float
    context_vec: np.ndarray  # the recall's query
    source: str | None = None


@dataclass(frozen=True)
class LearnParams:
    half_life_days: float
    min_samples: float
    max_adjustment: float
    context_min: float
    context_full: float
    same_output: float
    reply_weight: float = 1.0
    conflict_weight: float = 0.25
    reply_top: int = 5
    reply_context_min: float = 0.85
    reply_context_full: float = 0.98
    rating_context_min: float = 0.5
    rating_context_full: float = 0.85
    rating_memory_margin: float = 0.1
    source_window_s: float = 60.0
    rating_anchor: bool = True
    anchor_bound: str = "ratings"  # which placements count inside their source's bound


@dataclass
class LearnedScore:
    """One memory's score after learning, with what changed it."""

    id: str
    relevance: float
    score: float
    adjustment: Adjustment
    prior_decision: bool = False
    note: str | None = None
    injected: bool = False
    components: dict[str, float] = field(default_factory=dict)


def verdict(event: EventFacts) -> str:
    """The event's current verdict: its latest review's final decision, else its state."""
    return event.reviews[-1].final_decision if event.reviews else event.state


def failed(event: EventFacts) -> bool:
    """Whether the event's latest review kept its verdict and reports that it failed: a
    decision that failed in practice does not stand, whatever was decided."""
    if not event.reviews:
        return False
    last = event.reviews[-1]
    return last.outcome == "failure" and last.final_decision == verdict(event)


def standing_answer(state: str) -> str | None:
    """Which output stands under a verdict: ``corrected``, ``ai_output`` or none (rejected)."""
    return {"corrected": "corrected", "adopted": "ai_output"}.get(state)


def rating_match(
    rating: RatingFacts,
    query_vec: np.ndarray,
    params: LearnParams,
    memory_vec: np.ndarray | None = None,
) -> float:
    """How far a rating applies to the query (1 for a rating without a context).

    What a rating says depends on its verdict. *Accepted* says the memory is useful and
    *corrected* that it misleads: both are about the memory, so they carry to related
    questions (ramp ``rating_context_min`` to ``rating_context_full``). *Rejected* only says
    the memory was not what that question needed: like a reply signal it counts for nearly
    the same question (``reply_context_min`` to ``reply_context_full``): a memory rejected for
    one question is evidence for a related one about as often as any other candidate, so a
    wide ramp for rejections would push down the evidence of unseen questions.

    A carried verdict is about the memory *as an answer to questions like the rated one*
    (:func:`carried`): with the memory's vector, an acceptance or a correction counts in full
    only when the memory is at least as close to the query as to the rated question, a
    rejection only when it is no closer, each fading to nothing ``rating_memory_margin``
    (cosine) beyond that (0 switches this off). A question that shares the rated one's topic
    but asks about something else than what the memory says is not lifted by an acceptance;
    one that asks for what the memory says more than the rated question did is not sunk by a
    rejection. The rated question itself always counts in full (the two cosines are equal).
    """
    if rating.context_vec is None:
        return 1.0
    cos = _cos(query_vec, rating.context_vec)
    if rating.verdict == "rejected":
        m = context_match(cos, params.reply_context_min, params.reply_context_full)
    else:
        m = context_match(cos, params.rating_context_min, params.rating_context_full)
    if m > 0:
        # A correction is about the memory itself (it misleads): it carries where the memory
        # answers the query, as an acceptance does.
        sign = -1.0 if rating.verdict == "rejected" else 1.0
        m *= carried(sign, query_vec, rating.context_vec, memory_vec, params)
    return m


def carried(
    value: float,
    query_vec: np.ndarray,
    context_vec: np.ndarray,
    memory_vec: np.ndarray | None,
    params: LearnParams,
) -> float:
    """How far a signal of sign ``value`` about a memory, given for the question
    ``context_vec``, carries to ``query_vec`` by how close the memory is to each: a gain in
    full when the memory is at least as close to the query as to that question, a loss in
    full when it is no closer (:func:`memory_match`, margin ``rating_memory_margin``; 1
    without the memory's vector or with the margin 0)."""
    if memory_vec is None or params.rating_memory_margin <= 0 or value == 0:
        return 1.0
    query_cos, rated_cos = _cos(query_vec, memory_vec), _cos(context_vec, memory_vec)
    if value > 0:
        return memory_match(query_cos, rated_cos, params.rating_memory_margin)
    return memory_match(rated_cos, query_cos, params.rating_memory_margin)


def memory_match(query_cos: float, rated_cos: float, margin: float) -> float:
    """How far a gain on a memory carries from the rated question to a query, by how close
    the memory is to each (cosines): 1 when the query is at least as close as the rated
    question was, 0 from ``margin`` (> 0) less, linear in between (a loss: the two cosines
    swapped, see :func:`carried`)."""
    gap = rated_cos - query_cos
    if gap <= 1e-6:  # the rated question itself (float noise aside)
        return 1.0
    if gap >= margin:
        return 0.0
    return 1.0 - gap / margin


def _accepted_levels(
    ratings: Sequence[RatingFacts],
    query_vec: np.ndarray,
    params: LearnParams,
    said: Mapping[tuple[str | None, str], ReplyFacts],
    anchor: float,
) -> dict[str, dict[str | None, float]]:
    """The level each candidate accepted for nearly this question is placed at, per source of
    the acceptance: the query's ``reply_top``-th relevance times the match of the rated question
    (the reply ramp, ``reply_context_min`` to ``reply_context_full``), as for a memory a reply
    drew on. An acceptance the reply of its own recall contradicts, or without a question,
    places none."""
    out: dict[str, dict[str | None, float]] = {}
    if not params.rating_anchor:
        return out
    for rating in ratings:
        if rating.verdict != "accepted" or rating.context_vec is None:
            continue
        witness = said.get((rating.recall_id, rating.memory_id))
        if witness is not None and witness.value < 0:
            continue
        m = context_match(
            _cos(query_vec, rating.context_vec),
            params.reply_context_min,
            params.reply_context_full,
        )
        if m > 0:
            _raise(out.setdefault(rating.memory_id, {}), rating.source, m * anchor)
    return out


def _raise(levels: dict[str | None, float], origin: str | None, level: float) -> None:
    levels[origin] = max(levels.get(origin, 0.0), level)


def _placed(
    base: float,
    floor: float,
    placing: Sequence[tuple[str | None, float, bool]],
    adjustment: Adjustment,
    max_adjustment: float,
) -> tuple[float, dict[str | None, float]]:
    """A memory's relevance after its placements (``placing``: each source's level and whether
    it counts inside the source's bound) and how far each source lifted it (the factor above 1).

    A bounded placement counts inside its source's bound: what one source does to a memory (its
    share of the learned adjustment, then its placement) moves the score by at most
    ``max_adjustment`` of the score before feedback, so the level is at most ``start ×
    (1 + max_adjustment) / (1 + share)``, ``start`` being the relevance before any placement
    (``floor``, the last candidate's, for a memory search missed). An unbounded one is taken
    whole (one source may then move a memory beyond the bound)."""
    start = base if base > 0 else floor
    rel = base
    lifts: dict[str | None, float] = {}
    for origin, level, bounded in placing:
        if bounded:
            share = max(0.0, adjustment.by_origin.get(origin, 0.0))
            level = min(level, start * (1.0 + max_adjustment) / (1.0 + share))
        if level > base:
            # (Taken whole, a memory of no relevance of its own has no factor to show.)
            lift = level / start - 1.0 if start > 0 else 0.0
            lifts[origin] = max(lifts.get(origin, 0.0), lift)
            rel = max(rel, level)
    return rel, lifts


def _event_cos(query_vec: np.ndarray, event: EventFacts) -> float:
    """How close a query comes to what an event is about: its context, or what was answered
    for it (the agent's output, the correction). "How should the sender retry failed
    deliveries?" asks about "Add retries to the webhook sender" in the words of its answer
    ("Retry every 30 seconds ..."), not of the request."""
    texts = [event.context_vec, event.ai_output_vec]
    if event.corrected_vec is not None:
        texts.append(event.corrected_vec)
    return max(_cos(query_vec, v) for v in texts)


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def learned_ranking(
    candidates: Sequence[tuple[str, float]],
    query_vec: np.ndarray,
    candidate_vecs: dict[str, np.ndarray],
    events: Sequence[EventFacts],
    pairs: Sequence[PairFacts],
    ratings: Sequence[RatingFacts],
    params: LearnParams,
    now: float,
    candidate_texts: dict[str, str] | None = None,
    replies: Sequence[ReplyFacts] = (),
    extra: Mapping[str, Sequence[Signal]] | None = None,
) -> list[LearnedScore]:
    """Re-rank ``candidates`` ((id, relevance), relevance in [0, 1]) by the feedback records.

    Memories surfaced only by a matching event or pair are added with their context match as
    relevance (``injected``). Prior decisions come first, then everything by score. ``extra``
    holds more signals per candidate (the learned query terms, ``learn.terms``), aggregated
    with the rest.
    """
    relevance = dict(candidates)
    signals: dict[str, list[Signal]] = {}
    injected: dict[str, float] = {}
    decision_notes: dict[str, tuple[float, str]] = {}
    rejected_notes: dict[str, str] = {}
    ids = list(relevance)
    matrix = np.stack([candidate_vecs[i] for i in ids]) if ids else None

    by_text: dict[str, list[str]] = {}
    for memory_id, content in (candidate_texts or {}).items():
        by_text.setdefault(_normal(content), []).append(memory_id)

    def same_text(vec: np.ndarray, text: str | None = None) -> list[str]:
        # A stored vector may carry context (the message before it), so an exact repeat of
        # the text is matched on the text itself, a paraphrase on the vector.
        found = list(by_text.get(_normal(text), [])) if text else []
        if matrix is not None:
            sims = matrix @ vec
            found += [ids[i] for i in np.flatnonzero(sims >= params.same_output)]
        return list(dict.fromkeys(found))

    def add(
        memory_id: str,
        value: float,
        weight: float,
        created_at: float,
        source: str,
        corroborated: float = 0.0,
        record: str | None = None,
        origin: str | None = None,
    ) -> None:
        signals.setdefault(memory_id, []).append(
            Signal(value, weight, created_at, source, corroborated, record, origin)
        )

    for event in events:
        m = context_match(_event_cos(query_vec, event), params.context_min, params.context_full)
        if m <= 0:
            continue
        current = verdict(event)
        stands = standing_answer(current)
        when = event.reviews[-1].created_at if event.reviews else event.created_at
        outputs = {
            "ai_output": (event.ai_output_vec, event.ai_output),
            "corrected": (event.corrected_vec, event.corrected),
        }
        for answer, memory_id in event.answers.items():
            if answer == stands:
                continue
            add(memory_id, -1.0, m, when, "decision", record=event.event_id, origin=event.source)
        for answer, (vec, text) in outputs.items():
            if answer == stands or vec is None:
                continue
            for memory_id in same_text(vec, text):
                if memory_id != event.answers.get(stands or ""):
                    add(
                        memory_id,
                        -1.0,
                        m,
                        when,
                        "rejected_output",
                        record=event.event_id,
                        origin=event.source,
                    )
                    rejected_notes.setdefault(
                        memory_id, f"rejected before for a similar context ({current})"
                    )
        if stands is None or stands not in event.answers:
            continue
        memory_id = event.answers[stands]
        if failed(event):
            # The decision was kept and then failed: it no longer stands. Its reviews count
            # against it (below) and it is neither surfaced nor ranked as a prior decision.
            rejected_notes.setdefault(memory_id, f"prior decision ({current}) failed when reviewed")
        else:
            add(memory_id, 1.0, m, when, "decision", record=event.event_id, origin=event.source)
        for review in event.reviews:
            if review.final_decision == current and OUTCOME_VALUE[review.outcome]:
                add(
                    memory_id,
                    OUTCOME_VALUE[review.outcome],
                    review.confidence * m,
                    review.created_at,
                    "review",
                    record=review.review_id or event.event_id,
                    origin=review.source,
                )
        if failed(event):
            continue
        injected[memory_id] = max(injected.get(memory_id, 0.0), m)
        note = f"prior decision ({current})"
        # After a reversal the event's own reason argued for the other side.
        reason = event.reviews[-1].reason if event.reviews else event.reason
        if reason is None and event.reviews and not event.reviews[-1].reversed:
            reason = event.reason
        if reason:
            note += f": {reason}"
        if event.reviews:
            last = event.reviews[-1]
            note += f" [reviewed: {last.final_decision}, {last.outcome}"
            note += ", reversed]" if last.reversed else "]"
        if memory_id not in decision_notes or decision_notes[memory_id][0] < m:
            decision_notes[memory_id] = (m, note)

    for pair in pairs:
        m = context_match(
            _cos(query_vec, pair.context_vec), params.context_min, params.context_full
        )
        if m <= 0:
            continue
        w = pair.weight * m
        if pair.memory_id is not None:
            add(pair.memory_id, 1.0, w, pair.created_at, "pair", 0.0, pair.pair_id, pair.source)
            injected[pair.memory_id] = max(injected.get(pair.memory_id, 0.0), m)
        for memory_id in same_text(pair.accepted_vec, pair.accepted_output):
            if memory_id != pair.memory_id:
                add(memory_id, 1.0, w, pair.created_at, "pair", 0.0, pair.pair_id, pair.source)
        for memory_id in same_text(pair.rejected_vec, pair.rejected_output):
            add(memory_id, -1.0, w, pair.created_at, "pair", 0.0, pair.pair_id, pair.source)

    # A recall's signals share its query as context: match each recall once.
    reply_match: dict[str, float] = {}

    def replied_to(reply: ReplyFacts) -> float:
        m = reply_match.get(reply.recall_id)
        if m is None:
            m = reply_match[reply.recall_id] = context_match(
                _cos(query_vec, reply.context_vec),
                params.reply_context_min,
                params.reply_context_full,
            )
        return m

    drawn: dict[str, dict[str | None, float]] = {}
    disputed: set[tuple[str | None, str]] = set()
    agreed: set[tuple[str | None, str]] = set()
    said: dict[tuple[str | None, str], ReplyFacts] = {
        (r.recall_id, r.memory_id): r for r in replies
    }
    for rating in ratings:
        m = rating_match(rating, query_vec, params, candidate_vecs.get(rating.memory_id))
        # Whether the reply of its recall contradicts a rating is about that recall, not about
        # how far the rating carries: a rejection the memory's likeness fades still disputes.
        heard = m > 0 or (
            rating.verdict == "rejected" and rating_match(rating, query_vec, params) > 0
        )
        if heard:
            value = VERDICT_VALUE[rating.verdict]
            witness = said.get((rating.recall_id, rating.memory_id))
            agree = 0.0 if witness is None else witness.value * value
            trust = 1.0
            if agree < 0:
                disputed.add((rating.recall_id, rating.memory_id))
                # A rating against what the reply drew on is the likelier mistake; where the
                # reply only left a memory the user accepted, its silence is the weaker word.
                if witness is not None and witness.value > 0:
                    trust = params.conflict_weight
            corroborated = 0.0
            if agree > 0 and witness is not None:
                agreed.add((rating.recall_id, rating.memory_id))
                # Corroboration is about the reply's own question: it counts where that matches.
                corroborated = replied_to(witness)
            if m > 0:
                add(
                    rating.memory_id,
                    value,
                    rating.weight * m * trust,
                    rating.created_at,
                    "rating",
                    corroborated,
                    rating.rating_id,
                    rating.source,
                )

    # A memory a past reply drew on for a matching question (undisputed by a rating) is placed
    # at least at the level of the recall's ``reply_top``-th candidate, scaled by the match,
    # and surfaced if search missed it: the reply used it as one of its best ``reply_top``.
    levels = sorted(relevance.values(), reverse=True)
    anchor = levels[min(params.reply_top, len(levels)) - 1] if levels else 1.0
    # So is a memory the user accepted for nearly the same question (the reply ramp), unless
    # the reply of that recall left it, and only while what it learned in all is a gain.
    accepted = _accepted_levels(ratings, query_vec, params, said, anchor)
    for reply in replies:
        m = replied_to(reply)
        if m > 0 and reply.value < 0:  # "left" is a loss: it carries as a rejection does
            vec = candidate_vecs.get(reply.memory_id)
            m *= carried(reply.value, query_vec, reply.context_vec, vec, params)
        if m > 0:
            w = params.reply_weight * m
            if (reply.recall_id, reply.memory_id) in disputed:
                w *= params.conflict_weight
            key = (reply.recall_id, reply.memory_id)
            add(
                reply.memory_id,
                reply.value,
                w,
                reply.created_at,
                "reply",
                float(key in agreed),
                reply.recall_id,
                reply.source,
            )
            if reply.value > 0 and key not in disputed:
                _raise(drawn.setdefault(reply.memory_id, {}), reply.source, m * anchor)

    for memory_id, found in (extra or {}).items():
        if memory_id in relevance:
            signals.setdefault(memory_id, []).extend(found)

    out: list[LearnedScore] = []
    floor = levels[-1] if levels else 0.0
    own = _own_rejections(ratings, query_vec, params, candidate_vecs)
    unrejected: dict[str, float] = {}  # the score of an own-rejected memory without them
    unmatched_pairs = {p.memory_id for p in pairs if p.memory_id is not None} - set(injected)
    for memory_id in dict.fromkeys([*ids, *injected, *drawn]):
        if memory_id in unmatched_pairs:
            continue
        base = relevance.get(memory_id)
        was_injected = base is None
        base = max(base or 0.0, injected.get(memory_id, 0.0))
        adj = aggregate(
            signals.get(memory_id, ()),
            now=now,
            half_life_days=params.half_life_days,
            min_samples=params.min_samples,
            max_adjustment=params.max_adjustment,
            source_window_s=params.source_window_s,
        )
        # Placed by a reply that drew on it; by an acceptance only while what it learned in
        # all is a gain.
        bound = params.anchor_bound
        placing = [(o, level, bound == "all") for o, level in drawn.get(memory_id, {}).items()]
        rated = accepted.get(memory_id, {}) if adj.value > 0 else {}
        placing += [(o, level, bound != "off") for o, level in rated.items()]
        rel, adj.placed_by = _placed(base, floor, placing, adj, params.max_adjustment)
        if was_injected and rel <= 0:
            continue
        lifted = 0.0
        if rated:  # the level shown is the acceptance's when it placed the memory
            by_rating, _ = _placed(base, floor, placing[-len(rated) :], adj, params.max_adjustment)
            lifted = rel if by_rating == rel > base else 0.0
        score = rel * (1.0 + adj.value)
        if memory_id in own:
            kept = [x for x in signals.get(memory_id, ()) if x.record not in own[memory_id]]
            unrejected[memory_id] = rel * (
                1.0
                + aggregate(
                    kept,
                    now=now,
                    half_life_days=params.half_life_days,
                    min_samples=params.min_samples,
                    max_adjustment=params.max_adjustment,
                    source_window_s=params.source_window_s,
                ).value
            )
        prior = memory_id in decision_notes and adj.value >= 0
        comps = {"learned": round(adj.value, 6), "learned_evidence": round(adj.evidence, 6)}
        for source, share in adj.by_source.items():
            comps[f"learned_{source}"] = round(share, 6)
        if memory_id in injected:
            comps["context_match"] = round(injected[memory_id], 6)
        if lifted and lifted == rel:
            comps["accepted_level"] = round(lifted, 6)
        if adj.placed_by:
            comps["learned_placement"] = round(max(adj.placed_by.values()), 6)
        out.append(
            LearnedScore(
                id=memory_id,
                relevance=rel,
                score=score,
                adjustment=adj,
                prior_decision=prior,
                note=decision_notes[memory_id][1] if prior else rejected_notes.get(memory_id),
                injected=was_injected,
                components=comps,
            )
        )
    out.sort(key=lambda s: (not s.prior_decision, -s.score))
    return rejected_below(out, unrejected)


def _own_rejections(
    ratings: Sequence[RatingFacts],
    query_vec: np.ndarray,
    params: LearnParams,
    candidate_vecs: Mapping[str, np.ndarray],
) -> dict[str, set[str | None]]:
    """The memories their own user rejected for this query (or one nearly the same: where the
    rejection counts at least ``_PLACING_MATCH``), with the ratings that did. On a question
    less like the rejected one, or where the memory is closer to this query than to the
    rejected one (it may be what this one asks for), the rejection only counts within its
    bound."""
    out: dict[str, set[str | None]] = {}
    for r in ratings:
        vec = candidate_vecs.get(r.memory_id)
        if (
            not r.own
            or r.verdict != "rejected"
            or rating_match(r, query_vec, params, vec) < _PLACING_MATCH
            or (
                vec is not None
                and r.context_vec is not None
                and _cos(query_vec, vec) > _cos(r.context_vec, vec) + 1e-6
            )
        ):
            continue
        out.setdefault(r.memory_id, set()).add(r.rating_id)
    return out


def rejected_below(ranked: list[LearnedScore], rejected: Mapping[str, float]) -> list[LearnedScore]:
    """``ranked`` (best first) with each memory of ``rejected`` (by id: its score without its
    own user's rejections) put back where that score ranks it, then moved just below the next
    memory that was not rejected: its score a little under that one's (so that every later
    stage keeps the order), noted, no longer a prior decision. One place, whatever the
    scores; with no such memory below it, it stays. Each carries ``rejected_by_user``."""
    if not rejected:
        return ranked
    for item in ranked:
        if item.id in rejected:
            item.prior_decision = False
            item.components["rejected_by_user"] = 1.0
    ranked = sorted(ranked, key=lambda s: (not s.prior_decision, -rejected.get(s.id, s.score)))
    out: list[LearnedScore] = []
    waiting: list[LearnedScore] = []
    for item in ranked:
        if item.id in rejected:
            waiting.append(item)
            continue
        out.append(item)
        for k, moved in enumerate(waiting, 1):
            moved.score = min(rejected[moved.id], item.score * (1.0 - 1e-3 * k))
            moved.note = "rejected by its user for this question"
        out += waiting
        waiting = []
    return out + waiting
