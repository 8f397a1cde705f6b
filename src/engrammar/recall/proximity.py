"""Query words said close together in a memory (pure functions, no I/O).

BM25 scores each of a query's words on its own: "the dog bed for Max" matches a message that
says "dog" in one sentence, "bed" in a second and "Max" in a third as well as one that says
"a new dog bed for my retriever, Max". A message that names the question's words within a few
words of one another is far more often the one that tells the asked fact, so each candidate
gains in proportion to the share of the query's word pairs it says close together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from itertools import combinations

from .fusion import Candidate
from .text import STOP_WORDS, _stem

__all__ = ["PROXIMITY_CHARS", "QueryWords", "pair_share", "proximity_boost", "word_positions"]

# A message is read this far for its pairs: a pasted document or a long answer would cost
# milliseconds to scan whole, and its search score already comes from its best window.
PROXIMITY_CHARS = 4000


class QueryWords:
    """A query's index terms, and one pattern finding the words that may stem to them.

    A stem is a prefix of most words it comes from once its last letter is dropped ("hike"
    for "hiking", "happi" for "happy"), so the pattern looks for those prefixes and only the
    words it finds are stemmed: scanning a message costs one regular-expression pass instead
    of tokenising and stemming every word (1-2 ms a recall on LongMemEval scopes, against
    6-8 ms).
    """

    def __init__(self, query_terms: Sequence[str]) -> None:
        self.terms = list(dict.fromkeys(query_terms))
        prefixes = sorted({t[: max(3, len(t) - 1)] if len(t) > 3 else t for t in self.terms})
        alternation = "|".join(re.escape(p) for p in prefixes if p) or "(?!)"  # none: no match
        self.pattern = re.compile(rf"(?<![0-9a-z])(?:{alternation})[0-9a-z]*(?:'[a-z]+)?")


def word_positions(words: QueryWords, text: str) -> dict[str, list[int]]:
    """Where in ``text`` each of the query's terms is said, as word numbers (counted by the
    spaces and line breaks before it), ascending; terms never said are missing."""
    low = text.lower()
    wanted = set(words.terms)
    where: dict[str, list[int]] = {}
    count, last = 0, 0
    for match in words.pattern.finditer(low):
        word = match.group()
        if "'" in word:
            word = word.split("'", 1)[0]
        if word in STOP_WORDS:
            continue
        term = _stem(word)
        if term not in wanted:
            continue
        count += low.count(" ", last, match.start()) + low.count("\n", last, match.start())
        last = match.start()
        where.setdefault(term, []).append(count)
    return where


def pair_share(words: QueryWords, where: Mapping[str, list[int]], window: int) -> float:
    """The share of the pairs of the query's terms (at least two) said at most ``window``
    words apart, in either order (``where`` from :func:`word_positions`); 0 for a query of
    fewer than two terms."""
    n = len(words.terms)
    if n < 2 or len(where) < 2:
        return 0.0
    said = [t for t in words.terms if t in where]
    close = sum(1 for a, b in combinations(said, 2) if _within(where[a], where[b], window))
    return close / (n * (n - 1) / 2)


def _within(xs: list[int], ys: list[int], window: int) -> bool:
    """Whether some position of ``xs`` is at most ``window`` from some position of ``ys``
    (both ascending): one merge pass."""
    i = j = 0
    while i < len(xs) and j < len(ys):
        if abs(xs[i] - ys[j]) <= window:
            return True
        if xs[i] < ys[j]:
            i += 1
        else:
            j += 1
    return False


def proximity_boost(
    cands: list[Candidate],
    query_terms: Sequence[str],
    contents: Mapping[str, str],
    weight: float,
    window: int,
) -> list[Candidate]:
    """Multiply each candidate's relevance by ``1 + weight x`` :func:`pair_share` of its
    content (the first ``PROXIMITY_CHARS`` characters; ``window`` in words); the gain is the
    ``proximity`` component. Candidates without content are left alone. Best first again."""
    if weight <= 0 or len(set(query_terms)) < 2:
        return cands
    words = QueryWords(query_terms)
    touched = False
    for cand in cands:
        text = contents.get(cand.id)
        if not text:
            continue
        share = pair_share(words, word_positions(words, text[:PROXIMITY_CHARS]), window)
        if share <= 0:
            continue
        factor = 1.0 + weight * share
        cand.relevance *= factor
        cand.components["proximity"] = round(factor - 1.0, 6)
        cand.components["relevance"] = round(cand.relevance, 6)
        touched = True
    return sorted(cands, key=lambda c: -c.relevance) if touched else cands
