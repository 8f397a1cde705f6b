"""How the tension detector compares two parsed statements (see
:mod:`engrammar.recall.tensions`): shared words, subjects, what a change is done to."""

from __future__ import annotations

from functools import lru_cache

from .tension_parse import DETERMINERS_ALL, Parsed
from .tension_words import ANCHOR, GENERAL, RELATIONS, SPECIFIC, SYNONYM
from .text import stem as _stem


def _agent(stem: str) -> str:
    """The verb of an agent noun: "eater" -> "eat", "runner" -> "run"; "" if it is none."""
    if len(stem) < 5 or not stem.endswith("er"):
        return ""
    base = stem[:-2]
    return base[:-1] if len(base) > 3 and base[-1] == base[-2] else base


@lru_cache(maxsize=65536)
def _fuzzy_index(b: frozenset[str]) -> frozenset[tuple[str, object]]:
    """The keys a term of another set matches ``b`` by (see ``_fuzzy_keys``): its terms,
    their 5-letter prefixes, synonym groups, general kinds (``g``), general and specific kinds
    (``k``), and the verbs of its agent nouns ("a big meat eater" / "ate meat")."""
    keys: set[tuple[str, object]] = set()
    for y in b:
        keys.add(("=", y))
        if len(y) >= 5:
            keys.add(("<", y[:5]))
        if y in SYNONYM:
            keys.add(("s", SYNONYM[y]))
        if y in GENERAL:
            keys.add(("g", GENERAL[y]))
            keys.add(("k", GENERAL[y]))
        if y in SPECIFIC:
            keys.add(("k", SPECIFIC[y]))
        agent = _agent(y)
        if agent:
            keys.add(("a", agent))
    return frozenset(keys)


@lru_cache(maxsize=65536)
def _fuzzy_keys(x: str) -> frozenset[tuple[str, object]]:
    """The keys by which term ``x`` is found in a set's ``_fuzzy_index``: itself, its prefix,
    its synonym group, its general kind among any kinds, its specific kind among general
    ones, itself as an agent noun's verb, and the verb of ``x`` as an agent noun."""
    keys: set[tuple[str, object]] = {("=", x), ("a", x)}
    if len(x) >= 5:
        keys.add(("<", x[:5]))
    if x in SYNONYM:
        keys.add(("s", SYNONYM[x]))
    if x in GENERAL:
        keys.add(("k", GENERAL[x]))
    if x in SPECIFIC:
        keys.add(("g", SPECIFIC[x]))
    agent = _agent(x)
    if agent:
        keys.add(("=", agent))
    return frozenset(keys)


def fuzzy_shared(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> set[str]:
    """Terms of ``a`` found in ``b``, counting stems with a common 5-letter prefix as one
    ("teacher" / "teaching"), synonyms, a kind and its instances, and an agent noun and its
    verb as one."""
    if not a or not b:
        return set()
    index = _fuzzy_index(b if isinstance(b, frozenset) else frozenset(b))
    return {x for x in a if not _fuzzy_keys(x).isdisjoint(index)}


def subjects_agree(a: str, b: str) -> bool:
    """Whether two subjects may be the same: ``self`` is never ``other:*``, two different
    ``other:*`` or ``thing:*`` are different; ``neutral`` agrees with anything."""
    if a == b or "neutral" in (a, b):
        return True
    kind_a, kind_b = a.split(":", 1)[0], b.split(":", 1)[0]
    if kind_a == kind_b:
        return False  # other:x vs other:y, thing:x vs thing:y
    return {kind_a, kind_b} != {"self", "other"}


def modifier_of(p: Parsed, stem: str) -> str:
    """The content word right before ``stem`` ("work" in "my work email"), if any."""
    for i, s in enumerate(p.stems):
        if s == stem or (len(stem) >= 5 and s[:5] == stem[:5]):
            prev = p.stems[i - 1] if i else ""
            return prev if prev in p.content and prev not in p.values else ""
    return ""


def actor_of(p: Parsed, at: int) -> str:
    """The personal pronoun nearest before word ``at`` (who the change happens to), if any."""
    for w in reversed(p.words[max(0, at - ANCHOR) : at]):
        if w in ("i", "we", "you", "he", "she", "they"):
            return w
    return ""


def amounts_of(p: Parsed) -> set[str]:
    """The numbers and dates of a statement (stems)."""
    return {k for k, (t, _) in p.values.items() if t in ("number", "date")}


def object_of(
    p: Parsed, change: str, skip: frozenset[str] = frozenset(), size: int = 1
) -> set[str]:
    """The stems of the content words right after an announced change ("switched managers",
    up to ``size`` of them: "my gym membership"), or {""} if a function word or nothing
    follows ("passed away in October"); words in ``skip`` (determiners) are passed over."""
    at = p.changes[change] + len(change.split())
    while at < len(p.words) and p.words[at] in skip:
        at += 1
    out: set[str] = set()
    while at < len(p.words) and len(out) < size and p.stems[at] in p.content:
        out.add(p.stems[at])
        at += 1
    return out or {""}


_POSSESSIVE = frozenset("my our his her their".split())
# Changes that put one thing in another's place.
SUBSTITUTES = frozenset("switched changed swapped replaced upgraded traded".split())


def object_phrase(p: Parsed, change: str) -> list[str]:
    """The content stems right after a change, determiners and "from" passed over, up to three:
    "switched from guitar lessons on zoom" -> ["guitar", "lesson"]; none for "switched to ..."
    (what follows is the new value)."""
    at = p.changes[change] + len(change.split())
    while at < len(p.words) and p.words[at] in DETERMINERS_ALL | {"from"}:
        at += 1
    out: list[str] = []
    while at < len(p.words) and len(out) < 3 and p.stems[at] in p.content:
        out.append(p.stems[at])
        at += 1
    return out


def affects(p: Parsed, change: str, content: set[str]) -> bool:
    """Whether ``change`` is done to what ``content`` is about: False only when its object
    (the first two content words past determiners) is not among ``content`` and what is
    follows as a possession the object is part of ("I replaced the tyres on my Brompton");
    "I sold the flat in Brooklyn" names no part."""
    # "switched from guitar lessons to ...", "switched my gym day": the head of the object
    # ("lessons", "day") is what changes; "guitar" / "gym" only say which.
    phrase = object_phrase(p, change) if change in SUBSTITUTES else []
    if len(phrase) > 1 and not fuzzy_shared({phrase[-1]}, content):
        return False
    obj = object_of(p, change, DETERMINERS_ALL, 2) - {""}
    if not obj or fuzzy_shared(obj, content):
        return True
    at = p.changes[change]
    whole = [
        i
        for i, s in enumerate(p.stems)
        if i > at + 1 and s in content and s not in obj and p.words[i - 1] in _POSSESSIVE
    ]
    return not whole


def owned(p: Parsed) -> bool:
    """Whether a name opening the statement is the value of the speaker's attribute: "Autumn
    has become my favourite season", "Sarah is my best friend now"."""
    return (
        p.subject.startswith("other:")
        and p.subject[6:] == p.words[0]
        and p.subject[6:] not in RELATIONS
        and bool(set(p.words[1:4]) & {"is", "has", "become", "became"})
        and bool(set(p.words) & {"my", "our"})
    )


def mentions(subject: str, other: Parsed) -> bool:
    """Whether ``other`` names the ``other:<who>`` subject (a name, not "my sister")."""
    if not subject.startswith("other:"):
        return False
    who = subject[6:]
    if who in ("pronoun", "you") or who in RELATIONS:
        return False
    return who in other.caps or _stem(who) in other.content


def left_values(p: Parsed) -> set[str]:
    """The value keys a statement says a thing went from: "from 140 to 155" -> {"140"}."""
    out = set()
    for i, w in enumerate(p.words[:-2]):
        if w == "from" and "to" in p.words[i + 2 : i + 5]:
            key = _stem(p.words[i + 1])
            if key in p.values and p.values[key][0] in ("number", "date"):
                out.add(key)
    return out


def other_kind(a: Parsed, b: Parsed, shared: set[str]) -> bool:
    """Whether the statements give values of two kinds of a thing: "Our mortgage rate is 1.9
    percent" / "Our savings rate is 4.5 percent now" (the shared word's modifier differs and
    both sides have a value of their own)."""
    if not a.values or not b.values:
        return False
    for t in shared:
        ma, mb = modifier_of(a, t), modifier_of(b, t)
        if ma and mb and ma != mb:
            return True
    return False


def own_other(b: Parsed, change: str, a: Parsed) -> bool:
    """Whether ``change`` is done to a possession ("my ...") the older statement ``a`` does not
    name."""
    at = b.changes[change] + len(change.split())
    if b.words[at : at + 1] not in (["my"], ["our"]):
        return False
    phrase = object_phrase(b, change)
    return bool(phrase) and not fuzzy_shared(set(phrase), a.content)


def contacts(p: Parsed) -> set[str]:
    return {w for t, w in p.values.values() if t == "contact"}


def thing_apart(a: Parsed, b: Parsed) -> bool:
    """Whether one statement is about a thing the other one, the speaker's, does not name."""
    for x, y in ((a, b), (b, a)):
        if x.subject.startswith("thing:") and y.subject == "self":
            return not fuzzy_shared({x.subject[6:]}, y.content)
    return False


def passive(p: Parsed, at: int) -> bool:
    """Whether the change at word ``at`` is passive ("Climbing's been replaced by ...", "the
    trip got cancelled"): what it is done to comes before it."""
    return at > 0 and p.words[at - 1] in {"been", "was", "were", "got", "is", "are", "be"}


def my_heads(p: Parsed) -> set[str]:
    """The stems right after "my" / "our" ("my browser" -> {"browser"})."""
    return {p.stems[i + 1] for i, w in enumerate(p.words[:-1]) if w in ("my", "our")}


def toward(p: Parsed, change: str, names: set[str]) -> bool:
    """Whether ``change`` goes to or into a name of ``names`` ("migrated my documents into
    Evernote"): a move towards what the other statement already names."""
    at = p.changes[change] + len(change.split())
    for i in range(at, min(len(p.words) - 1, at + 8)):
        if p.words[i] in ("to", "into"):
            at = i + 1 + (p.words[i + 1] in DETERMINERS_ALL)
            # the whole name: "to a Galaxy S23" is not "Galaxy S7"
            name = []
            while at < len(p.words) and (
                p.words[at] in p.caps or any(c.isdigit() for c in p.words[at])
            ):
                name.append(p.words[at])
                at += 1
            return bool(name) and set(name) <= names
    return False


_AMOUNT_CHANGES = frozenset("went up|gone up|went down|gone down".split("|"))


def amount_of_other(p: Parsed, change: str, shared: set[str]) -> bool:
    """Whether an amount going up or down is of a thing not shared: the content word before
    the change ("the car park charges went up"), past "has", "have" and the like."""
    if change not in _AMOUNT_CHANGES:
        return False
    at = p.changes[change] - 1
    while at >= 0 and p.words[at] in ("has", "have", "had", "'s", "just", "all", "again"):
        at -= 1
    return at >= 0 and p.stems[at] in p.content and p.stems[at] not in shared


def common(p: Parsed, other: Parsed) -> str:
    """``p``'s subject, a capitalised first word taken for a name made a thing when ``other``
    writes it in lower case ("Barbecue's been rained off" / "We're having a barbecue")."""
    who = p.subject[6:] if p.subject.startswith("other:") else ""
    if who and who not in RELATIONS and who not in other.caps and who in other.words:
        return f"thing:{_stem(who)}"
    return p.subject
