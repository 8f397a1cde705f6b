"""The sentence-pair pre-filter of the tension rules (``recall.tension_cues.may_tell``) spares
work only: every verdict is the one the rules give without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engrammar.recall import tension_cues, tensions
from engrammar.recall.tensions import Statement, detect_tension

ROOT = Path(__file__).resolve().parent.parent
SETS = [
    ROOT / "tests" / "data" / "tensions.jsonl",
    ROOT / "tests" / "data" / "tensions_holdout.jsonl",
    ROOT / "bench" / "data" / "tensions_pairs.jsonl",
]


def _texts() -> list[tuple[str, str]]:
    rows = []
    for path in SETS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows.append((str(row["older"]), str(row["newer"])))
    return rows


def _verdicts(pairs: list[tuple[str, str]]) -> list[str | None]:
    out = []
    for older, newer in pairs:
        for sim in (0.35, 0.7):
            for a, b in ((older, newer), (newer, older)):
                found = detect_tension(
                    Statement("a", a, 1.0, "u"), Statement("b", b, 2.0, "u"), sim, 0.3
                )
                out.append(None if found is None else repr(found))
    return out


def test_the_pre_filter_changes_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _texts()
    assert len(rows) > 1000
    # The labelled pairs, and each older statement beside the newer one of its neighbours
    # (mostly no tension: what the pre-filter is for).
    pairs = rows + [
        (rows[i][0], rows[(i + k) % len(rows)][1]) for i in range(len(rows)) for k in (1, 7)
    ]
    skipped = 0
    real = tension_cues.may_tell

    def counting(*args: object) -> bool:
        nonlocal skipped
        told = real(*args)  # type: ignore[arg-type]
        skipped += not told
        return told

    monkeypatch.setattr(tensions, "may_tell", counting)
    with_filter = _verdicts(pairs)
    monkeypatch.setattr(tensions, "may_tell", lambda *args: True)
    without = _verdicts(pairs)
    assert with_filter == without
    assert sum(v is not None for v in without) > 500
    assert skipped > 500  # the filter does spare work


def test_cues_of_a_sentence() -> None:
    c = tension_cues.cues("We broke up last month and I'm more of a cat person now.")
    assert c.break_up and c.more_of and "now" in c.changes
    assert not tension_cues.cues("I love long walks.").break_up
    assert tension_cues.cues("I graduated in June.").study_end
    assert tension_cues.cues("I have long hair.").antonyms == ("long",)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Still single.", "Widowed, sadly."),  # a status on both sides
        ("Tea is great.", "Honestly more of a dog person."),  # "more of a ... person"
        ("Reach me at sam@example.com.", "My email is kim@example.org."),  # contacts
        ("I walk to work.", "Walking is no longer an option."),  # an announced change
        ("The flat is quiet.", "The flat is not quiet."),  # opposite polarity, shared words
        ("Dogs are great.", "Cats are great."),  # same polarity, a definite subject
    ],
)
def test_each_cue_keeps_a_pair_for_the_rules(older: str, newer: str) -> None:
    a, b = tensions.parse(older), tensions.parse(newer)
    subjects = ("neutral", "neutral") if "Dogs" not in older else ("thing:dog", "thing:dog")
    assert tension_cues.may_tell(older, newer, a, b, subjects)


def test_a_pair_with_no_cue_is_spared() -> None:
    older, newer = "The weather is nice.", "Pizza tastes good."
    a, b = tensions.parse(older), tensions.parse(newer)
    assert not tension_cues.may_tell(older, newer, a, b, ("neutral", "neutral"))


def test_fuzzy_shared_matches_by_every_kind_of_key() -> None:
    from engrammar.recall.tension_compare import fuzzy_shared
    from engrammar.recall.text import stem

    def shared(a: str, b: str) -> set[str]:
        return fuzzy_shared({stem(w) for w in a.split()}, {stem(w) for w in b.split()})

    assert shared("teacher", "teaching") == {stem("teacher")}  # a 5-letter prefix
    assert shared("doctor", "physician") == {stem("doctor")}  # a synonym
    assert shared("wine", "alcohol") == {stem("wine")}  # an instance of a kind
    assert shared("alcohol", "wine") == {stem("alcohol")}  # the kind of an instance
    assert shared("eater", "eat") == {stem("eater")}  # an agent noun and its verb
    assert shared("eat", "eater") == {stem("eat")}
    assert shared("wine", "coffee") == set()  # two kinds
    assert shared("tea", "") == set()
