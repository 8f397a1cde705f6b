"""The former home of OpenCLaw's feedback classes, kept so that existing imports work.

The classes live in :mod:`engrammar.compat.openclaw`; ``from engrammar.feedback import
FeedbackCapture`` and the like give the same objects.
"""

from __future__ import annotations

from .compat.openclaw import (
    ACTION_EVIDENCE,
    IMPLICIT_THRESHOLD,
    FeedbackCapture,
    FeedbackEntry,
    FeedbackStorage,
    FeedbackType,
    ImplicitSignalTracker,
    MemoryFeedbackStorage,
    Pattern,
    Signal,
)

__all__ = [
    "ACTION_EVIDENCE",
    "IMPLICIT_THRESHOLD",
    "FeedbackCapture",
    "FeedbackEntry",
    "FeedbackStorage",
    "FeedbackType",
    "ImplicitSignalTracker",
    "MemoryFeedbackStorage",
    "Pattern",
    "Signal",
]
