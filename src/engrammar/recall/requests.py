"""Requests to the assistant: "Can you recommend ...?", "Any tips for ...?" (pure functions).

A request for suggestions wants what the user said about its topic ("Can you suggest some
accessories for my photography setup?" against "As a Sony camera user, I've been thinking about
a new camera bag"), worded away from the request. Two things that help questions about the
user's facts hurt such a request:

- keyword search on the words that frame it: in a chat with an assistant nearly every user
  message asks for something, so "recommend", "tips", "this weekend" or "I'm thinking of" match
  every other request, and the request that shares most of them outranks the user's statement;
- spreading the list over sessions: what the user said on one topic is mostly in one
  conversation, so its second and third messages are as wanted as its first.

Questions about people in a conversation ("What did Caroline recommend to Melanie?") are not
requests: only a question put to the assistant is.
"""

from __future__ import annotations

import re

__all__ = ["asks_for_suggestions", "without_request_frame"]

# Put to the assistant: "can you suggest", "any tips", "what should I", "recommend me".
_REQUEST = re.compile(
    r"\b(?:can|could|would) you (?:\w+ )?(?:recommend|suggest|give|share|provide|help|offer|"
    r"think of)\b"
    r"|\bany (?:\w+ )?(?:tips|suggestions?|advice|ideas|recommendations?|thoughts)\b"
    r"|\bwhat should (?:i|we)\b|\bdo you have any\b|\bwhat do you think\b"
    r"|\b(?:recommend|suggest)\w* (?:for |to )?(?:me|us)\b"
)
# Words that frame a request rather than name its topic: the asking ("recommendations",
# "tips"), the time ahead it is for ("this weekend", "upcoming"; as in recall.timeref, a request
# names no time to search) and the openers of a request ("I'm thinking of", "I'm planning").
_FRAME = re.compile(
    r"\b(?:recommend\w*|suggest\w*|tips?|advice|advise|ideas?|thoughts|help|options?"
    r"|weekend|tonight|tomorrow|upcoming|soon|next week"
    r"|thinking|planning|excited|feeling|trying|wondering|deciding|looking)\b"
)


def asks_for_suggestions(query: str) -> bool:
    """Whether ``query`` asks the assistant for suggestions, tips, ideas or an opinion
    ("Can you recommend a show for tonight?", "Any tips for keeping my kitchen clean?")."""
    return _REQUEST.search(query.lower()) is not None


def without_request_frame(query: str) -> str:
    """``query`` (lower-cased) without the words that frame a request (see the module), for
    keyword search: "Can you recommend some recent publications?" -> "can you some recent
    publications?"."""
    return re.sub(r"\s+", " ", _FRAME.sub(" ", query.lower())).strip()
