"""What a query says beyond its words, read once per call (pure functions, no I/O).

:func:`parse_query` reads the time a query names ("in October 2023", "two weeks ago") and
whether it asks how things were or how the asker's own facts stand now, and whose words (the
asker's or the assistant's) it asks about; ranking passes the
:class:`Query` down instead of reading the text again. :func:`time_match` and
:func:`sequence_support` are the refinement stage's evidence of date and conversation.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from .fusion import Candidate
from .text import topic_terms
from .timeref import relative_time_range

__all__ = [
    "Query",
    "parse_query",
    "query_time_range",
    "sequence_support",
    "time_match",
    "whose_words",
]

_DAY = 86_400.0
# A named time ending less than this before the question reaches it ("this year" ends now,
# give or take the rounding of its end).
_NOW_SLACK = 60.0
# An event is usually told within days after it happened (and a plan a few days before), so
# a memory dated just outside the named span still counts fully, and one within a month
# after it counts half.
_MARGIN_DAYS = 4.0
_TAIL_DAYS = 30.0

_MONTH_NUMBER = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTH_NUMBER.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTH_NUMBER["sept"] = 9
_MON = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"((?:19|20)\d\d)"
_DAY_NUM = r"(\d{1,2})(?:st|nd|rd|th)?"
_PATTERNS = (
    ("dmy", re.compile(rf"\b{_DAY_NUM}\s+(?:of\s+)?{_MON}\.?,?\s+{_YEAR}\b")),
    ("mdy", re.compile(rf"\b{_MON}\.?\s+{_DAY_NUM},?\s+{_YEAR}\b")),
    ("iso", re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")),
    ("my", re.compile(rf"\b{_MON}\.?,?\s+(?:of\s+)?{_YEAR}\b")),
    ("y", re.compile(rf"\b(?:in|of|during|since|by|from|until)\s+{_YEAR}\b")),
)


# What the assistant said, done or gave: "you recommended", "did you say", "your advice".
_ASSISTANT_SAID = re.compile(
    r"\byou(?:'ve|'d)?\s+(?:\w+\s+){0,2}?(?:said|told|suggested|recommended|mentioned|gave|"
    r"provided|listed|wrote|proposed|shared|explained|described|called|named|created|"
    r"came up with|helped|made)\b"
    r"|\bdid you\s+(?:\w+\s+)?(?:say|tell|suggest|recommend|mention|give|provide|list|write|"
    r"propose|share|explain|describe|call|name|create)\b"
    r"|\byour\s+(?:\w+\s+)?(?:suggestion|recommendation|answer|list|advice|response|"
    r"explanation|idea|tip)s?\b",
    re.IGNORECASE,
)
# A past conversation as such ("our last chat", "we discussed"): either side may hold it.
_THE_CONVERSATION = re.compile(
    r"\b(?:our|the|that)\s+(?:\w+\s+)?(?:conversation|chat|discussion)s?\b"
    r"|\bwe\s+(?:\w+\s+)?(?:discussed|talked|spoke|chatted|went over|covered)\b",
    re.IGNORECASE,
)
_ASKER = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|myself)\b", re.IGNORECASE)


def whose_words(text: str) -> str | None:
    """Whose words hold the answer to ``text``, as its wording says: ``"assistant"`` for a
    question about what the assistant said or gave ("What was the hotel you recommended?"),
    ``"user"`` for a question in the first person about the asker's own life ("Where did I
    park?"); ``None`` when it says neither, or asks about a past conversation as such ("What
    did we discuss about the budget?")."""
    if _ASSISTANT_SAID.search(text):
        return "assistant"
    if _THE_CONVERSATION.search(text) or not _ASKER.search(text):
        return None
    return "user"


# A sentence: a run of text up to its closing punctuation (or the end of the text).
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


def only_asks(text: str) -> bool:
    """Whether every sentence of ``text`` is a question: the message asks for something and
    states nothing ("How long have you had Susie?"), so its words echo a question without
    answering it."""
    if "?" not in text:  # no sentence of it asks (most messages: one scan in C)
        return False
    asks = False
    for found in _SENTENCE.finditer(text):
        sentence = found.group().strip()
        if len(sentence) > 3:
            if not sentence.endswith("?"):
                return False
            asks = True
    return asks


def _month(word: str) -> int:
    return _MONTH_NUMBER[word.rstrip(".")]


def _span(kind: str, g: tuple[str, ...]) -> tuple[datetime, datetime]:
    if kind == "dmy":
        start = datetime(int(g[2]), _month(g[1]), int(g[0]), tzinfo=UTC)
        return start, start.replace(hour=23, minute=59, second=59)
    if kind == "mdy":
        start = datetime(int(g[2]), _month(g[0]), int(g[1]), tzinfo=UTC)
        return start, start.replace(hour=23, minute=59, second=59)
    if kind == "iso":
        start = datetime(int(g[0]), int(g[1]), int(g[2]), tzinfo=UTC)
        return start, start.replace(hour=23, minute=59, second=59)
    if kind == "my":
        year, month = int(g[1]), _month(g[0])
        last = calendar.monthrange(year, month)[1]
        return (
            datetime(year, month, 1, tzinfo=UTC),
            datetime(year, month, last, 23, 59, 59, tzinfo=UTC),
        )
    year = int(g[0])
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year, 12, 31, 23, 59, 59, tzinfo=UTC)


def query_time_range(query: str) -> tuple[float, float] | None:
    """The span of time a query names, as epoch seconds ``(start, end)``, or ``None``.

    Understands "13 October, 2023", "October 13, 2023", "2023-10-13", "October 2023" and
    "in 2023"; several dates give the span from the earliest to the latest ("between
    August 11 and August 15, 2023" needs each date written in full, so only the second counts).
    """
    text = query.lower()
    taken: list[tuple[int, int]] = []
    starts: list[float] = []
    ends: list[float] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            a, b = m.span()
            if any(a < y and b > x for x, y in taken):
                continue
            try:
                start, end = _span(kind, m.groups())
            except (KeyError, ValueError):  # "31 February": not a date
                continue
            taken.append((a, b))
            starts.append(start.timestamp())
            ends.append(end.timestamp())
    if not starts:
        return None
    return min(starts), max(ends)


def time_match(created_at: float, span: tuple[float, float]) -> float:
    """1 for a memory dated within (a few days of) ``span``, 0.5 within a month after, else 0."""
    start, end = span
    if start - _MARGIN_DAYS * _DAY <= created_at <= end + _MARGIN_DAYS * _DAY:
        return 1.0
    if end < created_at <= end + _TAIL_DAYS * _DAY:
        return 0.5
    return 0.0


# Share of its own relevance a memory must exceed to gain from a neighbour.
_SELF_SHARE = 0.5


def sequence_support(
    cands: list[Candidate],
    neighbours: Mapping[str, Sequence[tuple[str, float]]],
    weight: float,
) -> list[Candidate]:
    """Add ``weight x edge weight x`` the relevance of a memory's best conversation neighbour.

    ``neighbours`` maps an id to ``(id, edge weight)`` of the memories said just before and
    after it (its sequence edges, which feedback strengthens or weakens); a link passes support
    both ways. Support fills a gap: what a neighbour passes on is its relevance less half the
    receiver's own (never below 0), so a reply that says little next to a strong hit gains
    nearly all of it while two strong hits side by side do not lift each other over the rest.
    Computed from the relevances before this step, so it does not chain.
    """
    if weight <= 0 or not neighbours:
        return cands
    base = {c.id: c.relevance for c in cands}
    by_id = {c.id: c for c in cands}
    support: dict[str, float] = {}
    for memory_id, outs in neighbours.items():
        for other, edge_weight in outs:
            if other == memory_id:
                continue
            for a, b in ((memory_id, other), (other, memory_id)):
                if a in base and b in by_id:
                    value = weight * edge_weight * (base[a] - _SELF_SHARE * base.get(b, 0.0))
                    if value > support.get(b, 0.0):
                        support[b] = value
    for other, value in support.items():
        cand = by_id[other]
        cand.relevance = base[other] + value
        cand.components["sequence"] = round(value, 6)
        cand.components["relevance"] = round(cand.relevance, 6)
    return sorted(by_id.values(), key=lambda c: (-c.relevance, c.id))


@dataclass(frozen=True)
class Query:
    """A query as ranking reads it, parsed once per call (:func:`parse_query`)."""

    text: str
    as_of: float  # when it is asked: relative times are read against it
    pinned: bool  # asked as of a given time (what was said later is left out), not now
    topic: frozenset[str]  # its index terms without the question's frame
    span: tuple[float, float] | None  # the time it names, if any
    past: bool  # asks how things were ("What did I use before?")
    own_facts: bool  # asks about the asker's own facts as they stand
    names_past_time: bool  # names a time that ended before it is asked: what held then
    whose: str | None = None  # whose words answer it: "user", "assistant" (whose_words)


def parse_query(text: str, as_of: float, *, pinned: bool = False) -> Query:
    """What ranking needs to know of ``text`` asked at ``as_of`` (epoch seconds); ``pinned``:
    the caller named that time, so what was said after it does not count."""
    # Imported here: supersession's readers of the question live beside the rules they feed.
    from .supersession import asks_about_own_facts, asks_about_past, names_upcoming_time

    span = query_time_range(text) or relative_time_range(text, as_of)
    return Query(
        text=text,
        as_of=as_of,
        pinned=pinned,
        topic=frozenset(topic_terms(text)),
        span=span,
        past=asks_about_past(text),
        own_facts=asks_about_own_facts(text),
        names_past_time=span is not None
        and span[1] < as_of - _NOW_SLACK
        and not names_upcoming_time(text),
        whose=whose_words(text),
    )
