"""Recognising standing preferences in what a user says, and choosing the ones a query needs.

Pure functions, no model: :func:`recognise_preference` reads one user message (and the message
it answers) and says whether it states a standing preference of the speaker:

* **explicit**: a first-person statement of a lasting like, dislike, habit, need or rule ("I
  prefer ...", "I can't stand ...", "I always ...", "I'm vegan", "I'm allergic to ...", "my
  favourite ...", "please never ..."), not a question, not a one-off request ("I'd like a
  table for two"), not a reaction to what was just said ("I love that!"), not about someone
  else ("my sister prefers ...");
* **choice**: a pick between options the assistant has just offered ("I'll go with option 2",
  "the second one sounds good, the others don't appeal to me").

The rules read the wording only: a preference stated in words they do not cover stays a
``message``, and a sentence they take for one by mistake becomes a ``preference``.

:func:`select_preferences` picks, for a query, the standing preferences that bear on it: a
preference counts when its similarity to the query reaches ``min_similarity``; the best
``limit`` come back, best first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["PreferenceCue", "recognise_preference", "select_preferences"]


@dataclass(frozen=True)
class PreferenceCue:
    """Why a message was taken for a preference: ``kind`` explicit or choice, and the cue."""

    kind: str
    cue: str


_I = r"(?:i|we)"
_ADV = (
    r"(?:(?:really|truly|much|very much|strongly|strictly|absolutely|definitely|generally|"
    r"usually|typically|mostly|mainly|always|also|just|only|personally|tend to|still|"
    r"actually|honestly|simply|totally|deeply|kind of|kinda|sort of|completely|entirely|"
    r"adamantly|firmly|greatly|extremely|intensely|genuinely|certainly)\s+)*"
)
# Verbs of a standing attitude; "like" and "love" only when not followed by a reaction object
# ("I love that!") or an infinitive request ("I'd like to book").
_LIKE_OBJECT = r"(?!(?:it|that|this|them|those|these|you|your|the idea)\b(?!\s+when))"
_EXPLICIT = [
    rf"\b{_I}\s+{_ADV}(?:prefer|favou?r)\b",
    rf"\b{_I}(?:'d| would)\s+{_ADV}(?:rather|prefer)\b",
    rf"\b{_I}\s+{_ADV}(?:love|like|enjoy|adore)\s+{_LIKE_OBJECT}\w+",
    rf"\b{_I}\s+{_ADV}(?:hate|dislike|detest|loathe|despise|avoid|refuse|abhor)\b"
    r"(?!\s+to\s+(?:say|bother|interrupt|admit|ask|break|tell|be that)\b)",
    rf"\b{_I}\s+{_ADV}(?:can't|cannot|can not|couldn't)\s+(?:stand|bear|tolerate|handle|"
    r"eat|drink|digest|have)\b",
    rf"\b{_I}\s+{_ADV}(?:don't|do not|never)\s+{_ADV}(?:like|enjoy|eat|drink|use|wear|watch|"
    r"play|want|care for|buy|fly|travel|read|do)\b(?!\s+(?:know|think|understand)\b)",
    rf"\b{_I}\s+{_ADV}(?:always|never|only|exclusively)\s+(?!(?:forget|seem|lose|get lost|"
    r"end up|wonder|thought|wondered|got|received|heard|saw|knew|noticed|realized|meant|"
    r"said|asked|had|did|went|came|found|expected|managed|answered)\b)\w+",
    rf"\b{_I}(?:'m| am|'re| are)\s+{_ADV}(?:an?\s+)?(?:vegan|vegetarian|pescatarian|"
    r"allergic|intolerant|lactose[- ]intolerant|gluten[- ]free|teetotal|sober|diabetic|"
    r"celiac|coeliac|kosher|halal|(?:big |huge |not a |not much of a )?fan of|"
    r"not (?:a )?(?:into|fond of|keen on|comfortable with)|into|fond of|keen on|"
    r"passionate about|obsessed with|a morning person|a night owl|afraid of|scared of|"
    r"terrified of|sensitive to|committed to|partial to|picky about|(?:not )?interested in|"
    r"opposed to|against|uncomfortable with|(?:a )?(?:strong |big )?(?:advocate|supporter) of|"
    r"(?:a )?(?:strong |big )?(?:advocate|believer) (?:of|for|in)|fascinated by|"
    r"passionate about|drawn to|put off by)\b",
    rf"\b{_I}\s+{_ADV}(?:have|'ve got|suffer from)\s+(?:an?\s+|no\s+|little\s+)?"
    r"(?:[\w-]+\s+){0,3}(?:allergy|allergies|intolerance|phobia|fear|aversion|preference|"
    r"soft spot|weakness|dislike|objection|interest in|tolerance for|sensitive skin)\b",
    rf"\b{_I}\s+{_ADV}(?:learn|work|study|focus|sleep|think|concentrate|relax)\s+best\b",
    rf"\b{_I}\s+{_ADV}find\s+(?:it\s+)?(?:hard|difficult|easier|easy|impossible)\s+to\b",
    rf"\b{_I}\s+{_ADV}find\s+(?:[\w-]+\s+){{1,5}}too\s+\w+",
    rf"\b{_I}\s+{_ADV}need\s+to\s+(?:avoid|stay away from|steer clear of)\b",
    rf"\b{_I}\s+{_ADV}(?:believe in|stay away from|steer clear of|object to)\b",
    rf"\b{_I}\s+(?:strictly|exclusively|only)\s+(?:buy|use|eat|wear|watch|drink|shop|read|"
    r"play|stay|travel|fly|listen|cook|book)\b",
    rf"\b{_I}(?:\s+{_ADV}(?:follow|keep|stick to|am on)|'m on)\s+(?:an?\s+)?(?:strict\s+)?"
    r"(?:\w+[- ])?(?:diet|routine|rule|budget)\b",
    rf"\b{_I}\s+{_ADV}(?:find)\s+\w+(?:\s+\w+){{0,4}}\s+(?:boring|annoying|unbearable|"
    r"ineffective|overwhelming|distracting|tedious|relaxing|helpful|effective)\b",
    r"\bmy\s+(?:all-time\s+|absolute\s+)?favou?rite\b",
    r"\b(?:it's|it is)\s+(?:important|essential|a must)\s+(?:to|for)\s+me\b",
    r"\bplease\s+(?:always|never|don't ever|do not ever)\b",
    r"\b(?:not my (?:thing|cup of tea|style)|a deal[- ]breaker for me|i'm not big on)\b",
]
_EXPLICIT_RE = [re.compile(p, re.IGNORECASE) for p in _EXPLICIT]
# Whether any of them matches, in one search (most sentences match none; the cue is the
# first pattern's match, looked for only then).
_ANY_EXPLICIT = re.compile("|".join(f"(?:{p})" for p in _EXPLICIT), re.IGNORECASE)
# Someone else's taste is not the speaker's: "my sister prefers ...", "he always ...".
_THIRD = re.compile(
    r"^\s*(?:(?:my|his|her|their|our)\s+\w+|he|she|they|(?!Please\b)[A-Z][a-z]+)\s+"
    r"(?:\w+\s+)?(?:prefers|likes|loves|hates|dislikes|enjoys|avoids|always|never|can't|"
    r"is (?:allergic|vegan|vegetarian|a fan))\b"
)
_HYPOTHETICAL = re.compile(r"^\s*(?:if|whether|when|do|does|did|would|should)\b", re.IGNORECASE)

# A pick between options just offered.
_OPTIONS = re.compile(
    r"(?:(?:^|\s)(?:1[.)]|2[.)]|3[.)]|\(?a\)|\(?b\)|\(1\)|\(2\))(?:\s|$))"
    r"|\boptions?\b|\bchoices\b|\balternatives\b"
    r"|\b(?:first|second)\b.*\b(?:second|third)\b"
    r"|\byou could\b[^.?!]*,[^.?!]*\bor\b",
    re.IGNORECASE | re.DOTALL,
)
_CHOICE = [
    r"\b(?:i|we)(?:'ll| will| would|'d)\s+(?:\w+\s+)?(?:go (?:with|for)|take|choose|pick|"
    r"opt for|try|prefer)\b",
    r"\b(?:i|we)\s+(?:\w+\s+)?(?:choose|pick|select|want|prefer|like)\s+(?:the\s+)?"
    r"(?:option|first|second|third|fourth|last|\w+\s+one)\b",
    r"\blet's\s+(?:go with|do|try|pick)\b",
    r"\b(?:option\s*\d|the (?:first|second|third|fourth|last) (?:one|option))\b",
    r"\b(?:sounds?|seems?|looks?)\s+(?:\w+\s+)?(?:good|great|perfect|best|ideal|intriguing|"
    r"appealing|interesting|right|fun|lovely|like (?:a|the) (?:best|good|great|right))\b",
    r"\b(?:would be|is)\s+(?:the\s+)?(?:best|right|perfect|ideal)\s+(?:fit|choice|option|pick)\b",
    r"\b(?:would|will|should|might)\s+(?:work|be)\s+(?:best|better|great|well)\b",
    r"\b(?:an?|the)\s+(?:better|good|great|perfect|best|nice)\s+(?:choice|fit|option|pick)\b",
    r"\b(?:don't|do not|doesn't|does not)\s+(?:really\s+|quite\s+)?(?:appeal|interest|suit)\b",
    r"\b(?:the )?others?(?:\s+\w+){0,4}\s+(?:don't|do not|doesn't|won't)\s+(?:\w+\s+)?"
    r"(?:work|appeal|suit|interest|fit|align)\b",
    r"\bi'll pass on\b",
]
_CHOICE_RE = [re.compile(p, re.IGNORECASE) for p in _CHOICE]
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _statements(text: str) -> list[str]:
    """The sentences of ``text`` that are statements (questions dropped)."""
    parts = [p.strip() for p in _SENTENCE.split(text) if p and p.strip()]
    return [p for p in parts if not p.endswith("?")]


def recognise_preference(
    text: str, previous: str | None = None, previous_role: str | None = None
) -> PreferenceCue | None:
    """Whether a user message states a standing preference (see the module docstring).

    ``previous`` is the message it answers and ``previous_role`` that message's role: a pick
    is recognised only right after an assistant message that offered options.
    """
    sentences = _statements(text.replace("\u2019", "'"))
    if (
        previous is not None
        and previous_role in (None, "assistant")
        and _OPTIONS.search(previous)
        and sentences
    ):
        for sentence in sentences:
            for pattern in _CHOICE_RE:
                found = pattern.search(sentence)
                if found:
                    return PreferenceCue("choice", found.group(0))
    for sentence in sentences:
        if _THIRD.match(sentence) or _HYPOTHETICAL.match(sentence):
            continue
        if not _ANY_EXPLICIT.search(sentence):
            continue
        for pattern in _EXPLICIT_RE:
            found = pattern.search(sentence)
            if found:
                return PreferenceCue("explicit", found.group(0))
    return None


def select_preferences(
    similarities: Sequence[tuple[str, float]], *, min_similarity: float, limit: int
) -> list[tuple[str, float]]:
    """The preferences (id, similarity to the query) that bear on the query, best first."""
    kept = [(i, s) for i, s in similarities if s >= min_similarity]
    kept.sort(key=lambda p: -p[1])
    return kept[:limit]
