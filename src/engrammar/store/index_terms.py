"""A memory's keyword terms stored beside it (SQLite ``memories.index_terms``).

Loading a 100k-memory partition into the in-process index analysed every text again
(:func:`~engrammar.recall.text.terms`: ~1 s of CPU of the ~2.5 s load). The embedded store
writes the terms of each memory's index text with the row, and a load takes them as they are
when they are current: the stored value starts with a checksum of the index text and of the
analyser (its stop words and what it makes of a probe text), so a row written by an older
release (NULL), a content or speaker changed by a path that did not rewrite the column, or a
changed analyser all fall back to analysing the text, never to stale terms.
"""

from __future__ import annotations

import zlib
from functools import lru_cache
from typing import Any

from ..recall.text import STOP_WORDS, index_text, speaker_of, terms

__all__ = ["memory_terms", "read_terms", "stored_terms"]

# Words that exercise every step of the analyser: case, stop words, apostrophes, stemming,
# numbers, punctuation and non-ASCII letters.
_PROBE = (
    "Running runners ran; the cats' don't WON'T Caroline's rock'n'roll o'clock at 10:30am "
    "on 2023-05-07, e-mail me@example.com about Istanbul, naive cafe, STRASSE and adoption"
)


@lru_cache(maxsize=1)
def _seed() -> int:
    analyser = "\n".join([*sorted(STOP_WORDS), "", *terms(_PROBE)])
    return zlib.crc32(analyser.encode())


def _check(text: str) -> str:
    return f"{zlib.crc32(text.encode('utf-8', 'surrogatepass'), _seed()):08x}"


def stored_terms(text: str) -> str | None:
    """What ``index_terms`` holds for a memory whose index text is ``text`` (None if its
    terms cannot be kept as words separated by spaces)."""
    found = terms(text)
    joined = " ".join(found)
    if joined.split() != found:
        return None
    return f"{_check(text)} {joined}"


def read_terms(text: str, stored: str | None) -> list[str]:
    """``terms(text)``, from ``stored`` when it is current for ``text``."""
    if stored is not None and stored[:8] == _check(text):
        return stored[9:].split()
    return terms(text)


def memory_terms(content: str, metadata: Any) -> str | None:
    """:func:`stored_terms` of a memory's index text (its speaker's name and its content)."""
    speaker = speaker_of(metadata) if isinstance(metadata, dict) else None
    return stored_terms(index_text(content, speaker))
