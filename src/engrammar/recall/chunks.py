"""Splitting a document into passages for a knowledge base (pure text, no I/O)."""

from __future__ import annotations

import re

__all__ = ["split_document"]

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
            pieces += [sentence[i : i + max_chars] for i in range(0, len(sentence) - overlap, step)]
    passages: list[str] = []
    for piece in pieces:
        if passages and len(passages[-1]) + 1 + len(piece) <= max_chars:
            passages[-1] = f"{passages[-1]}\n{piece}"
        else:
            passages.append(piece)
    return passages
