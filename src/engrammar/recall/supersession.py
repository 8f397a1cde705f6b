"""Facts that change: which memory is current, and how that moves a ranking (pure functions).

When a newer memory contradicts an older one (a tension with a known ``newer`` side, see
:mod:`engrammar.recall.tensions`), the older one stops being current at the newer one's time:
it gets ``valid_until`` (that time) and ``superseded_by`` (the newer one's id). It stays
stored and recallable; only its rank changes:

* a question about the present ranks the current memory above the ones it replaced: each
  superseded candidate hands its score on to the memory that replaced it (brought into the
  ranking if search missed it: "Where do I live?" finds "I live in Paris", and "I moved to
  Berlin" is what answers it) and keeps ``superseded_factor`` of its own (all of it by
  default), below the memory that replaced it;
* a question about the past ("where did I live before Berlin?", "what was my old ...",
  "used to"; :func:`~engrammar.recall.query.asks_about_past`) ranks a superseded memory
  above the memory that replaced it;
* ``as_of`` (a time) ranks by what was current then: memories created later are left out and
  a memory replaced only after ``as_of`` counts as current.

Order of events: within one ``add`` call, message order; across calls, the timestamp, then
the order of insertion (see :class:`Version` ``seq``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .text import NUMBER_WORDS, STOP_WORDS, names, terms
from .text import stem as _stem

__all__ = [
    "Replacement",
    "Version",
    "current_at",
    "merge_replacements",
    "new_amount",
    "newer_first",
    "rank_by_validity",
]


def newer_first(
    ranked: Sequence[str],
    scores: Mapping[str, float],
    versions: Mapping[str, Version],
    vectors: Mapping[str, np.ndarray],
    min_similarity: float,
    min_ratio: float,
    query_terms: Callable[[str], set[str]] | None = None,
    min_term_share: float = 0.0,
    updates_amount: Callable[[str, str], bool] | None = None,
    stay: Collection[str] = (),
) -> list[str]:
    """``ranked`` with each memory moved above the older ones it restates: a later memory
    whose embedding is within ``min_similarity`` of an earlier one ranked above it, and whose
    score is at least ``min_ratio`` of that one's, goes right before it ("I have 20 postcards"
    / "I've added 25 postcards since": the later statement updates the earlier).

    ``query_terms`` gives a memory's share of the query's terms: a later memory then restates
    an earlier one only if it holds at least ``min_term_share`` of the query terms the earlier
    one holds. Likeness alone also lifts a later message that is merely on the same subject
    ("any tips for my tank?" after "my tank has 10 neon tetras") above the fact asked about.
    ``updates_amount(a, b)`` lets a pair through that test when ``b`` gives a new amount for
    what ``a`` counted (see :func:`new_amount`): "I've completed 30 videos so far for Corey's
    series" restates "I've been watching Corey Schafer's Python programming series, and I've
    completed 20 videos so far" though it repeats fewer of the question's words.

    A memory in ``stay`` never moves up (others may still move above it): feedback lowered
    it for questions like this one, and a restatement's recency does not outweigh that.

    For questions about the speaker's own present (see :func:`asks_about_own_facts`); unlike
    :func:`rank_by_validity` it needs no detected contradiction.
    """
    known = [i for i in ranked if i in vectors and i in versions]
    if len(known) < 2:
        return list(ranked)
    index = {m: k for k, m in enumerate(known)}
    sims = np.stack([vectors[m] for m in known]) @ np.stack([vectors[m] for m in known]).T
    when = {m: (versions[m].created_at, versions[m].seq) for m in known}
    order = list(ranked)
    for _ in range(len(order)):
        moved = False
        for i, a in enumerate(order):
            if a not in index:
                continue
            for j in range(i + 1, len(order)):
                b = order[j]
                if (
                    b in index
                    and b not in stay
                    and when[b] > when[a]
                    and _apart(versions[a], versions[b])
                    and sims[index[a], index[b]] >= min_similarity
                    and scores[b] >= min_ratio * scores[a]
                    and (
                        _restates_terms(a, b, query_terms, min_term_share)
                        or (updates_amount is not None and updates_amount(a, b))
                    )
                ):
                    order.insert(i, order.pop(j))
                    moved = True
                    break
            if moved:
                break
        if not moved:
            break
    return order


def _restates_terms(
    a: str, b: str, query_terms: Callable[[str], set[str]] | None, min_share: float
) -> bool:
    """Whether ``b`` holds at least ``min_share`` of the query terms ``a`` holds (always, when
    ``a`` holds none or no terms are given)."""
    if not query_terms or min_share <= 0:
        return True
    held = query_terms(a)
    if not held:
        return True
    return len(held & query_terms(b)) >= min_share * len(held)


# A sentence ends at ".", "!" or "?" before a space; a question states no amount.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# "one" counts only before a unit: "pick one up", "the Anker one" count nothing.
_CARDINALS = {w: str(n) for w, n in NUMBER_WORDS.items() if w != "one"}
_UNITS = r"(?:minute|hour|day|night|week|weekend|month|year|time|season|game|match|session)"
# An amount and the word after it: a number ("20 videos", "$1,500", "4.5 hours", "3-2"), a
# number word ("six times"), or "a" / "an" / "one" before a unit ("a month": one month).
_AMOUNT = re.compile(
    rf"(?P<cur>[$\u00a3\u20ac])?\b(?P<num>\d+(?:[.,:/-]\d+)*|{'|'.join(_CARDINALS)}"
    rf"|(?:a|an|one)(?=\s+{_UNITS}s?\b))\b(?P<pct>%)?(?P<after>(?:\s+[A-Za-z]+){{0,3}})",
    re.IGNORECASE,
)
# Words between an amount and what it counts: "20 more videos", "3 new bikes".
_BETWEEN = frozenset("more new extra other additional different of whole full total".split())
_SCORE = re.compile(r"^\d+-\d+$")
_ZERO_MINUTES = re.compile(r":00$")
# Of the question's words the earlier sentence holds (what it counted), the share the later
# one must repeat: lower than ``recency_term_share``, since a new figure for the same unit
# already says it is the same count.
_AMOUNT_TERM_SHARE = 0.5


def _names_another(sentence: str, asked: frozenset[tuple[str, ...]]) -> bool:
    """Whether ``sentence`` names another thing of the kind the question names: "the Austin
    Film Festival" when the question asks about "the Seattle International Film Festival"
    (the same last word, other words); "the Film Festival" is a short form of it."""
    return any(n[-1] == q[-1] and not set(n) <= set(q) for n in names(sentence) for q in asked)


def _amount(m: re.Match[str]) -> tuple[str, str]:
    """(value, unit) of one ``_AMOUNT`` match: "six times" -> ("6", "time"), "3-2" -> ("3-2",
    "score"), "$50" -> ("50", "$"), "a month" -> ("1", "month")."""
    num = m["num"].lower()
    value = _CARDINALS.get(num, "1" if num in ("a", "an", "one") else num.replace(",", ""))
    value = _ZERO_MINUTES.sub("", value)  # "7:00 pm" is "7 pm"
    if m["cur"] or m["pct"]:
        return value, m["cur"] or "%"
    if _SCORE.match(num):
        return value, "score"
    after = [w.lower() for w in m["after"].split()]
    unit = next((w for w in after if w not in _BETWEEN), "")
    return value, _stem(unit) if unit and unit not in STOP_WORDS else ""


@lru_cache(maxsize=4096)
def _counted(text: str) -> tuple[tuple[frozenset[str], frozenset[tuple[str, str]], str], ...]:
    """The sentences of ``text`` that count something: (their terms, their (value, unit)
    amounts, the sentence); questions left out."""
    out = []
    for sentence in _SENTENCE_END.split(text):
        if sentence.rstrip().endswith("?"):
            continue
        found = frozenset(a for a in map(_amount, _AMOUNT.finditer(sentence)) if a[1])
        if found:
            out.append((frozenset(terms(sentence)), found, sentence))
    return tuple(out)


def new_amount(
    older: str,
    newer: str,
    asked: set[str],
    named: frozenset[tuple[str, ...]] = frozenset(),
) -> bool:
    """Whether ``newer`` gives a new figure for something ``older`` counted: a sentence of each
    counts the same unit, the newer one with a value the older one does not have, and the newer
    sentence repeats at least half of the question's words (``asked``, stemmed; the units
    aside) that the older sentence holds ("I've worn my new black Converse sneakers four times
    already" / "I just wore my new black Converse ..., so that's six times now"; "it's been a
    month now" in my apartment in Harajuku / "I've been living in Harajuku for 3 months";
    "we're 3-2 so far" / "a 5-2 record"). A later statement on the same subject without such a
    figure ("any tips for my tank?"), counting something else ("I've run 3 marathons" / "I
    bought 2 running shoes"), or sharing only the unit or a word or two of a longer statement
    ("I earned $420 at the Downtown Farmers Market on my most recent visit" / "I recently did
    well at the Spring Fling Market, $230"), is not an update; nor is one naming another
    thing of the kind the question names (``named``, the question's
    :func:`~engrammar.recall.text.names`: "How many months ago did I attend the Seattle
    International Film Festival?": "I attended the Austin Film Festival, where I watched 12
    films" does not update "I attended SIFF for a week, watched 8 films")."""
    if not asked:
        return False
    before = []
    for held, counts, _ in _counted(older):
        topic = held & asked - {u for _, u in counts}
        if topic:
            before.append((topic, counts))
    if not before:
        return False
    for held, found, sentence in _counted(newer):
        if named and _names_another(sentence, named):
            continue
        shared = held & asked - {u for _, u in found}
        for topic, counts in before:
            if len(shared & topic) < max(1.0, _AMOUNT_TERM_SHARE * len(topic)):
                continue
            units = {u for _, u in counts}
            if any(u in units and (v, u) not in counts for v, u in found):
                return True
    return False


def _apart(a: Version, b: Version) -> bool:
    """Whether ``b`` can update ``a``: said in another conversation, or either one's is not
    known. Within one session a later message on the same matter is mostly a follow-up ("and
    which case fits it?"), not a new version of the fact."""
    return a.session is None or b.session is None or a.session != b.session


@dataclass(frozen=True)
class Version:
    """What ranking needs to know of a memory's time: when it was said, whether and when it
    stopped being current (``valid_until``) and what replaced it (``superseded_by``)."""

    id: str
    created_at: float
    valid_until: float | None = None
    superseded_by: str | None = None
    seq: int = 0  # order among memories of one time (message order, then insertion)
    session: str | None = None  # the conversation it was said in, when known


@dataclass(frozen=True)
class Replacement:
    """``old`` stopped being current at ``valid_until`` because ``new`` replaced it."""

    old: str
    new: str
    valid_until: float


def merge_replacements(
    found: Iterable[Replacement], stored: Mapping[str, Version]
) -> list[Replacement]:
    """The replacements to write: for each old memory the earliest (a memory stopped being
    current when it was first replaced), and only where it is earlier than what is stored."""
    best: dict[str, Replacement] = {}
    for r in found:
        if r.old == r.new:
            continue
        prev = best.get(r.old)
        if prev is None or (r.valid_until, r.new) < (prev.valid_until, prev.new):
            best[r.old] = r
    out = []
    for old, r in sorted(best.items()):
        have = stored.get(old)
        if have is not None and have.valid_until is not None and have.valid_until <= r.valid_until:
            continue
        out.append(r)
    return out


def current_at(version: Version, as_of: float | None) -> bool:
    """Whether the memory was current at ``as_of`` (now when None)."""
    if as_of is not None and version.created_at > as_of:
        return False
    if version.valid_until is None:
        return True
    return as_of is not None and version.valid_until > as_of


def rank_by_validity(
    scores: Mapping[str, float],
    versions: Mapping[str, Version],
    past: bool,
    as_of: float | None = None,
    superseded_factor: float = 0.5,
    max_hops: int = 5,
) -> tuple[dict[str, float], dict[str, str]]:
    """Scores adjusted for what is current; the second value says why a score moved
    (``id -> "superseded by <id>"`` / ``"replaces <id>"`` / ``"was current before <id>"``).

    ``past``: the question asks how things were. ``scores`` are the ranking's candidates; ``versions`` holds them and the memories that
    replaced them (follow ``superseded_by`` up to ``max_hops``). A replacing memory missing
    from ``scores`` is added with the score handed on. Memories created after ``as_of`` are
    dropped.
    """
    out = {
        i: s
        for i, s in scores.items()
        if i not in versions or as_of is None or versions[i].created_at <= as_of
    }
    why: dict[str, str] = {}
    for old_id, score in sorted(scores.items(), key=lambda kv: -kv[1]):
        old = versions.get(old_id)
        if old is None or old_id not in out or current_at(old, as_of):
            continue
        # The memory current at ``as_of``: follow the replacements as far as they had happened.
        head, seen = old, {old_id}
        for _ in range(max_hops):
            nxt = versions.get(head.superseded_by or "")
            if nxt is None or nxt.id in seen or (as_of is not None and nxt.created_at > as_of):
                break
            head, seen = nxt, seen | {nxt.id}
            if current_at(nxt, as_of):
                break
        if head is old:
            continue
        if past:
            # The older statement answers a question about how things were.
            if head.id in out and out[head.id] >= out[old_id]:
                out[old_id] = out[head.id] + 1e-3
                why[old_id] = f"was current before {head.id}"
            continue
        handed = score + 1e-3
        if out.get(head.id, float("-inf")) < handed:
            out[head.id] = handed
            why[head.id] = f"replaces {old_id}"
        out[old_id] = min(score * superseded_factor, out[head.id] - 1e-3)
        why[old_id] = f"superseded by {head.id}"
    return out, why
