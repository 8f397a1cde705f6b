"""Who a statement is about, as the tension detector reads it (see
:mod:`engrammar.recall.tensions`): the tokens of a sentence, the words opening it before its
subject, and the subject itself (the speaker, someone else, a thing, or no one).
"""

from __future__ import annotations

import re

from .tension_words import (
    ADJ_BEFORE_RELATION,
    CHANGE,
    COPULA,
    LEADING,
    NEGATORS,
    NOT_CONTENT,
    RELATIONS,
)
from .text import STOP_WORDS
from .text import stem as _stem

# Whose thing: "my manager's number" is the manager's, not mine.
PEOPLE = RELATIONS | frozenset(
    "manager boss landlord landlady teacher doctor coach vet dentist tutor".split()
)

# A number keeps its suffix: "3rd", "6am", "60k".
TOKEN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?<![\w.])@\w+|[A-Za-z]+(?:'[A-Za-z]+)?|\d+(?:[.,:]\d+)*[A-Za-z]*"
)


def leading(words: list[str]) -> int:
    """How many words open the sentence before its subject ("so", "now", "these days")."""
    skip = 0
    while skip < len(words) - 1:
        # "Change of plan: the party is ...", "Ever since I ..."
        opening = next((ph for ph in _OPENING if words[skip : skip + len(ph)] == ph), None)
        if opening is not None and skip + len(opening) < len(words):
            skip += len(opening)
        elif words[skip] in LEADING:
            skip += 1
        elif words[skip : skip + 2] == ["these", "days"] and skip + 2 < len(words):
            skip += 2
        else:
            break
    return skip


_OPENING = [
    ph.split()
    for ph in (
        "change of plan",
        "change of plans",
        "update",
        "correction",
        "by the way",
        "heads up",
        "ever since",
        "now that",
    )
]


def subject_of(words: list[str], text: str) -> str:
    """``self`` (I, we, my ...), ``other:<who>`` (my sister, Melanie, she) or ``neutral``;
    a statement without its subject, as chat drops it ("Moved to Glasgow last week", "Still
    using my old phone"), is the speaker's."""
    found = _subject(words, text)
    # "Breakfast is eggs on toast for me now": the speaker's (a choice, not Breakfast's).
    if (
        found.startswith("other:")
        and words[1:2] in (["is"], ["are"])
        and {"for me", "for us"} & {" ".join(words[i : i + 2]) for i in range(len(words))}
    ):
        return "self"
    if found == "neutral" and words and _dropped_subject(words):
        return "self"
    # "Started a new job on Monday": a change opening the sentence is its verb, not an opener.
    if words and words[0].endswith("ed") and words[0] in CHANGE and _dropped_subject(words):
        return "self"
    # "Aisle seats only for me now": the speaker's choice (no verb, no denial).
    if (
        found == "neutral"
        and {"for me", "for us"} & {" ".join(words[i : i + 2]) for i in range(len(words))}
        and not set(words) & (_FINITE | NEGATORS | {"has", "have", "had", "am"})
        and not any(w.endswith("ed") for w in words)
    ):
        return "self"
    return found


def _dropped_subject(words: list[str]) -> bool:
    """Whether the sentence opens with a verb whose subject "I" is left out: a past form
    ("Moved to ...", "Gave up ..."), an opener of one ("Still", "Finally", "Haven't"), or a
    gerund that is no subject itself ("Heading to Berlin", not "Making a switch could ...")."""
    at = 0
    while at < len(words) - 1 and words[at] in _DROP_OPENERS:
        at += 1
    first = words[at]
    if first in _PAST_FORMS or (first.endswith("ed") and len(first) > 4):
        return at + 1 < len(words) and words[at + 1] not in COPULA | {"'s", "has", "have"}

    if first.endswith("ing") and len(first) > 4:
        nxt = words[at + 1] if at + 1 < len(words) else ""
        opens = (
            at > 0 or nxt in _PREPOSITIONS or any(c.isdigit() for c in nxt) or nxt in ("my", "our")
        )
        return opens and not set(words[at + 1 : at + 8]) & _FINITE
    # "Down to 84 kilos", "Up to 30 minutes a day": the speaker's amount
    if (
        words[0] in ("down", "up")
        and words[1:2] == ["to"]
        and any(c.isdigit() for c in "".join(words[2:4]))
    ):
        return True
    # "never touch coffee", "always take the bus": a habit of the speaker's
    if at > 0 and words[at - 1] in ("never", "always") and first not in STOP_WORDS:
        return True
    return at > 0 and first in ("been", "have", "had", "not", "can", "got", "at", "in", "on")


_DROP_OPENERS = frozenset("still finally just officially never always not have".split())
_PAST_FORMS = frozenset(
    """quit left sold bought gave got went took made moved started stopped broke ran""".split()
)
_PREPOSITIONS = frozenset("to for from at in on with back out up off into".split())
_FINITE = frozenset(
    "is are was were could can will would makes made helps has had does do should".split()
)


def _subject(words: list[str], text: str) -> str:
    skip = leading(words)
    words = words[skip:]
    if not words:
        return "neutral"
    # "All my files are on Dropbox", "Both our cars": the speaker's.
    if len(words) > 1 and words[0] in ("all", "both", "most") and words[1] in ("my", "our"):
        words = words[1:]
    first = words[0]
    if first in ("i", "me", "we", "us") or words[1:3] in (["and", "i"], ["and", "we"]):
        return "self"
    if first in ("my", "our"):
        # "My wife and I separated": the speaker is one of them.
        if {"and", "i"} <= set(words[1:5]) or {"and", "we"} <= set(words[1:5]):
            return "self"
        rest = [w for w in words[1:3] if w not in ADJ_BEFORE_RELATION]
        # "our neighbours" are others; "our dog" is ours (a fact about us).
        person = rest[0] in RELATIONS or rest[0].rstrip("s") in RELATIONS if rest else False
        if first == "our" and rest and rest[0].rstrip("s") in ("dog", "cat"):
            return "self"
        if person:
            # "My boyfriend is Jake" says who I am with: a fact about me.
            raw = TOKEN.findall(text)[skip:]
            at = words.index(rest[0])
            # "My cat allergy has gone": the relation names whose, the noun after it what.
            nxt = words[at + 1] if at + 1 < len(words) else ""
            if (
                nxt
                and nxt not in STOP_WORDS | LEADING
                and not nxt.endswith("ly")
                and words[at + 2 : at + 3]
                and words[at + 2] in _THING_VERBS
                and nxt not in {x.lower() for x in raw if x[:1].isupper()}
            ):
                return "self"
            # ... and "My roommate is a guy called Femi".
            named = next(
                (
                    k + 1
                    for k in range(at + 2, at + 6)
                    if words[k : k + 1] in (["called"], ["named"])
                ),
                at + 2,
            )
            if (
                words[at + 1 : at + 2] == ["is"]
                and raw[named : named + 1]
                and raw[named][0].isupper()
            ):
                return "self"
            return f"other:{rest[0]}"
        # "My manager's number has changed": someone else's thing.
        if words[2:3] == ["'s"] and words[1] in PEOPLE:
            return f"other:{words[1]}"
        return "self"
    # "They've cut me down to two shifts", "they moved me to the 19th": what is done to me.
    if first == "they" and set(words[1:4]) & {"me", "us"}:
        return "self"
    if first in ("he", "she", "they", "his", "her", "their"):
        return "other:pronoun"
    if first in ("someone", "somebody", "everyone", "everybody", "anyone", "anybody"):
        return "neutral"
    if first in ("you", "your"):
        return "other:you"
    if first in ("the", "a", "an") and len(words) > 1:
        head = next((w for w in words[1:4] if w not in STOP_WORDS and w not in NOT_CONTENT), "")
        return f"thing:{_stem(head)}" if head else "neutral"
    # A capitalised first word followed by a verb-like word is taken for a name ("Melanie
    # enjoys", "Jon's car"); "Keep going!", "Glad to ..." are not.
    original = TOKEN.findall(text)[skip] if len(TOKEN.findall(text)) > skip else ""
    nxt = words[1] if len(words) > 1 else ""
    # "Reading is how I unwind": a gerund is no name; the speaker says what they do.
    if first.endswith("ing") and set(words[1:]) & {"i", "my", "me"}:
        return "self"
    if (
        original[:1].isupper()
        and first not in STOP_WORDS
        and (
            nxt in ("'s", "has", "have", "had", "will")
            or nxt in COPULA
            or (nxt.endswith(("s", "ed")) and nxt not in STOP_WORDS)
        )
    ):
        # "Raj's old boss left": someone of Raj's, not Raj.
        owner = [w for w in words[2:4] if w not in ADJ_BEFORE_RELATION]
        if (
            nxt == "'s"
            and owner
            and owner[0] not in STOP_WORDS | CHANGE
            and not owner[0].endswith("ed")
        ):
            return f"other:{first}'s"
        return f"other:{first}"
    # A noun without an article ("Book club is every second Tuesday", "pilates got moved"):
    # a thing, named by its first word as after "the".
    # "City life really gets me down": an adverb may come between.
    verb = next((k for k, w in enumerate(words[1:4], 1) if w in _THING_VERBS), 0)
    # "Book club meets on ...": a compound noun and a verb of the present.
    if not verb and len(words) > 3 and words[2] in _PRESENT_VERBS:
        verb = 2
    if (
        verb
        and first not in STOP_WORDS
        and first not in NOT_CONTENT
        and not first.endswith(("ly", "ing"))
        and all(w not in STOP_WORDS for w in words[1 : min(verb, 2)])
        and all(w.endswith("ly") or w == "now" for w in words[2:verb])
    ):
        return f"thing:{_stem(first)}"
    return "neutral"


_PRESENT_VERBS = frozenset("meets starts runs opens closes costs takes finishes ends".split())
_THING_VERBS = COPULA | frozenset("has have got gets 's go goes went gone".split())
