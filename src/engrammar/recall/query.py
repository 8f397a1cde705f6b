"""What a query says beyond its topic: who it is about and when (pure functions, no I/O).

Conversational questions name a person ("What did Caroline research?") and sometimes a date
("... in October 2023", "... on 13 October, 2023"). Both are weak evidence for ranking: a
memory spoken by the person named, or dated near the time named, is somewhat more likely to
answer. :func:`rescore` turns them into bounded multipliers on the fused relevance, and
:func:`sequence_support` lets a memory profit from a strong neighbour in its conversation
(a reply often only makes sense next to the question it answers).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime

from .fusion import Candidate
from .timeref import relative_time_range

__all__ = [
    "asks_question",
    "named_speakers",
    "query_time_range",
    "question_discount",
    "question_share",
    "rescore",
    "sequence_support",
    "time_match",
    "topic_text",
]

_DAY = 86_400.0
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


_WORD = re.compile(r"[0-9a-z]+")


def named_speakers(query: str, speakers: Iterable[str]) -> set[str]:
    """The speakers whose name (or first name) the query mentions as a word."""
    words = set(_WORD.findall(query.lower()))
    found = set()
    for speaker in speakers:
        parts = _WORD.findall(speaker.lower())
        if parts and (parts[0] in words or " ".join(parts) in query.lower()):
            found.add(speaker)
    return found


def topic_text(query: str, names: Iterable[str]) -> str:
    """``query`` without the given people's names (full name or first name, possessive too).

    A memory's vector carries its speaker's name, so a query vector that carries a name
    matches everything that person said about as well as what they said on the topic asked
    about; with the speaker boost taking care of *who*, the vector is better spent on *what*.
    A query that is nothing but names is returned unchanged.
    """
    text = query
    for name in sorted(names, key=len, reverse=True):
        parts = _WORD.findall(name.lower())
        for form in ([" ".join(parts)] if len(parts) > 1 else []) + parts[:1]:
            words = r"\s+".join(map(re.escape, form.split()))
            pattern = rf"\b{words}\b(?:['\u2019]s\b|['\u2019](?!\w))?"
            text = re.sub(pattern, " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+", " ", text).strip()
    return text if _WORD.search(text.lower()) else query


def rescore(
    cands: list[Candidate],
    query: str,
    speakers: Mapping[str, str | None],
    times: Mapping[str, float],
    *,
    speaker_boost: float,
    time_boost: float,
    as_of: float | None = None,
) -> list[Candidate]:
    """Multiply relevance by ``1 + speaker_boost`` for memories spoken by the one person the
    query names and by ``1 + time_boost × time_match`` for memories dated near the time it
    names; best first again. ``speakers``/``times`` map candidate ids to their memory's
    speaker and ``created_at``. A query naming no one (or everyone) is left alone. With
    ``as_of`` (when the query is asked, epoch seconds), relative times ("two weeks ago",
    "last weekend", "in May") count too (:mod:`~engrammar.recall.timeref`)."""
    named = named_speakers(query, {s for s in speakers.values() if s})
    if len(named) == len({s for s in speakers.values() if s}):
        named = set()  # naming every speaker singles none out
    span = None
    if time_boost > 0:
        span = query_time_range(query)
        if span is None and as_of is not None:
            span = relative_time_range(query, as_of)
    if not cands or (not named and span is None) or (speaker_boost <= 0 and span is None):
        return cands
    for cand in cands:
        factor = 1.0
        if named and speaker_boost > 0 and speakers.get(cand.id) in named:
            factor *= 1.0 + speaker_boost
            cand.components["speaker_boost"] = speaker_boost
        if span is not None and cand.id in times:
            match = time_match(times[cand.id], span)
            if match:
                factor *= 1.0 + time_boost * match
                cand.components["time_boost"] = round(time_boost * match, 6)
        cand.relevance *= factor
        cand.components["relevance"] = round(cand.relevance, 6)
    return sorted(cands, key=lambda c: -c.relevance)


# Share of its own relevance a memory must exceed to gain from a neighbour: on LoCoMo
# (conversations 1-5) support from the full neighbour relevance let clusters of adjacent hits
# lift each other; 0.25 / 0.5 / 0.75 / 1.0 gave multi-hop recall@10 0.573 / 0.574 / 0.573 / 0.564
# with overall recall@10 0.807 / 0.809 / 0.803 / 0.803 (0.576 / 0.808 without it).
_SELF_SHARE = 0.5

# Notes appended to a message ("... [shared image: a dog on a beach]") are not what was said.
_TRAILING_NOTE = re.compile(r"(?:\s*\[[^\[\]]*\])+\s*$")


def asks_question(text: str) -> bool:
    """Whether a message ends with a question (a trailing bracketed note aside)."""
    body = text.rstrip()
    if body.endswith("]"):
        body = _TRAILING_NOTE.sub("", body)
    body = body.rstrip().rstrip("\"'\u201d\u2019)")
    return body.endswith("?")


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)]*\s+")


def question_share(text: str) -> float:
    """The share of a message (in characters) taken by the question(s) it ends with; 0 when
    it does not end with a question.

    "What other hobbies have you found?" is all asking (1.0); "I took Lola to the vet last
    week and paid $50. Can you recommend a cat litter?" mostly states something first.
    """
    if not asks_question(text):
        return 0.0
    body = text.strip()
    if body.endswith("]"):
        body = _TRAILING_NOTE.sub("", body).rstrip()
    sentences = [s for s in _SENTENCE_END.split(body) if s.strip()]
    asking = 0
    for sentence in reversed(sentences):
        if not sentence.rstrip().rstrip("\"'\u201d\u2019)").endswith("?"):
            break
        asking += len(sentence)
    return min(1.0, asking / max(len(body), 1))


def question_discount(
    cands: list[Candidate], questions: Mapping[str, float] | Collection[str], penalty: float
) -> list[Candidate]:
    """Multiply the relevance of the candidates in ``questions`` (memories that end with a
    question) by ``1 - penalty`` (times the share of the message the question takes, when
    ``questions`` maps ids to that share); best first again.

    Asking states little: "What other hobbies have you found?" shares the words of "What
    hobbies does Evan have?" but is rarely its answer, while the statements around it are. A
    long message that only ends with a question states its context first and keeps most of
    its relevance.
    """
    if penalty <= 0 or not questions:
        return cands
    shares = questions if isinstance(questions, Mapping) else dict.fromkeys(questions, 1.0)
    for cand in cands:
        share = shares.get(cand.id, 0.0)
        if share > 0:
            cand.relevance *= 1.0 - penalty * share
            cand.components["question_penalty"] = round(penalty * share, 6)
            cand.components["relevance"] = round(cand.relevance, 6)
    return sorted(cands, key=lambda c: -c.relevance)


def sequence_support(
    cands: list[Candidate],
    neighbours: Mapping[str, Sequence[tuple[str, float]]],
    weight: float,
    second: Mapping[str, Sequence[tuple[str, float]]] | None = None,
    second_weight: float = 0.0,
) -> list[Candidate]:
    """Add ``weight × edge weight ×`` the relevance of a memory's best conversation neighbour.

    ``neighbours`` maps an id to ``(id, edge weight)`` of the memories said just before and
    after it (its sequence edges, whose weights feedback strengthens or weakens). ``second``
    maps an id to the memories two messages away (before the message before it, after the one
    after it) with the weaker of the two edges on the way; they pass on ``second_weight ×``
    that weight × their relevance: in a dialogue that is the same person going on about the
    same thing after the other's reply. A memory takes its best support of either kind; one
    that was not itself a candidate joins the list with only that support. A link passes support
    both ways. Support fills a gap: what a neighbour passes on is its relevance less half the
    receiver's own (never below 0), so a weak reply next to a strong hit gains nearly all of it
    while two strong hits side by side do not lift each other over the rest of the list.
    Support is computed from the relevances before this step, so it does not chain.
    """
    links = [(neighbours, weight), (second or {}, second_weight)]
    if not any(w > 0 and m for m, w in links):
        return cands
    base = {c.id: c.relevance for c in cands}
    by_id = {c.id: c for c in cands}
    support: dict[str, float] = {}
    # A link passes support both ways: the head's links reach memories that joined the list
    # as neighbours, and those pass their relevance back as well.
    for mapping, w in links:
        if w <= 0:
            continue
        for memory_id, outs in mapping.items():
            for other, edge_weight in outs:
                if other == memory_id:
                    continue
                for a, b in ((memory_id, other), (other, memory_id)):
                    if a in base:
                        gap = base[a] - _SELF_SHARE * base.get(b, 0.0)
                        value = w * edge_weight * gap
                        if value > support.get(b, 0.0):
                            support[b] = value
    for other, value in support.items():
        cand = by_id.get(other)
        if cand is None:
            cand = by_id[other] = Candidate(other)
            cand.components = {"vector": 0.0, "keyword": 0.0}
        cand.relevance = base.get(other, 0.0) + value
        cand.components["sequence"] = round(value, 6)
        cand.components["relevance"] = round(cand.relevance, 6)
    return sorted(by_id.values(), key=lambda c: -c.relevance)
