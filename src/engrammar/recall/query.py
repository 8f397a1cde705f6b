"""What a question says beyond its words, read once per call (pure functions, no I/O).

Everything ranking needs to know about a question is read here, by :func:`parse_query`, into
one :class:`Query` that the stages are handed instead of the text: its topic terms, the time
it names (a date, "in October 2023", or a time relative to the moment it is asked, "two
weeks ago", "last weekend", "in May": recall passes that moment, ``as_of``, not the clock of
the machine answering), whether it asks how things were or how the asker's own facts stand
now, and whose words (the asker's or the assistant's) answer it. :func:`time_match`,
:func:`sequence_support` and :func:`only_asks` are the refinement stage's evidence of date,
conversation and a message that only asks.
"""

from __future__ import annotations

import calendar
import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .fusion import Candidate
from .text import NUMBER_WORDS, names, terms, topic_terms

__all__ = [
    "Query",
    "apart",
    "asks_about_own_facts",
    "asks_about_past",
    "asks_about_present",
    "in_first_person",
    "named_span",
    "names_upcoming_time",
    "only_asks",
    "parse_query",
    "query_time_range",
    "relative_time_range",
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


# A capitalised word of a question, without a possessive ending ("Caroline's" -> "Caroline").
_CAPITALISED = re.compile(r"\b([A-Z][\w-]*)(?:['\u2019]s\b)?")


def capitalised(text: str) -> frozenset[str]:
    """The capitalised words of ``text``: where a question names people."""
    return frozenset(_CAPITALISED.findall(text))


# The people a question asks about: a name after an auxiliary ("did Melanie", "has Caroline",
# "Would Jon", "did Caroline and Melanie") or before a possessive ("Caroline's", not "my
# Bachelor's"). A name is a capitalised word with a small letter after its first ("I", "NASA"
# are none). A name of several words ("did Corey Schafer", "St. Mary's") stays as written.
_NAME = r"[A-Z][a-z][\w-]*"
_AUXILIARY = r"(?i:did|does|do|has|have|had|is|was|were|would|will|can|could|should|might|may|must)"
_ASKED_SUBJECT = re.compile(
    rf"\b({_AUXILIARY})\s+{_NAME}(?:\s+(?:and|or)\s+{_NAME})?\b(['\u2019]s)?(?!\s+[A-Z])"
)
_ASKED_OWNER = re.compile(rf"(?<!\bmy\s)(?<!\bthe\s)(?<!\ba\s)\b{_NAME}['\u2019]s\b")
_THIRD_PERSON = (
    (re.compile(r"\b(?:her|his)\b"), "my"),
    (re.compile(r"\b(?:she|he)\b"), "I"),
    (re.compile(r"\bhim\b"), "me"),
)


def _capitalised_before(text: str, at: int) -> bool:
    """Whether right before ``at`` come spaces after a word (letters, digits, underscores and
    dots) holding a capital A-Z: "St. Mary's", "Corey Schafer's" name one thing in several
    words. Reads back over that word and those spaces only."""
    end = at
    while end > 0 and text[end - 1].isspace():
        end -= 1
    if end == at:
        return False
    start = end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "._"):
        start -= 1
    return any("A" <= c <= "Z" for c in text[start:end])


def in_first_person(text: str) -> str:
    """``text`` as the person it asks about would put it: their name as "I" or "my", and then
    "her" / "his" as "my", "she" / "he" as "I", "him" as "me" ("When did Melanie take her kids
    to the museum?" -> "When did I take my kids to the museum?"); ``text`` itself when it
    names no one it asks about. What the query's vector reads: a person's own messages say "I"
    and seldom their name, and keyword search still matches the name."""
    subject = _ASKED_SUBJECT.sub(lambda m: m.group(1) + (" my" if m.group(2) else " I"), text)
    out = _ASKED_OWNER.sub(
        lambda m: m[0] if _capitalised_before(subject, m.start()) else "my", subject
    )
    if out == text:
        return text
    for pattern, word in _THIRD_PERSON:
        out = pattern.sub(word, out)
    return " ".join(out.split())


def names_speaker(speaker: str, words: frozenset[str]) -> bool:
    """Whether a question whose capitalised words are ``words`` names ``speaker``: one of the
    speaker's words of three letters or more, as written ("Caroline", "Ann Lee" by "Lee")."""
    return any(len(w) >= 3 and w in words for w in speaker.split())


# Words that ask for what came before, and a past auxiliary before "I" / "we" ("Was I
# vegetarian?", "What dog did I have?"). "What was the name of the restaurant?" asks about an
# event, not about a fact that changed, and does not count.
_PAST_QUESTION = re.compile(
    r"\b(?:before|previously|previous|formerly|former|originally|original|used to|use to|"
    r"earlier|at first|in the past|back then|back when|prior to)\b"
    r"|\b(?:did|was|were|had)\s+(?:i|we)\b",
    re.IGNORECASE,
)
# ... or a past auxiliary and, later on its line, "my old", "the first", "her ex" ("What was
# the name of my old dog?"): two searches, so that a long text is read once, not once for
# each auxiliary in it.
_PAST_AUXILIARY = re.compile(r"\b(?:was|were|did|had)\b", re.IGNORECASE)
_OLD_ONE = re.compile(r"\b(?:my|our|the|his|her|their)\s+(?:old|ex|first)\b", re.IGNORECASE)


# A question about the speaker's present: "How many bikes do I currently own?", "Where do I
# live?", "How long have I been ...?" ("do", "am", "is my", "have I" or a word like "now").
_PRESENT_QUESTION = re.compile(
    r"\b(?:now|currently|current|still|these days|nowadays|so far|at the moment|latest|"
    r"most recent|most recently)\b"
    r"|\b(?:do|does|am|is|are|have|has|can)\s+(?:i|we|my|our)\b"
    r"|\b(?:i|we)\s+(?:do|am|have|own|live|work|keep|use|go)\b",
    re.IGNORECASE,
)


def asks_about_past(query: str) -> bool:
    """Whether ``query`` asks how things were rather than how they are."""
    if _PAST_QUESTION.search(query):
        return True
    olds = [m.start() for m in _OLD_ONE.finditer(query)]
    if not olds:
        return False
    start = 0
    while start <= len(query):
        end = query.find("\n", start)
        end = len(query) if end == -1 else end
        first = _PAST_AUXILIARY.search(query, start, end)
        if first is not None:
            at = bisect_left(olds, first.end())
            if at < len(olds) and olds[at] < end:
                return True
        start = end + 1
    return False


_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|me|my|we|we're|our|us)\b", re.IGNORECASE)


def asks_about_present(query: str) -> bool:
    """Whether ``query`` asks the speaker how things are now (and not how they were)."""
    return bool(_PRESENT_QUESTION.search(query)) and not asks_about_past(query)


# A time marked as past: "last Saturday", "two weeks ago", "in May 2023".
_PAST_TIME = re.compile(
    r"\b(?:last|ago|yesterday|previous|previously|earlier|past|before)\b|\b(?:19|20)\d\d\b",
    re.IGNORECASE,
)


def names_upcoming_time(query: str) -> bool:
    """Whether a question about the present names a time without marking it past: "Are we
    flying to Greece on Saturday?", "What do I do on Sunday mornings?", "Is the reunion in
    August?" ask about the next Saturday, every Sunday, the coming August, not the last one."""
    return asks_about_present(query) and not _PAST_TIME.search(query)


# Words that ask for the latest state or a running total, even in the past tense: "How much
# did I earn on my most recent visit?", "How many sessions did I attend?" (all so far).
_LATEST_QUESTION = re.compile(
    r"\b(?:now|currently|current|still|these days|nowadays|so far|at the moment|latest|"
    r"most recent|most recently|recent|recently|in total|total|how many|how much|how often)\b",
    re.IGNORECASE,
)
# What asks how things were, however the question is worded ("did I" aside).
_EARLIER_QUESTION = re.compile(
    r"\b(?:before|previously|previous|formerly|former|originally|original|used to|use to|"
    r"earlier|at first|in the past|back then|back when|prior to|first)\b",
    re.IGNORECASE,
)


# The state a change led to: "Did I switch to more water per tablespoon or less?", "What did
# I upgrade to?" ask for the latest value though they are in the past tense. A present held
# against the past ("Do I go to the gym more often than I did previously?") is not read as
# asking for the latest value: it asks about both.
_CHANGED_TO = re.compile(
    r"\b(?:switch|switched|change|changed|upgrade|upgraded|move|moved|downgrade|downgraded)"
    r"\s+to\b(?!.*\b(?:before|first|originally|at first)\b)",
    re.IGNORECASE,
)


def asks_about_own_facts(query: str) -> bool:
    """Whether ``query`` asks the speaker about their own facts as they stand, not about how
    things were or what came first: where later statements on the same matter update earlier
    ones ("How many bikes do I own?", "How much did I earn on my most recent visit?", "How
    many sessions did I attend?"). Questions about third persons are not about the asker's
    own facts."""
    if not _FIRST_PERSON.search(query):
        return False
    if _CHANGED_TO.search(query):
        return True
    if _EARLIER_QUESTION.search(query):
        return False
    return bool(_LATEST_QUESTION.search(query)) or not asks_about_past(query)


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


# What a question asks for, read from its wording: a time ("When did ...?", "What year ...?")
# or an amount ("How many ...?", "How long ...?"). A message that answers it states one: a
# figure or a number word, a date, a weekday, "yesterday", "last week".
_ASKS_TIME = re.compile(
    r"^\W*when\b|\bwhat (?:time|date|day|year|month)\b|\bwhich (?:day|year|month|date)\b"
    r"|\bhow long ago\b",
    re.IGNORECASE,
)
_ASKS_AMOUNT = re.compile(r"\bhow (?:many|much|long|old|far|often)\b", re.IGNORECASE)
_STATES = {
    "time": re.compile(
        r"\b(?:19|20)\d\d\b|\b(?:january|february|march|april|may|june|july|august|september"
        r"|october|november|december|yesterday|today|tonight|tomorrow|ago)\b"
        r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)s?\b"
        r"|\b(?:last|next|this|past|previous)\s+(?:week|month|year|night|summer|winter|spring"
        r"|fall)\b",
        re.IGNORECASE,
    ),
    "amount": re.compile(
        r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty"
        r"|forty|fifty|hundred|thousand|million|dozen|half|once|twice|couple|few|several)\b",
        re.IGNORECASE,
    ),
}


def answer_kind(question: str) -> str | None:
    """What kind of thing ``question`` asks for: ``"time"`` ("When did we meet?", "What year
    ...?"), ``"amount"`` ("How many ...?", "How much ...?", "How long ...?") or None."""
    if _ASKS_TIME.search(question):
        return "time"
    if _ASKS_AMOUNT.search(question):
        return "amount"
    return None


def states_kind(kind: str, text: str) -> bool:
    """Whether ``text`` states a thing of ``kind`` (see :func:`answer_kind`): a date, a weekday
    or a relative day for a time; a figure or a number word for an amount."""
    return _STATES[kind].search(text) is not None


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
    if "19" not in query and "20" not in query:  # every pattern holds a year (19xx, 20xx)
        return None
    text = query.lower()
    taken = bytearray(len(text))  # 1 where a date already read lies
    starts: list[float] = []
    ends: list[float] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            a, b = m.span()
            if taken.find(1, a, b) != -1:
                continue
            try:
                start, end = _span(kind, m.groups())
            except (KeyError, ValueError):  # "31 February": not a date
                continue
            taken[a:b] = b"\x01" * (b - a)
            starts.append(start.timestamp())
            ends.append(end.timestamp())
    if not starts:
        return None
    return min(starts), max(ends)


# "twenty" and above are in NUMBER_WORDS too; _COUNT below never reads them.
_NUMBER = {
    "a": 1,
    "an": 1,
    **NUMBER_WORDS,
    "a couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_COUNT = r"(\d{1,3}|a couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(day|week|month|year)s?"
_AGO = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b")
_LAST = re.compile(
    r"\b(the\s+)?(last|past|previous)\s+(weekend|week|month|year|night)\b(?!\s+of\b)"
)
# "in the last month", "the past year", "the last three months": a window ending now (not the
# calendar month before, which is "last month"); "the last week of August" names a date.
_RECENT = re.compile(rf"\b(?:the\s+)?(?:last|past)\s+{_COUNT}\s+{_UNIT}\b(?!\s+of\b)")
_DAYS_IN = {"day": 1, "week": 7, "month": 31, "year": 366}
_THIS = re.compile(r"\bthis\s+(weekend|week|month|year)\b")
_LAST_DAY = re.compile(
    r"\b(?:last|past|this past|on)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
)
_DAY_WORDS = re.compile(r"\b(yesterday|today|tonight|the day before yesterday)\b")
# "What time do I wake up on Saturday mornings?" asks about a habit, not a date: "on
# <weekday>" names a day only in a question about one occasion (no habit word, or past tense).
_HABIT = re.compile(
    r"\b(?:usually|normally|typically|generally|always|often|every|each|do i|do we|does)\b"
    r"|\b(?:morning|afternoon|evening|night)s\b"
)
_PAST_TENSE = re.compile(r"\b(?:did|was|were)\b")
# "Can you recommend a movie for tonight?", "What should I cook this weekend?": a request or a
# plan for the time ahead names no span to search; "this weekend", "this week", "today",
# "tonight" and "on <weekday>" count only in a question that looks back ("What did I buy
# today?", "How much have I made this week?").
_AHEAD = re.compile(
    r"\b(?:recommend\w*|suggest\w*|tips?|advice|ideas?|should (?:i|we)|plan(?:s|ning)?|going to|"
    r"gonna|will (?:i|we)|upcoming|excited|thinking (?:about|of))\b"
)
_LOOKS_BACK = re.compile(r"\b(?:did|have (?:i|we)|has|had)\b|\bhow (?:much|many)\b")
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
)
# "in May", "during March and April", "between June and August": months named without a
# year (a list or a range of them spans from the first to the last).
_IN_MONTH = re.compile(
    rf"\b(?:in|during|of|since|early|late|mid|between|from)\s+{_MONTH}"
    rf"(?:\s*(?:,|and|or|to|through|until|-)\s*(?:early |late |mid )?{_MONTH})*\b"
    r"(?!\s*,?\s*(?:19|20)\d\d)"
)
_MONTH_NAME = re.compile(_MONTH)


def _whole_day(dt: datetime) -> tuple[datetime, datetime]:
    start = dt.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1) - timedelta(seconds=1)


def _months_back(dt: datetime, months: int) -> datetime:
    index = dt.year * 12 + dt.month - 1 - months
    year, month = divmod(index, 12)
    day = min(dt.day, calendar.monthrange(year, month + 1)[1])
    return dt.replace(year=year, month=month + 1, day=day)


def _month_span(year: int, month: int) -> tuple[datetime, datetime]:
    last = calendar.monthrange(year, month)[1]
    return (
        datetime(year, month, 1, tzinfo=UTC),
        datetime(year, month, last, 23, 59, 59, tzinfo=UTC),
    )


# A word each pattern of a span needs (as a part of the lowered text: "day" stands for the
# weekdays, "today" and "yesterday"): a question without any names no span (most do not),
# and is not searched pattern by pattern.
_SPAN_WORD = re.compile(rf"ago|last|past|previous|this|day|tonight|{_MONTH}")


def _spans(text: str, now: datetime) -> list[tuple[datetime, datetime]]:
    if _SPAN_WORD.search(text) is None:
        return []
    out: list[tuple[datetime, datetime]] = []
    for m in _AGO.finditer(text):
        count = int(m.group(1)) if m.group(1).isdigit() else _NUMBER[m.group(1)]
        unit = m.group(2)
        if unit == "day":
            out.append(_whole_day(now - timedelta(days=count)))
        elif unit == "week":
            # "two weeks ago": that week, give or take a few days either side.
            mid = now - timedelta(weeks=count)
            out.append((mid - timedelta(days=3), mid + timedelta(days=3)))
        elif unit == "month":
            mid = _months_back(now, count)
            out.append((mid - timedelta(days=15), mid + timedelta(days=15)))
        else:
            year = now.year - count
            out.append((datetime(year, 1, 1, tzinfo=UTC), datetime(year, 12, 31, tzinfo=UTC)))
    for m in _RECENT.finditer(text):
        count = int(m.group(1)) if m.group(1).isdigit() else _NUMBER[m.group(1)]
        out.append((now - timedelta(days=count * _DAYS_IN[m.group(2)]), now))
    for m in _LAST.finditer(text):
        what = m.group(3)
        rolling = m.group(2) == "past" or (m.group(1) is not None and m.group(2) == "last")
        if rolling and what in _DAYS_IN:
            out.append((now - timedelta(days=_DAYS_IN[what]), now))
        elif what == "night":
            out.append(_whole_day(now - timedelta(days=1)))
        elif what == "weekend":
            # The Saturday and Sunday before today (a Sunday's "last weekend" is the one before).
            back = (now.weekday() - 5) % 7 or 7
            saturday = _whole_day(now - timedelta(days=back))[0]
            out.append((saturday, saturday + timedelta(days=2) - timedelta(seconds=1)))
        elif what == "week":
            out.append((now - timedelta(days=13), now - timedelta(days=1)))
        elif what == "month":
            prev = _months_back(now, 1)
            out.append(_month_span(prev.year, prev.month))
        else:
            out.append(
                (
                    datetime(now.year - 1, 1, 1, tzinfo=UTC),
                    datetime(now.year - 1, 12, 31, 23, 59, 59, tzinfo=UTC),
                )
            )
    ahead = _AHEAD.search(text) is not None and _LOOKS_BACK.search(text) is None
    for m in _THIS.finditer(text):
        what = m.group(1)
        if ahead and what in ("weekend", "week"):
            continue
        if what == "weekend":
            back = (now.weekday() - 5) % 7
            saturday = _whole_day(now - timedelta(days=back))[0]
            out.append((saturday, saturday + timedelta(days=2) - timedelta(seconds=1)))
        elif what == "week":
            monday = _whole_day(now - timedelta(days=now.weekday()))[0]
            out.append((monday, now))
        elif what == "month":
            out.append((_month_span(now.year, now.month)[0], now))
        else:
            out.append((datetime(now.year, 1, 1, tzinfo=UTC), now))
    habit = _HABIT.search(text) is not None and _PAST_TENSE.search(text) is None
    for m in _LAST_DAY.finditer(text):
        if (habit or ahead) and m.group(0).startswith("on "):
            continue
        back = (now.weekday() - _WEEKDAYS[m.group(1)]) % 7 or 7
        out.append(_whole_day(now - timedelta(days=back)))
    for m in _DAY_WORDS.finditer(text):
        word = m.group(1)
        if ahead and word in ("today", "tonight"):
            continue
        back = {"yesterday": 1, "the day before yesterday": 2}.get(word, 0)
        out.append(_whole_day(now - timedelta(days=back)))
    for m in _IN_MONTH.finditer(text):
        # A month without a year: the latest such month up to now.
        for name in _MONTH_NAME.findall(m.group(0)):
            month = _MONTH_NUMBER[name]
            year = now.year if month <= now.month else now.year - 1
            out.append(_month_span(year, month))
    return out


def relative_time_range(query: str, as_of: float) -> tuple[float, float] | None:
    """The span of time a query names relative to ``as_of`` (epoch seconds), or ``None``.

    Understands "N days / weeks / months / years ago" (numbers as digits or words, "a couple
    of", "a few"), "last / previous week, weekend, month, year, night" (the calendar one
    before), "the last / past week, month, year" and "the past three months" (a window ending
    at ``as_of``), "this week, weekend, month, year", "last Saturday", "yesterday", "today"
    and months named without a year ("in May": the latest May up to ``as_of``; "in March and
    April", "between June and August": from the first to the last). A request or
    plan for the time ahead ("Can you recommend a film for tonight?") names no span with
    "this week(end)", "today", "tonight" or "on <weekday>". Several give the span from the
    earliest to the latest. Absolute dates are :func:`query_time_range`'s.
    """
    now = datetime.fromtimestamp(as_of, tz=UTC)
    spans = _spans(query.lower(), now)
    if not spans:
        return None
    return min(s for s, _ in spans).timestamp(), max(e for _, e in spans).timestamp()


def named_span(text: str, as_of: float) -> tuple[float, float] | None:
    """The span of time ``text`` names, read as asked at ``as_of``: its dates
    (:func:`query_time_range`), else its relative times (:func:`relative_time_range`)."""
    return query_time_range(text) or relative_time_range(text, as_of)


def apart(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two spans of time share not a moment."""
    return a[1] < b[0] or b[1] < a[0]


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
    terms: tuple[str, ...]  # its index terms in order (what keyword search looks up)
    as_of: float  # when it is asked: relative times are read against it
    pinned: bool  # asked as of a given time (what was said later is left out), not now
    topic: frozenset[str]  # its index terms without the question's frame
    names: frozenset[tuple[str, ...]]  # the names of two or more words it names (stemmed)
    span: tuple[float, float] | None  # the time it names, if any
    past: bool  # asks how things were ("What did I use before?")
    own_facts: bool  # asks about the asker's own facts as they stand
    names_past_time: bool  # names a time that ended before it is asked: what held then
    whose: str | None = None  # whose words answer it: "user", "assistant" (whose_words)
    capitals: frozenset[str] = frozenset()  # its capitalised words (names_speaker)
    wants: str | None = None  # the kind of thing it asks for (answer_kind)


def parse_query(text: str, as_of: float, *, pinned: bool = False) -> Query:
    """What ranking needs to know of ``text`` asked at ``as_of`` (epoch seconds); ``pinned``:
    the caller named that time, so what was said after it does not count."""
    span = named_span(text, as_of)
    return Query(
        text=text,
        terms=tuple(terms(text)),
        as_of=as_of,
        pinned=pinned,
        topic=frozenset(topic_terms(text)),
        names=names(text),
        span=span,
        past=asks_about_past(text),
        own_facts=asks_about_own_facts(text),
        names_past_time=span is not None
        and span[1] < as_of - _NOW_SLACK
        and not names_upcoming_time(text),
        whose=whose_words(text),
        capitals=capitalised(text),
        wants=answer_kind(text),
    )
