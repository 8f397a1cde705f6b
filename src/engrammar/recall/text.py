"""Keyword analysis shared by every store: word splitting, stop words, stemming."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = [
    "NUMBER_WORDS",
    "QUESTION_WORDS",
    "STOP_WORDS",
    "context_sources",
    "embedding_text",
    "index_text",
    "names",
    "speaker_of",
    "stem",
    "terms",
    "topic_terms",
    "word_list",
    "word_term",
]

# Numbers said in words, for the readers of amounts ("six times", "two weeks ago").
NUMBER_WORDS = {
    **{
        w: n
        for n, w in enumerate(
            "one two three four five six seven eight nine ten eleven twelve".split(), start=1
        )
    },
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "dozen": 12,
}

# Function words carry no topic; left in, they dominate BM25 on conversational text and turn
# into hubs of the memory graph.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having he
    he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if
    in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off on
    once only or other ought our ours ourselves out over own same shan't she she'd she'll she's
    should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up
    very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's with won't would wouldn't you you'd you'll you're you've
    your yours yourself yourselves also just really yeah yes oh ok okay hey hi hello well like
    get got gonna wanna will s t d ll m re ve did does thing things lot lots much many
    """.split()
)

# The frame of a question rather than its topic ("What kind of ...", "Would X likely ...",
# "Did X mention ..."), as index terms: left out of what feedback teaches a memory.
QUESTION_WORDS = frozenset(
    """
    kind kinds type types sort sorts name names likely think thinks mention mentions mentioned
    say says said tell tells told describe describes described ever usually
    """.split()
)

_WORD = re.compile(r"[0-9a-z]+(?:'[a-z]+)?")
# Every byte no word holds (anything but [0-9a-z'], non-ASCII text encoded as "?") as a space.
_SPACES = bytes(c if chr(c) in "0123456789abcdefghijklmnopqrstuvwxyz'" else 32 for c in range(256))


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of one lower-cased word."""
    return str(_stemmer().stemWord(word))


def terms(text: str) -> list[str]:
    """Index terms of ``text``: lower-cased words, stop words dropped, Snowball-stemmed."""
    return [t for word in word_list(text.lower()) if (t := word_term(word)) is not None]


@lru_cache(maxsize=65536)
def word_term(word: str) -> str | None:
    """The index term of one lower-cased word as :func:`terms` finds it (None: a stop word)."""
    if word in STOP_WORDS:
        return None
    if "'" in word:
        word = word.split("'", 1)[0]
        if not word or word in STOP_WORDS:
            return None
    return stem(word)


def word_list(lowered: str) -> list[str]:
    """The words of lower-cased text, in order (``_WORD``): the runs of the characters a word
    holds (``[0-9a-z']``; other text, non-ASCII included, separates them), found by a byte
    translation, a run with an apostrophe read by the regex (``it's9``: ``it's``, ``9``)."""
    runs = lowered.encode("ascii", "replace").translate(_SPACES).decode("ascii").split()
    if "'" not in lowered:
        return runs
    out: list[str] = []
    for run in runs:
        if "'" in run:
            out += _WORD.findall(run)
        else:
            out.append(run)
    return out


# A name of two or more capitalised words: "Seattle International Film Festival".
_NAME = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)+")


@lru_cache(maxsize=4096)
def names(text: str) -> frozenset[tuple[str, ...]]:
    """The names of two or more words in ``text``, as stemmed words ("I" alone is none)."""
    out = set()
    for m in _NAME.finditer(text):
        words = tuple(stem(w.lower()) for w in m.group().split() if w != "I")
        if len(words) >= 2:
            out.add(words)
    return frozenset(out)


@lru_cache(maxsize=1)
def _question_terms() -> frozenset[str]:
    return frozenset(stem(w) for w in QUESTION_WORDS)


def topic_terms(text: str) -> set[str]:
    """The index terms of ``text`` without the question's frame (``QUESTION_WORDS``)."""
    return set(terms(text)) - _question_terms()


def speaker_of(metadata: dict[str, Any]) -> str | None:
    """The speaker recorded in a memory's metadata (a message's ``name``), if any."""
    speaker = metadata.get("speaker")
    return speaker if isinstance(speaker, str) and speaker.strip() else None


# A message pasted from a transcript names its speaker first ("Caroline: ..."): one to three
# capitalised words and a colon. A label that names a part of a document, or a day, a month or
# a time of day (notes: "Monday: gym"), is no speaker.
_LABEL = re.compile(r"\s*([A-Z][\w'.-]{0,24}(?: [A-Z][\w'.-]{0,24}){0,2}):[ \t]")
_NOT_SPEAKERS = frozenset(
    "answer content context date description error example fwd from important input name "
    "note notes output prompt question re reminder response result source step subject "
    "summary task tip tips title to todo update warning "
    "monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday "
    "morning afternoon evening night tonight january february march july september october "
    "november december".split()  # April, May, June and August are names too
)


def who_speaks(metadata: dict[str, Any], content: str) -> str | None:
    """The speaker of a message: its recorded ``name``, else the speaker label its text
    starts with ("Caroline: ..."), else None."""
    named = speaker_of(metadata)
    if named is not None:
        return named
    if ":" not in content:  # no label (most messages: one scan in C, not the pattern)
        return None
    found = _LABEL.match(content)
    if found is None or found.group(1).lower() in _NOT_SPEAKERS:
        return None
    return found.group(1)


def index_text(content: str, speaker: str | None = None) -> str:
    """What search indexes for a memory: ``"speaker: content"`` when the speaker is known.

    Conversational questions name people ("What did Caroline research?") while what people
    say rarely names themselves; with the speaker in the indexed text both keyword and vector
    search can match the person as well as the topic.
    """
    return f"{speaker}: {content}" if speaker else content


def embedding_text(content: str, speaker: str | None = None) -> str:
    """The text a memory's vector is computed from: its :func:`index_text`."""
    return index_text(content, speaker)


def context_sources(
    messages: list[tuple[str | None, str]], before: tuple[str | None, str] | None = None
) -> list[int | None]:
    """For each ``(speaker, role)`` of one ``add`` batch, the position of the message it
    replies to (-1: ``before``, the message stored just before the batch), or None.

    A message replies to the one before it when that one has another speaker (or, without
    speakers, another role); consecutive messages of one speaker are separate statements.
    """
    out: list[int | None] = []
    for i, (speaker, role) in enumerate(messages):
        prev = messages[i - 1] if i else before
        replies = prev is not None and (prev[0] or prev[1]) != (speaker or role)
        out.append(i - 1 if replies else None)
    return out
