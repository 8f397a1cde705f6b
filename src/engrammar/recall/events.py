"""Questions that name several events: each event's best memory into the head of the list.

"Which happened first, the purchase of the coffee maker or the malfunction of the stand
mixer?", "How many days passed between the day I fixed my mountain bike and the day I
upgraded my road bike's pedals?", "How long had I been taking ukulele lessons when I took my
guitar to the tech?": the answer needs one memory about each event, yet a ranking by likeness
to the whole question fills its head with several memories about the event the question's
words favour (its copies, the follow-ups of the same chat) and leaves the other one at rank
8-15. :func:`event_terms` reads the events a question names (the words each names and the
others do not); :func:`cover_events` moves each event's best memory up to where the head
would otherwise repeat an event already covered (pure functions).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from .text import terms, topic_terms

__all__ = ["cover_events", "event_terms"]

# The frame of a question about time: how long between two events, which came first.
_FRAME = frozenset(
    terms(
        "day days week weeks month months year years time times passed pass since long ago "
        "first second third last earliest latest order happened happen"
    )
)
# Longest question read for events (LoCoMo's and LongMemEval's are under 300 characters).
_MAX_CHARS = 400
_LIST = re.compile(r",\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+")
# "between A and B"
_BETWEEN = re.compile(r"\bbetween\s+(.+?)\s+and\s+(.+)$")
# "among Emma, Rachel and Alex"
_AMONG = re.compile(r"\bamong\s+(.+)$")
# "... in order: A, B, and C"
_COLON = re.compile(r":\s*(.+)$")
# "Which came first, A or B?", "Which did I use most recently, a bus or a train?"
_CHOICE = re.compile(r",\s*([^,]+?)\s+or\s+([^,]+)$")
# "..., what advice would you give for a move or a new job?" asks no choice between events.
_ASKS = re.compile(r"\b(?:what|which|who|whom|how|where|when|why|would|could|should|might)\b")
# "How long had I been A when B?", "How many days ago did I A when I B?"
_WHEN = re.compile(r"^(how (?:long|many|much)\b.+?)\s+when\s+(.+)$")
# "How many days before A did I B?"
_BEFORE_DID = re.compile(
    r"^how (?:long|many \w+)\s+(?:before|after)\s+(.+?)\s+(?:did|was|were|had)\s+(.+)$"
)
# "How long did I use A before B?"
_BEFORE = re.compile(r"^(how (?:long|many)\b.+?)\s+(?:before|after)\s+(.+)$")
# "How long did it take to finish A and B combined?"
_TOTAL = ("combined", "in total", "altogether")
_COMBINED = re.compile(r"^(.+?)\s+and\s+(.+?)\s+(?:combined|in total|altogether)$")
# A part that names only a date ("between August 11 and August 15") is no event: the time
# boost reads dates.
_DATE_WORDS = frozenset(
    terms(
        "january february march april may june july august september october november "
        "december monday tuesday wednesday thursday friday saturday sunday"
    )
)


def _parts(question: str) -> list[str]:
    # The question itself: "... in 2023? Answer yes or no." asks up to its question mark.
    text = re.sub(r"\s+", " ", question.lower()).split("?", 1)[0].strip().rstrip(".! ")
    if len(text) > _MAX_CHARS:
        return []  # a pasted text, not a question about a few events (and the patterns
        # below would try every "and" against every other on it)
    if m := _BETWEEN.search(text):
        return [m.group(1), m.group(2)]
    if m := _AMONG.search(text):
        return _LIST.split(m.group(1))
    if (m := _COLON.search(text)) and _LIST.search(m.group(1)):
        return _LIST.split(m.group(1))
    if (m := _CHOICE.search(text)) and not _ASKS.search(m.group(1)):
        return [m.group(1), m.group(2)]
    for pattern in (_WHEN, _BEFORE_DID, _BEFORE):
        if m := pattern.search(text):
            return [m.group(1), m.group(2)]
    if text.endswith(_TOTAL) and (m := _COMBINED.search(text)):
        return [m.group(1), m.group(2)]
    return []


def event_terms(question: str, speakers: Iterable[str] = ()) -> list[frozenset[str]]:
    """The events ``question`` names, each as the index terms that name it and no other
    event (the question's frame left out), or ``[]`` when it names fewer than two.

    Read: "between A and B", "among A, B and C", a list after a colon, "..., A or B?",
    "how long / many ... when B", "how many days before A did I B", "how long ... before B"
    and "A and B combined". The names of the conversation's ``speakers`` name no event
    ("between Sam's first and second appointment": the speaker boost reads names).
    """
    people = frozenset(terms(" ".join(speakers)))
    named = [topic_terms(p) - _FRAME - people for p in _parts(question)]
    named = [t for t in named if any(not w.isdigit() and w not in _DATE_WORDS for w in t)]
    own = [
        frozenset(t - set().union(*(o for j, o in enumerate(named) if j != i)))
        for i, t in enumerate(named)
    ]
    own = [t for t in own if t]
    return own if len(own) >= 2 else []


def _told_first(
    head: Sequence[str],
    said: Mapping[str, tuple[str, int]],
    names: Callable[[str], set[int]],
) -> dict[str, str]:
    """For each memory of ``head`` naming events, the earliest memory of its conversation in
    ``head`` (by ``said``: conversation, place) that names them all, when there is one."""
    told: dict[str, str] = {}
    for memory_id in head:
        mine = names(memory_id)
        if memory_id not in said or not mine:
            continue
        session, place = said[memory_id]
        earlier = [
            other
            for other in head
            if other in said
            and said[other][0] == session
            and said[other][1] < place
            and mine <= names(other)
        ]
        if earlier:
            told[memory_id] = min(earlier, key=lambda other: said[other][1])
    return told


def cover_events(
    ids: Sequence[str],
    content: Callable[[str], str] | Mapping[str, str],
    events: Sequence[frozenset[str]],
    depth: int,
    share: float = 1.0,
    said: Mapping[str, tuple[str, int]] | None = None,
) -> list[str]:
    """``ids`` (best first) with each event's best memory among the first ``depth`` moved
    up to where the list would otherwise go on with a memory that names no event not named
    above it. A memory names an event when it holds as many of the event's terms as the best
    memory of the head does, and at least ``share`` of them; an event's best memory is the
    first such (an event no memory of the head names in full has none). The first memory,
    the best match for the whole question, keeps its place (only its telling, below, may go
    before it); the order is otherwise kept, and so is everything past ``depth``.

    ``said`` gives memories their conversation and place in it. A memory of the head that
    names events is preceded by the first memory of its conversation in the head naming them
    all: an event is told where it happened ("I just got back from a bus ride today") and
    talked about after, and the telling is what dates it. On the LongMemEval dev set,
    temporal-reasoning turn recall_all@5 0.738 -> 0.775 (bench/results/lme_notes.md, session
    22).
    """
    head, tail = list(ids[:depth]), list(ids[depth:])
    if not events or len(head) < 2:
        return list(ids)
    read = content if callable(content) else (lambda i: content.get(i, ""))
    held = {i: set(terms(read(i))) for i in head}
    counts = {i: [len(held[i] & e) for e in events] for i in head}
    best = [max(counts[i][k] for i in head) for k in range(len(events))]
    best = [
        top if top and top >= share * len(e) else 0 for top, e in zip(best, events, strict=True)
    ]

    # The events each memory of the head names, read once (the steps below ask again and again).
    named = {i: {k for k, top in enumerate(best) if top and counts[i][k] >= top} for i in head}
    names = named.__getitem__

    first: dict[int, str] = {}
    for memory_id in head:
        for k in names(memory_id):
            first.setdefault(k, memory_id)
    opened = _told_first(head, said or {}, names)
    out: list[str] = []
    placed: set[str] = set()
    covered: set[int] = set()
    for memory_id in head:
        if memory_id in placed:
            continue
        mine = names(memory_id)
        told = opened.get(memory_id)
        if told is not None and told not in placed:
            out.append(told)
            placed.add(told)
            covered |= names(told)
        if out and not mine - covered:
            missing = {first[k] for k in first if k not in covered and first[k] not in placed}
            for lifted in sorted(missing, key=head.index):
                out.append(lifted)
                placed.add(lifted)
                covered |= names(lifted)
        out.append(memory_id)
        placed.add(memory_id)
        covered |= mine
    return out + tail
