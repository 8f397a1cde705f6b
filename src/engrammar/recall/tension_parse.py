"""How the tension detector reads a statement (see :mod:`engrammar.recall.tensions`): words
and contractions, sentences and clauses, the subject, the content words, the values, the
announced changes, the polarity; and the word-level helpers the detector compares them with.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .tension_subject import TOKEN, leading, subject_of
from .tension_words import (
    ACCUSTOMED,
    ADDITIVE,
    AMOUNTS,
    CHANGE,
    CHANGE_PHRASES,
    CHAT_SPELLINGS,
    CLASS_OF,
    CLASS_PHRASES,
    COPULA,
    DETERMINERS,
    DONE,
    IRREGULAR,
    JOB_CHANGE,
    JOB_FRAME,
    MONTHS,
    NEGATIVE,
    NEGATORS,
    NOT_A_CHANGE,
    NOT_CONTENT,
    NUMBER_WORDS,
    OBJECTS,
    PAST,
    RELATIONS,
    SEPARABLE,
    STATUS,
    UNITS,
)
from .text import STOP_WORDS
from .text import stem as _stem

CONTRACTIONS = {
    "n't": ["not"],
    "'m": ["am"],
    "'re": ["are"],
    "'ve": ["have"],
    "'ll": ["will"],
    "'d": ["would"],
}
IRREGULAR_NOT = {"can't": ["can", "not"], "won't": ["will", "not"], "cannot": ["can", "not"]}
STOP_STEMS = frozenset(_stem(w) for w in STOP_WORDS)


SENTENCE_END = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\bProf\.)"
    r"(?<=[.!?])\s+|\n+"
)
MAX_SENTENCES = 8
# "It turns out I'm not allergic": what follows is the statement.
HEDGE = re.compile(
    r"^(?:it\s+)?turn(?:s|ed)\s+out(?:\s+that)?,?\s*"
    # "The vet says our dog is down to 26 kilos": what is said of me or mine
    r"|^(?:the\s+|my\s+)?\w+\s+(?:says|said|reckons|thinks|confirmed)\s+(?:that\s+)?(?=(?:i|we|my|our)\b)",
    re.IGNORECASE,
)
# A second subject starts a second statement: "I'm vegetarian and I don't drink milk".
CLAUSE = re.compile(
    r"(?:[,;]\s*|\s+)(?:and|but)\s+(?=(?:i|we|my|our)\b)|;\s+|,\s+but\s+"
    r"|,\s+so\s+(?=(?:i|we|my|our|no|not)\b)"
    r"|,\s+(?=(?:i|we|my|our)\s)",
    re.IGNORECASE,
)
# Negations that say nothing negative.
IDIOMS = re.compile(
    r"\b(?:can't|cannot|can not|couldn't) (?:wait|stop|help)\b|\bno doubt\b|\bno worries\b"
    r"|\b(?:couldn't|could not) agree more\b|\b(?:won't|will not|never|not|don't) (?:give up|giving up|quit|quitting)\b"
    r"|\b(?:i )?never thought i'?d (?:say|see) (?:it|this|that)(?: but)?\b"
    r"|\bnever (?:knew|thought|realized|realised|expected)\b|\bwhy not\b|\blong time no see\b"
    r"|\bno (?:joke|wonder|problems?|idea|kidding|big deal|matter|offen[cs]e|rush|pressure)\b"
    r"|\bnot (?:bad|gonna lie|only|to mention)\b",
    re.I,
)
INTERJECTION = r"(?:hey|hi|hello|thanks|thank you|wow|yeah|yes|oh|woohoo|no(?!\s+(?:more|longer)\b)|aw+|ok|okay)"
VOCATIVE_START = re.compile(
    rf"^(?:{INTERJECTION}\b[\s,!.]*(?:[A-Z][a-z]+\b)?|[A-Z][a-z]+(?=,))[\s,!.]*",
    re.IGNORECASE,
)
VOCATIVE_END = re.compile(r",\s*[A-Z][a-z]+(?=\s*[!.,]?\s*$)")
# "I gave my Kindle to my niece": a possession handed on.
GAVE_AWAY = re.compile(r"\b(?:gave|given|handed) (?:my|our|the) (?:\w+ ){1,3}?(?:to|away)\b")
# "I paid off my debt" ends it; "all my hard work paid off" does not.
PAID_OFF = re.compile(
    r"\bpaid off (?:my|our|the|all|it|that|those|these)\b|\bpaid (?:it|them|that) off\b"
    r"|\b(?:fully|finally|completely|now|is|are|been|got) paid off\b"
)
# "I can't get enough of chocolate": a liking, no denial.
ENOUGH = re.compile(r"\b(?:can't|cannot|can not|cant) get enough of\b", re.I)
# "Both kittens have gone to their forever homes": rehomed.
REHOMED = re.compile(r"\b(?:gone|went|go) to (?:a|their|his|her|new|loving|forever| )+homes?\b")
LAST_PAYMENT = re.compile(r"\b(?:last|final) (?:\w+ ){1,3}payment\b")
# "It's been a year since I last ate meat": not since then.
SINCE_LAST = re.compile(
    r"\b(?:it's|it has|it is|it is been|its) been (?:\w+ ){1,4}since (i|we) last\b", re.I
)
# "a second helmet", "an extra key": one more of a kind, not a replacement.
ONE_MORE = re.compile(
    r"\b(?:a|an) (?:second|third|extra|spare)\b(?! (?:year|grade|floor|place|round)\b)"
)
# "dairy-free" is neither dairy nor its absence said of the speaker: one word.
FREE = re.compile(r"\b([A-Za-z]+)-free\b")
ADJUNCT_START = frozenset("since after because".split())
DETERMINERS_ALL = frozenset("a an the my our your his her their its all both".split())
TIME_OF_DAY = frozenset("late early tonight morning afternoon evening today".split())


@dataclass
class Parsed:
    words: list[str]  # lower-cased tokens, contractions split
    caps: set[str]  # lower-cased words written capitalised (not sentence-initial)
    stems: list[str]  # stems of ``words`` (the alignment sequence)
    content: set[str]  # stems of content words (no stop, polarity or change words)
    polarity: int
    subject: str
    additive: bool
    used_to: bool
    changes: dict[str, int]  # announced change -> word position
    values: dict[str, tuple[str, str]]  # names, numbers, dates, class terms: key -> type, word
    head: str  # stem of the subject's noun ("rent" in "my rent is ..."), or ""
    past: bool  # tells what happened rather than what is
    adjunct: set[str]  # content stems of a trailing "since ...", "after ...", "because ..."
    job_frame: bool  # states a job or its absence ("I work at ...", "I'm unemployed")
    job_change: bool  # announces a new job or leaving one ("I got hired", "I retired")
    names: set[str] = dataclasses.field(default_factory=set)  # see names_of
    tentative: bool = False  # a request, plan, wish or hedge, not a statement of fact


# What opens a request, a plan, a wish or a hedge (on lower-cased words, contractions split):
# "I'm thinking of ...", "I'd like to ...", "I could ...", "Can you ...", "I like the idea".
_TENTATIVE = re.compile(
    r"^(?:(?:and|but|also|anyway|oh|then|so|well|by the way|actually|honestly|just) )*(?:"
    r"(?:i|we) (?:am|are|was|were|have been|had been) (?:\w+ )?(?:thinking|considering|planning"
    r"|looking|wondering|hoping|trying|leaning|curious|interested|open|eager|keen|debating"
    r"|deciding|torn|unsure|not sure|weighing|exploring|researching|meaning|excited to)\b"
    r"|(?:i|we) (?:\w+ )?(?:would|will|could|might|may|should|must|shall)\b"
    r"|(?:i|we) (?:have|had) (?:always |long |never )?(?:wanted|wished|dreamed|meant)\b"
    r"|(?:i|we) (?:\w+ )?(?:do not |did not )?(?:want|wanna|need|hope|wish|plan|intend|think"
    r"|guess|suppose|believe"
    r"|wonder|feel like|do not know|not sure)\b"
    r"|(?:i|we) (?:\w+ )?(?:like|love|liked|loved) (?:the|that|this|those|these|your) (?:\w+ ){0,4}?"
    r"(?:idea|ideas|sound|suggestion|suggestions|list|option|options|tips|recommendation"
    r"|recommendations)\b"
    r"|(?:can|could|would|will|may|should) (?:you|i|we)\b|please\b|help me\b|tell me\b"
    r"|let me\b|let us\b|let 's\b|give me\b|show me\b|if\b|unless\b|maybe\b|perhaps\b"
    r"|hopefully\b|probably\b"
    # an instruction to the assistant: "Provide ...", "Write ...", "Act as ..."
    r"|(?:provide|write|rewrite|give|list|explain|describe|summarize|summarise|translate"
    r"|generate|create|act|suggest|recommend|include|remember|continue|answer|reply|imagine"
    r"|pretend|compare|find|check|consider|keep|use|make sure|note)\b)"
)


def is_tentative(words: list[str]) -> bool:
    """Whether a sentence is a request, a plan, a consideration, a wish or a hedge ("I'm
    considering the Sony and the Bose", "I want to focus on the newsletter for now", "Can you
    ..."): what the speaker asks or may do, not what is so."""
    return bool(_TENTATIVE.match(" ".join(words[leading(words) :])))


def split_words(text: str) -> tuple[list[str], set[str]]:
    words: list[str] = []
    caps: set[str] = set()
    for i, m in enumerate(TOKEN.finditer(text.replace("\u2019", "'"))):
        low, first_upper, later_upper, expanded = _token(m.group(0))
        if (later_upper or (i > 0 and first_upper)) and low not in _SELF_WORDS:
            caps.add(low.split("'")[0])
        words += expanded
    return words, caps


_SELF_WORDS = frozenset(("i", "i'm", "i've", "i'd", "i'll"))


@lru_cache(maxsize=65536)
def _token(raw: str) -> tuple[str, bool, bool, tuple[str, ...]]:
    """A token's lower case, whether its first letter / a later one is upper case, and the
    words it stands for ("can't" -> can not, "she's" -> she 's)."""
    low = raw.lower()
    first_upper, later_upper = raw[0].isupper(), any(c.isupper() for c in raw[1:])
    if low in IRREGULAR_NOT or low in CHAT_SPELLINGS:
        return low, first_upper, later_upper, tuple(IRREGULAR_NOT.get(low) or CHAT_SPELLINGS[low])
    for suffix, repl in CONTRACTIONS.items():
        if low.endswith(suffix) and len(low) > len(suffix):
            return low, first_upper, later_upper, (low[: -len(suffix)], *repl)
    if low.endswith("'s"):
        return low, first_upper, later_upper, (low[:-2], "'s")
    return low, first_upper, later_upper, (low,)


# Every change phrase at every word start, the longest first where two start together.
_PHRASES = re.compile(
    r"(?=(?:^|(?<= ))("
    + "|".join(re.escape(p) for p in sorted(CHANGE_PHRASES, key=len, reverse=True))
    + r")(?= |$))"
)
_OBJECT_WORDS = frozenset(
    "a an the my our your his her their it them that this those these me us him".split()
)
# "two cups a day", "900 a month": "a" there says per, not one.
UNITS_BEFORE = frozenset("cups cup times time pounds dollars euros miles km k".split())


def _pronoun_one(words: list[str], i: int) -> bool:
    """Whether "one" stands for a thing ("a long one", "this one"), not a number."""
    prev = words[i - 1] if i else ""
    return words[i] == "one" and (
        prev in ("this", "that", "which", "each", "every", "any", "another", "no")
        or (prev not in STOP_WORDS and not is_value([prev], set()) and prev != "")
    )


def values_of(words: list[str], caps: set[str], classed: list[str]) -> dict[str, tuple[str, str]]:
    # "the first of the month" is a day, not an amount ("my rent is 900").
    out = {
        _stem(w): (
            "date" if w in ORDINALS and words[i + 1 : i + 2] == ["of"] else value_type(w),
            w,
        )
        for i, w in enumerate(words)
        if w not in ("a", "an", "the")
        and (w in caps or _value_word(w))  # is_value([w], caps)
        and not _pronoun_one(words, i)
    }
    # "an hour" is one ("My commute takes an hour" / "... is 20 minutes now").
    for i, w in enumerate(words[:-1]):
        if w in ("a", "an") and words[i + 1] in UNITS:
            per = i and (words[i - 1] in UNITS_BEFORE or is_value([words[i - 1]], caps))
            if not per:
                out.setdefault(w, ("number", w))
    for c in classed:
        out[" ".join(_stem(x) for x in c.split())] = (CLASS_OF[c], c)
    # "07700 900123": the digits after a phone number's first part are the number too.
    for i, w in enumerate(words[1:], 1):
        if w.isdigit() and value_type(words[i - 1]) == "contact":
            out[_stem(w)] = ("contact", w)
    return out


def head_of(words: list[str]) -> str:
    """The first word after an opening possessive or article: "my work email" -> work (a
    compound's first word tells it apart: "my email" is not "my work email")."""
    skip = leading(words)
    if skip + 1 >= len(words) or words[skip] not in ("my", "our", "the", "a", "an", "his", "her"):
        return ""
    head = next((w for w in words[skip + 1 : skip + 3] if w not in ("new", "old")), "")
    return "" if head in STOP_WORDS or head in COPULA else _stem(head)


# "I can't stand jazz", "open-plan offices drive me mad": a stance, the same as hating it.
STANCES = re.compile(
    r"\b(?:can't|cannot|can not|cant) stand\b|\bdriv(?:e|es|ing) me (?:mad|crazy|nuts|up the wall)\b"
    r"|\b(?:gets?|getting) me down\b|\blost (?:all )?(?:interest|my appetite) (?:in|for)\b",
    re.I,
)


# "I'm so over Marvel films": done with them, a stance ("over the moon", "over 50" are not).
OVER = re.compile(
    r"\b(i'm|i am|im|we're|we are)\s+(?:so |totally |completely |well |really |just )?over\s+"
    r"(?!the moon\b|it\b|that\b|there\b|here\b|\d)",
    re.I,
)
# "I'm migraine-free", "been smoke-free for a year": the speaker without it.
FREE_OF = re.compile(
    r"\b(i'm|i am|im|we're|we are|been|stayed|staying)\s+(?:\w+ )?([A-Za-z]+)-free\b", re.I
)


# Negative adjectives: before a noun they describe it ("terrible hay fever") and take no stance.
ATTRIBUTIVE = frozenset("awful terrible bad horrible boring annoying tedious dull gross".split())


@lru_cache(maxsize=32768)
def parse(text: str) -> Parsed:
    low = text.lower()
    if "since" in low:
        text = SINCE_LAST.sub(r"\1 have not", text)
    if "-free" in low:
        text = FREE_OF.sub(r"\1 no \2", text)
    if " over " in low:
        text = OVER.sub(r"\1 hate ", text)
    if "enough" in low:
        text = ENOUGH.sub(" love ", text)
    words, caps = split_words(FREE.sub(r"\1free", IDIOMS.sub(" ", STANCES.sub(" hate ", text))))
    words = [
        DONE.get(w, w) if i > 1 and words[i - 2 : i] in (["had", "to"], ["decided", "to"]) else w
        for i, w in enumerate(words)
    ]
    stems = [_stem(IRREGULAR.get(w, w)) for w in words]
    # "without stopping" denies the stopping, not the sentence
    negations = sum(
        1
        for i, w in enumerate(words)
        if w in NEGATORS
        and not (w == "without" and words[i + 1 : i + 2] and words[i + 1].endswith("ing"))
    )
    sentiment = 1
    for i, w in enumerate(words):
        # "terrible hay fever", "a bad back": what it is like, no stance on it
        if w in ATTRIBUTIVE and words[i + 1 : i + 2] and words[i + 1] not in STOP_WORDS:
            continue
        # "sick of", "tired of", "fed up with"
        if w in NEGATIVE or words[i : i + 2] in (["sick", "of"], ["tired", "of"], ["fed", "up"]):
            sentiment = -sentiment
    polarity = sentiment * (-1 if negations % 2 else 1)
    joined = " ".join(words)
    changes: dict[str, int] = {}
    phrase_words: set[str] = set()
    for m in _PHRASES.finditer(joined):
        phrase, start, end = m.group(1), m.start(1), m.end(1)
        before = joined[:start].split()[-2:]
        if phrase == "used to" and before[-1:] and before[-1] in ACCUSTOMED:
            continue  # "I'm used to the cold"
        after = joined[end:].split()[:1]
        if phrase.endswith(" off") and after[:1] == ["to"]:
            continue  # "we're off to Canada"
        if phrase == "any more" and after and after[0] not in STOP_WORDS:
            continue  # "any more suggestions"
        if phrase == "cut out" and after[:1] == ["for"]:
            continue  # "not cut out for it"
        if phrase == "took up" and after and after[0] in AMOUNTS:
            continue  # "took up most of my time"
        if phrase == "after all" and not before:
            continue  # "After all, he's my brother"
        if phrase in ("no longer", "any longer", "any more") or not set(before) & NEGATORS:
            changes.setdefault(phrase, len(joined[:start].split()))
            phrase_words |= set(phrase.split())
    classed: list[str] = []
    rest = f" {joined} "
    for phrase in CLASS_PHRASES:
        if f" {phrase} " in rest:
            classed.append(phrase)
            rest = rest.replace(f" {phrase} ", " ")
    # "my rent", "the bus": a thing named, not a state of the class ("I rent", "I take the bus"
    # stays one: only a possessive makes it a noun).
    rest_words = rest.split()
    classed += [
        w
        for i, w in enumerate(rest_words)
        if w in CLASS_OF and not (i and rest_words[i - 1] in ("my", "our", "your"))
    ]
    head = head_of(words)  # "the rent is ..." is about the rent, not renting
    phrase_words |= {w for c in classed if " " in c for w in c.split()}
    for m in GAVE_AWAY.finditer(joined):
        changes.setdefault("gave away", len(joined[: m.start()].split()))
    # "... spin classes on Mondays instead": a substitution.
    if words[-1:] == ["instead"]:
        changes.setdefault("instead", len(words) - 1)
    for m in PAID_OFF.finditer(joined):
        changes.setdefault("paid off", len(joined[: m.start()].split()))
    # "made the last car loan payment": the last of what was owed.
    if " home" in joined:
        for m in REHOMED.finditer(joined):
            changes.setdefault("rehomed", len(joined[: m.start()].split()))
    if "payment" in joined:
        for m in LAST_PAYMENT.finditer(joined):
            changes.setdefault("final payment", len(joined[: m.start()].split()))
    # "Lost the Fitbit", "we lost Squeak": a thing or an animal of a name gone; "We're
    # leaving Glasgow for Inverness": a place left for another.
    for i, w in enumerate(words[:-1]):
        if w not in ("lost", "leaving") or w in caps:
            continue  # "The Lost City": a title
        nxt = (
            words[i + 2]
            if words[i + 1] in ("the", "my", "our") and i + 2 < len(words)
            else words[i + 1]
        )
        if w == "lost" and nxt in caps and not set(words[max(0, i - 3) : i]) & NEGATORS:
            changes.setdefault("lost", i)
        if w == "leaving" and nxt in caps and set(words[i + 2 : i + 4]) & {"for", "to"}:
            changes.setdefault("moved", i)
    # "I've cut sugar out of my tea", "we called it off": the object between verb and particle.
    for i, w in enumerate(words):
        particle = next(
            (x for x in SEPARABLE.get(w, "").split("|") if x in words[i + 2 : i + 5]), ""
        )
        if not particle or set(words[i - 3 : i]) & NEGATORS:
            continue
        # Only a noun phrase in between: "cut sugar out", not "put into writing pay off"; a
        # person taken off something ("took me off insulin"), not "taking time off".
        between = words[i + 1 : words.index(particle, i + 2)]
        if w in ("take", "taking", "took", "taken") and not set(between) <= OBJECTS:
            continue
        if all(x not in STOP_WORDS or x in _OBJECT_WORDS for x in between):
            changes.setdefault(f"{w} {particle}", i)
            phrase_words |= {w, particle}
    content = {
        _stem(IRREGULAR.get(w, w))
        for i, w in enumerate(words)
        if w not in STOP_WORDS
        and w not in NOT_CONTENT
        and w not in phrase_words
        and w != "'s"
        and len(w) > 1
        and not (w in ("sick", "tired", "fed") and set(words[i + 1 : i + 2]) & {"of", "up"})
    }
    # "jess@outlook.com" / "the outlook address": the mail service is a word of its own.
    content |= {_stem(w.split("@", 1)[1].split(".")[0]) for w in words if "@" in w}
    # "never quit" announces no change.
    for i, w in enumerate(words):
        if (
            w in CHANGE
            and not (set(words[max(0, i - 3) : i]) & NEGATORS and w != "anymore")
            and (i + 1 == len(words) or words[i + 1] not in NOT_A_CHANGE.get(w, ()))
            and not (i and words[i - 1] in DETERMINERS)  # "on the left", "a switch"
            # "I left the office late": a place left for the day
            and not (
                w == "left"
                and (
                    set(words[i + 1 :]) & TIME_OF_DAY
                    or any(x in ("am", "pm") or x[:1].isdigit() for x in words[i + 1 : i + 5])
                )
            )
            # "the app stopped working": it broke
            and not (
                w == "stopped"
                and words[i + 1 : i + 2] == ["working"]
                and words[i - 1 : i] not in (["i"], ["we"])
            )
            # "I sold 15 jars of jam": goods sold, a trade, not something given up
            and not (
                w == "sold"
                and words[i + 1 : i + 2]
                and (any(c.isdigit() for c in words[i + 1]) or words[i + 1] in NUMBER_WORDS)
            )
            # "the bakery is closed": a state
            and not (w == "closed" and i and words[i - 1] in COPULA | {"be", "been", "'s"})
            # "for now", "for a while now", "for five years now": how long, not a change
            and not (
                w == "now" and "for" in words[max(0, i - 4) : i] and words[i - 1] not in OBJECTS
            )
        ):
            changes.setdefault(w, i)
    # "my cat allergy has completely gone": it ended.
    for i, w in enumerate(words):
        if (
            w == "gone"
            and i
            and words[i - 1] in ("has", "have", "is", "'s", "completely", "totally", "all")
            and words[i + 1 : i + 2] in ([], ["away"], ["now"], ["completely"], ["for"])
        ):
            changes.setdefault("gone", i)
    for i, w in enumerate(words[:-1]):
        # "a new guitar", "a whole new world": one more, not a replacement.
        if w == "new" and not set(words[max(0, i - 2) : i]) & {"a", "an"}:
            changes.setdefault(f"new {_stem(words[i + 1])}", i)
    parsed = Parsed(
        words=words,
        caps=caps,
        stems=stems,
        content=content,
        polarity=polarity,
        subject=subject_of(words, text),
        # "I speak Italian too"; not "too expensive".
        additive=any(
            w in ADDITIVE
            and not (
                w == "too"
                and words[i + 1 : i + 2]
                and (words[i + 1] not in STOP_WORDS or words[i + 1] in ("much", "many", "few"))
            )
            # "we'll do it another time": a later one, not one more
            and not (w == "another" and words[i + 1 : i + 2] in (["time"], ["day"], ["week"]))
            for i, w in enumerate(words)
        )
        or "as well" in joined
        or bool(ONE_MORE.search(joined)),
        used_to="used to" in joined,
        changes=changes,
        values=values_of(words, caps, [c for c in classed if _stem(c) != head]),
        head=head,
        past=bool(set(words) & PAST)
        or any(
            w.endswith("ed") and len(w) > 4 and not w.endswith("eed") and w not in STATUS
            for w in words
        ),
        adjunct=adjunct_of(words, content),
        job_frame=bool(JOB_FRAME.search(joined)),
        job_change=bool(JOB_CHANGE.search(joined)),
        tentative=is_tentative(words),
    )
    parsed.names = names_of(parsed)
    return parsed


def adjunct_of(words: list[str], content: set[str]) -> set[str]:
    """Content stems of a trailing adjunct ("since the move", "after my knee surgery"): when
    or why, not what the statement is about."""
    for i, w in enumerate(words[1:], 1):
        if w in ADJUNCT_START and words[i + 1 : i + 2] != ["all"]:
            return {_stem(IRREGULAR.get(x, x)) for x in words[i + 1 :]} & content
    return set()


def is_value(words: Sequence[str], caps: set[str]) -> bool:
    return bool(words) and all(
        w in caps or _value_word(w) for w in words if w not in ("a", "an", "the")
    )


@lru_cache(maxsize=65536)
def _value_word(w: str) -> bool:
    """Whether a word is a value whatever its case: a number, a month or weekday, a date,
    an email."""
    return (
        w.isdigit()
        or w in NUMBER_WORDS
        or w in MONTHS
        or (w[-1:] == "s" and w[:-1] in MONTHS)  # "on Mondays"
        or any(c.isdigit() for c in w)
        or "@" in w
    )


ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth".split())
UNIT_STEMS = frozenset(_stem(w) for w in UNITS | {"since"})


_DAY_OF_MONTH = re.compile(r"^(?:[1-9]|[12][0-9]|3[01])(?:st|nd|rd|th)$")


def value_type(word: str) -> str:
    """``contact`` (an email, a phone number: one names itself), a class's name, ``date``,
    ``number`` or ``name``."""
    if "@" in word or (word.isdigit() and len(word) >= 5 and word[0] == "0"):
        return "contact"
    if word in CLASS_OF:
        return CLASS_OF[word]
    if word in MONTHS or (word[-1:] == "s" and word[:-1] in MONTHS) or _DAY_OF_MONTH.match(word):
        return "date"
    if word.isdigit() or word in NUMBER_WORDS or any(c.isdigit() for c in word):
        return "number"
    return "name"


def clauses(sentence: str) -> list[str]:
    """``sentence`` cut where a second subject starts, not inside "Jake and I", "my wife and I"."""
    out, start = [], 0
    for m in CLAUSE.finditer(sentence):
        before = TOKEN.findall(sentence[start : m.start()])
        last = before[-1].lower() if before else ""
        if not before or before[-1][0].isupper() or last in RELATIONS or last in OBJECTS:
            continue
        # "In Paris, I live ...": a comma alone starts a clause only after a statement.
        if m.group(0).strip() == "," and len(before) < 3:
            continue
        # "I want realistic goals, so I don't feel overwhelmed": the purpose of a plan.
        if m.group(0).strip().lower().startswith(", so") and is_tentative(
            split_words(sentence[start : m.start()])[0]
        ):
            continue
        out.append(sentence[start : m.start()])
        start = m.end()
    return [*out, sentence[start:]]


@lru_cache(maxsize=16384)
def sentences(text: str) -> tuple[str, ...]:
    """The statements of a message: sentences that are not questions and have some words,
    without greetings and names of the person addressed ("Thanks, Mel!")."""
    out = []
    for sentence in SENTENCE_END.split(text.strip()):
        sentence = VOCATIVE_END.sub("", VOCATIVE_START.sub("", sentence.strip()))
        sentence = HEDGE.sub("", sentence)
        if sentence.endswith("?"):
            sentence = _stated(sentence)
        if len(TOKEN.findall(sentence)) < 2:
            continue
        out += [c for c in clauses(sentence) if len(split_words(c)[0]) >= 3]
    return tuple(out[:MAX_SENTENCES])


# What a question may open with that states a fact: "I teach chemistry, any tips ...?", "Now
# that we're settled in York, what ...?"
_STATED = re.compile(
    r"^(?:[\w' ]{1,20}\s[-\u2013:]\s*)?(?:(?:now that|since|as|given that|seeing as)\s+)?"
    r"((?:i|we|my|our)\b.*)$",
    re.I,
)


def _stated(question: str) -> str:
    """The statement a question opens with before a comma (first person, no question word), or
    "" if it has none."""
    head = question.split(",", 1)[0] if "," in question else ""
    m = _STATED.match(head.strip())
    if not m:
        return ""
    words = split_words(m.group(1))[0]
    if len(words) < 3 or words[1] in ("do", "does", "did", "would", "should", "can", "could"):
        return ""
    return m.group(1)


@lru_cache(maxsize=16384)
def segments(text: str) -> tuple[str, ...]:
    """The statements of a message cut at every comma as well (parts of three words
    or more): "I'm allergic to penicillin, so always flag it" -> "I'm allergic to penicillin",
    "so always flag it"."""
    out = []
    for sentence in sentences(text):
        parts = [x.strip() for x in re.split(r",\s+", sentence)]
        # A request in one part is the sentence's point: "Given the above, write me ...".
        if len(parts) == 1 or any(is_tentative(split_words(x)[0]) for x in parts):
            out.append(sentence)
            continue
        out += [x for x in parts if len(split_words(x)[0]) >= 3]
    return tuple(out[: 2 * MAX_SENTENCES])


def names_of(p: Parsed) -> set[str]:
    """Names in a statement: capitalised words, and a name opening it ("Ana and I ...")."""
    first = p.words[leading(p.words)] if p.words else ""
    opening = {first} if p.subject == f"other:{first}" else set()
    return p.caps | opening
