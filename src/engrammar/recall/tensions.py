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
speaks of the past (*used to*) rule a tension out. A request, plan, consideration or hedge ("I'm
thinking of ...", "I'd like ...", "I could ...", "Can you ...") states no fact: it changes
nothing, and one stated before is undone only by an explicit change of plan. Messages are judged sentence by sentence
(questions, greetings and the name of the person addressed left out), and only statements of
one speaker are compared: two people saying "I" are two subjects.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..models import Tension
from .tension_compare import (
    actor_of,
    affects,
    amount_of_other,
    amounts_of,
    common,
    contacts,
    fuzzy_shared,
    left_values,
    mentions,
    modifier_of,
    my_heads,
    object_of,
    other_kind,
    own_other,
    owned,
    passive,
    subjects_agree,
    thing_apart,
    toward,
)
from .tension_cues import BREAK_UP, MORE_OF, STUDY, STUDY_END, cues, may_tell
from .tension_parse import (
    STOP_STEMS,
    UNIT_STEMS,
    Parsed,
    is_value,
    parse,
    segments,
    sentences,
)
from .tension_words import (
    ANCHOR,
    ANTONYM_OF,
    CLASS_TYPES,
    COPULA,
    DETERMINERS,
    ENDING,
    EVALUATIVE,
    FUNCTIONAL,
    RESIDENCE,
    STATUS,
    VAGUE,
    WEAK_CHANGE,
    WEAK_OVERLAP,
)
from .text import STOP_WORDS
from .text import stem as _stem

__all__ = ["ParseAhead", "Statement", "agreed_side", "detect_tension", "find_tensions"]


# Cosine above which a reply is taken to be about a statement at all.
_ABOUT_SIMILARITY = 0.4
# Least share of content words two sentences must have in common to be about the same thing.
_MIN_OVERLAP = 0.15
# A partner, or being seen with someone: what a break-up (BREAK_UP) ends.
_PARTNER = frozenset(
    """boyfriend girlfriend partner husband wife fiance fiancee married engaged dating""".split()
)
_SEEING = re.compile(
    r"\b(?:going out with|seeing (?:a|someone|this)|in a (?:\w+ ){0,2}relationship|best (?:friend|mate)"
    r"|been (?:together|with [a-z]+ for))\b"
)
_MOVES = frozenset("moved relocated".split())
# Changes done to an object: the object must be what the older statement names.
_TRANSITIVE = frozenset(
    "replaced switched sold changed swapped upgraded traded dropped cancelled canceled deleted".split()
)
_DATED = frozenset("last yesterday ago".split())
# Changes that undo a plan or a wish ("I'm planning a trip to Peru" / "The Peru trip is off").
CANCELS = frozenset(
    """cancelled canceled postponed rescheduled delayed scrapped shelved axed quit stopped
    ended dropped instead withdrew withdrawn deferred""".split()
) | frozenset(
    p.strip()
    for p in """called off|decided not to|decided against|changed my mind|is off|are off|'s off
    |am off|fell through|pushed back|pushed to|no longer|no more|gave up|given up|backed out
    |pulled out|bailed on|chickened out|after all|change of plan|change of plans|instead of
    |on hold|pulled the plug|not going ahead|not go ahead|not happen|not happening|a no go|rained off""".split(
        "|"
    )
)
# Words marking the newer statement as the present state, and habits of one value.
_PRESENT = frozenset(
    "now|these days|nowadays|lately|currently|become|became|at the moment".split("|")
)
_EXCLUSIVE = frozenset("only mostly usually always every main favourite favorite go".split())
_SWAP_OVERLAP = 0.25
_WHEN_STEMS = frozenset(
    _stem(w)
    for w in """morning mornings evening evenings night nights weekend weekends weekday weekdays
    monday mondays tuesday tuesdays wednesday wednesdays thursday thursdays friday fridays
    saturday saturdays sunday sundays""".split()
)
_FUNCTIONAL_STEMS = frozenset(_stem(w) for w in FUNCTIONAL)
_DIGITS = {
    w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())
}
# A denial that says "until then": "I've never tried it before".
_UNTIL_THEN = frozenset("before yet".split())
# Having or using a thing: "I use a Kindle" says no more than that it is there.
_HAVING = frozenset(_stem(w) for w in "use have own got".split())
_LIKING = frozenset(
    "favourite favorite love loves like likes prefer prefers fan person adore".split()
)
# Statements a message may have for its comma-separated parts to be compared one by one.
_MAX_SEGMENTED = 1
# Lines from which a message is taken for a pasted document.
_PASTED_LINES = 6


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


def _value_change(a: Parsed, b: Parsed) -> tuple[list[str], list[str]] | None:
    """The values that differ when two statements give the same attribute different values
    ("My rent is $1,500" / "My rent went up to $1,700"): names, numbers or dates of one type
    on both sides, the attribute words (all but the values) mostly shared, and no word that
    makes it another attribute ("my email" / "my work email")."""
    # "I ran five miles today" tells of an event; "I was born in 1990" is a fact all the same.
    if (a.past and not set(a.words) & FUNCTIONAL) or not a.values or not b.values:
        return None
    # "I worked five days last week": one past week, not a new habit.
    if b.past and set(b.words) & _DATED and not b.changes and "turned" not in b.words:
        return None
    # "Council tax went from 140 to 155": the value it went from is the older one's.
    left = left_values(b)
    old = [v for k, v in a.values.items() if k not in b.values or k in left]
    new = [v for k, v in b.values.items() if k not in a.values and k not in left]
    # "two" / "2": the same number written otherwise.
    if {_DIGITS.get(w, w) for _, w in old} == {_DIGITS.get(w, w) for _, w in new}:
        return None
    types = {t for t, _ in old} & {t for t, _ in new}
    if not types:
        return None
    # An email or a phone number is its own attribute ("My email is ..." / "reach me at ...").
    if "contact" in types:
        return [w for t, w in old if t == "contact"], [w for t, w in new if t == "contact"]
    # What the values are of: the words but the changed values ("the 8:15 train" / "the 7:40
    # train" are of the train), and no "since the move".
    attr_a = a.content - (a.values.keys() - b.values.keys()) - a.adjunct
    attr_b = b.content - (b.values.keys() - a.values.keys()) - b.adjunct
    # "on Friday afternoons" / "on Monday mornings": the time of day is part of the time.
    if "date" in types:
        attr_a, attr_b = attr_a - _WHEN_STEMS, attr_b - _WHEN_STEMS
    # Where one lives, named anew ("I'm living in a houseshare in Leeds" / "I'm currently
    # living with my girlfriend in York"): the rest is detail.
    if (
        types == {"name"}
        and set(a.words) & RESIDENCE
        and set(b.words) & RESIDENCE
        and not b.past
        and b.subject == a.subject == "self"
    ):
        return [w for _, w in old], [w for _, w in new]
    # A unit alone will do ("180 pounds" / "165 pounds"); a class is an attribute itself
    # ("I eat meat" / "I've been vegan since January").
    if not fuzzy_shared(attr_a, attr_b) and not types & CLASS_TYPES:
        return None
    # One side's attribute words all on the other side: "I work from home on Mondays" / "I
    # work from the office on Tuesdays" are two attributes.
    attr_a, attr_b = attr_a - UNIT_STEMS, attr_b - UNIT_STEMS
    shared = fuzzy_shared(attr_a, attr_b)
    if attr_a - shared and attr_b - fuzzy_shared(attr_b, attr_a):
        return None
    # "My rent is 900" / "The landlord raised my rent to 1,050": the rent either way.
    if (
        a.head
        and b.head
        and not fuzzy_shared({a.head}, {b.head})
        and a.head not in b.content
        and b.head not in a.content
    ):
        return None
    if any(modifier_of(a, t) != modifier_of(b, t) for t in shared):
        return None
    # Names alone ("I've been using Ibotta" / "I've been using my RedCard"): one of many
    # things used, liked or compared, unless the frame holds one value or a change is said.
    frame = set(a.words) & set(b.words)
    if types == {"name"} and not (
        frame & (FUNCTIONAL | COPULA | RESIDENCE) or b.changes.keys() - {"lately", "currently"}
    ):
        return None
    return [w for _, w in old], [w for _, w in new]


def _changed_slot(a: Parsed, b: Parsed) -> tuple[list[str], list[str]] | None:
    """The one replaced slot if the sentences are the same frame otherwise (a "now" of the
    newer one aside: "My manager is Karen" / "My manager is now Luis")."""
    keep_a = [i for i, w in enumerate(a.words) if w not in WEAK_CHANGE]
    keep_b = [i for i, w in enumerate(b.words) if w not in WEAK_CHANGE]
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


def _pasted(text: str) -> bool:
    """Whether a message is a pasted document rather than something said: many lines."""
    return sum(1 for line in text.splitlines() if line.strip()) >= _PASTED_LINES


# Longer texts are parsed when a pair needs them, not ahead (most are never in a pair).
_AHEAD_MAX_CHARS = 4000
_AHEAD = ThreadPoolExecutor(1, thread_name_prefix="engrammar-parse")


class ParseAhead:
    """The parses :func:`detect_tension` will ask of new texts, made on a worker thread while
    the caller does other work (an add embeds its batch meanwhile; the model leaves little
    idle: of the ~0.8 s that 1,000 LoCoMo turns take to parse, ~0.2 s were hidden on 2
    cores). The parses are cached pure functions, so the tension rules find them ready and
    judge exactly as without; :meth:`stop` ends the work at the next text (the rest is
    parsed when a pair needs it)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._stop = threading.Event()
        todo = [t for t in texts if len(t) <= _AHEAD_MAX_CHARS and not _pasted(t)]
        self._done = _AHEAD.submit(self._run, todo) if todo else None

    def _run(self, texts: list[str]) -> None:
        for text in texts:
            if self._stop.is_set():
                return
            try:  # as detect_tension reads a message (a failure is met again there)
                parse(text)
                whole = sentences(text)
                for part in whole:
                    parse(part)
                if len(whole) <= _MAX_SEGMENTED:
                    for part in segments(text):
                        parse(part)
            except Exception:  # the caller's own parse meets it again and reports it
                continue

    def stop(self) -> None:
        self._stop.set()

    def wait(self, timeout: float | None = None) -> None:
        """Until the work has ended (stopped or all parsed)."""
        if self._done is not None:
            self._done.result(timeout)


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
    # A pasted document, code or form ("act as ...:" and a profile page) is no one's
    # statement about themselves.
    if _pasted(older.text) or _pasted(newer.text):
        return None
    # Every cue needs shared content words, or a value on both sides (names, a status).
    whole_a, whole_b = parse(older.text), parse(newer.text)
    words_a, words_b = set(whole_a.words), set(whole_b.words)
    # Classes, and contacts (an email, a phone number) name what they are of.
    classes_a = {t for t, _ in whole_a.values.values()} & (CLASS_TYPES | {"contact"})
    classes_b = {t for t, _ in whole_b.values.values()} & (CLASS_TYPES | {"contact"})
    if not fuzzy_shared(whole_a.content, whole_b.content) and not (
        (words_a & RESIDENCE and words_b & RESIDENCE and whole_a.caps and whole_b.caps)
        or (words_a & STATUS and words_b & STATUS)
        or (whole_a.caps and whole_b.caps and whole_b.changes)
        or (whole_b.changes and similarity >= _ABOUT_SIMILARITY)
        or classes_a & classes_b
        or (whole_a.job_frame and whole_b.job_change and not whole_a.job_change)
        or (STUDY.search(" ".join(whole_a.words)) and STUDY_END.search(" ".join(whole_b.words)))
        or (
            (words_a & _PARTNER or _SEEING.search(" ".join(whole_a.words)))
            and BREAK_UP.search(" ".join(whole_b.words))
        )
    ):
        return None
    for sa in sentences(older.text):
        for sb in sentences(newer.text):
            found = _detect(sa, sb, older, newer, similarity)
            if found is not None:
                return found
    # A statement with a remark after a comma ("I'm allergic to penicillin, so always flag
    # it" / "I'm not allergic to penicillin, the test came back clean"): its parts alone; not
    # in longer messages, where some short part of one is bound to echo a part of the other.
    whole = sentences(older.text), sentences(newer.text)
    if max(len(whole[0]), len(whole[1])) > _MAX_SEGMENTED:
        return None
    parts_a, parts_b = segments(older.text), segments(newer.text)
    if (parts_a, parts_b) != whole:
        for sa in parts_a:
            for sb in parts_b:
                if sa in whole[0] and sb in whole[1]:
                    continue
                found = _detect(sa, sb, older, newer, similarity)
                if found is not None:
                    return found
    return None


def _detect(
    sa: str, sb: str, older: Statement, newer: Statement, similarity: float
) -> Tension | None:
    a, b = parse(sa), parse(sb)
    # "I have a dog named Max" / "Max passed away", "I find chess boring" / "Chess has become
    # my obsession": one statement's subject is what the other one is about.
    subjects = (a.subject, b.subject)
    if "self" in subjects and (
        mentions(a.subject, b) or mentions(b.subject, a) or owned(a) or owned(b)
    ):
        subjects = ("self", "self")
    elif not subjects_agree(*subjects):
        subjects = (common(a, b), common(b, a))
    if not subjects_agree(*subjects) or a.additive or b.additive or a.used_to:
        return None
    # A request, plan or wish states no new fact ("I'm considering the Bose", "I could
    # share ..."); one stated before is undone only by an explicit change of plan.
    if b.tentative and not (b.changes.keys() & {"from now on", "now"} and contacts(b)):
        return None
    # "I" of two speakers is two people, and so is "my sister": a speaker is consistent or
    # not with themselves; two speakers disagreeing is a conversation, not a changed fact.
    if older.speaker != newer.speaker or not may_tell(sa, sb, a, b, subjects):
        return None
    ca, cb = cues(sa), cues(sb)  # (cached: what may_tell read)
    shared = fuzzy_shared(a.content, b.content)
    # Sharing one word among many is chat, not a statement about the same thing.
    overlap = len(shared) / max(1, len(a.content | b.content))
    only_a = a.content - shared
    shared_b = fuzzy_shared(b.content, a.content)
    only_b = b.content - shared_b
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

    # A contact given anew ("that email is dead, use mark.h@gmail.com"), whatever else is said.
    contacts_a, contacts_b = contacts(a), contacts(b)
    if (
        contacts_a - contacts_b
        and contacts_b - contacts_a
        and not any(x.startswith("other:") and x != "other:you" for x in subjects)
    ):
        old, new = " ".join(sorted(contacts_a)), " ".join(sorted(contacts_b))
        return make("changed_value", 0.4 + 0.6 * similarity, f"'{old}' became '{new}'")
    # Superseded: the newer one announces a change about something the older one states.
    # "My old Prius broke down" / "this new Prius": the older one knew it was the old one.
    announced = {
        c
        for c in b.changes.keys() - a.changes.keys()
        if not c.startswith("new ")
        or (c.split(" ", 1)[1] in a.content and f"old {c[4:]}" not in " ".join(a.stems))
    }
    # "... instead of my usual shooters": what is given up must be what the older one states.
    if "instead of" in announced:
        at = b.changes["instead of"] + 2
        if a.polarity < 0 or not set(b.stems[at : at + 3]) & a.content:
            announced.discard("instead of")
    residence = (
        bool(set(a.words) & RESIDENCE)
        and bool(set(b.words) & RESIDENCE)
        and bool(a.caps)
        and bool(b.caps)
    )
    if shared and not residence:
        # The change is about what they share: "it really changed my perspective" changes no
        # book. The shared words must be near the change word.
        announced = {
            c
            for c in announced
            if set(b.stems[max(0, b.changes[c] - ANCHOR) : b.changes[c] + ANCHOR + 1]) & shared_b
            or bool({b.head, b.stems[0]} & shared_b)  # "Tom and I don't talk anymore"
            or (a.caps and b.caps and a.caps != b.caps)
        }
    # A move names a new place: "Ana and I moved in together" changes no "My girlfriend is
    # Ana", "I moved to a bigger flat in Denver" no "I live in Denver".
    # "Pilates got moved to Wednesdays": a new day or time is a new place in a schedule.
    names_a = {
        _stem(w) for w in a.names | {w for t, w in a.values.values() if t == "date" or ":" in w}
    }
    names_b = {
        _stem(w) for w in b.names | {w for t, w in b.values.values() if t == "date" or ":" in w}
    }
    if not names_b - names_a and (names_b or not set(a.words) & RESIDENCE):
        announced -= _MOVES
    # "The soup was vegetarian after all": an expectation about something else proved wrong.
    if b.subject not in ("self", "neutral", a.subject):
        announced.discard("after all")
    # "Arsenal switched managers": a change of the named one's own, not of what the older
    # statement says of it ("I support Arsenal"); "Max passed away" has no object.
    if b.subject.startswith("other:") and a.subject == "self":
        announced = {c for c in announced if object_of(b, c) <= {"", *shared_b}}
    # "I replaced the tyres on my Brompton": what is replaced is not what the older states
    # (unless the newer one names something new: "switched allegiance to Spurs").
    if not names_b - names_a:
        announced = {c for c in announced if c not in _TRANSITIVE or affects(b, c, a.content)}
    else:
        # "I switched my dissertation topic to the Tudors": a possession of the speaker's the
        # older statement does not name is what changed, whatever new name it now has.
        announced = {c for c in announced if c not in _TRANSITIVE or not own_other(b, c, a)}
    # "I migrated my old Word documents into Evernote": a move to what the older one names;
    # "The station car park charges went up": an amount of something it does not name.
    announced = {
        c for c in announced if not toward(b, c, a.caps) and not amount_of_other(b, c, shared_b)
    }
    # "The marathon is now sold out": a present of something else than the older subject.
    if b.subject.startswith("thing:") and b.subject != a.subject:
        announced = {c for c in announced if c not in WEAK_CHANGE}
    # "... even though you can't volunteer there anymore": someone else's change.
    if a.subject == "self":
        announced = {
            c
            for c in announced
            if actor_of(b, b.changes[c]) in ("", "i", "we")
            or b.words[b.changes[c] + 1 : b.changes[c] + 2] in (["me"], ["us"])
        }
    # "My gym ..." / "My new gym ...": a new one of what the older statement is about.
    weak = {c for c in announced if c in WEAK_CHANGE or (c.startswith("new ") and c[4:] != a.head)}
    # "... waiting to hear back from the embassy" / "... waiting to hear back from the embassy
    # now": the same content restated, nothing changed.
    if announced == weak and not only_a and not only_b - b.adjunct:
        announced = set()
    # "I use a Kindle for reading" / "I'm reading a thriller on my Kindle these days": what the
    # older one names is still there, and only how it is had is not said again.
    if announced == weak and (
        (a.caps and a.caps <= b.caps and only_a and only_a <= _HAVING) or other_kind(a, b, shared)
    ):
        announced = set()
    # "Now I'm gonna order some sushi" is a plan, not a new state.
    if announced == weak and (overlap < WEAK_OVERLAP or "neutral" in subjects or a.past or b.past):
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
    status_change = ca.status and cb.status and ca.words & STATUS != cb.words & STATUS
    # "Great job, you picked up great skills!" / "I left my IT job": an older sentence of no
    # one's needs more in common to be what changed.
    if a.subject == "neutral" and overlap < WEAK_OVERLAP:
        announced = set()
    # A change needs someone or something it happens to: "Making a switch could ..." has none.
    definite = [x for x in subjects if x != "neutral"]
    if not definite or (len(definite) == 1 and definite[0].startswith(("thing:", "other:you"))):
        announced = set()
    # "I left teaching", "gave up tennis": the change's object is what the older one states.
    # Passive, what is changed comes first: "Climbing's been replaced by bouldering".
    adjacent = a.subject != "neutral" and any(
        (
            c in ENDING
            and set(b.stems[b.changes[c] + 1 : b.changes[c] + len(c.split()) + 3]) & shared_b
        )
        or (
            passive(b, b.changes[c])
            and set(b.stems[max(0, b.changes[c] - 4) : b.changes[c]]) & shared_b
        )
        for c in strong & (ENDING | _TRANSITIVE)
    )
    # "I've been making overnight oats lately": a habit told, not a change (the present
    # restated with another value is judged below, as a swap).
    announced -= {"lately"}
    if a.tentative:
        announced &= CANCELS
    if (
        announced
        and same_attribute
        and (overlap >= _MIN_OVERLAP or not shared or named_change or adjacent)
    ):
        what = ", ".join(sorted(announced))
        return make("superseded", 0.5 + 0.5 * similarity, f"newer statement says '{what}'")
    if a.tentative:
        return None
    if status_change:
        return make("changed_value", 0.5 + 0.5 * similarity, "status changed")
    # A partner stated, then a break-up: "I have a boyfriend" / "We broke up".
    if (
        (set(a.words) & _PARTNER or _SEEING.search(" ".join(a.words)))
        and cb.break_up
        and not ca.break_up
        and "self" in subjects
        and "other:pronoun" not in subjects
        and (similarity >= _ABOUT_SIMILARITY or "ex" not in b.words)
    ):
        return make("superseded", 0.5 + 0.5 * similarity, "newer statement ends a relationship")
    # A job stated, then a new one or none: "I work for Deloitte" / "I got hired at ...";
    # studies stated, then ended: "I'm a final-year student" / "I graduated in June".
    if (
        ((a.job_frame and b.job_change and not a.job_change) or (ca.study and cb.study_end))
        and subjects == ("self", "self")
        and not set(a.words) & {"was", "were", "had"}
    ):
        return make("superseded", 0.5 + 0.5 * similarity, "newer statement changes job")
    # "Summer is my favourite time of year" / "I'm more of an autumn fan nowadays": a new
    # liking said as what kind of person one is, the older liking another thing.
    more = MORE_OF.search(" ".join(b.words))
    if (
        more is not None
        and "self" in subjects
        and set(subjects) <= {"self", "neutral"}
        and set(a.words) & _LIKING
        and a.polarity > 0
        and _stem(more.group(1)) not in a.content
        and similarity >= _ABOUT_SIMILARITY
        and (b.changes.keys() & _PRESENT)
    ):
        return make(
            "changed_value",
            0.4 + 0.6 * similarity,
            f"now more of a {more.group(1)} {more.group(2)}",
        )
    # Negation: opposite polarity about the same thing (how often, and since when the newer
    # one holds, aside); a
    # newer statement marked as the present may say it in other words ("I love the city" /
    # "I'm sick of city life these days").
    about_a = only_a - amounts_of(a) - UNIT_STEMS
    about_b = only_b - b.adjunct - amounts_of(b) - UNIT_STEMS
    # "I paint every weekend" / "I haven't painted since ...": how often the older one did it
    # is no other matter ("... don't take the bus on weekends" is an exception, though).
    if not set(b.stems) & _WHEN_STEMS:
        about_a -= _WHEN_STEMS
    reversal = bool((b.changes.keys() - a.changes.keys()) & (_PRESENT | {"anymore"}))
    if (
        a.polarity != b.polarity
        and "neutral" not in subjects  # exhortations, idioms: "never give up!"
        # "I haven't read that yet" / "I read a few of them": about what?
        and not (set(a.words) & VAGUE and set(b.words) & VAGUE and len(shared) < 2)
        # "I'd never taken a class before" / "I've been dancing for a while": until then, or
        # "I haven't performed yet": until now; no state the other side denies.
        and not (a.polarity < 0 and set(a.words) & _UNTIL_THEN)
        and not (b.polarity < 0 and "yet" in b.words)
        # "... haikus, which I've never tried before": new to the speaker, no denial.
        and not (b.polarity < 0 and {"never", "before"} <= set(b.words))
        and shared
        and not (set(a.words) | set(b.words)) & {"other", "else"}  # "no other language"
        # "The offsite is in Porto" / "I've never been to Porto": the offsite is not denied.
        and not thing_apart(a, b)
        and (not about_a or not about_b or (reversal and len(about_a | about_b) <= 3))
        and overlap >= _MIN_OVERLAP
    ):
        return make("negation", 0.4 + 0.6 * similarity, "opposite statements about the same thing")
    # Opposite words about the same thing: "long hair" / "short hair".
    words_b = set(b.words)
    opposite = [
        w for w in a.words if w in ANTONYM_OF and ANTONYM_OF[w] & words_b and w not in words_b
    ]
    if (
        opposite
        and a.polarity == b.polarity
        and "neutral" not in subjects
        and shared
        and overlap >= _MIN_OVERLAP
        and not a.past
    ):
        return make("negation", 0.4 + 0.6 * similarity, f"'{opposite[0]}' and its opposite")
    # Changed value, of a definite subject: "item 3" / "item 4" of a list is no changed fact;
    # nor is what the speaker says of the one addressed ("You included X again").
    # "I respond with Nc6" / "I respond with Bxc3": a turn taken (a move, an answer, a guess),
    # an event told in the present, not a state with a value.
    turns = ca.turns and cb.turns
    if (
        a.polarity == b.polarity
        and "neutral" not in subjects
        and "other:you" not in subjects
        and not turns
    ):
        values = _value_change(a, b)
        if values is not None:
            return make(
                "changed_value",
                0.4 + 0.6 * similarity,
                f"'{' '.join(values[0])}' became '{' '.join(values[1])}'",
            )
        # "I just did the ride today" / "I actually took part in the ride today": an event told
        # twice, not a state with a value.
        slot = None if a.past and not set(a.words) & FUNCTIONAL else _changed_slot(a, b)
        if slot is not None:
            old_value, new_value = slot
            if a.head and a.head in {_stem(w) for w in old_value}:
                return None  # "My favourite colour is blue" / "My car is blue": two subjects
            if set(old_value) <= VAGUE | DETERMINERS or set(new_value) <= VAGUE | DETERMINERS:
                return None  # "make it work" / "make this studio work"
            if set(old_value) <= STOP_WORDS and set(new_value) <= STOP_WORDS:
                return None  # "I could share ..." / "I'll share ...": a modal, a tense
            frame = set(a.words) - set(old_value)
            vague = a.words[0] in VAGUE if a.words else True
            evaluative = any(w in EVALUATIVE for w in [*old_value, *new_value])
            # Not "now" alone: "I'm a teacher" / "I'm a mother now" can both be true.
            single_valued = (is_value(old_value, a.caps) and is_value(new_value, b.caps)) or bool(
                frame & FUNCTIONAL or (frame & COPULA and not vague)
            )
            if single_valued and not evaluative:
                return make(
                    "changed_value",
                    0.4 + 0.6 * similarity,
                    f"'{' '.join(old_value)}' became '{' '.join(new_value)}'",
                )
        swapped = _swapped(a, b, shared, only_a, only_b - b.adjunct, overlap)
        if swapped:
            return make("changed_value", 0.4 + 0.6 * similarity, swapped)
    return None


def _swapped(
    a: Parsed, b: Parsed, shared: set[str], only_a: set[str], only_b: set[str], overlap: float
) -> str:
    """A habit or single-valued frame restated for the present with another value ("I drink
    coffee every morning" / "These days I only drink green tea"), the words reordered as
    they may be ("Summer is my favourite season" / "Autumn has become my favourite season");
    the reason, or "" if it is not."""
    marked = (b.changes.keys() - a.changes.keys()) & _PRESENT
    if not marked or a.past or not shared or overlap < _SWAP_OVERLAP:
        return ""
    if other_kind(a, b, shared):
        return ""
    if not (0 < len(only_a) <= 3 and 0 < len(only_b) <= 3):
        return ""
    # The frame is on both sides: "My favourite band is Muse" / "Muse's album is out now".
    frame = set(a.words) & set(b.words) & FUNCTIONAL
    if (only_a | only_b) & _FUNCTIONAL_STEMS:
        return ""
    if any(w in EVALUATIVE for w in a.words + b.words if (w in a.words) != (w in b.words)):
        return ""
    exclusive = set(a.words) & _EXCLUSIVE or set(b.words) & (_EXCLUSIVE | {"all"})
    copula = bool(set(a.words) & COPULA and set(b.words) & COPULA)
    # "I use Firefox as my browser" / "Chrome is my browser now": one's own one of a kind.
    mine = bool(my_heads(a) & my_heads(b) & shared)
    # "Breakfast is eggs on toast for me now": the speaker's choice of the one.
    chosen = bool(set(b.words) & COPULA) and " for me " in f" {' '.join(b.words)} "
    if not (frame or exclusive or copula or mine or chosen):
        return ""
    return f"'{' '.join(sorted(only_a))}' became '{' '.join(sorted(only_b))}' ({', '.join(sorted(marked))})"


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
    pa, pb, pr = parse(a), parse(b), parse(reply)
    reply_words = set(pr.stems) | set(pr.words)
    shared = fuzzy_shared(pa.content, pb.content)
    stems_a = set(pa.stems) - STOP_STEMS
    stems_b = set(pb.stems) - STOP_STEMS
    distinct_a, distinct_b = stems_a - stems_b, stems_b - stems_a
    # A value (a name, a number, a date) tells the sides apart better than a frame word.
    values_a = {_stem(w) for w in pa.words if is_value([w], pa.caps)}
    values_b = {_stem(w) for w in pb.words if is_value([w], pb.caps)}
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
