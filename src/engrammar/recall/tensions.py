"""Tensions: pairs of memories that really contradict each other (pure functions, no LLM).

Topic distance is not contradiction: "I live in Paris" and "I love the cafes in Paris" are
close and compatible, "I live in Paris" and "I moved to Berlin" are farther apart and in
tension. A pair is checked only when its embeddings are similar enough to be about the same
thing; then three cues decide, each requiring the same subject (not "I" against "my sister"):

* **negation**: the statements' polarity differs (negators such as *not*, *never*, *n't*;
  affect words such as *love* / *hate*, *boring* / *fascinating*) while what they are about is
  the same (one side's content is contained in the other's);
* **changed value**: the sentences are the same frame with one slot changed ("My favourite
  colour is blue" / "... green"), and the slot is single-valued: numbers, dates, days and
  months, or a frame about residence, work, names, birthdays, favourites, or a copula
  ("X is Y"). "I bought a laptop" / "I bought a phone" is not a tension;
* **superseded**: the newer statement announces a change (*moved*, *switched*, *quit*, *no
  longer*, *now*, *new* ...) about something the older one states.

Additive wording (*also*, *too*, *either*, *as well*) and an older statement that already
speaks of the past (*used to*) rule a tension out.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..models import Tension
from .text import STOP_WORDS, _stem

__all__ = ["Statement", "agreed_side", "detect_tension", "find_tensions"]

_NEGATORS = frozenset("not no never none nobody nothing neither nor without hardly cannot".split())
_POSITIVE = frozenset(
    """love loves loved like likes liked enjoy enjoys enjoyed adore adores prefer prefers happy
    glad fond fascinating fascinated great good wonderful amazing interesting fun""".split()
)
_NEGATIVE = frozenset(
    """hate hates hated dislike dislikes disliked detest detests despise loathe unhappy sad
    boring bored awful terrible bad horrible annoying annoyed""".split()
)
_FREQUENCY = frozenset("always usually often sometimes rarely ever".split())
_ADDITIVE = frozenset("also too either another".split())
# A change announced by the newer statement; "new" counts only for something the older names.
_CHANGE = frozenset(
    """moved move relocated switched switch changed quit stopped left sold became become
    anymore longer now migrated replaced started married divorced retired resigned""".split()
)
_FUNCTIONAL = frozenset(
    """live lives living lived born name named called favorite favourite birthday deadline
    age old work works working worked job employed married manager boss address""".split()
)
_COPULA = frozenset("is are was were".split())
_RELATIONS = frozenset(
    """sister brother wife husband son daughter mom mother dad father friend kids kid children
    child parents partner boyfriend girlfriend cousin aunt uncle grandma grandmother grandpa
    grandfather neighbor neighbour colleague coworker roommate dog cat""".split()
)
_ADJ_BEFORE_RELATION = frozenset("best older younger little big new old twin".split())
_STATUS = frozenset("single married divorced engaged widowed separated".split())
_MONTHS = frozenset(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()
)
_NUMBER_WORDS = frozenset(
    """one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty
    hundred first second third fourth fifth sixth seventh eighth ninth tenth""".split()
)
_RESIDENCE = frozenset("live lives living lived moved move relocated home based".split())
_LEADING = (
    _CHANGE
    | _FREQUENCY
    | frozenset("so well yesterday today recently lately honestly actually".split())
)
_NOT_CONTENT = (
    _NEGATORS | _POSITIVE | _NEGATIVE | _FREQUENCY | _ADDITIVE | _CHANGE | {"really", "very"}
)

_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+(?:[.,:]\d+)*")
_CONTRACTIONS = {
    "n't": ["not"],
    "'m": ["am"],
    "'re": ["are"],
    "'ve": ["have"],
    "'ll": ["will"],
    "'d": ["would"],
}
_IRREGULAR_NOT = {"can't": ["can", "not"], "won't": ["will", "not"], "cannot": ["can", "not"]}


# Cosine above which a reply is taken to be about a statement at all.
_ABOUT_SIMILARITY = 0.4
_STOP_STEMS = frozenset(_stem(w) for w in STOP_WORDS)


@dataclass(frozen=True)
class Statement:
    """A memory as the tension detector sees it."""

    id: str
    text: str
    created_at: float = 0.0


@dataclass
class _Parsed:
    words: list[str]  # lower-cased tokens, contractions split
    caps: set[str]  # lower-cased words written capitalised (not sentence-initial)
    stems: list[str]  # stems of ``words`` (the alignment sequence)
    content: set[str]  # stems of content words (no stop, polarity or change words)
    polarity: int
    subject: str
    additive: bool
    used_to: bool
    changes: set[str]


def _split(text: str) -> tuple[list[str], set[str]]:
    words: list[str] = []
    caps: set[str] = set()
    for i, m in enumerate(_TOKEN.finditer(text)):
        raw = m.group(0)
        low = raw.lower()
        if i > 0 and raw[0].isupper() and low not in ("i", "i'm", "i've", "i'd", "i'll"):
            caps.add(low.split("'")[0])
        if low in _IRREGULAR_NOT:
            words += _IRREGULAR_NOT[low]
            continue
        for suffix, repl in _CONTRACTIONS.items():
            if low.endswith(suffix) and len(low) > len(suffix):
                words += [low[: -len(suffix)], *repl]
                break
        else:
            if low.endswith("'s"):
                words += [low[:-2], "'s"]
            else:
                words.append(low)
    return words, caps


def _subject(words: list[str], text: str) -> str:
    """``self`` (I, we, my ...), ``other:<who>`` (my sister, Melanie, she) or ``neutral``."""
    skip = 0
    while skip < len(words) - 1 and words[skip] in _LEADING:
        skip += 1
    words = words[skip:]
    if not words:
        return "neutral"
    first = words[0]
    if first in ("i", "me", "we", "us", "our"):
        return "self"
    if first == "my":
        rest = [w for w in words[1:3] if w not in _ADJ_BEFORE_RELATION]
        if rest and rest[0] in _RELATIONS:
            return f"other:{rest[0]}"
        return "self"
    if first in ("he", "she", "they", "his", "her", "their"):
        return "other:pronoun"
    # A capitalised first word that is no function word and no gerund is taken for a name.
    original = _TOKEN.findall(text)[skip] if len(_TOKEN.findall(text)) > skip else ""
    if original[:1].isupper() and first not in STOP_WORDS and not first.endswith("ing"):
        return f"other:{first}"
    return "neutral"


def _parse(text: str) -> _Parsed:
    words, caps = _split(text)
    stems = [_stem(w) for w in words]
    negations = sum(1 for w in words if w in _NEGATORS)
    sentiment = 1
    for w in words:
        if w in _NEGATIVE:
            sentiment = -sentiment
    polarity = sentiment * (-1 if negations % 2 else 1)
    content = {
        _stem(w)
        for w in words
        if w not in STOP_WORDS and w not in _NOT_CONTENT and w != "'s" and len(w) > 1
    }
    joined = " ".join(words)
    changes = {w for w in words if w in _CHANGE}
    if "no longer" in joined:
        changes.add("no longer")
    for i, w in enumerate(words[:-1]):
        if w == "new":
            changes.add(f"new {_stem(words[i + 1])}")
    return _Parsed(
        words=words,
        caps=caps,
        stems=stems,
        content=content,
        polarity=polarity,
        subject=_subject(words, text),
        additive=any(w in _ADDITIVE for w in words) or "as well" in joined,
        used_to="used to" in joined,
        changes=changes,
    )


def _fuzzy_shared(a: set[str], b: set[str]) -> set[str]:
    shared = a & b
    for x in a - shared:
        for y in b:
            if len(x) >= 5 and len(y) >= 5 and x[:5] == y[:5]:
                shared.add(x)
                break
    return shared


def _subjects_agree(a: str, b: str) -> bool:
    if a == b:
        return True
    return (
        "neutral" in (a, b)
        and not (a.startswith("other:") and b == "self")
        and not (b.startswith("other:") and a == "self")
    )


def _is_value(words: Sequence[str], caps: set[str]) -> bool:
    return bool(words) and all(
        w.isdigit()
        or w in _NUMBER_WORDS
        or w in _MONTHS
        or w in caps
        or any(c.isdigit() for c in w)
        for w in words
        if w not in ("a", "an", "the")
    )


def _changed_slot(a: _Parsed, b: _Parsed) -> tuple[list[str], list[str]] | None:
    """The one replaced slot if the sentences are the same frame otherwise."""
    sm = difflib.SequenceMatcher(a=a.stems, b=b.stems, autojunk=False)
    ops = [op for op in sm.get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > 3 or j2 - j1 > 3:
        return None
    same = sum(size for *_, size in sm.get_matching_blocks())
    if same < 2 or same < 0.5 * max(len(a.stems), len(b.stems)):
        return None
    return a.words[i1:i2], b.words[j1:j2]


def detect_tension(
    older: Statement, newer: Statement, similarity: float, min_similarity: float = 0.35
) -> Tension | None:
    """Whether ``newer`` contradicts ``older`` (see the module docstring); ``similarity`` is
    the cosine of their embeddings. The statements are ordered by ``created_at`` first."""
    if newer.created_at < older.created_at:
        older, newer = newer, older
    if similarity < min_similarity:
        return None
    a, b = _parse(older.text), _parse(newer.text)
    if not _subjects_agree(a.subject, b.subject) or a.additive or b.additive or a.used_to:
        return None
    shared = _fuzzy_shared(a.content, b.content)
    only_a = a.content - shared - {y for y in a.content if y in _fuzzy_shared({y}, b.content)}
    only_b = b.content - _fuzzy_shared(b.content, a.content)
    newer_id = newer.id if newer.created_at > older.created_at else None

    def make(kind: str, confidence: float, reason: str) -> Tension:
        return Tension(
            a=older.id,
            b=newer.id,
            kind=kind,
            confidence=round(min(1.0, confidence), 3),
            newer=newer_id,
            reason=reason,
        )

    # Superseded: the newer one announces a change about something the older one states.
    announced = {
        c
        for c in b.changes - a.changes
        if not c.startswith("new ") or c.split(" ", 1)[1] in a.content
    }
    same_attribute = bool(shared) or (
        bool(set(a.words) & _RESIDENCE)
        and bool(set(b.words) & _RESIDENCE)
        and bool(a.caps)
        and bool(b.caps)
    )
    status_change = (
        (set(a.words) & _STATUS)
        and (set(b.words) & _STATUS)
        and (set(a.words) & _STATUS != set(b.words) & _STATUS)
    )
    if announced and same_attribute:
        what = ", ".join(sorted(announced))
        return make("superseded", 0.5 + 0.5 * similarity, f"newer statement says '{what}'")
    if status_change:
        return make("changed_value", 0.5 + 0.5 * similarity, "status changed")
    # Negation: opposite polarity about the same thing.
    if a.polarity != b.polarity and shared and (not only_a or not only_b):
        return make("negation", 0.4 + 0.6 * similarity, "opposite statements about the same thing")
    # Changed value: one slot of the same frame differs, and the slot holds a single value.
    if a.polarity == b.polarity:
        slot = _changed_slot(a, b)
        if slot is not None:
            old_value, new_value = slot
            frame = set(a.words) - set(old_value)
            single_valued = (_is_value(old_value, a.caps) and _is_value(new_value, b.caps)) or bool(
                frame & (_FUNCTIONAL | _COPULA)
            )
            if single_valued:
                return make(
                    "changed_value",
                    0.4 + 0.6 * similarity,
                    f"'{' '.join(old_value)}' became '{' '.join(new_value)}'",
                )
    return None


def find_tensions(
    statements: Sequence[Statement], vectors: np.ndarray, min_similarity: float
) -> list[Tension]:
    """Every contradicting pair among ``statements`` (``vectors[i]`` embeds statement i)."""
    out: list[Tension] = []
    if len(statements) < 2:
        return out
    sims = vectors @ vectors.T
    for i in range(len(statements)):
        for j in range(i + 1, len(statements)):
            if sims[i, j] < min_similarity:
                continue
            found = detect_tension(statements[i], statements[j], float(sims[i, j]), min_similarity)
            if found is not None:
                out.append(found)
    return sorted(out, key=lambda t: -t.confidence)


def agreed_side(reply: str, a: str, b: str, cos_a: float, cos_b: float) -> int | None:
    """Which statement the reply sides with: 0 for ``a``, 1 for ``b``, None if unclear.

    The words that tell the two apart (the changed value, the affect word, the change) count
    first; the reply's polarity about their shared subject next; the embedding similarity
    breaks a tie only when it is clear.
    """
    pa, pb, pr = _parse(a), _parse(b), _parse(reply)
    reply_words = set(pr.stems) | set(pr.words)
    shared = _fuzzy_shared(pa.content, pb.content)
    stems_a = set(pa.stems) - _STOP_STEMS
    stems_b = set(pb.stems) - _STOP_STEMS
    distinct_a, distinct_b = stems_a - stems_b, stems_b - stems_a
    # A value (a name, a number, a date) tells the sides apart better than a frame word.
    values_a = {_stem(w) for w in pa.words if _is_value([w], pa.caps)}
    values_b = {_stem(w) for w in pb.words if _is_value([w], pb.caps)}
    score_a = float(sum(2 if t in values_a else 1 for t in distinct_a & reply_words))
    score_b = float(sum(2 if t in values_b else 1 for t in distinct_b & reply_words))
    if pa.polarity != pb.polarity and shared & set(pr.stems):
        if pr.polarity == pa.polarity:
            score_a += 1
        else:
            score_b += 1
    if score_a != score_b:
        return 0 if score_a > score_b else 1
    # Without a telling word, only a reply clearly about the matter and clearly nearer one side.
    if max(cos_a, cos_b) >= _ABOUT_SIMILARITY and abs(cos_a - cos_b) > 0.05:
        return 0 if cos_a > cos_b else 1
    return None
