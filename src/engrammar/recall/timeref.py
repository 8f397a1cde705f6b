"""Relative time in a query, resolved against the moment it is asked (pure functions).

"What did I buy last weekend?", "Which book did I finish a week ago?", "the concert in May":
the span they name depends on when the question is asked, not on the wall clock of the
machine answering it; recall passes that moment (``as_of``, default now). A span found here
feeds the same bounded time boost as an absolute date (:func:`~engrammar.recall.query.time_match`).
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta

from .text import NUMBER_WORDS

__all__ = ["relative_time_range"]

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
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
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
_DAYS = re.compile(r"\b(yesterday|today|tonight|the day before yesterday)\b")
# "What time do I wake up on Saturday mornings?" asks about a habit, not a date: "on
# <weekday>" names a day only in a question about one occasion (no habit word, or past tense).
_HABIT = re.compile(
    r"\b(?:usually|normally|typically|generally|always|often|every|each|do i|do we|does)\b"
    r"|\b(?:morning|afternoon|evening|night)s\b"
)
_PAST = re.compile(r"\b(?:did|was|were)\b")
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


def _day(dt: datetime) -> tuple[datetime, datetime]:
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


def _spans(text: str, now: datetime) -> list[tuple[datetime, datetime]]:
    out: list[tuple[datetime, datetime]] = []
    for m in _AGO.finditer(text):
        count = int(m.group(1)) if m.group(1).isdigit() else _NUMBER[m.group(1)]
        unit = m.group(2)
        if unit == "day":
            out.append(_day(now - timedelta(days=count)))
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
            out.append(_day(now - timedelta(days=1)))
        elif what == "weekend":
            # The Saturday and Sunday before today (a Sunday's "last weekend" is the one before).
            back = (now.weekday() - 5) % 7 or 7
            saturday = _day(now - timedelta(days=back))[0]
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
            saturday = _day(now - timedelta(days=back))[0]
            out.append((saturday, saturday + timedelta(days=2) - timedelta(seconds=1)))
        elif what == "week":
            monday = _day(now - timedelta(days=now.weekday()))[0]
            out.append((monday, now))
        elif what == "month":
            out.append((_month_span(now.year, now.month)[0], now))
        else:
            out.append((datetime(now.year, 1, 1, tzinfo=UTC), now))
    habit = _HABIT.search(text) is not None and _PAST.search(text) is None
    for m in _LAST_DAY.finditer(text):
        if (habit or ahead) and m.group(0).startswith("on "):
            continue
        back = (now.weekday() - _WEEKDAYS[m.group(1)]) % 7 or 7
        out.append(_day(now - timedelta(days=back)))
    for m in _DAYS.finditer(text):
        word = m.group(1)
        if ahead and word in ("today", "tonight"):
            continue
        back = {"yesterday": 1, "the day before yesterday": 2}.get(word, 0)
        out.append(_day(now - timedelta(days=back)))
    for m in _IN_MONTH.finditer(text):
        # A month without a year: the latest such month up to now.
        for name in _MONTH_NAME.findall(m.group(0)):
            month = _MONTHS[name]
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
    earliest to the latest. Absolute dates are :func:`~engrammar.recall.query.query_time_range`'s.
    """
    now = datetime.fromtimestamp(as_of, tz=UTC)
    spans = _spans(query.lower(), now)
    if not spans:
        return None
    return min(s for s, _ in spans).timestamp(), max(e for _, e in spans).timestamp()
