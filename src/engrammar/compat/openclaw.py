"""OpenCLaw's feedback classes, feeding engrammar's learning machinery.

``FeedbackCapture`` takes a storage backend with ``insert(entry) -> str``; give it a
:class:`~engrammar.Memory` and it uses :class:`MemoryFeedbackStorage`, which turns entries into
engrammar's own records, so they change recall like every other signal:

=====================  ===============================================================
FeedbackType           becomes
=====================  ===============================================================
EXPLICIT_CORRECTION    a feedback event, ``state="corrected"``, ``corrected_output`` =
                       ``user_modification`` (the correction surfaces next time)
MODIFICATION           the same, with ``user_reaction="modified the response"``
REJECTION              a feedback event, ``state="rejected"`` (never offered again)
IMPLICIT_ACCEPTANCE    accepting ratings (weight = the signal strength) of the memories
                       of the interaction's recall that the response drew on, or an
                       ``adopted`` feedback event when the interaction is not a recall
=====================  ===============================================================

An ``interaction_id`` is a ``RecallResult.recall_id`` (its query is the context) or any id with
``context_tags["input_context"]``.

``ImplicitSignalTracker`` keeps a rolling window of user actions (copy, follow-up question,
dwell time, edit, regenerate, ...), correlates them with the fingerprint of the response they
were about (and with responses of the same shape) and yields a strength in [0, 1]; only
strengths above 0.7 become implicit acceptances.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Protocol

from ..engine import validate as v
from ..errors import ValidationError
from ..memory import Memory
from ..models import Scope

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

#: Signals above this strength become implicit acceptances (OpenCLaw's threshold).
IMPLICIT_THRESHOLD = 0.7


class FeedbackType(Enum):
    """What kind of feedback an entry records."""

    EXPLICIT_CORRECTION = "explicit_correction"
    IMPLICIT_ACCEPTANCE = "implicit_acceptance"
    REJECTION = "rejection"
    MODIFICATION = "modification"


@dataclass
class FeedbackEntry:
    """One piece of feedback on one interaction (OpenCLaw's fields and names)."""

    interaction_id: str
    timestamp: datetime
    feedback_type: FeedbackType
    original_response: str
    user_modification: str | None = None
    context_tags: dict[str, Any] | None = None
    confidence_override: float | None = None

    def validate(self) -> bool:
        """Check the entry; returns True or raises :class:`ValidationError` naming the field.

        An explicit correction (and a modification) needs ``user_modification``.
        """
        v.scope_id("interaction_id", self.interaction_id, required=True)
        if not isinstance(self.timestamp, datetime):
            raise ValidationError("timestamp", "must be a datetime")
        if not isinstance(self.feedback_type, FeedbackType):
            try:
                self.feedback_type = FeedbackType(self.feedback_type)
            except ValueError:
                allowed = ", ".join(t.value for t in FeedbackType)
                raise ValidationError(
                    "feedback_type", f"must be one of {allowed}; got {self.feedback_type!r}"
                ) from None
        v.text("original_response", self.original_response, 1_000_000)
        needs_text = (FeedbackType.EXPLICIT_CORRECTION, FeedbackType.MODIFICATION)
        if self.feedback_type in needs_text:
            if self.user_modification is None:
                raise ValidationError(
                    "user_modification", f"is required for {self.feedback_type.value}"
                )
            v.text("user_modification", self.user_modification, 1_000_000)
        self.context_tags = v.metadata("context_tags", self.context_tags)
        if self.confidence_override is not None:
            v.unit_float("confidence_override", self.confidence_override)
        return True


@dataclass
class Signal:
    """What the tracker concluded from the actions on one response."""

    strength: float
    context: dict[str, Any]
    response: str | None
    fingerprint: str | None = None


@dataclass
class Pattern:
    """The correlation of the window's actions with one response fingerprint."""

    confidence: float
    context: dict[str, Any] = field(default_factory=dict)


# Evidence each action gives that the response was accepted (as OpenCLaw reads them:
# copy-paste = partial satisfaction, follow-up questions = gaps, long reviews = complexity
# concerns).
ACTION_EVIDENCE: dict[str, float] = {
    "accept": 0.6,
    "thumbs_up": 0.6,
    "like": 0.6,
    "save": 0.5,
    "share": 0.5,
    "copy": 0.35,
    "paste": 0.35,
    "execute": 0.4,  # ran the code it gave
    "follow_up": -0.2,
    "follow_up_question": -0.2,
    "edit": -0.15,
    "regenerate": -0.6,
    "retry": -0.6,
    "dismiss": -0.7,
    "thumbs_down": -0.7,
    "reject": -0.7,
}


def _dwell_evidence(seconds: float) -> float:
    if seconds < 3:
        return -0.05  # skimmed past
    if seconds <= 120:
        return 0.2  # read it
    return -0.1  # a long struggle suggests complexity concerns


def _fingerprint(response: str) -> str:
    normal = " ".join(response.split()).lower()
    return hashlib.sha256(normal.encode()).hexdigest()[:16]


def _shape(response: str) -> str:
    """A coarse profile of a response: its length bucket and whether it has code or a list."""
    length = "short" if len(response) < 200 else ("medium" if len(response) < 1000 else "long")
    code = "code" if "```" in response or re.search(r"^\s{4}\S", response, re.M) else "prose"
    listed = "list" if re.search(r"^\s*([-*]|\d+\.)\s", response, re.M) else "flat"
    return f"{length}/{code}/{listed}"


class ImplicitSignalTracker:
    """A rolling window of user actions, correlated with response fingerprints.

    Args:
        window_size: how many recent actions are kept.

    An action is a dict with ``type`` (``copy``, ``follow_up``, ``dwell``, ``edit``,
    ``regenerate``, ...), the ``response_hash`` it was about (or the ``response`` itself) and,
    for ``dwell``, ``seconds``. Strength = ``0.5 + 0.5·tanh(e)`` where ``e`` sums the evidence
    of the window's actions on that response plus a quarter of the mean evidence on other
    responses of the same shape: one copy alone stays below 0.7, a copy after reading it, or
    two copies, pass it; a regenerate pulls it under 0.5.
    """

    def __init__(self, window_size: int = 50) -> None:
        self.window_size = v.positive_int("window_size", window_size, maximum=100_000)
        self.action_history: deque[dict[str, Any]] = deque(maxlen=self.window_size)
        self.response_mapping: dict[str, dict[str, Any]] = {}

    def register_response(self, response: str, context: dict[str, Any] | None = None) -> str:
        """Remember a response (and its context); returns its fingerprint."""
        v.text("response", response, 1_000_000)
        fp = _fingerprint(response)
        self.response_mapping[fp] = {
            "response": response,
            "shape": _shape(response),
            "context": v.metadata("context", context),
        }
        if len(self.response_mapping) > 4 * self.window_size:
            # Forget responses no action in the window refers to any more.
            live = {a.get("response_hash") for a in self.action_history} | {fp}
            for key in [k for k in self.response_mapping if k not in live]:
                del self.response_mapping[key]
        return fp

    def analyze(self, action: dict[str, Any]) -> Signal:
        """Add one action to the window; the signal for the response it was about."""
        if not isinstance(action, dict):
            raise ValidationError("action", f"must be a dict, got {type(action).__name__}")
        kind = v.scope_id("action.type", action.get("type"), required=True)
        record = dict(action)
        if record.get("response") is not None and record.get("response_hash") is None:
            record["response_hash"] = self.register_response(str(record["response"]))
        if kind == "dwell":
            seconds = record.get("seconds")
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
                raise ValidationError("action.seconds", "a dwell action needs seconds >= 0")
        record.setdefault("at", time.time())
        self.action_history.append(record)
        fp = record.get("response_hash")
        patterns = self.correlate_patterns(fp, str(kind))
        known = self.response_mapping.get(fp or "")
        return Signal(
            strength=patterns.confidence,
            context=patterns.context,
            response=record.get("response") or (known["response"] if known else None),
            fingerprint=fp,
        )

    @staticmethod
    def _evidence(action: dict[str, Any]) -> float:
        kind = str(action.get("type"))
        if kind == "dwell":
            return _dwell_evidence(float(action.get("seconds", 0)))
        return ACTION_EVIDENCE.get(kind, 0.0)

    def correlate_patterns(self, response_fp: str | None, action_type: str) -> Pattern:
        """How consistently the window's actions say the response was accepted."""
        if response_fp is None:
            return Pattern(0.0, {"reason": "action names no response", "action": action_type})
        own = [a for a in self.action_history if a.get("response_hash") == response_fp]
        evidence = sum(self._evidence(a) for a in own)
        known = self.response_mapping.get(response_fp)
        shape = known["shape"] if known else None
        peers: dict[str, float] = {}
        if shape is not None:
            for a in self.action_history:
                other = a.get("response_hash")
                if other == response_fp or other not in self.response_mapping:
                    continue
                if self.response_mapping[other]["shape"] == shape:
                    peers[other] = peers.get(other, 0.0) + self._evidence(a)
        shape_mean = sum(peers.values()) / len(peers) if peers else 0.0
        confidence = 0.5 + 0.5 * math.tanh(evidence + 0.25 * shape_mean)
        counts: dict[str, int] = {}
        for a in own:
            counts[str(a.get("type"))] = counts.get(str(a.get("type")), 0) + 1
        context = {
            "fingerprint": response_fp,
            "actions": counts,
            "evidence": round(evidence, 4),
            "shape": shape,
            "shape_mean_evidence": round(shape_mean, 4),
            "last_action": action_type,
            **(known["context"] if known else {}),
        }
        return Pattern(round(confidence, 6), context)


class FeedbackStorage(Protocol):
    """Where ``FeedbackCapture`` puts entries."""

    def insert(self, entry: FeedbackEntry) -> str:
        """Store the entry; returns the id of what was stored."""
        ...


class MemoryFeedbackStorage:
    """Stores OpenCLaw entries as engrammar records (see the module docstring).

    Args:
        memory: the :class:`~engrammar.Memory` to feed.
        user_id, agent_id, session_id, workspace: the scope of the records.
    """

    def __init__(
        self,
        memory: Memory,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
    ) -> None:
        self.memory = memory
        self.scope = memory._scope(user_id, agent_id, session_id, workspace)

    def _keys(self) -> dict[str, Any]:
        s = self.scope
        return {
            "user_id": s.user_id,
            "agent_id": s.agent_id,
            "session_id": s.session_id,
            "workspace": s.workspace,
        }

    def insert(self, entry: FeedbackEntry) -> str:
        entry.validate()
        tags = dict(entry.context_tags or {})
        recall = self.memory.store.get_recall(Scope(self.scope.workspace), entry.interaction_id)
        context = tags.get("input_context") or (recall.query if recall else None)
        kind = entry.feedback_type
        when = entry.timestamp if entry.timestamp.tzinfo else entry.timestamp.replace(tzinfo=UTC)
        source = f"openclaw:{entry.interaction_id}:{kind.value}:{when.isoformat()}"
        if kind == FeedbackType.IMPLICIT_ACCEPTANCE and recall is not None:
            return self._accept_recall(entry, recall.recall_id, recall.memory_ids, when)
        if not isinstance(context, str) or not context.strip():
            raise ValidationError(
                "context_tags.input_context",
                "is needed when interaction_id is not the recall_id of a recall",
            )
        state = {
            FeedbackType.EXPLICIT_CORRECTION: "corrected",
            FeedbackType.MODIFICATION: "corrected",
            FeedbackType.REJECTION: "rejected",
            FeedbackType.IMPLICIT_ACCEPTANCE: "adopted",
        }[kind]
        reaction = {
            FeedbackType.EXPLICIT_CORRECTION: "explicit correction",
            FeedbackType.MODIFICATION: "modified the response",
            FeedbackType.REJECTION: "rejected the response",
            FeedbackType.IMPLICIT_ACCEPTANCE: "implicit acceptance",
        }[kind]
        reason = tags.get("reason")
        event = self.memory.create_feedback_event(
            input_context=context,
            ai_output=entry.original_response,
            state=state,
            user_reaction=reaction,
            corrected_output=entry.user_modification if state == "corrected" else None,
            reason=reason if isinstance(reason, str) and reason.strip() else None,
            source_event_id=source,
            metadata={
                "openclaw": {
                    "interaction_id": entry.interaction_id,
                    "type": kind.value,
                    "confidence_override": entry.confidence_override,
                }
            },
            timestamp=when,
            **self._keys(),
        )
        return event.id

    def _accept_recall(
        self, entry: FeedbackEntry, recall_id: str, memory_ids: list[str], when: datetime
    ) -> str:
        """Accept the recalled memories the response drew on (MemWire's alignment rule)."""
        mem = self.memory
        weight = entry.confidence_override if entry.confidence_override is not None else 1.0
        reply = mem._engine.embed_one(entry.original_response)
        vectors = mem.store.vectors(self.scope.workspace, memory_ids)
        rated = []
        for memory_id in memory_ids:
            vec = vectors.get(memory_id)
            if vec is None or float(vec @ reply) < mem.config.feedback_align_strengthen:
                continue
            mem.rate_memory(
                memory_id,
                "accepted",
                recall_id=recall_id,
                weight=max(weight, 1e-6),
                workspace=self.scope.workspace,
                user_id=self.scope.user_id,
                agent_id=self.scope.agent_id,
                session_id=self.scope.session_id,
                timestamp=when,
            )
            rated.append(memory_id)
        logged = mem.log_event(
            "implicit_acceptance",
            {
                "interaction_id": entry.interaction_id,
                "strength": weight,
                "rated_memory_ids": rated,
                "context_tags": entry.context_tags or {},
            },
            timestamp=when,
            **self._keys(),
        )
        return logged.id


class FeedbackCapture:
    """The capture layer: explicit feedback and implicit signals.

    Args:
        storage_backend: an object with ``insert(entry) -> str``, or a
            :class:`~engrammar.Memory` (wrapped in :class:`MemoryFeedbackStorage`).
        user_id, agent_id, session_id, workspace: the scope, when ``storage_backend`` is a
            Memory.
        tracker: the :class:`ImplicitSignalTracker` to use (a new one with window 50 by default).
    """

    def __init__(
        self,
        storage_backend: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        session_id: str | None = None,
        workspace: str | None = None,
        tracker: ImplicitSignalTracker | None = None,
    ) -> None:
        if isinstance(storage_backend, Memory):
            storage_backend = MemoryFeedbackStorage(
                storage_backend,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                workspace=workspace,
            )
        if not callable(getattr(storage_backend, "insert", None)):
            raise ValidationError("storage_backend", "must be a Memory or have insert(entry)")
        self.storage: FeedbackStorage = storage_backend
        self.implicit_tracker = tracker or ImplicitSignalTracker()
        self._responses: dict[str, str] = {}  # interaction_id -> fingerprint
        self._accepted: set[tuple[str, str]] = set()

    def record_explicit(self, entry: FeedbackEntry) -> str:
        """Validate (raising :class:`ValidationError`) and store an entry; returns its id."""
        entry.validate()
        return self.storage.insert(entry)

    def track_response(
        self, interaction_id: str, response: str, context: dict[str, Any] | None = None
    ) -> str:
        """Say which response an interaction produced, so later actions can refer to it."""
        v.scope_id("interaction_id", interaction_id, required=True)
        fp = self.implicit_tracker.register_response(response, context)
        self._responses[interaction_id] = fp
        return fp

    def record_implicit(self, interaction_id: str, action: str | dict[str, Any]) -> str | None:
        """Feed one user action to the tracker; a signal above 0.7 is stored as an implicit
        acceptance (once per interaction and response). Returns the stored id, else None."""
        v.scope_id("interaction_id", interaction_id, required=True)
        record = {"type": action} if isinstance(action, str) else dict(action)
        if record.get("response_hash") is None and record.get("response") is None:
            fp = self._responses.get(interaction_id)
            if fp is None:
                raise ValidationError(
                    "interaction_id",
                    f"no response tracked for {interaction_id!r}: call track_response first "
                    "or give the action a response",
                )
            record["response_hash"] = fp
        signal = self.implicit_tracker.analyze(record)
        key = (interaction_id, signal.fingerprint or "")
        if signal.strength <= IMPLICIT_THRESHOLD or key in self._accepted:
            return None
        if signal.response is None:
            raise ValidationError("action.response", "the response of this action is unknown")
        entry = FeedbackEntry(
            interaction_id=interaction_id,
            timestamp=datetime.now(UTC),
            feedback_type=FeedbackType.IMPLICIT_ACCEPTANCE,
            original_response=signal.response,
            context_tags=signal.context,
            confidence_override=signal.strength,
        )
        stored = self.storage.insert(entry)
        self._accepted.add(key)
        return stored
