"""Who may reach what: the :class:`Principal` of a call and the guards the operation table names.

Every request runs as a principal. Over HTTP the principal comes from the API key and is
*fixed*: its workspace (and user, when the key is bound to one) replaces whatever scope the
request names, a different workspace or user is refused with ``ForbiddenError``, and a memory
id outside the principal's reach is reported as not found, exactly as if it did not exist.
Over stdio (or ``--no-auth`` on loopback) the principal is the local user: scope arguments are
honoured and the configured workspace is only the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine.base import shared
from ..errors import ForbiddenError, NotFoundError, ValidationError
from ..memory import Memory

__all__ = [
    "Call",
    "Principal",
    "attribute",
    "hide_other_keys",
    "narrow_ids",
    "own_event",
    "own_memory",
    "own_recall",
    "readable_memory",
    "resolve",
]


@dataclass(frozen=True)
class Principal:
    """Who is calling: a workspace, optionally a user, and whether they are fixed."""

    workspace: str
    user_id: str | None = None
    key_id: str | None = None
    fixed: bool = True

    def resolve(self, workspace: Any, user_id: Any) -> tuple[str, str | None]:
        """The (workspace, user_id) a call may act on, given what it asked for."""
        if not self.fixed:
            return (workspace if workspace is not None else self.workspace), user_id
        if workspace is not None and workspace != self.workspace:
            raise ForbiddenError(
                f"this API key is bound to workspace {self.workspace!r}; "
                f"it cannot reach workspace {workspace!r}"
            )
        if self.user_id is not None:
            if user_id is not None and user_id != self.user_id:
                raise ForbiddenError(
                    f"this API key is bound to user_id {self.user_id!r}; "
                    f"it cannot act for user_id {user_id!r}"
                )
            user_id = self.user_id
        return self.workspace, user_id

    @property
    def bound_user(self) -> str | None:
        """The user a fixed principal is bound to, if any."""
        return self.user_id if self.fixed else None


@dataclass
class Call:
    """One operation being run: the memory, the principal, and its (resolved) arguments."""

    memory: Memory
    principal: Principal
    args: dict[str, Any]


# -- guards: what a principal may reach --------------------------------------------------------
def resolve(call: Call) -> None:
    args = call.args
    ws, user = call.principal.resolve(args.get("workspace"), args.get("user_id"))
    args["workspace"] = ws
    if "user_id" in args:
        args["user_id"] = user


def attribute(call: Call) -> None:
    """Feedback over HTTP with an API key comes from that key, whatever the request says
    (a ``source`` it gives is still checked: a malformed request is refused, not ignored)."""
    if call.principal.key_id is not None:
        given = call.args.get("source")
        if given is not None and not isinstance(given, str):
            raise ValidationError("source", f"must be a string, got {type(given).__name__}")
        call.args["source"] = f"key:{call.principal.key_id}"


def feedback_source(principal: Principal, args: dict[str, Any]) -> str | None:
    """Who a feedback write comes from, for the per-source rate limit: the API key, else the
    ``source`` or ``agent_id`` the request names (``None``: the caller's address decides)."""
    if principal.key_id is not None:
        return f"key:{principal.key_id}"
    if isinstance(args.get("source"), str):
        return f"source:{args['source']}"
    if isinstance(args.get("agent_id"), str):
        return f"agent:{args['agent_id']}"
    return None


def _own_memory_id(call: Call, memory_id: Any, read: bool = False) -> Any:
    if not isinstance(memory_id, str):
        raise ValidationError("memory_id", "must be a string")
    ws = call.args["workspace"]
    record = call.memory.get(memory_id, workspace=ws)
    bound = call.principal.bound_user
    if bound is not None and record.user_id != bound and not (read and shared(record)):
        # Same answer as an absent id: a key must not learn what other users hold.
        raise NotFoundError(f"memory {memory_id!r} not found in workspace {ws!r}")
    return record


def own_memory(call: Call) -> None:
    """The memory named by ``memory_id`` is within the principal's reach."""
    _own_memory_id(call, call.args["memory_id"])


def readable_memory(call: Call) -> None:
    """The memory named by ``memory_id`` is the principal's, or the workspace's knowledge
    (a decision or preference recorded without a user), which every recall of the workspace
    shows: it may be read, explained and rated (a user's rating reaches that user's recalls
    only), not changed or forgotten."""
    _own_memory_id(call, call.args["memory_id"], read=True)


def own_event(call: Call) -> None:
    """The feedback event named by ``event_id`` is within the principal's reach."""
    event_id = call.args["event_id"]
    event = call.memory.get_feedback_event(event_id, workspace=call.args["workspace"])
    own_record(call, "feedback event", event.to_dict(), event_id)


def own_recall(call: Call) -> None:
    """A user-bound key may rate in the light of its own user's recalls only."""
    recall_id, bound = call.args.get("recall_id"), call.principal.bound_user
    ws = call.args["workspace"]
    if (
        recall_id is not None
        and bound is not None
        and (
            not isinstance(recall_id, str)
            or not call.memory.has_recall(recall_id, workspace=ws, user_id=bound)
        )
    ):
        raise NotFoundError(f"recall {recall_id!r} not found in workspace {ws!r}")


def narrow_ids(call: Call) -> None:
    """Ids given to forget are each owned, and a scope given with them narrows them."""
    args = call.args
    if args.get("memory_id") is None:
        return
    ids = [args["memory_id"]] if isinstance(args["memory_id"], str) else args["memory_id"]
    if not isinstance(ids, list) or not ids:
        raise ValidationError("memory_id", "must be an id or a non-empty list of ids")
    for mid in ids:
        record = _own_memory_id(call, mid)
        # A memory outside the scope is not found, so a delete either happens or says why not.
        for key in ("user_id", "agent_id", "session_id"):
            wanted = args.get(key)
            if wanted is not None and getattr(record, key) != wanted:
                raise NotFoundError(
                    f"memory {mid!r} not found for {key} {wanted!r} "
                    f"in workspace {args['workspace']!r}"
                )
    args["memory_id"] = ids


def own_record(call: Call, kind: str, record: dict[str, Any], record_id: Any) -> dict[str, Any]:
    bound = call.principal.bound_user
    if bound is not None and record["user_id"] != bound:
        raise NotFoundError(
            f"{kind} {record_id!r} not found in workspace {call.args['workspace']!r}"
        )
    return record


#: How explain names a source that is another API key, to a key bound to a user.
ANOTHER_KEY = "another API key"


def hide_other_keys(principal: Principal, explanation: dict[str, Any]) -> None:
    """A user-bound key's ``explain`` names no other key: feedback from another API key shows
    as :data:`ANOTHER_KEY` (its records without their ids, its sources summed in one row).
    Its own key, and sources that are not keys, stay as they are."""
    if principal.bound_user is None:
        return
    own = f"key:{principal.key_id}"

    def other(source: Any) -> bool:
        return isinstance(source, str) and source.startswith("key:") and source != own

    for row in explanation.get("records", []):
        if other(row.get("source")):
            row.pop("record_id", None)
            row["source"] = ANOTHER_KEY
    sources, merged = [], None
    for row in explanation.get("sources", []):
        if not other(row.get("source")):
            sources.append(row)
        elif merged is None:
            merged = {**row, "source": ANOTHER_KEY}
            sources.append(merged)
        else:
            merged["contribution"] = round(merged["contribution"] + row["contribution"], 6)
            if "placement" in row:
                merged["placement"] = max(merged.get("placement", 0.0), row["placement"])
    explanation["sources"] = sources
