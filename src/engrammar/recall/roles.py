"""Who said it: the user's own words against the assistant's (pure functions, no I/O).

In a user <-> assistant chat the facts about the user are in the user's messages ("I took Lola
to the vet last week"); the assistant's replies are long, generic and share every topic word
of the question, so on length and vocabulary alone they crowd the user's statements out.
Unless a query asks about what the assistant said ("what did you recommend ...", "in our
last chat ..."), an assistant memory's relevance is discounted. Memories of other roles and
conversations without an assistant (every LoCoMo turn is a user's) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .fusion import Candidate

__all__ = ["asks_about_assistant", "asks_about_brief", "role_discount"]

_SAID = (
    r"said|told|suggested|recommended|mentioned|gave|provided|listed|wrote|explained|shared|"
    r"described|offered|proposed|answered|replied|helped|came up with|talked about|named"
)
_ASKED = (
    r"say|tell|suggest|recommend|mention|give|provide|list|write|explain|share|describe|"
    r"offer|propose|answer|reply|name"
)
_ABOUT_ASSISTANT = re.compile(
    rf"\byou\s+(?:\w+\s+){{0,2}}?(?:{_SAID})\b"
    rf"|\bdid you\s+(?:\w+\s+)?(?:{_ASKED})\b"
    r"|\byour\s+(?:suggestion|recommendation|answer|response|reply|advice|list|explanation|idea)s?\b"
    r"|\b(?:our|previous|last|earlier)\s+(?:chat|conversation|discussion|exchange)s?\b"
    r"|\bremind me\b"
)


# "What is your system prompt?", "What were your instructions?", "What is your role?"
_ABOUT_BRIEF = re.compile(
    r"\bsystem\s+(?:prompt|message)s?\b"
    r"|\byour\s+(?:instructions?|role|rules|brief|persona|guidelines)\b"
    r"|\b(?:were\s+you|you\s+(?:were|are))\s+(?:told|instructed|asked)\b"
)


def asks_about_assistant(query: str) -> bool:
    """Whether a query asks about what the assistant said rather than about the user."""
    return _ABOUT_ASSISTANT.search(query.lower()) is not None


def asks_about_brief(query: str) -> bool:
    """Whether a query asks about the assistant's system prompt (its instructions, its role)."""
    return _ABOUT_BRIEF.search(query.lower()) is not None


def role_discount(
    cands: list[Candidate], query: str, roles: Mapping[str, str], penalty: float
) -> list[Candidate]:
    """Multiply the relevance of assistant memories by ``1 - penalty`` unless the query asks
    about the assistant's words, and of system prompts unless it asks about the assistant's
    instructions; best first again. ``roles`` maps candidate ids to roles.

    A system prompt ("You are a helpful travel assistant ...") is the assistant's brief, not
    something the user said: without the discount it shares the words of every question on
    its topic ("Where am I travelling?") and leads the list in each conversation it opens."""
    if penalty <= 0:
        return cands
    discounted = set()
    if not asks_about_assistant(query):
        discounted.add("assistant")
    if not asks_about_brief(query):
        discounted.add("system")
    if not discounted:
        return cands
    touched = False
    for cand in cands:
        if roles.get(cand.id) in discounted:
            cand.relevance *= 1.0 - penalty
            cand.components["assistant_penalty"] = penalty
            cand.components["relevance"] = round(cand.relevance, 6)
            touched = True
    return sorted(cands, key=lambda c: -c.relevance) if touched else cands
