"""Cheap cues of a sentence that the tension rules (:mod:`engrammar.recall.tensions`) look
for, and the test that spares a pair of sentences the rules when none of them can hold.

Every rule that reports a tension needs at least one of: a contact on both sides, a change
the newer sentence announces and the older does not, a status word on both sides, a break-up,
"more of a ... person", a job or studies ended, opposite polarity about shared words, an
antonym about shared words, or the same polarity about a definite subject (the value rules).
``may_tell`` is that disjunction; it is computed from what each sentence holds alone (cached
per sentence), so a batch of many similar messages skips most sentence pairs early.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .tension_compare import contacts, fuzzy_shared
from .tension_parse import Parsed, parse
from .tension_words import ANTONYM_OF, STATUS

# The end of being together.
BREAK_UP = re.compile(
    r"\b(?:broke up|split up|separated|divorced|divorcing|divorce|dumped|my ex|our divorce"
    r"|not together|ended (?:it|things)|called off the engagement|call(?:ed|ing) it quits"
    r"|fell out|falling out|(?:we|i) split\b|\bbroke (?:it|things) off\b|\bseparate ways\b"
    r"|(?:we|i) are (?:over|done|through)|it (?:'s|is) over between"
    r"|(?:have|has|had) not (?:spoken|talked)|not (?:speaking|talking) to each other"
    r"|call(?:ed)? it a day)\b"
)
STUDY = re.compile(
    r"\b(?:student|studying|trainee|apprentice|at (?:uni|university|college|school))\b"
    r"|\b(?:doing|year of) (?:a|an|my|the) (?:\w+ ){0,2}(?:degree|course|phd|masters|mba|apprenticeship)\b"
)
STUDY_END = re.compile(
    r"\b(?:graduated|dropped out|qualified as|finished (?:uni|university|college|school|my degree"
    r"|my studies|my course))\b"
)
# "more of a dog person", "more of an autumn fan": a liking said as a kind of person.
MORE_OF = re.compile(r"\bmore of an? (\w+) (person|fan|type|girl|guy|man|woman)\b")
# Verbs of a turn in a game or an exchange: what follows is a move, not a value that holds.
TURNS = frozenset("respond responds reply replies answer answers guess guesses".split())


@dataclass(frozen=True)
class Cues:
    """What one sentence offers the tension rules (see the module docstring)."""

    words: frozenset[str]
    changes: frozenset[str]
    contact: bool
    status: bool
    break_up: bool
    more_of: bool
    study: bool
    study_end: bool
    turns: bool
    antonyms: tuple[str, ...]  # its words that have an antonym


@lru_cache(maxsize=32768)  # as many as parse keeps
def cues(text: str) -> Cues:
    """The cues of one sentence (as ``parse`` reads it)."""
    p = parse(text)
    joined = " ".join(p.words)
    words = frozenset(p.words)
    return Cues(
        words=words,
        changes=frozenset(p.changes),
        contact=bool(contacts(p)),
        status=bool(words & STATUS),
        break_up=BREAK_UP.search(joined) is not None,
        more_of=MORE_OF.search(joined) is not None,
        study=STUDY.search(joined) is not None,
        study_end=STUDY_END.search(joined) is not None,
        turns=bool(words & TURNS),
        antonyms=tuple(w for w in p.words if w in ANTONYM_OF),
    )


def may_tell(sa: str, sb: str, a: Parsed, b: Parsed, subjects: tuple[str, str]) -> bool:
    """False only when no tension rule can hold for the older sentence ``sa`` (parsed ``a``)
    and the newer ``sb`` (``b``) whose subjects are ``subjects``."""
    ca, cb = cues(sa), cues(sb)
    if (
        (ca.contact and cb.contact)
        or cb.changes - ca.changes
        or (ca.status and cb.status)
        or cb.break_up
        or cb.more_of
        or (a.job_frame and b.job_change and not a.job_change)
        or (ca.study and cb.study_end)
    ):
        return True
    same = a.polarity == b.polarity
    if (
        same
        and "neutral" not in subjects
        and "other:you" not in subjects
        and not (ca.turns and cb.turns)
    ):
        return True
    opposite = any(ANTONYM_OF[w] & cb.words and w not in cb.words for w in ca.antonyms)
    return (not same or opposite) and bool(fuzzy_shared(a.content, b.content))
