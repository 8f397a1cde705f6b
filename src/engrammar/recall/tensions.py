"""Tensions: pairs of memories that really contradict each other (pure functions, no LLM).

Topic distance is not contradiction: "I live in Paris" and "I love the cafes in Paris" are
close and compatible, "I live in Paris" and "I moved to Berlin" are farther apart and in
tension. A pair is checked only when its embeddings are similar enough to be about the same
thing; then three cues decide, each requiring the same subject (not "I" against "my sister"):

* **negation**: the statements' polarity differs (negators such as *not*, *never*, *n't*;
  affect words such as *love* / *hate*, *boring* / *fascinating*) while what they are about is
  the same (one side's content is contained in the other's);
* **changed value**: the sentences are the same frame with one slot changed ("My favourite
  colour is blue" / "... green"), and the slot is single-valued: numbers, dates, days and
  months, or a frame about residence, work, names, birthdays, favourites, or a copula
  ("X is Y"). "I bought a laptop" / "I bought a phone" is not a tension;
* **superseded**: the newer statement announces a change (*moved*, *switched*, *quit*, *no
  longer*, *now*, *new* ...) about something the older one states.

Additive wording (*also*, *too*, *either*, *as well*) and an older statement that already
speaks of the past (*used to*) rule a tension out. Messages are judged sentence by sentence
(questions, greetings and the name of the person addressed left out), and only statements of
one speaker are compared: two people saying "I" are two subjects.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..models import Tension
from .text import STOP_WORDS, _stem

__all__ = ["Statement", "agreed_side", "detect_tension", "find_tensions"]

_NEGATORS = frozenset("not no never none nobody nothing neither nor without hardly cannot".split())
_POSITIVE = frozenset(
    """love loves loved like likes liked enjoy enjoys enjoyed adore adores prefer prefers happy
    glad fond fascinating fascinated great good wonderful amazing interesting fun""".split()
)
_NEGATIVE = frozenset(
    """hate hates hated dislike dislikes disliked detest detests despise loathe unhappy sad
    boring bored awful terrible bad horrible annoying annoyed""".split()
)
_FREQUENCY = frozenset("always usually often sometimes rarely ever".split())
_ADDITIVE = frozenset("also too either another".split())
# A change announced by the newer statement; "new" counts only for something the older names.
_CHANGE = frozenset(
    """moved relocated switched switch changed quit stopped left sold became become anymore now
    migrated replaced married divorced retired resigned cancelled canceled postponed rescheduled
    renamed transferred promoted fired hired dropped ex ended graduated delayed upgraded
    downgraded nowadays currently lately traded""".split()
)
# "fired up", "dropped off": the change word followed by these is no change.
_NOT_A_CHANGE = {
    "fired": ("up",),
    "dropped": ("off", "by", "in"),
    "left": ("over", "behind", "after", "in", "on", "at", "of", "with", "and", "but"),
    "ended": ("up",),
}
_AMOUNTS = frozenset("most all much a so too the my our space time".split())
_ACCUSTOMED = frozenset("am is are was were be been get got getting".split())
# Several words announcing a change; their words are not what the statement is about.
_CHANGE_PHRASES = (
    "no longer",
    "any longer",
    "any more",
    "broke up",
    "split up",
    "passed away",
    "gave up",
    "given up",
    "called off",
    "pulled out",
    "laid off",
    "went up",
    "went down",
    "gone up",
    "gone down",
    "down to",
    "pushed back",
    "pushed to",
    "took up",
    "these days",
    "from now on",
    "used to",
    "no more",
    "fell through",
    "got rid",
    "gave away",
    "broke off",
    "is off",
    "are off",
    "'s off",
)
# Words of intent and light verbs: "I'm planning to do a PhD" is about the PhD.
_LIGHT = frozenset(
    """plan plans planning planned decide decided deciding want wants wanted think go goes going
    went make makes made making keep find finds""".split()
)
# When something happened is not what it is about.
_WHEN = frozenset("last next since ago soon today tonight yesterday tomorrow recently".split())
# Past narration: an older statement telling what happened is no state a newer one can change.
_PAST = frozenset(
    """was were did went had ran saw met took came made got yesterday ago last today tonight
    once will gonna""".split()
)
# Exclusive states: a term of a class replaces another of the same class ("I rent my flat" /
# "we bought our flat"), as a value would.
_CLASSES = {
    "diet": "vegetarian vegan pescatarian meat omnivore carnivore",
    "tenure": "rent renting rented renter own owner bought mortgage",
    "employment": "unemployed employed hired jobless",
    "chronotype": "morning person|night owl|early bird|early riser|night person",
    "commute": "drive drives driving cycle cycles cycling bike bikes biking walk walks walking "
    "bus train subway metro tube carpool",
    "doneness": "rare|medium rare|medium|well done",
    "os": "windows linux macos ubuntu",
    "seat": "window seat|window seats|aisle seat|aisle seats|middle seat",
}
_CLASS_OF = {
    term: name
    for name, terms in _CLASSES.items()
    for term in (terms.split("|") if "|" in terms else terms.split())
}
_CLASS_TYPES = frozenset(_CLASSES)
_CLASS_PHRASES = sorted((t for t in _CLASS_OF if " " in t), key=len, reverse=True)
# A kind of thing and its general word are the same thing ("I don't drink alcohol" / "I drink
# wine"); two kinds are not ("dogs" / "cats"). The general words come first.
_KINDS = {
    "alcohol booze liquor": "wine beer whisky whiskey vodka gin rum cocktail",
    "pet": "dog puppi cat kitten hamster rabbit parrot",
    "kid child children": "",
}
# Words for one attribute: "second year of college" / "third-year student".
_SYNONYMS = [
    "college university school student studies studying uni",
    "job work works working career employer company",
    "doctor gp physician",
    "fly flying flight flights",
]
_SYNONYM = {_stem(w): i for i, group in enumerate(_SYNONYMS) for w in group.split()}
_GENERAL = {_stem(g): i for i, (gs, _) in enumerate(_KINDS.items()) for g in gs.split()}
_SPECIFIC = {_stem(k): i for i, (_, ks) in enumerate(_KINDS.items()) for k in ks.split()}
# Units belong to a value ("60k a year"), not to what the value is of.
_UNITS = frozenset(
    """year years month months week weeks day days hour hours minute minutes pound pounds kilo
    kilos kg lbs mile miles km dollar dollars euro euros percent""".split()
)
_FUNCTIONAL = frozenset(
    """live lives living lived born name named called favorite favourite birthday deadline
    age old work works working worked job employed married manager boss address prefer prefers
    preferred""".split()
)
# "It was amazing" / "It was awesome": opinions about a vague "it" are not facts with values.
_VAGUE = frozenset(["it", "that", "this", "these", "those", "there", "which", "what", "them"])
_EVALUATIVE = (
    _POSITIVE
    | _NEGATIVE
    | frozenset(
        """awesome amazing gorgeous beautiful cool lovely nice incredible fantastic cute sweet
        perfect special inspiring exciting tough hard easy crazy insane wild""".split()
    )
)
_COPULA = frozenset("is are was were".split())
_OBJECTS = frozenset("me us you him her them it".split())
_DETERMINERS = frozenset("a an the my our your his her their its him them".split())
_RELATIONS = frozenset(
    """sister brother wife husband son daughter mom mother dad father friend kids kid children
    child parents partner boyfriend girlfriend cousin aunt uncle grandma grandmother grandpa
    grandfather neighbor neighbour colleague coworker roommate dog cat""".split()
)
_ADJ_BEFORE_RELATION = frozenset("best older younger little big new old twin".split())
_STATUS = frozenset("single married divorced engaged widowed separated".split())
_MONTHS = frozenset(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()
)
_NUMBER_WORDS = frozenset(
    """one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty
    hundred first second third fourth fifth sixth seventh eighth ninth tenth""".split()
)
_RESIDENCE = frozenset("live lives living lived moved move relocated home based".split())
_LEADING = (
    _CHANGE
    | _FREQUENCY
    | frozenset(
        "so well yesterday today recently lately honestly actually correction update oops"
        " wait ps btw".split()
    )
)
_NOT_CONTENT = (
    _NEGATORS
    | _POSITIVE
    | _NEGATIVE
    | _FREQUENCY
    | _ADDITIVE
    | _CHANGE
    | _LIGHT
    | {"really", "very", "new", "finally", "actually"}
    | _WHEN
)
# Words between a change word and what it changes ("I quit my job at St. Mary's").
_ANCHOR = 6
# Markers that also occur in plain narration: they need a closer match to count.
_WEAK_CHANGE = frozenset(
    """now|these days|from now on|down to|became|become|nowadays|currently|lately|used to""".split(
        "|"
    )
)
_WEAK_OVERLAP = 0.3

# A number keeps its suffix: "3rd", "6am", "60k".
_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+(?:[.,:]\d+)*[A-Za-z]*")
_CONTRACTIONS = {
    "n't": ["not"],
    "'m": ["am"],
    "'re": ["are"],
    "'ve": ["have"],
    "'ll": ["will"],
    "'d": ["would"],
}
_IRREGULAR_NOT = {"can't": ["can", "not"], "won't": ["will", "not"], "cannot": ["can", "not"]}


# Cosine above which a reply is taken to be about a statement at all.
_ABOUT_SIMILARITY = 0.4
_STOP_STEMS = frozenset(_stem(w) for w in STOP_WORDS)


_SENTENCE_END = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\bProf\.)"
    r"(?<=[.!?])\s+|\n+"
)
_MAX_SENTENCES = 8
# "It turns out I'm not allergic": what follows is the statement.
_HEDGE = re.compile(r"^(?:it\s+)?turn(?:s|ed)\s+out(?:\s+that)?,?\s*", re.IGNORECASE)
# A second subject starts a second statement: "I'm vegetarian and I don't drink milk".
_CLAUSE = re.compile(
    r"(?:[,;]\s*|\s+)(?:and|but)\s+(?=(?:i|we|my|our)\b)|;\s+|,\s+but\s+", re.IGNORECASE
)
# Negations that say nothing negative.
_IDIOMS = re.compile(
    r"\b(?:can't|cannot|can not) wait\b|\bno doubt\b|\bno worries\b"
    r"|\b(?:couldn't|could not) agree more\b|\b(?:won't|will not|never) (?:give up|quit)\b"
    r"|\bnever (?:knew|thought|realized|realised|expected)\b|\bwhy not\b",
    re.I,
)
_INTERJECTION = r"(?:hey|hi|hello|thanks|thank you|wow|yeah|yes|oh|woohoo|no|aw+|ok|okay)"
_VOCATIVE_START = re.compile(
    rf"^(?:{_INTERJECTION}\b[\s,!.]*(?:[A-Z][a-z]+\b)?|[A-Z][a-z]+(?=,))[\s,!.]*",
    re.IGNORECASE,
)
_VOCATIVE_END = re.compile(r",\s*[A-Z][a-z]+(?=\s*[!.,]?\s*$)")
# Least share of content words two sentences must have in common to be about the same thing.
_MIN_OVERLAP = 0.15


@dataclass(frozen=True)
class Statement:
    """A memory as the tension detector sees it; ``speaker`` is who said it (their "I").

    ``seq`` orders statements of one time: message order within an ``add`` call, insertion
    order across calls (what was stored before comes first).
    """

    id: str
    text: str
    created_at: float = 0.0
    speaker: str | None = None
    seq: int = 0

    @property
    def when(self) -> tuple[float, int]:
        return (self.created_at, self.seq)


@dataclass
class _Parsed:
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


def _split(text: str) -> tuple[list[str], set[str]]:
    words: list[str] = []
    caps: set[str] = set()
    for i, m in enumerate(_TOKEN.finditer(text.replace("\u2019", "'"))):
        raw = m.group(0)
        low = raw.lower()
        if ((i > 0 and raw[0].isupper()) or any(c.isupper() for c in raw[1:])) and low not in (
            "i",
            "i'm",
            "i've",
            "i'd",
            "i'll",
        ):
            caps.add(low.split("'")[0])
        if low in _IRREGULAR_NOT:
            words += _IRREGULAR_NOT[low]
            continue
        for suffix, repl in _CONTRACTIONS.items():
            if low.endswith(suffix) and len(low) > len(suffix):
                words += [low[: -len(suffix)], *repl]
                break
        else:
            if low.endswith("'s"):
                words += [low[:-2], "'s"]
            else:
                words.append(low)
    return words, caps


def _subject(words: list[str], text: str) -> str:
    """``self`` (I, we, my ...), ``other:<who>`` (my sister, Melanie, she) or ``neutral``."""
    skip = 0
    while skip < len(words) - 1 and words[skip] in _LEADING:
        skip += 1
    words = words[skip:]
    if not words:
        return "neutral"
    first = words[0]
    if first in ("i", "me", "we", "us", "our"):
        return "self"
    if first == "my":
        rest = [w for w in words[1:3] if w not in _ADJ_BEFORE_RELATION]
        if rest and rest[0] in _RELATIONS:
            # "My boyfriend is Jake" says who I am with: a fact about me.
            raw = _TOKEN.findall(text)[skip:]
            at = words.index(rest[0])
            if (
                words[at + 1 : at + 2] == ["is"]
                and raw[at + 2 : at + 3]
                and raw[at + 2][0].isupper()
            ):
                return "self"
            return f"other:{rest[0]}"
        return "self"
    if first in ("he", "she", "they", "his", "her", "their"):
        return "other:pronoun"
    if first in ("you", "your"):
        return "other:you"
    if first in ("the", "a", "an") and len(words) > 1:
        head = next((w for w in words[1:4] if w not in STOP_WORDS and w not in _NOT_CONTENT), "")
        return f"thing:{_stem(head)}" if head else "neutral"
    # A capitalised first word followed by a verb-like word is taken for a name ("Melanie
    # enjoys", "Jon's car"); "Keep going!", "Glad to ..." are not.
    original = _TOKEN.findall(text)[skip] if len(_TOKEN.findall(text)) > skip else ""
    nxt = words[1] if len(words) > 1 else ""
    if (
        original[:1].isupper()
        and first not in STOP_WORDS
        and (
            nxt in ("'s", "has", "have", "had", "will")
            or nxt in _COPULA
            or (nxt.endswith(("s", "ed")) and nxt not in STOP_WORDS)
        )
    ):
        return f"other:{first}"
    return "neutral"


def _values(words: list[str], caps: set[str], classed: list[str]) -> dict[str, tuple[str, str]]:
    out = {
        _stem(w): (_value_type(w), w)
        for w in words
        if w not in ("a", "an", "the") and _is_value([w], caps)
    }
    for c in classed:
        out[c if " " in c else _stem(c)] = (_CLASS_OF[c], c)
    return out


def _head(words: list[str]) -> str:
    """The first word after an opening possessive or article: "my work email" -> work (a
    compound's first word tells it apart: "my email" is not "my work email")."""
    skip = 0
    while skip < len(words) - 1 and words[skip] in _LEADING:
        skip += 1
    if skip + 1 >= len(words) or words[skip] not in ("my", "our", "the", "a", "an", "his", "her"):
        return ""
    head = next((w for w in words[skip + 1 : skip + 3] if w not in ("new", "old")), "")
    return "" if head in STOP_WORDS or head in _COPULA else _stem(head)


@lru_cache(maxsize=4096)
def _parse(text: str) -> _Parsed:
    words, caps = _split(_IDIOMS.sub(" ", text))
    stems = [_stem(w) for w in words]
    negations = sum(1 for w in words if w in _NEGATORS)
    sentiment = 1
    for w in words:
        if w in _NEGATIVE:
            sentiment = -sentiment
    polarity = sentiment * (-1 if negations % 2 else 1)
    joined = " ".join(words)
    changes: dict[str, int] = {}
    phrase_words: set[str] = set()
    for phrase in _CHANGE_PHRASES:
        for m in re.finditer(rf"(?:^|(?<= )){phrase}(?= |$)", joined):
            before = joined[: m.start()].split()[-2:]
            if phrase == "used to" and before[-1:] and before[-1] in _ACCUSTOMED:
                continue  # "I'm used to the cold"
            after = joined[m.end() :].split()[:1]
            if phrase == "any more" and after and after[0] not in STOP_WORDS:
                continue  # "any more suggestions"
            if phrase == "took up" and after and after[0] in _AMOUNTS:
                continue  # "took up most of my time"
            if phrase in ("no longer", "any longer", "any more") or not set(before) & _NEGATORS:
                changes.setdefault(phrase, len(joined[: m.start()].split()))
                phrase_words |= set(phrase.split())
    classed: list[str] = []
    rest = f" {joined} "
    for phrase in _CLASS_PHRASES:
        if f" {phrase} " in rest:
            classed.append(phrase)
            rest = rest.replace(f" {phrase} ", " ")
    classed += [w for w in rest.split() if w in _CLASS_OF]
    head = _head(words)  # "the rent is ..." is about the rent, not renting
    phrase_words |= {w for c in classed if " " in c for w in c.split()}
    content = {
        _stem(w)
        for w in words
        if w not in STOP_WORDS
        and w not in _NOT_CONTENT
        and w not in phrase_words
        and w != "'s"
        and len(w) > 1
    }
    # "never quit" announces no change.
    for i, w in enumerate(words):
        if (
            w in _CHANGE
            and not (set(words[max(0, i - 3) : i]) & _NEGATORS and w != "anymore")
            and (i + 1 == len(words) or words[i + 1] not in _NOT_A_CHANGE.get(w, ()))
        ):
            changes.setdefault(w, i)
    for i, w in enumerate(words[:-1]):
        if w == "new":
            changes.setdefault(f"new {_stem(words[i + 1])}", i)
    return _Parsed(
        words=words,
        caps=caps,
        stems=stems,
        content=content,
        polarity=polarity,
        subject=_subject(words, text),
        additive=any(w in _ADDITIVE for w in words) or "as well" in joined,
        used_to="used to" in joined,
        changes=changes,
        values=_values(words, caps, [c for c in classed if _stem(c) != head]),
        head=head,
        past=bool(set(words) & _PAST)
        or any(
            w.endswith("ed") and len(w) > 4 and not w.endswith("eed") and w not in _STATUS
            for w in words
        ),
    )


def _fuzzy_shared(a: set[str], b: set[str]) -> set[str]:
    """Terms of ``a`` found in ``b``, counting stems with a common 5-letter prefix as one
    ("teacher" / "teaching")."""
    prefixes = {y[:5] for y in b if len(y) >= 5}
    general = {_GENERAL[y] for y in b if y in _GENERAL}
    specific = {_SPECIFIC[y] for y in b if y in _SPECIFIC}
    synonyms = {_SYNONYM[y] for y in b if y in _SYNONYM}
    return {
        x
        for x in a
        if x in b
        or (len(x) >= 5 and x[:5] in prefixes)
        or _SYNONYM.get(x, -1) in synonyms
        or _GENERAL.get(x, -1) in general | specific
        or _SPECIFIC.get(x, -1) in general
    }


def _subjects_agree(a: str, b: str) -> bool:
    """Whether two subjects may be the same: ``self`` is never ``other:*``, two different
    ``other:*`` or ``thing:*`` are different; ``neutral`` agrees with anything."""
    if a == b or "neutral" in (a, b):
        return True
    kind_a, kind_b = a.split(":", 1)[0], b.split(":", 1)[0]
    if kind_a == kind_b:
        return False  # other:x vs other:y, thing:x vs thing:y
    return {kind_a, kind_b} != {"self", "other"}


def _is_value(words: Sequence[str], caps: set[str]) -> bool:
    return bool(words) and all(
        w.isdigit()
        or w in _NUMBER_WORDS
        or w in _MONTHS
        or w in caps
        or any(c.isdigit() for c in w)
        for w in words
        if w not in ("a", "an", "the")
    )


_UNIT_STEMS = frozenset(_stem(w) for w in _UNITS | {"since"})


def _value_type(word: str) -> str:
    if word in _CLASS_OF:
        return _CLASS_OF[word]
    if word in _MONTHS:
        return "date"
    if word.isdigit() or word in _NUMBER_WORDS or any(c.isdigit() for c in word):
        return "number"
    return "name"


def _modifier(p: _Parsed, stem: str) -> str:
    """The content word right before ``stem`` ("work" in "my work email"), if any."""
    for i, s in enumerate(p.stems):
        if s == stem or (len(stem) >= 5 and s[:5] == stem[:5]):
            prev = p.stems[i - 1] if i else ""
            return prev if prev in p.content and prev not in p.values else ""
    return ""


def _value_change(a: _Parsed, b: _Parsed) -> tuple[list[str], list[str]] | None:
    """The values that differ when two statements give the same attribute different values
    ("My rent is $1,500" / "My rent went up to $1,700"): names, numbers or dates of one type
    on both sides, the attribute words (all but the values) mostly shared, and no word that
    makes it another attribute ("my email" / "my work email")."""
    # "I ran five miles today" tells of an event; "I was born in 1990" is a fact all the same.
    if (a.past and not set(a.words) & _FUNCTIONAL) or not a.values or not b.values:
        return None
    old = [v for k, v in a.values.items() if k not in b.values]
    new = [v for k, v in b.values.items() if k not in a.values]
    types = {t for t, _ in old} & {t for t, _ in new}
    if not types:
        return None
    attr_a, attr_b = a.content - set(a.values), b.content - set(b.values)
    # A unit alone will do ("180 pounds" / "165 pounds"); a class is an attribute itself
    # ("I eat meat" / "I've been vegan since January").
    if not _fuzzy_shared(attr_a, attr_b) and not types & _CLASS_TYPES:
        return None
    # One side's attribute words all on the other side: "I work from home on Mondays" / "I
    # work from the office on Tuesdays" are two attributes.
    attr_a, attr_b = attr_a - _UNIT_STEMS, attr_b - _UNIT_STEMS
    shared = _fuzzy_shared(attr_a, attr_b)
    if attr_a - shared and attr_b - _fuzzy_shared(attr_b, attr_a):
        return None
    if a.head and b.head and not _fuzzy_shared({a.head}, {b.head}):
        return None
    if any(_modifier(a, t) != _modifier(b, t) for t in shared):
        return None
    return [w for _, w in old], [w for _, w in new]


def _changed_slot(a: _Parsed, b: _Parsed) -> tuple[list[str], list[str]] | None:
    """The one replaced slot if the sentences are the same frame otherwise (a "now" of the
    newer one aside: "My manager is Karen" / "My manager is now Luis")."""
    keep_a = [i for i, w in enumerate(a.words) if w not in _WEAK_CHANGE]
    keep_b = [i for i, w in enumerate(b.words) if w not in _WEAK_CHANGE]
    stems_a, stems_b = [a.stems[i] for i in keep_a], [b.stems[i] for i in keep_b]
    sm = difflib.SequenceMatcher(a=stems_a, b=stems_b, autojunk=False)
    ops = [op for op in sm.get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > 3 or j2 - j1 > 3:
        return None
    same = sum(size for *_, size in sm.get_matching_blocks())
    if same < 2 or same < 0.5 * max(len(stems_a), len(stems_b)):
        return None
    return [a.words[i] for i in keep_a[i1:i2]], [b.words[i] for i in keep_b[j1:j2]]


def _clauses(sentence: str) -> list[str]:
    """``sentence`` cut where a second subject starts, not inside "Jake and I", "my wife and I"."""
    out, start = [], 0
    for m in _CLAUSE.finditer(sentence):
        before = _TOKEN.findall(sentence[start : m.start()])
        last = before[-1].lower() if before else ""
        if not before or before[-1][0].isupper() or last in _RELATIONS or last in _OBJECTS:
            continue
        out.append(sentence[start : m.start()])
        start = m.end()
    return [*out, sentence[start:]]


@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    """The statements of a message: sentences that are not questions and have some words,
    without greetings and names of the person addressed ("Thanks, Mel!")."""
    out = []
    for sentence in _SENTENCE_END.split(text.strip()):
        sentence = _VOCATIVE_END.sub("", _VOCATIVE_START.sub("", sentence.strip()))
        sentence = _HEDGE.sub("", sentence)
        if sentence.endswith("?") or len(_TOKEN.findall(sentence)) < 2:
            continue
        out += [c for c in _clauses(sentence) if len(_split(c)[0]) >= 3]
    return tuple(out[:_MAX_SENTENCES])


def detect_tension(
    older: Statement, newer: Statement, similarity: float, min_similarity: float = 0.3
) -> Tension | None:
    """Whether ``newer`` contradicts ``older`` (see the module docstring); ``similarity`` is
    the cosine of their embeddings. The statements are ordered by ``created_at`` and ``seq``
    first (``newer`` of the result is None only when both are equal); a message of several
    sentences is judged sentence by sentence (questions skipped)."""
    if newer.when < older.when:
        older, newer = newer, older
    if similarity < min_similarity or older.speaker != newer.speaker:
        return None
    # Every cue needs shared content words, or a value on both sides (names, a status).
    whole_a, whole_b = _parse(older.text), _parse(newer.text)
    words_a, words_b = set(whole_a.words), set(whole_b.words)
    classes_a = {t for t, _ in whole_a.values.values()} & _CLASS_TYPES
    classes_b = {t for t, _ in whole_b.values.values()} & _CLASS_TYPES
    if not _fuzzy_shared(whole_a.content, whole_b.content) and not (
        (words_a & _RESIDENCE and words_b & _RESIDENCE and whole_a.caps and whole_b.caps)
        or (words_a & _STATUS and words_b & _STATUS)
        or (whole_a.caps and whole_b.caps and whole_b.changes)
        or (whole_b.changes and similarity >= _ABOUT_SIMILARITY)
        or classes_a & classes_b
    ):
        return None
    for sa in _sentences(older.text):
        for sb in _sentences(newer.text):
            found = _detect(sa, sb, older, newer, similarity)
            if found is not None:
                return found
    return None


def _actor(p: _Parsed, at: int) -> str:
    """The personal pronoun nearest before word ``at`` (who the change happens to), if any."""
    for w in reversed(p.words[max(0, at - _ANCHOR) : at]):
        if w in ("i", "we", "you", "he", "she", "they"):
            return w
    return ""


def _mentions(subject: str, other: _Parsed) -> bool:
    """Whether ``other`` names the ``other:<who>`` subject (a name, not "my sister")."""
    if not subject.startswith("other:"):
        return False
    who = subject[6:]
    if who in ("pronoun", "you") or who in _RELATIONS:
        return False
    return who in other.caps or _stem(who) in other.content


def _detect(
    sa: str, sb: str, older: Statement, newer: Statement, similarity: float
) -> Tension | None:
    a, b = _parse(sa), _parse(sb)
    # "I have a dog named Max" / "Max passed away", "I find chess boring" / "Chess has become
    # my obsession": one statement's subject is what the other one is about.
    subjects = (a.subject, b.subject)
    if "self" in subjects and (_mentions(a.subject, b) or _mentions(b.subject, a)):
        subjects = ("self", "self")
    if not _subjects_agree(*subjects) or a.additive or b.additive or a.used_to:
        return None
    # "I" of two speakers is two people, and so is "my sister": a speaker is consistent or
    # not with themselves; two speakers disagreeing is a conversation, not a changed fact.
    if older.speaker != newer.speaker:
        return None
    shared = _fuzzy_shared(a.content, b.content)
    # Sharing one word among many is chat, not a statement about the same thing.
    overlap = len(shared) / max(1, len(a.content | b.content))
    only_a = a.content - shared
    only_b = b.content - _fuzzy_shared(b.content, a.content)
    newer_id = newer.id if newer.when > older.when else None

    def make(kind: str, confidence: float, reason: str) -> Tension:
        return Tension(
            a=older.id,
            b=newer.id,
            kind=kind,
            confidence=round(min(1.0, confidence), 3),
            newer=newer_id,
            reason=reason,
        )

    # Superseded: the newer one announces a change about something the older one states.
    announced = {
        c
        for c in b.changes.keys() - a.changes.keys()
        if not c.startswith("new ") or c.split(" ", 1)[1] in a.content
    }
    residence = (
        bool(set(a.words) & _RESIDENCE)
        and bool(set(b.words) & _RESIDENCE)
        and bool(a.caps)
        and bool(b.caps)
    )
    if shared and not residence:
        # The change is about what they share: "it really changed my perspective" changes no
        # book. The shared words must be near the change word.
        shared_b = _fuzzy_shared(b.content, a.content)
        announced = {
            c
            for c in announced
            if set(b.stems[max(0, b.changes[c] - _ANCHOR) : b.changes[c] + _ANCHOR + 1]) & shared_b
            or bool({b.head, b.stems[0]} & shared_b)  # "Tom and I don't talk anymore"
            or (a.caps and b.caps and a.caps != b.caps)
        }
    # "... even though you can't volunteer there anymore": someone else's change.
    if a.subject == "self":
        announced = {c for c in announced if _actor(b, b.changes[c]) in ("", "i", "we")}
    # "My gym ..." / "My new gym ...": a new one of what the older statement is about.
    weak = {c for c in announced if c in _WEAK_CHANGE or (c.startswith("new ") and c[4:] != a.head)}
    # "Now I'm gonna order some sushi" is a plan, not a new state.
    if announced == weak and (overlap < _WEAK_OVERLAP or "neutral" in subjects or a.past or b.past):
        announced = set()
    strong = announced - weak
    # "My daughter goes to Lincoln Elementary" / "... transferred to Oak Ridge": a change
    # from one name to another about the same person, even with few words in common.
    named_change = (
        bool(strong)
        and bool(a.caps)
        and bool(b.caps)
        and a.caps != b.caps
        and similarity >= _ABOUT_SIMILARITY
        and "neutral" not in subjects
    )
    same_attribute = bool(shared) or named_change or residence
    status_change = (
        (set(a.words) & _STATUS)
        and (set(b.words) & _STATUS)
        and (set(a.words) & _STATUS != set(b.words) & _STATUS)
    )
    # A change needs someone or something it happens to: "Making a switch could ..." has none.
    definite = [x for x in subjects if x != "neutral"]
    if not definite or (len(definite) == 1 and definite[0].startswith(("thing:", "other:you"))):
        announced = set()
    if announced and same_attribute and (overlap >= _MIN_OVERLAP or not shared or named_change):
        what = ", ".join(sorted(announced))
        return make("superseded", 0.5 + 0.5 * similarity, f"newer statement says '{what}'")
    if status_change:
        return make("changed_value", 0.5 + 0.5 * similarity, "status changed")
    # Negation: opposite polarity about the same thing.
    if (
        a.polarity != b.polarity
        and "neutral" not in subjects  # exhortations, idioms: "never give up!"
        # "I haven't read that yet" / "I read a few of them": about what?
        and not (set(a.words) & _VAGUE and set(b.words) & _VAGUE and len(shared) < 2)
        and shared
        and (not only_a or not only_b)
        and overlap >= _MIN_OVERLAP
    ):
        return make("negation", 0.4 + 0.6 * similarity, "opposite statements about the same thing")
    # Changed value, of a definite subject: "item 3" / "item 4" of a list is no changed fact.
    if a.polarity == b.polarity and "neutral" not in subjects:
        values = _value_change(a, b)
        if values is not None:
            return make(
                "changed_value",
                0.4 + 0.6 * similarity,
                f"'{' '.join(values[0])}' became '{' '.join(values[1])}'",
            )
        slot = _changed_slot(a, b)
        if slot is not None:
            old_value, new_value = slot
            if a.head and a.head in {_stem(w) for w in old_value}:
                return None  # "My favourite colour is blue" / "My car is blue": two subjects
            if set(old_value) <= _VAGUE | _DETERMINERS or set(new_value) <= _VAGUE | _DETERMINERS:
                return None  # "make it work" / "make this studio work"
            frame = set(a.words) - set(old_value)
            vague = a.words[0] in _VAGUE if a.words else True
            evaluative = any(w in _EVALUATIVE for w in [*old_value, *new_value])
            # Not "now" alone: "I'm a teacher" / "I'm a mother now" can both be true.
            single_valued = (_is_value(old_value, a.caps) and _is_value(new_value, b.caps)) or bool(
                frame & _FUNCTIONAL or (frame & _COPULA and not vague)
            )
            if single_valued and not evaluative:
                return make(
                    "changed_value",
                    0.4 + 0.6 * similarity,
                    f"'{' '.join(old_value)}' became '{' '.join(new_value)}'",
                )
    return None


def find_tensions(
    statements: Sequence[Statement], vectors: np.ndarray, min_similarity: float
) -> list[Tension]:
    """Every contradicting pair among ``statements`` (``vectors[i]`` embeds statement i)."""
    out: list[Tension] = []
    if len(statements) < 2:
        return out
    sims = vectors @ vectors.T
    for i in range(len(statements)):
        for j in range(i + 1, len(statements)):
            if sims[i, j] < min_similarity:
                continue
            found = detect_tension(statements[i], statements[j], float(sims[i, j]), min_similarity)
            if found is not None:
                out.append(found)
    return sorted(out, key=lambda t: -t.confidence)


def agreed_side(reply: str, a: str, b: str, cos_a: float, cos_b: float) -> int | None:
    """Which statement the reply sides with: 0 for ``a``, 1 for ``b``, None if unclear.

    The words that tell the two apart (the changed value, the affect word, the change) count
    first; the reply's polarity about their shared subject next; the embedding similarity
    breaks a tie only when it is clear.
    """
    pa, pb, pr = _parse(a), _parse(b), _parse(reply)
    reply_words = set(pr.stems) | set(pr.words)
    shared = _fuzzy_shared(pa.content, pb.content)
    stems_a = set(pa.stems) - _STOP_STEMS
    stems_b = set(pb.stems) - _STOP_STEMS
    distinct_a, distinct_b = stems_a - stems_b, stems_b - stems_a
    # A value (a name, a number, a date) tells the sides apart better than a frame word.
    values_a = {_stem(w) for w in pa.words if _is_value([w], pa.caps)}
    values_b = {_stem(w) for w in pb.words if _is_value([w], pb.caps)}
    score_a = float(sum(2 if t in values_a else 1 for t in distinct_a & reply_words))
    score_b = float(sum(2 if t in values_b else 1 for t in distinct_b & reply_words))
    if pa.polarity != pb.polarity and shared & set(pr.stems):
        if pr.polarity == pa.polarity:
            score_a += 1
        else:
            score_b += 1
    if score_a != score_b:
        return 0 if score_a > score_b else 1
    # Without a telling word, only a reply clearly about the matter and clearly nearer one side.
    if max(cos_a, cos_b) >= _ABOUT_SIMILARITY and abs(cos_a - cos_b) > 0.05:
        return 0 if cos_a > cos_b else 1
    return None
