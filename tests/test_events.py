"""Questions that name several events: each event's best memory early in the list.

Pure functions (``recall.events``), plus recall through the public API with the real model.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backends import open_memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.recall.events import cover_events, event_terms
from engrammar.recall.text import terms


def _stems(text: str) -> frozenset[str]:
    return frozenset(terms(text))


@pytest.mark.parametrize(
    ("question", "events"),
    [
        (
            "Which event happened first, the purchase of the coffee maker or the malfunction "
            "of the stand mixer?",
            ["purchase coffee maker", "malfunction stand mixer"],
        ),
        (
            "How many days passed between the day I fixed my mountain bike and the day I "
            "decided to upgrade my road bike's pedals?",
            ["fixed mountain", "decided upgrade road pedals"],
        ),
        (
            "How many days had passed since I started taking ukulele lessons when I took my "
            "acoustic guitar to the guitar tech?",
            ["started taking ukulele lessons", "took acoustic guitar tech"],
        ),
        (
            "How many days before I bought the iPhone 13 Pro did I attend the Holiday Market?",
            ["bought iPhone 13 Pro", "attend Holiday Market"],
        ),
        (
            "Who graduated first, second and third among Emma, Rachel and Alex?",
            ["emma", "rachel", "alex"],
        ),
        ("Which mode of transport did I use most recently, a bus or a train?", ["bus", "train"]),
        (
            "How much did I spend on the flights and the hotel combined?",
            ["spend flights", "hotel"],
        ),
        (
            "In what order did these happen: the move to Denver, the new job, and the wedding?",
            ["move denver", "new job", "wedding"],
        ),
    ],
)
def test_event_terms_reads_each_event_by_its_own_words(question: str, events: list[str]) -> None:
    assert event_terms(question) == [_stems(e) for e in events]


@pytest.mark.parametrize(
    "question",
    [
        "When did Caroline go to the LGBTQ support group?",
        "What did I buy two weeks ago?",
        "How many days ago did I attend a networking event?",
        "Would Melanie like a trip to Paris or London?",  # no comma: not a list of events
        # "or" in what is asked, not a choice between events
        "Considering all this, what advice would you give for a move or a new job?",
        # dates, not events: the time boost reads them
        "Where was John between August 11 and August 15, 2023?",
        # a pasted text is no question about events (and is not tried "and" by "and")
        "Between you and me, " + "this and that and " * 2000 + "the rest combined?",
        # the second part names nothing the first does not
        "How long had I been bird watching when I attended the bird watching class?",
        "",
    ],
)
def test_event_terms_needs_two_events(question: str) -> None:
    assert event_terms(question) == []


TEXTS = {
    "a1": "I bought a coffee maker three weeks ago and use it every morning.",
    "a2": "Any cleaning tips for my coffee maker? I bought it recently.",
    "x": "I'm planning a dinner party for Saturday.",
    "a3": "Do coffee makers go on sale in May?",
    "b1": "My stand mixer broke and went to the repair shop last month.",
    "y": "What dessert needs no mixer?",
}
EVENTS = [_stems("bought coffee maker"), _stems("stand mixer broke")]


def test_cover_events_lifts_the_missing_event_to_the_first_repeat() -> None:
    ids = ["a1", "a2", "x", "a3", "b1", "y"]
    # a1 names the first event; a2 would repeat it: b1, the second event's best, goes first.
    assert cover_events(ids, TEXTS, EVENTS, depth=20) == ["a1", "b1", "a2", "x", "a3", "y"]
    # Past the depth nothing is looked for; too short a list, or no events, is left alone.
    assert cover_events(ids, TEXTS, EVENTS, depth=4) == ids
    assert cover_events(ids[:1], TEXTS, EVENTS, depth=20) == ids[:1]
    assert cover_events(ids, TEXTS, [], depth=20) == ids
    # The first memory keeps its place; after it, a memory naming no event is a repeat too.
    assert cover_events(["x", "y", "b1", "a1"], TEXTS, EVENTS, depth=20) == ["x", "b1", "a1", "y"]


def test_cover_events_keeps_a_list_that_covers_every_event() -> None:
    ids = ["b1", "a1", "a2", "x"]
    assert cover_events(ids, TEXTS, EVENTS, depth=20) == ids


def test_cover_events_needs_the_whole_event_named() -> None:
    # "mixer" alone (y) is a third of the second event: not its best memory at share 1.0.
    ids = ["a1", "a2", "x", "y"]
    assert cover_events(ids, TEXTS, EVENTS, depth=20) == ids
    assert cover_events(ids, TEXTS, EVENTS, depth=20, share=0.3) == ["a1", "y", "a2", "x"]


def test_cover_events_puts_an_events_telling_before_what_follows_it() -> None:
    """The mixer's conversation: told first (m1), talked about after (m2, m3). When a later
    message of that conversation leads for the event, the telling goes right before it; in
    another conversation (b1) or without places, nothing changes."""
    texts = {
        **TEXTS,
        "m1": "Any cake recipes without a mixer? My stand mixer broke down again today.",
        "m2": "Since my stand mixer broke, can I whisk egg whites by hand?",
        "m3": "How long should I whisk by hand now that the stand mixer broke?",
    }
    said = {"m1": ("mixer", 1), "m2": ("mixer", 3), "m3": ("mixer", 5), "a1": ("coffee", 1)}
    ids = ["a1", "m2", "x", "m3", "m1", "y"]
    assert cover_events(ids, texts, EVENTS, depth=20, said=said) == [
        "a1", "m1", "m2", "x", "m3", "y",
    ]  # fmt: skip
    assert cover_events(ids, texts, EVENTS, depth=20) == ids
    other = {**said, "m1": ("another chat", 1)}
    assert cover_events(ids, texts, EVENTS, depth=20, said=other) == ids
    # A telling that names less than the message after it does not stand for it.
    partial = {**texts, "m1": "My mixer is acting up."}
    assert cover_events(ids, partial, EVENTS, depth=20, said=said) == ids


def _ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


@pytest.mark.every_store
@pytest.mark.parametrize("on", [True, False])
def test_recall_puts_both_events_of_a_question_first(
    location: str, minilm: MiniLMEmbedder, on: bool
) -> None:
    # Three short messages about the coffee maker match the question better than the long
    # one that tells of the mixer: by likeness alone the first two places go to the former.
    question = (
        "Which came first, buying the new coffee maker at the store or the stand mixer "
        "breaking down?"
    )
    texts = [
        "I'm buying a new coffee maker at the store today.",
        "Which new coffee maker should I buy at the store, drip or espresso?",
        "The store had a sale, so buying the new coffee maker was cheap.",
        "Baking day was a mess: flour everywhere, the oven slow to heat, the dog begging for "
        "scraps, the kids fighting, and my stand mixer breaking down halfway through the "
        "bread dough, so I kneaded it by hand for twenty minutes.",
    ]
    with open_memory(location, minilm, event_cover=on) as mem:
        for day, text in enumerate(texts, start=1):
            mem.add([{"role": "user", "content": text}], user_id="u", timestamp=_ts(2023, 5, day))
        top = mem.recall(question, user_id="u", limit=2).memories
    assert "coffee maker" in top[0].memory.content
    if on:
        assert "mixer" in top[1].memory.content
        assert top[1].components["event"] == 1.0
    else:
        assert "coffee maker" in top[1].memory.content


@pytest.mark.every_store
def test_recall_takes_the_telling_of_an_event_before_its_follow_ups(
    location: str, minilm: MiniLMEmbedder
) -> None:
    """One chat tells of the mixer breaking, then asks about it twice in its words; another
    tells of the coffee maker. The telling comes before the chat's follow-ups: it is where
    the event was said to happen."""
    question = "Which happened first, buying the coffee maker or the stand mixer breaking down?"
    mixer_chat = [
        {"role": "user", "content": "Any cake ideas? My stand mixer was breaking down today."},
        {"role": "assistant", "content": "Sorry to hear that. Try a whisked sponge."},
        {"role": "user", "content": "My stand mixer breaking down means whisking by hand?"},
        {"role": "assistant", "content": "Yes, a balloon whisk works."},
        {"role": "user", "content": "How long to whisk with the stand mixer breaking down?"},
    ]
    with open_memory(location, minilm) as mem:
        told, _, first_after, _, second_after = mem.add(
            mixer_chat, user_id="u", session_id="mixer", timestamp=_ts(2023, 5, 2)
        )
        mem.add(
            [{"role": "user", "content": "I bought a coffee maker at the store today."}],
            user_id="u",
            session_id="coffee",
            timestamp=_ts(2023, 5, 9),
        )
        ranked = [m.id for m in mem.recall(question, user_id="u", limit=10).memories]
    assert ranked.index(told) < min(ranked.index(first_after), ranked.index(second_after))


_JAPAN_CHAT = [
    {
        "role": "user",
        "content": "I'm planning a trip to Japan in May and I'd love eco-friendly hotels in "
        "Tokyo and Osaka. By the way, I just got back from a bus ride to my friend's wedding "
        "today, so I'm a bit tired.",
    },
    {"role": "assistant", "content": "Congratulations to your friend! Here are some hotels."},
    {
        "role": "user",
        "content": "Is the airport bus the best mode of transport to use from Narita?",
    },
]
# Other chats whose words are nearer the question than the telling's are.
_TRANSPORT_TALK = [
    "Which mode of transport is greener for a commute, cycling or the train?",
    "What is the most recent high-speed train line opened in Europe?",
    "Do trains or planes use less fuel per passenger on short trips?",
    "Which mode of transport is cheapest across Europe for students?",
    "How do I use a rail pass on regional trains in Italy?",
    "What's the most relaxing mode of transport for a long trip?",
    "Should I take the train or fly from Paris to Berlin?",
    "Which is safer, a train or a car, per mile travelled?",
    "Is a sleeper train more comfortable than a night flight?",
    "What transport should I use to reach the Swiss Alps?",
    "Are electric trains quieter than diesel ones?",
    "Which transport apps do you use most in London?",
] + [
    f"Which mode of transport do people use most in {city}?"
    for city in (
        *("Rome", "Madrid", "Lisbon", "Vienna", "Prague", "Oslo", "Dublin", "Athens"),
        *("Warsaw", "Zurich", "Helsinki", "Budapest", "Brussels", "Munich", "Seoul", "Lyon"),
    )
]


@pytest.mark.every_store
def test_recall_brings_in_the_telling_search_left_out(
    location: str, minilm: MiniLMEmbedder
) -> None:
    """The bus ride is told in passing in a message about hotels in Japan, below the first
    20 of the list; a later message of the same chat names the bus. The telling comes into
    the list, before that message, marked ``told``; with ``event_cover`` off it stays out."""
    question = "Which mode of transport did I use most recently, a bus or a train?"

    def fill(mem, user: str) -> str:  # type: ignore[no-untyped-def]
        told, _, _ = mem.add(
            _JAPAN_CHAT, user_id=user, session_id="japan", timestamp=_ts(2023, 5, 2)
        )
        mem.add(
            [{"role": "user", "content": "I took a train ride to visit my family today."}],
            user_id=user,
            session_id="family",
            timestamp=_ts(2023, 4, 15),
        )
        for day, text in enumerate(_TRANSPORT_TALK, start=1):
            mem.add(
                [{"role": "user", "content": text}],
                user_id=user,
                session_id=f"talk{day}",
                timestamp=_ts(2023, 3, day),
            )
        return told

    with open_memory(location, minilm, event_cover=False) as mem:
        told = fill(mem, "off")
        plain = [m.id for m in mem.recall(question, user_id="off", limit=20).memories]
    assert told not in plain
    with open_memory(location, minilm) as mem:
        told = fill(mem, "on")
        shown = mem.recall(question, user_id="on", limit=10).memories
    ranked = [m.id for m in shown]
    assert told in ranked
    later = next(m.id for m in shown if "Narita" in m.content)
    assert ranked.index(told) < ranked.index(later)
    assert shown[ranked.index(told)].components["told"] == 1.0
    assert shown[ranked.index(told)].via == "graph"
