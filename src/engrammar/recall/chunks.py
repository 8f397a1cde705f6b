"""Long texts in pieces (pure functions): passages of a knowledge-base document, and the
overlapping windows of a long message with the one a query is about.

A memory keeps its full text (a pasted document, a long assistant answer); what recall hands
to a prompt is the window of it the query is about, so ``RecallResult.formatted`` stays within
its budget and shows the part that matched rather than the opening.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Collection

from .text import terms

_BREAK = re.compile(r"(?<=[.!?\n])\s+|\n")


def chunk_spans(
    text: str, size: int, overlap: int, limit: int | None = None
) -> list[tuple[int, int]]:
    """``(start, end)`` windows of at most ``size`` characters covering ``text``, each
    overlapping the one before by about ``overlap``; cut at a sentence end or a space where
    one lies in the window's last third. A text of ``size`` or less is one window. With
    ``limit``, only the first ``limit`` windows (the rest of a long text is not looked at)."""
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got {size}, {overlap}")
    n = len(text)
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(start + size, n)
        if end < n:
            floor = start + (2 * size) // 3
            cut = max((m.end() for m in _BREAK.finditer(text, floor, end)), default=-1)
            if cut <= floor:
                cut = text.rfind(" ", floor, end) + 1
            if cut > floor:
                end = cut
        spans.append((start, end))
        if end >= n or len(spans) == limit:
            return spans
        nxt = max(end - overlap, start + 1)
        space = text.find(" ", nxt, end)
        start = space + 1 if space != -1 else nxt


def best_window(
    text: str, wanted: Collection[str], size: int, overlap: int
) -> tuple[tuple[int, int], int] | None:
    """The window of ``text`` (see :func:`chunk_spans`) holding the most of the ``wanted``
    terms (distinct terms first, then occurrences) and how many distinct ones it holds;
    ``None`` when ``text`` fits in one window. Ties go to the earliest window."""
    if len(text) <= size:
        return None
    best = (0, 0)
    best_key = (-1, -1)
    for span, counts in _window_terms(text, size, overlap):
        held = [counts[t] for t in wanted if t in counts]
        key = (len(held), sum(held))
        if key > best_key:
            best, best_key = span, key
    return best, best_key[0]


# The windows of the texts excerpted last, with the terms of each: a recall excerpts the same
# long memories its scope's earlier recalls did. At most _KEPT_TEXTS texts of _KEPT_CHARS
# characters in all; a text longer than _KEPT_ONE is read anew each time.
_KEPT_TEXTS = 256
_KEPT_CHARS = 2_000_000
_KEPT_ONE = 200_000

Windows = tuple[tuple[tuple[int, int], Counter[str]], ...]


class _Kept:
    """The least recently used windows, bounded by count and characters (thread-safe)."""

    def __init__(self) -> None:
        self.items: OrderedDict[tuple[str, int, int], Windows] = OrderedDict()
        self.chars = 0
        self.lock = threading.Lock()

    def get(self, text: str, size: int, overlap: int) -> Windows:
        key = (text, size, overlap)
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
                return found
        found = _read_windows(text, size, overlap)
        if len(text) <= _KEPT_ONE:
            with self.lock:
                if key not in self.items:
                    self.items[key] = found
                    self.chars += len(text)
                    while len(self.items) > _KEPT_TEXTS or self.chars > _KEPT_CHARS:
                        (old, _, _), _ = self.items.popitem(last=False)
                        self.chars -= len(old)
        return found


_KEPT = _Kept()


def _window_terms(text: str, size: int, overlap: int) -> Windows:
    """Each window of ``text`` (:func:`chunk_spans`) with how often it holds each term."""
    return _KEPT.get(text, size, overlap)


def _read_windows(text: str, size: int, overlap: int) -> Windows:
    return tuple(
        ((start, end), Counter(terms(text[start:end])))
        for start, end in chunk_spans(text, size, overlap)
    )


def best_excerpt(
    text: str, query: str, size: int, overlap: int, stop: Collection[str] = ()
) -> tuple[int, int] | None:
    """The window of ``text`` (see :func:`chunk_spans`) holding the most of the query's
    terms (distinct terms first, then occurrences); ``None`` when ``text`` fits in one
    window. Ties go to the earliest window."""
    found = best_window(text, {t for t in terms(query) if t not in stop}, size, overlap)
    return found[0] if found is not None else None


def excerpt(text: str, query: str, size: int) -> str | None:
    """The window of ``text`` a query is about (:func:`best_excerpt`, windows overlapping by
    a fifth), marked with "…" where it cuts the text; ``None`` when ``text`` fits in ``size``."""
    span = best_excerpt(text, query, size, size // 5)
    if span is None:
        return None
    return marked(text, *span)


def message_windows(text: str, size: int, limit: int | None = None) -> list[tuple[int, int]]:
    """The windows of a message longer than ``size`` that get vectors of their own: the
    first ``limit`` of :func:`chunk_spans` (overlapping by a fifth). Empty when the text fits
    in ``size`` or ``size`` is 0 (off): the message's own vector reads it whole."""
    if size <= 0 or len(text) <= size:
        return []
    return chunk_spans(text, size, size // 5, limit)


def widened(text: str, start: int, end: int, size: int) -> tuple[int, int]:
    """``(start, end)`` grown evenly on both sides to about ``size`` characters of ``text``
    (less where the text ends), each side cut at a space; as it is when already that wide."""
    if end - start >= size or size >= len(text):
        return (start, end) if end - start >= size else (0, len(text))
    spare = size - (end - start)
    lo = max(0, start - spare // 2)
    hi = min(len(text), end + (spare - (start - lo)))
    lo = max(0, lo - (size - (hi - lo)))  # what the end could not take, the start does
    if lo > 0:
        space = text.find(" ", lo, start)
        lo = space + 1 if space != -1 else lo
    if hi < len(text):
        space = text.rfind(" ", end, hi)
        hi = space if space != -1 else hi
    return lo, hi


def marked(text: str, start: int, end: int) -> str:
    """``text[start:end]`` marked with "…" where it cuts the text."""
    head = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    return f"{head}{text[start:end].strip()}{tail}"


__all__ = [
    "best_excerpt",
    "best_window",
    "chunk_spans",
    "excerpt",
    "marked",
    "message_windows",
    "split_document",
    "widened",
]

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def split_document(text: str, max_chars: int, overlap: int) -> list[str]:
    """Passages of at most ``max_chars`` characters, in order.

    Paragraphs (blank-line separated) are packed together while they fit; a paragraph longer
    than ``max_chars`` is split at sentence ends, and a sentence longer than that at
    ``max_chars`` with ``overlap`` characters repeated from the previous piece, so no text is
    lost and no passage exceeds the limit. Blank passages are dropped.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be positive")
    overlap = max(0, min(overlap, max_chars - 1))
    pieces: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        if len(paragraph) <= max_chars:
            pieces.append(paragraph)
            continue
        for sentence in _SENTENCE.split(paragraph):
            if len(sentence) <= max_chars:
                pieces.append(sentence)
                continue
            step = max_chars - overlap
            cuts = (sentence[i : i + max_chars] for i in range(0, len(sentence) - overlap, step))
            pieces += [cut.strip() for cut in cuts]
    passages: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        if passages and len(passages[-1]) + 1 + len(piece) <= max_chars:
            passages[-1] = f"{passages[-1]}\n{piece}"
        else:
            passages.append(piece)
    return passages
