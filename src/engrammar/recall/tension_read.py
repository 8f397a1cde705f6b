"""How the tension detector reads a message (see :mod:`engrammar.recall.tensions`): its
statements, and of each the words, who it is about, what it is about, its values, the
changes it announces and its polarity."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from .tension_words import (
    ADDITIVE,
    BREAK_UP,
    CHANGE,
    CHANGE_PHRASES,
    CLASS_OF,
    CLASS_PHRASES,
    COPULA,
    CORRECTION,
    GENERAL,
    IDIOMS,
    IRREGULAR,
    JOB_CHANGE,
    JOB_FRAME,
    LEADING,
    LIKINGS,
    MONTHS,
    NEGATIVE,
    NEGATORS,
    NOT_A_CHANGE,
    NOT_CONTENT,
    NUMBER_WORDS,
    PARTNER,
    PAST,
    RELATIONS,
    SPECIFIC,
    STANCES,
    STUDY,
    STUDY_END,
    SYNONYM,
    TENTATIVE,
)
from .text import STOP_WORDS
from .text import stem as _stem

# An email, an @handle, a word (with its contraction), a number with its suffix ("6am", "3rd").
TOKEN = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?<![\w.])@\w+|[A-Za-z]+\d[A-Za-z\d]*|[A-Za-z]+(?:'[A-Za-z]+)?"
    r"|\d+(?:[.,:]\d+)*[A-Za-z]*"
)
_CONTRACTIONS = {
    "n't": "not",
    "'m": "am",
    "'re": "are",
    "'ve": "have",
    "'ll": "will",
    "'d": "would",
}
_WHOLE = {
    "can't": ["can", "not"],
    "won't": ["will", "not"],
    "cannot": ["can", "not"],
    "im": ["i", "am"],
    "ive": ["i", "have"],
    "cant": ["can", "not"],
    "dont": ["do", "not"],
    "didnt": ["did", "not"],
    "doesnt": ["does", "not"],
    "isnt": ["is", "not"],
    "wasnt": ["was", "not"],
    "havent": ["have", "not"],
}
_SENTENCE_END = re.compile(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<=[.!?])\s+|\n+")
# Greetings and the name of the one addressed: "Thanks, Mel!", "Hey Jo,".
_GREETING = re.compile(
    r"^(?:(?:hey|hi|hello|thanks|thank you|wow|yeah|yes|oh|ok|okay)\b[\s,!.]*(?:[A-Z][a-z]+\b)?"
    r"|[A-Z][a-z]+(?=,))[\s,!.]*"
)
# A second subject starts a second statement: "I'm vegetarian and I don't drink milk".
_CLAUSE = re.compile(
    r"(?:,\s*|\s+)(?:and|but|so)\s+(?=(?:i|we|my|our)\b)|;\s+|,\s+but\s+"
    r"|,\s+(?=(?:i|we|my|our|they|he|she)\b)",
    re.I,
)
# A question may open with a statement: "I teach chemistry, any tips?".
_STATED = re.compile(r"^(?:(?:now that|since|as)\s+)?((?:i|we|my|our)\b[^,]*),", re.I)
_PHRASE = re.compile(
    r"(?=(?:^|(?<= ))("
    + "|".join(re.escape(p) for p in sorted(CHANGE_PHRASES, key=len, reverse=True))
    + r")(?= |$))"
)
_SEPARABLE = re.compile(
    r"\b(put|putting|cut|called|gave|given|shaved) (?:my|our|the|it|them|\w+)(?: \w+){0,2}? "
    r"(up|down|out|off)\b"
)
# "a second helmet", "an extra key": one more of a kind, not a replacement.
_ONE_MORE = re.compile(r"\b(?:a|an) (?:second|extra|spare)\b(?! (?:year|floor|place)\b)")
_GAVE_AWAY = re.compile(r"\b(?:gave|given|handed|sold) (?:my|our|the) (?:\w+ ){1,3}?(?:to|away)\b")
# "It turns out I'm not allergic": what follows is the statement.
_HEDGE = re.compile(r"^\s*(?:it\s+)?turn(?:s|ed)\s+out(?:\s+that)?,?\s*", re.I)
MAX_STATEMENTS = 8
# Adjectives that before a noun describe it and take no stance ("a bad knee").
_ADJECTIVES = frozenset("awful terrible bad horrible boring annoying tedious dull gross".split())
_ORDINALS = frozenset("first second third fourth fifth".split())
# A time of day: "I left the office late" is a day's end, not a job left.
_DAYTIME = frozenset("late early tonight today morning afternoon evening am pm".split())
# Lines from which a message is taken for a pasted document, no one's statement.
PASTED_LINES = 6


@dataclass(frozen=True)
class Reading:
    """One statement as the rules see it."""

    words: tuple[str, ...]  # lower-cased, contractions split
    stems: tuple[str, ...]
    names: frozenset[str]  # words written capitalised (not opening the sentence)
    content: frozenset[str]  # stems of what it is about
    values: dict[str, tuple[str, str]]  # stem -> (type, word): names, numbers, dates, classes
    subject: str  # self, other:<who>, thing:<what>, or neutral
    head: str  # the noun after an opening "my" / "the" ("rent" in "my rent is ...")
    polarity: int
    changes: dict[str, int]  # announced change -> word position
    additive: bool
    used_to: bool
    past: bool  # tells what happened rather than what is
    tentative: bool  # a request, plan, wish or hedge
    correction: str  # the opening "no" / "actually" / "not anymore" ... of a correction, or ""
    job_frame: bool
    job_change: bool

    # What the rules ask of a reading over and over (each pair of statements a message is
    # checked against), worked out once: a reading is immutable, and ``read`` keeps it.
    @cached_property
    def joined(self) -> str:
        return " ".join(self.words)

    @cached_property
    def word_set(self) -> frozenset[str]:
        return frozenset(self.words)

    @cached_property
    def contacts(self) -> frozenset[str]:
        """The contacts it gives (emails, handles, numbers)."""
        return frozenset(w for t, w in self.values.values() if t == "contact")

    @cached_property
    def amounts(self) -> frozenset[str]:
        """The values that are numbers or dates."""
        return frozenset(k for k, (t, _) in self.values.items() if t in ("number", "date"))

    @cached_property
    def dates(self) -> frozenset[str]:
        return frozenset(k for k, (t, _) in self.values.items() if t == "date")

    @cached_property
    def breaks_up(self) -> bool:
        """Whether it tells of a relationship ending (``BREAK_UP``)."""
        return BREAK_UP.search(self.joined) is not None

    @cached_property
    def ends_study(self) -> bool:
        """Whether it tells of studies ending (``STUDY_END``)."""
        return STUDY_END.search(self.joined) is not None

    @cached_property
    def studies(self) -> bool:
        """Whether it tells of studies (``STUDY``)."""
        return STUDY.search(self.joined) is not None

    @cached_property
    def partnered(self) -> bool:
        """Whether it tells of a partner (``PARTNER``)."""
        return PARTNER.search(self.joined) is not None


@lru_cache(maxsize=32768)
def split_words(text: str) -> tuple[list[str], set[str]]:
    """Lower-cased words (contractions split) and the words written capitalised."""
    words: list[str] = []
    names: set[str] = set()
    for i, m in enumerate(TOKEN.finditer(text.replace("\u2019", "'"))):
        raw = m.group(0)
        low = raw.lower()
        if ((i > 0 and raw[0].isupper()) or any(c.isupper() for c in raw[1:])) and low != "i":
            names.add(low.split("'")[0])
        if low in _WHOLE:
            words += _WHOLE[low]
            continue
        suffix = next((s for s in _CONTRACTIONS if low.endswith(s) and len(low) > len(s)), "")
        if suffix:
            words += [low[: -len(suffix)], _CONTRACTIONS[suffix]]
        elif low.endswith("'s"):
            words += [low[:-2], "'s"]
        else:
            words.append(low)
    return words, names


def pasted(text: str) -> bool:
    return sum(1 for line in text.splitlines() if line.strip()) >= PASTED_LINES


@lru_cache(maxsize=16384)
def statements(text: str) -> tuple[str, ...]:
    """The statements of a message: its sentences and clauses that are not questions, without
    greetings; a reply's opening correction ("No, ...") stays with its first statement."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        sentence = sentence.strip()
        m = CORRECTION.match(sentence)
        opener = sentence[: m.end()] if m else ""
        sentence = sentence[len(opener) :] if opener else _GREETING.sub("", sentence)
        if sentence.endswith("?"):
            m = _STATED.match(sentence)
            sentence = m.group(1) if m else ""
        # Every part of a correcting sentence corrects: "No, we split up, I'm with Sam now".
        out += [
            opener + p for p in _clauses(sentence) if len(split_words(p)[0]) >= (1 if opener else 2)
        ]
    return tuple(out[:MAX_STATEMENTS])


@lru_cache(maxsize=16384)
def parts(statement: str) -> tuple[str, ...]:
    """A statement's comma-separated parts of three words or more, when it has several; a
    correction's opener stays with each."""
    m = CORRECTION.match(statement)
    opener = statement[: m.end()] if m else ""
    cut = [x.strip() for x in re.split(r",\s+", statement[len(opener) :])]
    if len(cut) < 2:
        return ()
    return tuple(opener + x for x in cut if len(split_words(x)[0]) >= 3)


def _clauses(sentence: str) -> list[str]:
    out, start = [], 0
    for m in _CLAUSE.finditer(sentence):
        before = TOKEN.findall(sentence[start : m.start()])
        # "Jake and I", "my wife and I": one subject; "In Paris, I ...": no statement yet.
        if len(before) < 2 or before[-1][0].isupper() or before[-1].lower() in RELATIONS:
            continue
        out.append(sentence[start : m.start()])
        start = m.end()
    return [*out, sentence[start:]]


def _value_type(word: str) -> str:
    if "@" in word or (word.isdigit() and len(word) >= 5 and word[0] == "0"):
        return "contact"
    if word in CLASS_OF:
        return CLASS_OF[word]
    if word in MONTHS or (word.endswith("s") and word[:-1] in MONTHS):
        return "date"
    if word in NUMBER_WORDS or any(c.isdigit() for c in word):
        return "number"
    return "name"


def is_value(word: str, names: frozenset[str] | set[str]) -> bool:
    return word in names or _value_type(word) != "name"


def _subject(words: list[str], raw: list[str]) -> str:
    """``self`` (I, we, my ...), ``other:<who>`` (my sister, Melanie, she), ``thing:<what>``
    (the rent, book club) or ``neutral``; a statement whose "I" chat drops ("Moved to Glasgow
    last week") is the speaker's."""
    skip = 0
    while skip < len(words) - 1 and (
        words[skip] in LEADING or words[skip : skip + 2] == ["these", "days"]
    ):
        skip += 2 if words[skip] == "these" else 1
    w = [*words[skip:], "", "", "", ""]
    first = w[0]
    if first in ("all", "both") and w[1] in ("my", "our"):
        w, first = w[1:], w[1]
    if first in ("i", "me", "we", "us") or w[1:3] == ["and", "i"]:
        return "self"
    if first in ("my", "our"):
        rel = w[2] if w[1] in ("best", "older", "younger", "little", "big") else w[1]
        if "and" in w[1:4] and ("i" in w[1:5] or "we" in w[1:5]):
            return "self"
        if (rel in RELATIONS or rel.rstrip("s") in RELATIONS) and w[2:3] != ["'s"]:
            # "My boyfriend is Jake", "my manager is Karen": who one has, a fact of mine.
            at = w.index(rel)
            if w[at + 1] in COPULA and at + 2 < len(raw) + 1 and w[at + 2] in _names_of(raw):
                return "self"
            return f"other:{rel}"
        if w[2:3] == ["'s"] and w[1] in RELATIONS:
            return f"other:{w[1]}"
        return "self"
    if first == "they" and {"me", "us"} & set(w[1:4]):
        return "self"
    if first in ("he", "she", "they", "his", "her", "their"):
        return "other:pronoun"
    if first in ("you", "your"):
        return "other:you"
    # "The landlord raised my rent": what is done to the speaker's is the speaker's.
    mine = bool({"my", "our", "me", "us"} & set(w[2:]))
    if first in ("the", "a", "an"):
        head = next((x for x in w[1:4] if x and x not in STOP_WORDS and x not in NOT_CONTENT), "")
        return "self" if mine else f"thing:{_stem(head)}" if head else "neutral"
    # The speaker's, their "I" dropped: "Moved to Glasgow", "Got a new number", "Paying 900
    # for rent", "Never on Fridays".
    if first in ("have", "had") and w[1] not in ("not", "been", "had", "got", "just"):
        return "neutral"  # "Have a great hike!": a wish, not "I have"
    if first in PAST or first.endswith("ed") or first in CHANGE or first in _DROPPED:
        return "self" if w[1] not in COPULA | {"'s", "has"} else "neutral"
    if first.endswith("ing") and (w[1] in _PREPOSITIONS or w[1][:1].isdigit()):
        return "self"
    if not first or first in STOP_WORDS:
        return "neutral"
    capital = raw[skip][:1].isupper() if skip < len(raw) else False
    # A verb after the first word, an adverb or two aside ("Rent just went up").
    verbs = COPULA | {"'s", "has", "have", "had", "got", "gets", "went", "goes"}
    verb = next(
        (x for x in w[1:3] if x in verbs or (x.endswith(("s", "ed")) and x not in STOP_WORDS)), ""
    ) or next((x for x in w[1:4] if not x.endswith("ly") and x not in ("just", "now", "still")), "")
    verbish = verb in verbs
    # "Pottery is my main hobby these days", "Apple Music is what I use now": the speaker's.
    if capital and verbish and (mine or "i" in w[2:]):
        return "self"
    if capital and (verbish or (verb.endswith(("s", "ed")) and verb not in STOP_WORDS)):
        # "Raj's old boss left": someone of Raj's, not Raj.
        owned = w[1] == "'s" and w[2] not in STOP_WORDS and w[2] not in CHANGE
        return f"other:{first}'s" if owned else f"other:{first}"
    if verbish and not first.endswith(("ly", "ing")):
        return "self" if mine else f"thing:{_stem(first)}"
    return "neutral"


_DONE = {"stop": "stopped", "quit": "quit", "leave": "left", "sell": "sold", "move": "moved"}
_DONE.update({"cancel": "cancelled", "give": "gave up", "switch": "switched", "end": "ended"})
_PREPOSITIONS = frozenset("to for from at in on with my our".split())
_DROPPED = frozenset("never still been have had finally".split())


def _names_of(raw: list[str]) -> set[str]:
    return {x.lower() for x in raw[1:] if x[:1].isupper()}


@lru_cache(maxsize=32768)
def read(statement: str) -> Reading:
    """The reading of one statement (cached: a message is read once however many pairs)."""
    opener = CORRECTION.match(statement)
    correction = (
        " ".join(split_words(opener.group(0))[0])
        if opener and opener.end() < len(statement)
        else ""
    )
    text = statement[opener.end() :] if correction and opener is not None else statement
    text = _HEDGE.sub("", text)
    text = IDIOMS.sub(" ", STANCES.sub(" hate ", LIKINGS.sub(" love ", text)))
    words = list(split_words(text)[0])
    names = split_words(IDIOMS.sub(" ", STANCES.sub(" hate ", statement)))[1]
    raw = TOKEN.findall(text)
    stems = [_stem(IRREGULAR.get(x, x)) for x in words]
    joined = " ".join(words)
    # "without stopping" denies the stopping, not the statement; "a bad knee" describes it.
    negations = sum(
        1
        for i, x in enumerate(words)
        if x in NEGATORS
        and not (x == "without" and words[i + 1 : i + 2] and words[i + 1].endswith("ing"))
    )
    affects = [
        x
        for i, x in enumerate(words)
        if x in NEGATIVE
        and not (x in _ADJECTIVES and words[i + 1 : i + 2] > [] and words[i + 1] not in STOP_WORDS)
    ]
    sentiment = -1 if affects else 1
    polarity = sentiment * (-1 if negations % 2 else 1)
    changes: dict[str, int] = {}
    in_phrases: set[str] = set()
    for m in _PHRASE.finditer(joined):
        phrase = m.group(1)
        at = len(joined[: m.start(1)].split())
        negated = set(words[max(0, at - 3) : at]) & NEGATORS
        if phrase == "used to" and words[at - 1 : at] in (["am"], ["get"], ["got"], ["is"]):
            continue  # "I'm used to the cold"
        after = words[at + len(phrase.split()) : at + len(phrase.split()) + 3]
        if phrase == "used to":
            continue  # a past habit told ("I used to hike"), no change of what was said
        if (
            phrase == "paid off"
            and after[:1] not in (["my"], ["our"], ["the"], ["it"], ["all"])
            and words[at - 1 : at] not in (["fully"], ["finally"], ["is"], ["been"], ["now"])
        ):
            continue  # "all my hard work paid off"
        if phrase.endswith(" off") and after[:1] == ["to"]:
            continue  # "I'm off to Ireland"
        if phrase in ("went up", "gone up", "went down", "gone down") and not (
            after[:1] != ["to"] or any(c.isdigit() for c in "".join(after[1:3]))
        ):
            continue  # "I went up to the mountains"; "rent went up to 1,350" is an amount
        if not negated or phrase in ("no longer", "any longer", "any more", "no more", "not renew"):
            changes.setdefault(phrase, at)
            in_phrases |= set(phrase.split())
    # "I've put my rate up", "cut sugar out", "called it off": the object between.
    for m in _SEPARABLE.finditer(joined):
        changes.setdefault(f"{m.group(1)} {m.group(2)}", len(joined[: m.start()].split()))
    # "my cat allergy has completely gone": it ended.
    for i, x in enumerate(words[1:], 1):
        if (
            x == "gone"
            and words[i - 1] in ("has", "have", "is", "'s", "completely", "all")
            and words[i + 1 : i + 2] in ([], ["now"], ["away"], ["completely"], ["for"])
        ):
            changes.setdefault("gone", i)
    # "I gave my Kindle to my niece": a possession handed on.
    for m in _GAVE_AWAY.finditer(joined):
        changes.setdefault("gave away", len(joined[: m.start()].split()))
    for i, x in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        # "I had to stop playing", "we decided to sell the car": done, as its past.
        if x in _DONE and words[max(0, i - 2) : i] in (["had", "to"], ["decided", "to"]):
            changes.setdefault(_DONE[x], i)
        if (
            x in CHANGE
            and (x == "anymore" or not set(words[max(0, i - 3) : i]) & NEGATORS)
            and nxt not in NOT_A_CHANGE.get(x, ())
            and not (i and words[i - 1] in ("a", "an", "the", "my", "our"))  # "a switch"
            and not (x == "closed" and i and words[i - 1] in ("is", "are", "'s"))  # a state
            # "for five years now": how long, not a change
            and not (x == "now" and "for" in words[max(0, i - 4) : i])
            # "the app stopped working": it broke; "I left the office late": for the day
            and not (
                x == "stopped" and nxt == "working" and words[i - 1 : i] not in (["i"], ["we"])
            )
            and not (x == "left" and set(words[i + 1 :]) & _DAYTIME)
            # "Lost the Fitbit", "I've lost my sweet tooth", "we lost Squeak"; not "getting
            # lost in a book" (what is lost must be what the older names: TRANSITIVE)
            and not (x == "lost" and nxt not in ("the", "my", "our") and nxt not in names)
            # "Bolt got adopted": gone to a new home; "I adopted a pup" is one more
            and not (
                x == "adopted" and words[i - 1 : i] not in (["got"], ["been"], ["was"], ["is"])
            )
        ):
            changes.setdefault(x, i)
        # "my new gym": a new one of something, which the rules match against the older.
        if x == "new" and nxt and not set(words[max(0, i - 2) : i]) & {"a", "an"}:
            changes.setdefault(f"new {_stem(nxt)}", i)
    content = frozenset(
        _stem(IRREGULAR.get(x, x))
        for x in words
        if x not in STOP_WORDS
        and x not in NOT_CONTENT
        and x not in in_phrases
        and len(x) > 1
        and x[0] != "'"
    )
    values = {
        _stem(x): (_value_type(x), x)
        for i, x in enumerate(words)
        if (x in names or _value_type(x) != "name")
        and x not in ("a", "an", "the", "i")
        and not (x == "one" and i and words[i - 1] not in STOP_WORDS)  # "a long one"
        # "third year" is a value, "the first of the month" / "our first" are not
        and not (x in _ORDINALS and (i + 1 == len(words) or words[i + 1] in STOP_WORDS))
        # "this morning", "last Sunday": when something happened, not a time that holds
        and not (
            i
            and words[i - 1] in ("this", "last", "next")
            and _value_type(x) == "date"
            and words[i + 1 : i + 2] != ["of"]
        )
    }
    for phrase, kind in CLASS_PHRASES.items():
        if f" {phrase} " in f" {joined} ":
            values[" ".join(_stem(w) for w in phrase.split())] = (kind, phrase)
            for w in phrase.split():  # its words name the class, not a time or a thing
                values.pop(_stem(w), None)
                content = content - {_stem(w)}
    # "07700 900123": the digit groups after a phone number's first part are the number too.
    for i, x in enumerate(words[1:], 1):
        if x.isdigit() and values.get(_stem(words[i - 1]), ("",))[0] == "contact":
            values[_stem(x)] = ("contact", x)
    skip = next((i for i, x in enumerate(words) if x not in LEADING), 0)
    opening = words[skip : skip + 3]
    head = ""
    if len(opening) > 1 and opening[0] in ("my", "our", "the"):
        head = next((_stem(x) for x in opening[1:] if x not in ("new", "old")), "")
        head = "" if head in STOP_WORDS or head in COPULA else head
    return Reading(
        words=tuple(words),
        stems=tuple(stems),
        names=frozenset(names),
        content=content,
        values=values,
        subject=_subject(words, raw),
        head=head,
        polarity=polarity,
        changes=changes,
        # "I speak Italian too", not "too expensive".
        additive=any(
            x in ADDITIVE
            and not (x == "too" and i + 1 < len(words))
            and not (x == "another" and words[i + 1 : i + 2] in (["time"], ["day"]))
            for i, x in enumerate(words)
        )
        or "as well" in joined
        or bool(_ONE_MORE.search(joined)),
        used_to="used to" in joined,
        past=bool(set(words) & PAST) or any(x.endswith("ed") and len(x) > 4 for x in words),
        # "I don't need the stick anymore" is a fact, not a request.
        tentative=bool(TENTATIVE.match(" ".join(words[skip:])))
        and not {"anymore", "no longer", "any more"} & changes.keys(),
        correction=correction,
        job_frame=bool(JOB_FRAME.search(joined)),
        job_change=bool(JOB_CHANGE.search(joined)),
    )


def shared(a: frozenset[str], b: frozenset[str]) -> set[str]:
    """Terms of ``a`` found in ``b``: the same stem, a common 5-letter prefix ("teacher" /
    "teaching"), or words for one thing ("job" / "work")."""
    if not a or not b:
        return set()
    keys = _keys(b)
    # Most statements compared share nothing: one look at all of a's keys tells.
    if _every_term_key(a).isdisjoint(keys):
        return set()
    return {x for x in a if not _term_keys(x).isdisjoint(keys)}


@lru_cache(maxsize=65536)
def _every_term_key(terms: frozenset[str]) -> frozenset[object]:
    return frozenset().union(*map(_term_keys, terms))


@lru_cache(maxsize=65536)
def _keys(terms: frozenset[str]) -> frozenset[object]:
    out: set[object] = set()
    for t in terms:
        out.add(t)
        if len(t) >= 5:
            out.add(("<", t[:5]))
        if t in SYNONYM:
            out.add(("~", SYNONYM[t]))
        if t in GENERAL:  # a general word matches its kinds, a kind its general word
            out |= {("g", GENERAL[t]), ("s", GENERAL[t])}
        if t in SPECIFIC:
            out.add(("g", SPECIFIC[t]))
    return frozenset(out)


@lru_cache(maxsize=65536)
def _term_keys(t: str) -> frozenset[object]:
    out = set(_keys(frozenset([t]))) - {("s", SPECIFIC.get(t))}
    if t in SPECIFIC:
        out = (out - {("g", SPECIFIC[t])}) | {("s", SPECIFIC[t])}
    return frozenset(out)
