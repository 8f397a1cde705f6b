"""Tensions: pairs of memories that really contradict each other (pure functions, no LLM).

Topic distance is not contradiction: "I live in Paris" and "I love the cafes in Paris" are
close and compatible, "I live in Paris" and "I moved to Berlin" are farther apart and in
tension. A pair is checked only when its embeddings are similar enough to be about the same
thing and one speaker said both; messages are compared statement by statement
(:mod:`.tension_read`), and a statement pair must have the same subject (not "I" against "my
sister"). Then, in order:

* **correction**: the newer opens with "No," / "Actually," / "Not anymore," / "Correction:"
  and restates a value of the older's kind, denies it, or announces a change ("Deploys are on
  Tuesdays" / "No, Wednesdays now");
* **superseded**: the newer announces a change (*moved*, *quit*, *no longer*, *now* ...) next
  to what the older states, or a job, studies or a relationship the older states ends;
* **negation**: opposite polarity (a negator, or an affect word such as *love* / *hate*) about
  the same thing, or a word and its opposite ("long hair" / "short hair");
* **changed value**: the same attribute with another value of the same type (a number, a
  date, a name, a contact, a class such as a diet), or the same sentence with one slot changed
  in a frame that holds one value (where one lives, a favourite, "X is Y").

Additive wording (*also*, *too*), an older statement already about the past (*used to*) and
a newer request, plan or hedge ("I'm thinking of ...", "Can you ...") rule a tension out; a
plan stated before is undone only by an explicit change of plan (*cancelled*, *is off*).
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..models import Tension
from .tension_read import Reading, is_value, parts, pasted, read, shared, statements
from .tension_words import (
    CANCELS,
    COPULA,
    ENDING,
    EVALUATIVE,
    FUNCTIONAL,
    OPPOSITE,
    PRESENT,
    RESIDENCE,
    STATUS,
    TRANSITIVE,
    UNITS,
    VAGUE,
    WEAK_CHANGE,
)
from .text import STOP_WORDS
from .text import stem as _stem

__all__ = ["ParseAhead", "Statement", "agreed_side", "detect_tension", "find_tensions"]

# Cosine above which two statements are taken to be about the same matter at all.
_ABOUT = 0.4
# Least share of content words two statements must share to be about the same thing.
_MIN_OVERLAP = 0.15
# A weak change marker ("now", "started") needs this much in common.
_WEAK_OVERLAP = 0.3
# Words between a change and what it changes ("I quit my job at the bank").
_NEAR = 6
_UNIT_STEMS = frozenset(_stem(w) for w in UNITS)
_AMOUNT_CHANGES = frozenset(("went up", "gone up", "went down", "gone down"))


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


_AHEAD_MAX_CHARS = 4000
_AHEAD = ThreadPoolExecutor(1, thread_name_prefix="engrammar-parse")


class ParseAhead:
    """The readings :func:`detect_tension` will ask of new texts, made on a worker thread
    while the caller embeds them; the readings are cached pure functions, so the rules find
    them ready and judge exactly as without. :meth:`stop` ends the work at the next text."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._stop = threading.Event()
        todo = [t for t in texts if len(t) <= _AHEAD_MAX_CHARS and not pasted(t)]
        self._done = _AHEAD.submit(self._run, todo) if todo else None

    def _run(self, texts: list[str]) -> None:
        for text in texts:
            if self._stop.is_set():
                return
            try:
                whole = statements(text)
                for part in whole + (parts(whole[0]) if len(whole) == 1 else ()):
                    read(part)
            except Exception:  # the caller's own reading meets it again and reports it
                continue

    def stop(self) -> None:
        self._stop.set()

    def wait(self, timeout: float | None = None) -> None:
        """Until the work has ended (stopped or all read)."""
        if self._done is not None:
            self._done.result(timeout)


def detect_tension(
    older: Statement, newer: Statement, similarity: float, min_similarity: float = 0.3
) -> Tension | None:
    """Whether ``newer`` contradicts ``older`` (see the module docstring); ``similarity`` is
    the cosine of their embeddings. The statements are ordered by ``created_at`` and ``seq``
    first (``newer`` of the result is None only when both are equal)."""
    if newer.when < older.when:
        older, newer = newer, older
    if similarity < min_similarity or older.speaker != newer.speaker:
        return None
    if pasted(older.text) or pasted(newer.text):
        return None
    whole_a, whole_b = statements(older.text), statements(newer.text)
    pairs = [(sa, sb) for sa in whole_a for sb in whole_b]
    # One statement each with a remark after a comma ("I'm allergic to penicillin, so flag
    # it" / "Turns out I'm not allergic, the test came back clean"): its parts too.
    if len(whole_a) == len(whole_b) == 1:
        pairs += [(sa, sb) for sa in parts(whole_a[0]) for sb in parts(whole_b[0])]
    for sa, sb in pairs:
        found = _judge(read(sa), read(sb), similarity)
        if found is not None:
            kind, confidence, reason = found
            return Tension(
                a=older.id,
                b=newer.id,
                kind=kind,
                confidence=round(min(1.0, confidence), 3),
                newer=newer.id if newer.when > older.when else None,
                reason=reason,
            )
    return None


def _subjects(a: Reading, b: Reading) -> tuple[str, str] | None:
    """The two subjects if they may be the same, else None: "I" is never "my sister"; two
    named others or two things differ; a name one statement gives the other's possession
    ("I have a dog named Max" / "Max passed away") is the speaker's; no subject agrees."""
    sa, sb = a.subject, b.subject
    # A correction speaks of what it corrects: "her name", "they're on Saturdays now".
    if b.correction and (sb in ("neutral", "self", "other:pronoun") or sb.startswith("thing:")):
        return (sa, sa)
    for s, y in ((sa, b), (sb, a)):
        who = s[6:] if s.startswith("other:") and y.subject == "self" else ""
        if who in ("pronoun", "you") or who.endswith("'s"):
            continue
        if who and (who in y.names or _stem(who) in y.content):
            return ("self", "self")
    if sa == sb or "neutral" in (sa, sb):
        return (sa, sb)
    ka, kb = sa.split(":")[0], sb.split(":")[0]
    if ka == kb or {ka, kb} == {"self", "other"}:
        return None
    # "The offsite is in Porto" / "I've never been to Porto": the speaker's statement must
    # name the thing.
    for p, q in ((a, b), (b, a)):
        if (
            p.subject.startswith("thing:")
            and q.subject == "self"
            and not shared(frozenset([p.subject[6:]]), q.content)
        ):
            return None
    return (sa, sb)


Verdict = tuple[str, float, str]


def _judge(a: Reading, b: Reading, sim: float) -> Verdict | None:
    # A contact given anew ("that email is dead, use mark.h@gmail.com"), whatever else is said
    # (of the speaker's: "you can reach me on ..." is no one else's).
    contacts_a, contacts_b = a.contacts, b.contacts
    if (
        contacts_a - contacts_b
        and contacts_b - contacts_a
        and not any(x.startswith("other:") and x != "other:you" for x in (a.subject, b.subject))
    ):
        old, new = " ".join(sorted(contacts_a)), " ".join(sorted(contacts_b))
        return ("changed_value", 0.4 + 0.6 * sim, f"'{old}' became '{new}'")
    subjects = _subjects(a, b)
    if subjects is None or a.additive or b.additive or a.used_to:
        return None
    # "Please use sam@gmail.com from now on": a request that states a new contact.
    if b.tentative and not b.correction and not ("from now on" in b.changes and b.contacts):
        return None
    common = shared(a.content, b.content)
    # Every rule needs shared words, or a value on both sides, or a correction, or an end of
    # a job, studies or a relationship.
    if not common and not (
        b.correction
        or (a.values and b.values)
        or b.job_change
        or b.word_set & STATUS
        or b.breaks_up
        or b.ends_study
    ):
        return None
    common_b = shared(b.content, a.content)
    only_a, only_b = a.content - common, b.content - common_b
    # Shared words over all (amounts aside: "180 pounds" / "165 pounds" are one weight).
    num_a, num_b = a.amounts - a.dates, b.amounts - b.dates
    overlap = len(common - num_a) / max(1, len((a.content - num_a) | (b.content - num_b)))
    definite = "neutral" not in subjects and "other:you" not in subjects
    strong = 0.5 + 0.5 * sim
    plain = 0.4 + 0.6 * sim

    if b.correction:
        corrected = _corrected(a, b, common, only_b)
        if corrected is not None:
            return (corrected[0], strong, corrected[1])
    changes = _announced(a, b, common_b, subjects, overlap, sim)
    if a.tentative:
        changes &= CANCELS
    if changes:
        return ("superseded", strong, f"newer statement says '{', '.join(sorted(changes))}'")
    if a.tentative:
        return None
    own = subjects == ("self", "self")
    if own and (
        (a.job_frame and b.job_change and not a.job_change)
        or (a.studies and b.ends_study)
        or (a.partnered and b.breaks_up and not a.breaks_up)
    ):
        return ("superseded", strong, "newer statement ends a job, studies or a relationship")
    status_a, status_b = a.word_set & STATUS, b.word_set & STATUS
    if status_a and status_b and status_a != status_b and "other:pronoun" not in subjects:
        return ("changed_value", strong, "status changed")
    if not definite:
        return None
    about = bool(common) and overlap >= _MIN_OVERLAP
    # Negation: opposite polarity about the same thing (when and how often aside); a newer
    # statement marked as the present may say it in other words.
    about_a = only_a - a.amounts - _UNIT_STEMS
    about_b = only_b - b.amounts - _UNIT_STEMS - _adjunct(b)
    present = bool((b.changes.keys() - a.changes.keys()) & (PRESENT | {"anymore"}))
    if (
        a.polarity != b.polarity
        and about
        and not b.correction  # a reply's "No, not ..." answers a question; corrections above
        and (len(common) >= 2 or not about_a or not about_b or present)
        and not (a.word_set & VAGUE and b.word_set & VAGUE and len(common) < 2)
        and not (a.polarity < 0 and {"before", "yet"} & a.word_set)  # "never ... before"
        and not (b.polarity < 0 and {"before", "yet"} & b.word_set)
        and (not about_a or not about_b or (present and len(about_a | about_b) <= 3))
        # "I take the bus" / "I don't take the bus on weekends": a narrower case, no denial;
        # "... in the morning" / "... in the evening": two times, no denial either
        and not (_habits(b) - a.dates - _adjunct(b) and not a.dates)
        and not (a.dates and b.dates - _adjunct(b) and a.dates != b.dates)
    ):
        return ("negation", plain, "opposite statements about the same thing")
    words_b = b.word_set
    opposite = [w for w in a.words if w in OPPOSITE and OPPOSITE[w] & words_b and w not in words_b]
    if opposite and about and a.polarity == b.polarity and not a.past:
        return ("negation", plain, f"'{opposite[0]}' and its opposite")
    if a.polarity != b.polarity:
        return None
    values = _value_change(a, b)
    if values:
        return ("changed_value", plain, values)
    slot = _changed_slot(a, b) if about else ""
    if slot:
        return ("changed_value", plain, slot)
    swapped = _swapped(a, b, common, only_a, only_b, overlap)
    if swapped:
        return ("changed_value", plain, swapped)
    return None


def _habits(p: Reading) -> set[str]:
    """Times a habit is narrowed to: in the plural after "on" / "at" / "in" ("on weekends",
    "on Monday mornings"); "most nights" says how often."""
    return {
        _stem(w)
        for i, w in enumerate(p.words)
        if w.endswith("s")
        and _stem(w) in p.values
        and p.values[_stem(w)][0] == "date"
        and {"on", "at", "in"} & set(p.words[max(0, i - 2) : i])
    }


def _adjunct(p: Reading) -> set[str]:
    """What a trailing "since ..." / "after ..." / "because ..." is about: when or why."""
    for i, w in enumerate(p.words[1:], 1):
        if w in ("since", "after", "because"):
            return set(p.stems[i + 1 :]) & p.content
    return set()


def _corrected(
    a: Reading, b: Reading, common: set[str], only_b: frozenset[str]
) -> tuple[str, str] | None:
    """What a correcting reply ("No, Wednesdays now.", "Actually, it's 950 since the renewal",
    "No, never on Fridays") changes of the older statement, or None: a value of a kind the older
    gives, said anew; the older denied; or a change announced (the kind and the reason). A reply
    that names an attribute of its own ("Actually, the deposit was 1,800") corrects nothing."""
    if b.subject.startswith("other:") and a.subject != b.subject and not common:
        return None
    # "Not anymore, ...", "No longer": what the older says holds no more, whatever follows.
    if b.correction.startswith(("not any", "no longer")):
        return ("superseded", f"newer statement says '{b.correction}'")
    attribute = only_b - set(b.values) - _UNIT_STEMS - _adjunct(b)
    if len(attribute) > len(common):
        return None
    # The same words with the last one replaced: "on Roman trade" / "on Roman coinage".
    only_a = a.content - common
    last_a = [s for s in a.stems if s in a.content][-1:]
    last_b = [s for s in b.stems if s in b.content][-1:]
    if (
        common
        and a.polarity == b.polarity
        and [*only_a] == last_a
        and [*attribute] == last_b
        and not set(a.words + b.words) & EVALUATIVE
    ):
        return ("changed_value", f"'{last_a[0]}' corrected to '{last_b[0]}'")
    kinds_a = {t for t, _ in a.values.values()}
    new = [w for k, (t, w) in b.values.items() if k not in a.values and t in kinds_a]
    old = [
        w
        for k, (t, w) in a.values.items()
        if k not in b.values and t in {t for t, _ in b.values.values()}
    ]
    if new and old and a.polarity == b.polarity:
        return ("changed_value", f"'{' '.join(old)}' corrected to '{' '.join(new)}'")
    # The older denied: the reply's words are the older's ("No, never on Fridays").
    if (
        a.polarity != b.polarity
        and not attribute
        and (len(common) >= 2 or set(a.values) & set(b.values))
    ):
        return ("negation", "the older statement denied")
    if b.changes.keys() - a.changes.keys() - {"now"} and common:
        return ("superseded", "a change said in correction")
    return None


def _announced(
    a: Reading,
    b: Reading,
    common_b: set[str],
    subjects: tuple[str, str],
    overlap: float,
    sim: float,
) -> set[str]:
    """The changes the newer statement announces about what the older one states."""
    only_a = a.content - shared(a.content, b.content)
    only_b = b.content - common_b
    names_a = set(a.names) | a.amounts
    names_b = set(b.names) | b.amounts
    out = set()
    residence = bool(a.word_set & RESIDENCE and b.word_set & RESIDENCE and a.names and b.names)
    for change, at in b.changes.items():
        if change in a.changes:
            continue
        # "my new gym" changes the gym the older one names; "a new phone" is one more.
        if change.startswith("new ") and change[4:] not in a.content:
            continue
        near = set(b.stems[max(0, at - _NEAR) : at + _NEAR + 1]) & common_b
        renamed = bool(a.names and b.names and a.names != b.names and sim >= _ABOUT)
        if not (near or residence or renamed or b.head in common_b):
            continue
        # A move names a new place: "I moved to a bigger flat in Denver" / "I live in Denver".
        if change in ("moved", "relocated") and not names_b - names_a:
            continue
        # "I replaced the tyres on my Brompton": what is replaced must be what the older names.
        if change in TRANSITIVE and not _object_in(b, change, a.content):
            continue
        # "Arsenal switched managers": a named other's own change, not of what I said of it.
        if (
            subjects[1].startswith(("other:", "thing:"))
            and subjects[0] == "self"
            and not _object_in(b, change, a.content, strict=True)
            and change not in ENDING
        ):
            continue
        # "The station car park charges went up": an amount of something the older one does
        # not name.
        if change in _AMOUNT_CHANGES and not set(b.stems[max(0, at - 3) : at]) & common_b:
            continue
        # "... even though you can't volunteer there anymore": someone else's change.
        if a.subject == "self" and _actor(b, at) not in ("", "i", "we"):
            continue
        # "now", "started", "my new ...": said in narration too; a change only where a value
        # of the older one is replaced ("I'm a teacher" / "I'm a mother now" both hold).
        if change in WEAK_CHANGE or change.startswith("new "):
            if overlap < _WEAK_OVERLAP or a.past or "neutral" in subjects:
                continue
            if not _swap_values(a, b) or (only_a - set(a.values) and only_b - set(b.values)):
                continue
        out.add(change)
    # "I left teaching": an end whose object is what the older one states holds however
    # little else the two share.
    ends = any(c in ENDING and _object_in(b, c, a.content, strict=True) for c in out)
    if out and overlap < _MIN_OVERLAP and not (residence or ends or (a.names and b.names)):
        return set()
    if "neutral" in subjects and not b.correction and a.subject == "neutral":
        return set()
    return out


def _actor(p: Reading, at: int) -> str:
    """The personal pronoun nearest before word ``at`` (who the change happens to), if any."""
    for w in reversed(p.words[max(0, at - _NEAR) : at]):
        if w in ("i", "we", "you", "he", "she", "they"):
            return w
    return ""


def _object_in(p: Reading, change: str, content: frozenset[str], strict: bool = False) -> bool:
    """Whether what ``change`` is done to is among ``content``: the content words right after
    it (determiners passed) or, passive, before it ("the Peru trip is off"); with nothing
    after it ("Max passed away"), unless ``strict``."""
    at = p.changes[change]
    before = bool(shared(frozenset(p.stems[max(0, at - 4) : at]), content))
    if p.words[at] in _COPULAS or (at and p.words[at - 1] in _COPULAS):
        return not strict or before
    k = at + len(change.split())
    while k < len(p.words) and p.words[k] in ("away", "up", "off", "out", "in"):
        k += 1  # the particle of "gave up", "traded in"
    if p.words[k : k + 1] in (("to",), ("into",)):
        return not strict  # "switched to Neovim": what follows is the new value
    while k < len(p.words) and p.words[k] in _DETERMINERS:
        k += 1
    obj: list[str] = []
    while k < len(p.words) and len(obj) < 3 and p.stems[k] in p.content:
        obj.append(p.stems[k])
        k += 1
    if not obj:  # "The pottery class folded": what changed is its subject
        return not strict or before
    # "switched from piano lessons online to lessons at a studio": still lessons.
    if p.words[at + 1 : at + 2] == ("from",) and set(obj) & set(p.stems[k + 1 :]):
        return False
    return bool(shared(frozenset(obj), content))


_COPULAS = frozenset("is are was were been be got 's".split())
_DETERMINERS = frozenset("a an the my our all both up from out old new".split())


def _swap_values(a: Reading, b: Reading) -> bool:
    types_a = {t for k, (t, _) in a.values.items() if k not in b.values}
    return bool(types_a & {t for k, (t, _) in b.values.items() if k not in a.values})


def _value_change(a: Reading, b: Reading) -> str:
    """The values that differ when two statements give one attribute different values ("My
    rent is $1,500" / "My rent went up to $1,700"): of one type on both sides, and the words
    but the values the same attribute ("my email" / "my work email" are two)."""
    if (a.past and not a.word_set & FUNCTIONAL) or not a.values or not b.values:
        return ""
    # "went from 140 to 155": the value it went from is the older one's.
    left = {_stem(b.words[i + 1]) for i, w in enumerate(b.words[:-1]) if w == "from"}
    old = [(t, w) for k, (t, w) in a.values.items() if k not in b.values or k in left]
    new = [(t, w) for k, (t, w) in b.values.items() if k not in a.values and k not in left]
    types = {t for t, _ in old} & {t for t, _ in new}
    if not types or {w for _, w in old} == {w for _, w in new}:
        return ""
    # "I worked five days last week": one past week told, not a new habit.
    if b.past and {"last", "yesterday", "ago"} & b.word_set and not b.changes:
        return ""
    if "contact" not in types:
        # What the values are of: the words but the changed values ("French lessons on
        # Fridays" are not "piano lessons").
        changed = {k for k, (t, _) in {**a.values, **b.values}.items() if t in types}
        attr_a = a.content - changed - a.amounts - _adjunct(a)
        attr_b = b.content - changed - b.amounts - _adjunct(b)
        common = shared(attr_a, attr_b)  # a unit alone will do ("180 pounds" / "165 pounds")
        if not common and types <= {"name", "number", "date"}:
            return ""
        attr_a, attr_b = attr_a - _UNIT_STEMS, attr_b - _UNIT_STEMS
        common = shared(attr_a, attr_b)
        extra_b = attr_b - shared(attr_b, attr_a)
        # Two attributes: "piano on Mondays" / "French on Fridays"; a time is said of the
        # same doing ("I run every morning" / "I run with my dog on weekends" is another).
        if (attr_a - common and extra_b) or (types == {"date"} and extra_b):
            return ""
        # Names alone ("I've been using Ibotta" / "... my RedCard"): one of many things
        # used, unless the frame holds one value or a change is said.
        frame = a.word_set & b.word_set & (FUNCTIONAL | COPULA | RESIDENCE)
        if types <= {"name"} and not (frame or b.changes.keys() - {"lately", "currently"}):
            return ""
        # "My rent is 900" / "The landlord raised my rent": the rent either way.
        if (
            a.head
            and b.head
            and not shared(frozenset([a.head]), frozenset([b.head]))
            and a.head not in b.content
            and b.head not in a.content
        ):
            return ""
    olds = " ".join(w for t, w in old if t in types)
    news = " ".join(w for t, w in new if t in types)
    return f"'{olds}' became '{news}'"


def _changed_slot(a: Reading, b: Reading) -> str:
    """The one replaced slot of a frame that holds one value ("My manager is Karen" / "My
    manager is now Luis"): the rest of the sentence the same, a "now" aside."""
    if a.past and not a.word_set & FUNCTIONAL:
        return ""
    keep_a = [i for i, w in enumerate(a.words) if w not in WEAK_CHANGE]
    keep_b = [i for i, w in enumerate(b.words) if w not in WEAK_CHANGE]
    sa, sb = [a.stems[i] for i in keep_a], [b.stems[i] for i in keep_b]
    sm = difflib.SequenceMatcher(a=sa, b=sb, autojunk=False)
    ops = [op for op in sm.get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return ""
    _, i1, i2, j1, j2 = ops[0]
    same = sum(size for *_, size in sm.get_matching_blocks())
    if i2 - i1 > 3 or j2 - j1 > 3 or same < 2 or same < 0.5 * max(len(sa), len(sb)):
        return ""
    old = [a.words[i] for i in keep_a[i1:i2]]
    new = [b.words[i] for i in keep_b[j1:j2]]
    if a.head and a.head in {_stem(w) for w in old}:
        return ""  # "My favourite colour is blue" / "My car is blue": two subjects
    if set(old) & STOP_WORDS or set(new) & STOP_WORDS or set(old + new) & (VAGUE | EVALUATIVE):
        return ""
    frame = a.word_set - set(old)
    values = all(is_value(w, a.names) for w in old) and all(is_value(w, b.names) for w in new)
    if values or frame & FUNCTIONAL or (frame & COPULA and a.words[0] not in VAGUE):
        return f"'{' '.join(old)}' became '{' '.join(new)}'"
    return ""


def _swapped(
    a: Reading,
    b: Reading,
    common: set[str],
    only_a: frozenset[str],
    only_b: frozenset[str],
    overlap: float,
) -> str:
    """A habit or a one-valued frame restated for the present with another value ("I drink
    coffee every morning" / "These days I only drink green tea")."""
    marked = (b.changes.keys() - a.changes.keys()) & (PRESENT | {"become", "became"})
    if (
        not marked
        or a.past
        or overlap < 0.25
        or not (0 < len(only_a) <= 3 and 0 < len(only_b) <= 3)
    ):
        return ""
    if (a.word_set ^ b.word_set) & EVALUATIVE:
        return ""
    one = a.word_set & b.word_set & FUNCTIONAL
    exclusive = (a.word_set | b.word_set) & {"only", "mostly", "usually", "always", "all"}
    if not (one or exclusive or a.subject == b.subject == "self"):
        return ""
    return f"'{' '.join(sorted(only_a))}' became '{' '.join(sorted(only_b))}'"


def find_tensions(
    statements_: Sequence[Statement], vectors: np.ndarray, min_similarity: float
) -> list[Tension]:
    """Every contradicting pair among ``statements_`` (``vectors[i]`` embeds statement i)."""
    out: list[Tension] = []
    if len(statements_) < 2:
        return out
    sims = vectors @ vectors.T
    for i in range(len(statements_)):
        for j in range(i + 1, len(statements_)):
            if sims[i, j] < min_similarity:
                continue
            found = detect_tension(
                statements_[i], statements_[j], float(sims[i, j]), min_similarity
            )
            if found is not None:
                out.append(found)
    return sorted(out, key=lambda t: -t.confidence)


def agreed_side(reply: str, a: str, b: str, cos_a: float, cos_b: float) -> int | None:
    """Which statement the reply sides with: 0 for ``a``, 1 for ``b``, None if unclear.

    The words that tell the two apart (the changed value, the affect word, the change) count
    first; the reply's polarity about their shared subject next; the embedding similarity
    breaks a tie only when it is clear.
    """
    pa, pb, pr = read(a), read(b), read(reply)
    words = set(pr.stems) | set(pr.words)
    stems_a, stems_b = set(pa.stems) - STOP_WORDS, set(pb.stems) - STOP_WORDS
    score_a = float(sum(2 if t in pa.values else 1 for t in (stems_a - stems_b) & words))
    score_b = float(sum(2 if t in pb.values else 1 for t in (stems_b - stems_a) & words))
    if pa.polarity != pb.polarity and shared(pa.content, pb.content) & set(pr.stems):
        if pr.polarity == pa.polarity:
            score_a += 1
        else:
            score_b += 1
    if score_a != score_b:
        return 0 if score_a > score_b else 1
    if max(cos_a, cos_b) >= _ABOUT and abs(cos_a - cos_b) > 0.05:
        return 0 if cos_a > cos_b else 1
    return None
