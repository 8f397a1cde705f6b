"""A memory's keyword terms stored beside it (SQLite ``memories.index_terms``).

Loading a 100k-memory partition into the in-process index analysed every text again
(:func:`~engrammar.recall.text.terms`: ~1 s of CPU of a ~3 s load). The embedded store writes
the terms of each memory's index text with the row, and a load takes them as they are when
they are current:

- the stored value starts with a mark of the analyser (its stop words and what it makes of a
  probe text): terms of another analyser are never read;
- a row written by a release before the column holds NULL;
- a trigger (``m013_index_terms``) empties the value of a row whose content or metadata (its
  speaker) changed without it, so an older release's update leaves no stale terms.

A value not current is ignored and the text analysed, as before.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ...recall.text import STOP_WORDS, index_text, speaker_of, terms

__all__ = ["memory_terms", "read_terms", "stored_terms"]

# Words that exercise every step of the analyser: case, stop words, apostrophes, stemming,
# numbers, punctuation and non-ASCII letters.
_PROBE = (
    "Running runners ran; the cats' don't WON'T Caroline's rock'n'roll o'clock at 10:30am "
    "on 2023-05-07, e-mail me@example.com about Istanbul, naive cafe, STRASSE and adoption"
)


@lru_cache(maxsize=1)
def _mark() -> str:
    analyser = "\n".join([*sorted(STOP_WORDS), "", *terms(_PROBE)])
    return f"{zlib.crc32(analyser.encode()):08x} "


def stored_terms(text: str) -> str | None:
    """What ``index_terms`` holds for a memory whose index text is ``text`` (None if its
    terms cannot be kept as words separated by spaces)."""
    found = terms(text)
    joined = " ".join(found)
    if joined.split() != found:
        return None
    return _mark() + joined


def memory_terms(content: str, metadata: Any) -> str | None:
    """:func:`stored_terms` of a memory's index text (its speaker's name and its content)."""
    speaker = speaker_of(metadata) if isinstance(metadata, dict) else None
    return stored_terms(index_text(content, speaker))


def read_terms(texts: Sequence[str], stored: Sequence[str | None]) -> list[list[str]]:
    """``terms(text)`` of each text, from its stored value where that is current."""
    mark = _mark()
    skip = len(mark)
    return [
        value[skip:].split() if value is not None and value.startswith(mark) else terms(text)
        for text, value in zip(texts, stored, strict=True)
    ]
