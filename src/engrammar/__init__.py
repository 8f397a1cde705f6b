"""engrammar: long-term memory for AI agents that learns from feedback."""

from __future__ import annotations

from .aio import AsyncMemory
from .config import Config, RankingProfile
from .embed import CachedEmbedder, Embedder, HashEmbedder
from .errors import (
    AuthError,
    ConflictError,
    DeadlineError,
    EmbedderError,
    EngrammarError,
    ForbiddenError,
    MissingExtraError,
    NotFoundError,
    StoreError,
    TooLargeError,
    ValidationError,
)
from .memory import Memory
from .models import (
    AddResult,
    DecisionReview,
    Edge,
    FeedbackEvent,
    LoggedEvent,
    MemoryRating,
    MemoryRecord,
    Path,
    PreferencePair,
    RecallResult,
    Scope,
    ScoredMemory,
    Skipped,
    Tension,
)

__version__ = "0.1.0"

__all__ = [
    "AddResult",
    "AsyncMemory",
    "AuthError",
    "CachedEmbedder",
    "Config",
    "ConflictError",
    "DeadlineError",
    "DecisionReview",
    "Edge",
    "Embedder",
    "EmbedderError",
    "EngrammarError",
    "FeedbackEvent",
    "ForbiddenError",
    "HashEmbedder",
    "LoggedEvent",
    "Memory",
    "MemoryRating",
    "MemoryRecord",
    "MissingExtraError",
    "NotFoundError",
    "Path",
    "PreferencePair",
    "RankingProfile",
    "RecallResult",
    "Scope",
    "ScoredMemory",
    "Skipped",
    "StoreError",
    "Tension",
    "TooLargeError",
    "ValidationError",
    "__version__",
]
