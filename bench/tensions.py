"""Facts that change: tension detection and supersession in ranking, on a labelled set.

    python bench/tensions.py [--locomo-conversations 2]

Data: bench/data/tensions_pairs.jsonl, (older, newer) statement pairs written for this
project over 17 topics, labelled contradiction or not; a fixed third (``split`` = heldout) is
kept out of tuning. Each contradiction has a present-tense ``question`` and most a
``past_question``. Writes bench/results/tensions.md and tensions.json.

Measured, on tune and heldout separately, with the real default model:

* detection: precision and recall of ``recall.tensions.detect_tension`` on the pairs (the
  older statement first); also on the earlier sets tests/data/tensions*.jsonl;
* newer-first: each contradiction is stored in its own scope among six unrelated messages,
  either in one ``add`` call (older first) or in two calls a month apart; the present question
  must rank the newer statement above the older;
* past-first: the past question must rank the older statement above the newer;
* direction: the tension recall reports names the newer statement as ``newer``;
* chat false alarms: pairs of LoCoMo turns of one speaker (the first N conversations) the
  detector flags, per 1,000 turns, with examples (most are real chat, not contradictions);
* with ``--lme-store PATH`` (an engrammar SQLite store of LongMemEval, one question a
  ``user_id``): every pair of user messages of a question scope with cosine >= the gate,
  judged in time order, flagged pairs per 1,000 user turns (user <-> assistant chat, where
  requests and plans are not statements of fact). ``--lme-show N`` prints N flagged pairs to
  the terminal for reading by hand; the result files get ids and counts only.

Embeddings are cached outside the repository (bench/_embcache.py).
"""

from __future__ import annotations

import argparse
import inspect
import json
import shlex
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_DATA, RESULTS, ROOT, load_locomo, locomo_turns, machine
from _embcache import DiskCachedEmbedder
from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder
from engrammar.recall.tensions import Statement, detect_tension

DATA = ROOT / "bench" / "data" / "tensions_pairs.jsonl"
OLD_SETS = [
    ROOT / "tests" / "data" / "tensions.jsonl",
    ROOT / "tests" / "data" / "tensions_holdout.jsonl",
]
SPLITS = ("tune", "heldout")
MIN_SIMILARITY = Config().tension_min_similarity
FILLER = [
    "I had a long day, the meeting ran over.",
    "Can you recommend a good podcast about history?",
    "The weather has been grey all week.",
    "I tried a new pasta recipe with lemon and garlic.",
    "My laptop battery drains really fast.",
    "I watched a documentary about octopuses last night.",
]
# Worktrees sit one level deeper than the main checkout.
LOCOMO = next(
    (
        p
        for p in (DEFAULT_DATA, ROOT.parents[1] / "shared" / "data" / "locomo10.json")
        if p.is_file()
    ),
    DEFAULT_DATA,
)
DAY = 86400.0
# What changed, and the figures before and after, by session (kept with the report).
HISTORY = """
## History

### six more batches, and what fires in LongMemEval scopes 20-39

Before: main at 80c63f8 (a clean `git archive` of its `src`); after: branch tens10. Both on the
same data (the labelled set as it now is, 1,119 pairs) with the command at the top (before:
`PYTHONPATH=<80c63f8>/src python bench/tensions.py --no-locomo --out /tmp/...`, the same
script; its LoCoMo and LongMemEval figures are the earlier ones above, unchanged code).

Tune grew from 809 to 1,059 pairs: 250 written in an earlier run in six batches (field `batch`,
s10b1-s10b6; 156 contradictions, 94 look-alikes, every topic of the set in each batch), in
wordings the set did not have: "a thing of the past", "X-free", "I'm so over X", "isn't going
ahead", "scratch that", "went from 140 to 155", "they've moved me to the 19th", "X is my
browser now", present restatements ("Breakfast is eggs on toast for me now", "I'm more of an
autumn fan nowadays"), "called it a day", "haven't spoken since", "it's been a year since I
last ate meat", "the vet says our dog is down to 26 kilos", "rained off", "gone to their
forever homes", and look-alikes beside each ("my mate got laid off", "I switched my
dissertation topic to the Tudors", "our savings rate is 4.5 percent now", "I migrated my old
Word documents into Evernote", "the car park charges went up"). Each batch was measured before
any rule was written for it; batches 1-2 on main, batches 3-6 each with the rules of the
batches before it (first look; main on the same batch beside it; the last column is the final
code, fitted to all of them):

| batch | pairs (contradictions) | first look recall / precision | main on the batch | after an earlier run |
|---|---|---|---|---|
| s10b1 | 42 (26) | 0.538 / 0.933 (main) | 0.538 / 0.933 | 0.846 / 1.0 |
| s10b2 | 40 (26) | 0.500 / 0.929 (main) | 0.500 / 0.929 | 0.769 / 1.0 |
| s10b3 | 42 (26) | 0.385 / 0.769 (batch 1-2 rules) | 0.385 / 0.769 | 0.577 / 0.938 |
| s10b4 | 42 (26) | 0.538 / 1.0 (batch 1-3 rules) | 0.538 / 1.0 | 0.808 / 1.0 |
| s10b5 | 42 (26) | 0.538 / 0.824 (batch 1-4 rules) | 0.538 / 0.824 | 0.769 / 1.0 |
| s10b6 | 42 (26) | 0.462 / 1.0 (batch 1-5 rules) | 0.462 / 1.0 | 0.692 / 1.0 |

The first looks of batches 3-6 equal main's on the same batch: the rules written for earlier
batches found no contradiction of a later batch that main missed, nor lost one. That is the
honest estimate of what word rules add on wordings not yet seen: about nothing per batch; a
new batch's recall on first look stays 0.46-0.54. Held-out gained one pair.

| set | figure | before (main) | after |
|---|---|---|---|
| heldout (60 pairs, 34 contradictions; measured, never inspected) | precision / recall | 0.933 / 0.824 | 0.935 / 0.853 |
| heldout | newer-first, one call / two calls | 0.912 / 0.912 | 0.912 / 0.912 |
| heldout | past-first | 0.84 | 0.84 |
| tune (1,059 pairs, 672 contradictions) | precision / recall | 0.973 / 0.746 | 0.987 / 0.807 |
| tune | newer-first, one call / two calls | 0.844 / 0.844 | 0.876 / 0.876 |
| tune | past-first | 0.929 | 0.936 |
| tune, the 809 pairs before an earlier run | precision / recall | 0.986 / 0.822 | 0.986 / 0.826 |
| LoCoMo conversations 1-10 | flagged pairs per 1,000 turns | 2.38 (14) | 2.21 (13) |
| LME dev scopes 0-19 (4,628 user turns) | flagged per 1,000 user turns | 4.32 (20) | 4.32 (20) |
| LME dev scopes 20-39 (4,515 user turns) | flagged per 1,000 user turns | 22.59 (102) | 3.32 (15) |
| LME dev, all 272 scopes (61,164 user turns) | flagged pairs | 642 (10.5 per 1,000) | 389 (6.36 per 1,000) |
| tests/data/tensions*.jsonl | precision / recall | 1.0 / 1.0 | 1.0 / 1.0 |

Held-out was measured seven times in the session, detection only and in aggregate (after the
batch 1-2 rules, after batches 3, 4, 5 and 6, and in the two full runs): 29 of 34 found every
time, 2 false alarms
(0.853 / 0.935, from 0.824 / 0.933); its ranking figures were taken in aggregate twice (the
first full run, after batch 4, and the final run). One slip to note: printing the first lines
of the data file at the start showed one held-out pair (a move between two cities); no rule
was written from it.

What fires in LongMemEval scopes 20-39 (read in the terminal; described, not quoted: the
text is evaluation data): 81 of the 102 were one scope's chess game, the user's moves in the
present tense ("I respond with" a move) read as changed values. A turn in a game or an
exchange (respond, reply, answer, guess on both sides) is an event, not a state with a value:
102 -> 15. Also left alone now: a number of goods sold (a trade, not something given up), a
denial with "never ... before" in the newer message (new to the speaker), a ", so I don't ..."
after a plan (its purpose, no statement), a capitalised change word (a title). What is left there: a change told in
passing about another thing (a flight delayed, a camera sold), a place within a place
(a district in the city named before), pasted prompt templates, a duration restated.

What changed in the detector: change cues "a thing of the past", "not going ahead", "won't
happen", "a no go", "rained off", "cut out" (not "cut out for"), deferred, folded (not "folded
the laundry"), bumping / upping, overtaken, stole, "stepped back from", "didn't renew", "my
last day at", "the last car loan payment", "lost the Fitbit" / "we lost Squeak" (a named thing),
"leaving Glasgow for Inverness", "gone to their forever homes"; "I'm migraine-free" denies
migraines, "it's been a year since I last ate meat" denies eating it now, "I'm so over X",
"gets me down", "lost all interest in", "worst" are stances, "can't get enough of", "obsessed
with" likings; "went from 140 to 155" (the from-value is the older one's), days of the month
("the 19th") as dates, "they moved me / cut me down" happen to the speaker, "X says (that)
I ..." is a statement about the speaker, "Book club meets" / "Council tax went" / "City life
really gets me down" have their subject, a capitalised first word that the other statement
writes in lower case is a thing ("Barbecue's been rained off"), "Breakfast is ... for me now"
is the speaker's choice, "X is my browser now" against "... as my browser" and "more of an
autumn fan nowadays" against an older liking are swaps, an agent noun is its verb ("meat
eater" / "ate meat"), sore / hurt / pain one attribute, fixed / healed against bad / hurt,
remarried a status, "it's over between", "haven't spoken since", "called it a day" end a
couple, "my manager's number" is someone else's, "another time" is not additive. Look-alikes
now left alone: a possession the older statement does not name switched ("I switched my
dissertation topic to the Tudors"), a move into what the older one names ("migrated my
documents into Evernote"), an amount going up of a thing it does not name ("the car park
charges went up"), two kinds of a thing each with its own value ("mortgage rate" / "savings
rate ... now"), a named thing still there with only how it is had not restated ("I use a
Kindle" / "I'm reading a thriller on my Kindle these days"), "my mate got laid off".
`tension_subject.py` (tokens, openers, the subject) was split off `tension_parse.py` and some
helpers moved to `tension_compare.py` to keep every file under 800 lines.

Cost: `bench/tensions_speed.py`, main and this branch alternated twice on the shared machine
(load 10-11): main 406-418 µs a pair, this branch 445-463 µs, about 1.1x (before the cue-word
guards of the last commit; with them, alternated twice at load 6-8: main 363-403 µs, this
branch 409-434 µs, 1.08-1.13x).

Retrieval: the detector feeds ranking only through the supersedes / contradicts edges written
at `add`. LoCoMo: 13 flagged pairs instead of 14 (`python bench/locomo.py --embed-cache --variants default`, a fresh store ingested with this
branch: recall@10 / nDCG@10 0.796 / 0.633, tune 0.801 / 0.644, held-out 0.791 / 0.622; main's
fresh-store figures in an earlier run: 0.796 / 0.633, 0.802 / 0.645, 0.791 / 0.622). LongMemEval: over all 272
scopes' user turns (every pair with cosine >= 0.3, a superset of the pairs ingest checks) the
flagged pairs go from 642 to 389: 261 no longer flagged (237 of them the chess game, which
three questions' haystacks share), 8 newly flagged in 6 scopes (read: one true, a named gadget lost after
the user said they use it; the rest a change told in passing about something else, "after
all" in a retelling, "since I last" of one kind of trip against trips in general), 24 scopes touched in all; LongMemEval retrieval was not re-run (an
ingest of the store on the shared cores did not fit in the session). The tests that cover
newer-first and supersession (test_tensions, test_supersession, test_newer_first,
test_facts_change, test_recall_lme) pass.

Still short: the first looks say the word rules do not carry over to new wordings (0.46-0.54
recall on every new batch); held-out reaches the target by one pair (29 of 34; 28 is 0.824),
so it rests on a small margin. Misses left are world knowledge ("got rid of the landline"
against "my home phone", "car share" against "drive", "a lift to college" against "two buses"),
pairs below the similarity gate, and restatements of a habit with another value and no cue
("I'm renting a one-bed on my own in Leeds" against "a room in a shared house").

### wordings nobody had written, and one call against two

Before: main at 4ee7ce5 (a clean `git archive` of it: main's checkout had moved on while this
ran); after: branch tens9. Both measured on the same data (the labelled set as it now is, 869
pairs) with `python bench/tensions.py --locomo-conversations 10 --lme-store
~/.cache/engrammar-bench/stores/lme_c250/store/engrammar.db --lme-scopes 20` (before:
`PYTHONPATH=<4ee7ce5>/src python bench/tensions.py --no-locomo --out /tmp/...`, the same
script; its LoCoMo and LongMemEval false alarms are the earlier figures above, re-counted
with 4ee7ce5's code: 15 and 21).

Tune grew from 465 to 809 pairs: 344 written in an earlier run in nine batches (field `batch`,
s9b1-s9b9), in wordings the set did not have: lowercase chat without apostrophes ("im", "cant",
"dont"), a fact stated before a question ("I teach chemistry at a high school, any tips ...?"),
a remark after a comma, long messages with the fact in the middle, "ever since", "turns out",
"heads up", "we called off", "switched to", contacts (emails, phone numbers, handles), schedules
("Book club is every second Tuesday"), a look-alike for nearly every change. Each batch was
measured before any rule was written for it; batches 1-2 on main, batch 3 was written before
any rule and measured on main and then once with the batch 1-2 rules, batches 4-9 each with the
rules of the batches before it (first look; main on the same batch beside it; the last
column is the final code, fitted to all of them):

| batch | pairs (contradictions) | first look recall / precision | main on the batch | after an earlier run |
|---|---|---|---|---|
| s9b1 | 42 (26) | 0.269 / 0.70 (main) | 0.269 / 0.70 | 0.654 / 1.0 |
| s9b2 | 42 (26) | 0.115 / 0.75 (main) | 0.115 / 0.75 | 0.654 / 1.0 |
| s9b3 | 42 (26) | 0.423 / 0.917 (batch 1-2 rules) | 0.346 / 1.0 | 0.769 / 1.0 |
| s9b4 | 42 (26) | 0.385 / 1.0 (batch 1-2 rules) | 0.385 / 1.0 | 0.538 / 1.0 |
| s9b5 | 42 (26) | 0.500 / 0.867 (batch 1-4 rules) | 0.385 / 0.833 | 0.731 / 0.95 |
| s9b6 | 42 (26) | 0.731 / 0.95 (batch 1-5 rules) | 0.500 / 0.929 | 0.846 / 1.0 |
| s9b7 | 34 (22) | 0.545 / 0.923 (batch 1-6 rules) | 0.500 / 0.917 | 0.682 / 0.938 |
| s9b8 | 30 (20) | 0.650 / 0.867 (batch 1-7 rules) | 0.550 / 0.846 | 0.850 / 0.944 |
| s9b9 | 28 (18) | 0.667 / 1.0 (batch 1-8 rules) | 0.389 / 1.0 | 0.722 / 1.0 |

The first looks of batches 5-9 against main on the same batch (recall +0.12, +0.23, +0.05,
+0.10, +0.28) are the honest estimate of what the rules add on wordings not yet seen; the last
column is fitted.

| set | figure | before (main) | after |
|---|---|---|---|
| heldout (60 pairs, 34 contradictions; measured, never inspected) | precision / recall | 0.964 / 0.794 | 0.933 / 0.824 |
| heldout | newer-first, one call / two calls | 0.912 / 0.882 | 0.912 / 0.912 |
| heldout | past-first | 0.84 | 0.84 |
| tune (809 pairs, 516 contradictions) | precision / recall | 0.964 / 0.676 | 0.986 / 0.822 |
| tune | newer-first, one call / two calls | 0.886 / 0.864 | 0.922 / 0.907 |
| tune | past-first | 0.916 | 0.939 |
| tune, the 465 pairs before an earlier run | precision / recall | 0.989 / 0.893 | 0.989 / 0.900 |
| LoCoMo conversations 1-10 | flagged pairs per 1,000 turns | 2.55 (15) | 2.38 (14) |
| LME dev scopes 0-19 (4,628 user turns) | flagged per 1,000 user turns | 4.54 (21) | 4.32 (20) |
| LME dev scopes 20-39 (4,515 user turns) | flagged pairs | 102 (22.59 per 1,000) | 102 (22.59 per 1,000) |
| tests/data/tensions*.jsonl | precision / recall | 1.0 / 1.0 | 1.0 / 1.0 |

Held-out was measured nine times in the session, detection only and in aggregate (after each
group of rules, and in the final run): recall 0.824 every time (precision 0.933 each time:
one more pair found, one more false alarm, neither seen); its one-call / two-call
newer-first counts were taken twice, in aggregate. The target (recall >= 0.85 at
precision >= 0.9) is one pair short.

What changed in the detector (`tension_words`, `tension_parse`, `tensions`, and
`tension_compare`, split off to keep every file under 800 lines): chat spellings without the
apostrophe; a first-person statement before a question's comma ("..., any tips?"), also after
"now that" / "since" and a dashed opener; the comma-separated parts of one-sentence messages
compared one by one when the whole sentences find nothing (not in longer messages, where some
part of one always echoes a part of the other, and not when a part is a request); contacts (an
email, a phone number with its digit groups, an @handle) as values that name their attribute,
a new one a change whatever else the sentence says (the mail service's name is a word of the
sentence: "the outlook address"); a noun without an article as a subject ("Book club is ...",
"pilates got moved ..."), "Nadia and I", "All my files", "Down to 84 kilos", a verbless
choice "for me", "ever since" / "now that" openers, sentence adverbs ("Weirdly, ..."),
"someone" is no one's name, a relation that only says whose ("my cat allergy"), "My roommate is
a guy called Femi"; "had to stop" / "decided to sell" as done; changes "swapped", "passed" (not
"passed the exam", "passed to"), "withdrew", "pulled the plug", "packed in", "moved out",
"not happening", "final payment", "upped", "bumped" (not "bumped into"), "cleared" (not
"cleared me to"), "closed" (not "is closed", "closed on a house"), "nicked", "gone" ("has
completely gone"), "taken me off insulin", "put the rent up", "paid off" at the end; passive
changes with their object before them ("Climbing's been replaced by ..."); moves to a team or
department as job changes, "qualified as" and "a degree" for studies, "fell out" / "split" for
couples and best friends; "at the moment" marks the present; a time of day is part of a time
("Friday afternoons" / "Monday mornings"); where one lives named anew is a change whatever the
detail; "main" is a single-valued frame; "fan" is an affect, "can't stand" and "drive me mad"
are stances, "zero" denies, "without stopping" denies no sentence; an attributive "terrible hay
fever" takes no stance; "Started a new job" has its subject; "broke things off", "went our
separate ways" after "been with Gemma for five years". Look-alikes now left alone: "the soup was vegetarian after all" (an
expectation about something else), "switched from guitar lessons ..." / "switched my gym day"
(the head of what is substituted is not what the older states), "cycling to work is no joke"
and other negating idioms ("no idea", "can't help", "not bad"), "I've never been to Porto"
against "The offsite is in Porto" (a thing the speaker's sentence does not name), "the app
stopped working", "a long one" is no number, "Raj's old boss left" is not Raj.

One call against two (newer-first 0.912 / 0.882 on held-out at the start). Direction and time
are not the cause: "direction right" equals "tension reported" in both modes, before and after.
Counted per pair (`recall` components, aggregate only for held-out): every pair right in one
call and wrong in two was a contradiction the detector missed, whose newer statement in one
`add` call was the message right after the older one; the sequence edge between consecutive
messages of a call passes the older's relevance to the newer (the conversation context of
`recall.query`), which lifts it over `recency_min_ratio` (0.5 of the older's score) for the
restatement move of `recall.supersession.newer_first`; two calls without a session have no such
edge. On held-out the one such pair is now detected (one call / two calls: 0.912 / 0.912). Tried and
not kept: the ratio on the query cosine instead of the final score closes the gap on tune and
gets 4 more pairs right, but on the LongMemEval dev store (default variant, the same store
copied) turn recall_all@5 fell 0.743 -> 0.636 and knowledge-update 0.759 -> 0.426; leaving the
sequence support out of the ratio closes the gap by making one call as bad as two. A bug found
on the way and fixed (`engine/validity.py`, `recall.supersession.names_upcoming_time`): a
present-tense question naming a day or month ("Are we flying to Greece on Saturday?", "What do
I do on Sunday mornings?") skipped supersession, because the calendar resolves the day to the
last one and a question about a past time ranks by what held then; three tune pairs whose
tension was found ranked the cancelled plan first in both modes. LongMemEval dev on the same
store (`python bench/lme.py --store <copy of the session-8 fresh store> --reuse --ingest
'{"chunk_chars": 250}' --variants default --speed-questions 0`; before: 4ee7ce5's code): turn
recall_all@5 / ndcg_any@10 0.746 / 0.753 before, 0.743 / 0.752 after; two questions' top 10
changed: a temporal one (its score unchanged) and the knowledge-update question that asks what
time the user wakes up on one day of the week, now ranked by what is current: its most recent gold turn
now ranks above the earlier one (the issue's newer-first criterion, which it failed before),
but the earlier one drops out of the top 5, so knowledge-update recall_all@5 goes 0.778 ->
0.759. LoCoMo (`python bench/locomo.py --embed-cache --variants default`, ingested with the
final code): recall@10 / nDCG@10 0.796 / 0.633 (tune 0.802 / 0.645, held-out 0.791 / 0.622),
as main's fresh-store figures (0.796 / 0.633, held-out 0.791 / 0.622).

Cost: `bench/tensions_speed.py` (the LoCoMo pass's 44,544 pairs, CPU time), 4ee7ce5 and the
final code alternated twice on the shared machine (load 2.8-3.4): 4ee7ce5 298-329 µs a pair,
this branch 339-354 µs, about 1.05-1.2x.

Still short: held-out recall 0.824 (target 0.85, one pair); newer-first in two calls is 0.912
on held-out (target 0.90, 34 questions), but on tune two calls still trail one call (0.907 / 0.922)
for the reason above.
Misses left in tune are mostly below the similarity gate (cos < 0.3: "I take the 7:40 train" /
"Since I got the e-bike I just cycle in"), world knowledge ("I'm a postie" / "Handed back my
Royal Mail uniform", "full-time hours" against "four days a week", "lights out by 10:30"
against "bed around 1am"), and habits restated for the present with no cue that the frame holds
one value ("Our dog sleeps in a crate" / "The dog sleeps on our bed now").

### requests and plans in user <-> assistant chat

Before: main at 69d3815; after: branch tensfp, back to back on the same machine (load 5.6-6.4)
with `python bench/tensions.py --locomo-conversations 10 --lme-store
~/.cache/engrammar-bench/stores/lme_c250/store/engrammar.db --lme-scopes 20` (main run with
`PYTHONPATH=<main>/src`, the same script). The LongMemEval pass is new: every pair of user
messages of a question scope (the first 20 user ids in sorted order) with cosine >= 0.3, in
time order. The rules were written from what fires in those 20 scopes and in the store's
stored user -> user replacements (read in the terminal, never written to the project); scopes
20-39 were measured once at the end as a check.

| figure | before | after |
|---|---|---|
| LME dev, scopes 0-19 (4,628 user turns, 28,882 pairs): flagged per 1,000 user turns | 22.69 (105) | 4.54 (21) |
| LME dev, scopes 20-39 (4,515 user turns), measured once | 46.95 (212) | 22.59 (102; 81 of them one scope's chess game) |
| LME dev store, the 813 stored user -> user replacements still flagged | 727 | 142 |
| 20 flagged pairs of scopes 0-19 read by hand: true changes | 1 | 2 |
| LoCoMo conversations 1-10: flagged per 1,000 turns | 4.25 (25) | 2.55 (15) |
| tune precision / recall | 0.989 / 0.893 | 0.989 / 0.893 |
| held-out precision / recall (measured, not inspected) | 0.931 / 0.794 | 0.964 / 0.794 |
| newer-first tune one / two calls; held-out one / two calls | 0.943 / 0.937; 0.912 / 0.882 | unchanged |
| past-first tune / held-out | 0.96 / 0.84 | unchanged |

What changed: a sentence that opens as a request, a plan, a consideration, a wish or a hedge
("I'm thinking of / considering / planning / looking for / wondering", "I'd like", "I want",
"I could / might / will", "I think", "Can you", "If", "Maybe", an instruction to the
assistant such as "Provide ...") is no statement of fact: as the newer side it changes
nothing; as the older side it is undone only by an explicit change of plan ("cancelled",
"called off", "decided not to", "is off", "instead"). Changes of a modal or tense alone
("could" / "will", "just got" / "have had"), names compared or used outside a single-valued
frame ("I've been using X" / "... Y"), a number written otherwise ("two" / "2"), an event told
twice, "for now" and "for a while now", "lately", a restatement of the same content with "now",
denials that mean "until then" ("never ... before", "not yet"), "three chapters left", "left
at 8 AM", "left for Rome", "moved by", statements about "you", and pasted documents (six lines
or more) no longer count. "By the way, I just moved to Denver" now has its subject; "too much" is
not the additive "too". New tests: request/plan pairs that are no tension and chat-worded
changes that are, with the real model.

Still short (described, not quoted: the text is evaluation data): the remaining false alarms
in the read samples are changes told in passing about something else (an upgrade on a flight,
a broken watch, things got rid of), an event retold with a change word, and one scope's chess
game, whose moves read as changed values; the few true ones are LongMemEval's planted updates
(a duration or a best score restated with a new number). LME ndcg_any@10 was not re-measured
here (the lead's runs share the cores).

### contradictions worded in ways nobody tuned for

Before: main at b2e4ae8 on the same data (`PYTHONPATH=<main>/src python bench/tensions.py
--locomo-conversations 10`); after: this branch (the command above). Tune grew from 120 to 465
pairs: 345 written in an earlier run in eight batches, each measured before any rule was written for
it (recall on each new batch then: 0.61, 0.50, 0.67, 0.70, 0.63, 0.56, 0.70, 0.33), so the
tune figures below are optimistic and the held-out ones are what counts.

| set | figure | before | after |
|---|---|---|---|
| tune (465 pairs, 300 contradictions) | precision / recall | 0.92 / 0.617 | 0.989 / 0.893 |
| tune | newer-first, one call / two calls | 0.90 / 0.867 | 0.943 / 0.937 |
| tune | past-first | 0.904 | 0.96 |
| heldout (60 pairs, 34 contradictions) | precision / recall | 0.926 / 0.735 | 0.931 / 0.794 |
| heldout | newer-first, one call / two calls | 0.882 / 0.882 | 0.912 / 0.882 |
| heldout | past-first | 0.76 | 0.84 |
| LoCoMo conversations 1-10 | flagged pairs per 1,000 turns | 5.27 (31) | 4.25 (25) |
| tests/data/tensions*.jsonl | precision / recall | 1.0 / 1.0 | 1.0 / 1.0 |

Held-out was measured six times in the session (after candidates, never pair by pair; the
sixth after merging main, unchanged); its recall went 0.765, 0.794, 0.765, 0.765, 0.794,
0.794. Caveat: the report on main listed the held-out errors' texts, and they were read once
at the start of the session, before this report stopped listing them; the rules written since
come from tune misses and general English, not from those texts.

What changed in `recall.tensions` (now split into `tension_words`, `tension_parse` and
`tensions`): job changes ("got hired", "handed in my notice", "took a job", "back to work")
against a stated job and ended studies; break-ups against a stated partner; the present
restated with another value, the words reordered ("Autumn has become my favourite season",
"These days I only drink tea"); ends next to what they end ("quit teaching", "gave up tennis",
"cut sugar out", "paid off my debt"); a habit denied since a time ("haven't swum since the
operation"), reversals marked as the present ("sick of city life these days"); opposite words
("long" / "short"); substitutions ("... instead", "instead of", "decided not to", "after all",
"change of plan"); irregular verb forms; emails as one value; sentences without their subject,
as chat drops it ("Moved to Glasgow last week"). Look-alikes now left alone: a move to the same
place or in together, a named other's own change ("Arsenal switched managers"), a part of a
possession changed ("the tyres on my Brompton"), "a second helmet", "stopped by", "too
expensive", a place left for the day, a dated past week. In ranking, a question naming a time
that reaches now ("this year") ranks by what is current.

Cost: `bench/tensions_speed.py`, the LoCoMo pass's 44,544 pairs, main and this branch
alternated three times on the shared machine (load 5.6-6.0): main 261-306 µs a pair (CPU),
this branch 312-387 µs, about 1.25x; LoCoMo recall latency p50 64.7 ms with the tension check,
63.2 ms without. LoCoMo retrieval (`python bench/locomo.py --embed-cache --variants default`):
recall@10 0.795, nDCG@10 0.631 (main, as given for the session: 0.793 / 0.630; main's
`bench/results/locomo.md`, an earlier full run: 0.796 / 0.633); held-out conversations
0.789 / 0.618 (0.786 / 0.619 there).

Still short: held-out recall 0.794 (target 0.85) and newer-first in two calls 0.882 (target
0.90). Misses left in tune are mostly beyond word rules: pairs below the similarity gate
("I bank with Barclays" / "I moved all my accounts over to Monzo", cos 0.29), world knowledge
("gin and tonic" / "a whisky person"), and present-tense restatements with no shared frame.
"""
T0 = 1_700_000_000.0


def load(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def detection(
    rows: list[dict[str, Any]], embedder: DiskCachedEmbedder, label: str
) -> dict[str, Any]:
    older = embedder.embed([str(r["older"]) for r in rows])
    newer = embedder.embed([str(r["newer"]) for r in rows])
    tp = fp = fn = 0
    errors: list[str] = []
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for row, a, b in zip(rows, older, newer, strict=True):
        found = detect_tension(
            Statement("a", str(row["older"]), 1.0),
            Statement("b", str(row["newer"]), 2.0),
            float(a @ b),
            MIN_SIMILARITY,
        )
        truth = bool(row[label])
        kind = str(row.get("kind", ""))
        if found is not None and truth:
            tp += 1
            by_kind[kind]["found"] += 1
        elif found is not None:
            fp += 1
            by_kind[kind]["false alarm"] += 1
            errors.append(f"false alarm ({kind}, {found.kind}): {row['older']} / {row['newer']}")
        elif truth:
            fn += 1
            by_kind[kind]["missed"] += 1
            errors.append(
                f"missed ({kind}, cos {float(a @ b):.2f}): {row['older']} / {row['newer']}"
            )
        else:
            by_kind[kind]["right"] += 1
    return {
        "pairs": len(rows),
        "contradictions": tp + fn,
        "precision": round(tp / max(1, tp + fp), 3),
        "recall": round(tp / max(1, tp + fn), 3),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "errors": errors,
    }


def _rank(ids: list[str], memory_id: str) -> int:
    return ids.index(memory_id) if memory_id in ids else len(ids) + 1


def ranking(rows: list[dict[str, Any]], embedder: DiskCachedEmbedder, tmp: Path) -> dict[str, Any]:
    """Newer-first, past-first and tension direction, one scope per pair and mode."""
    out: dict[str, Any] = {}
    has_as_of = "as_of" in inspect.signature(Memory.recall).parameters
    with Memory(Config(path=str(tmp / "ranking")), embedder=embedder) as mem:
        for mode in ("one call", "two calls"):
            newer_first = past_first = as_of_first = direction = with_tension = 0
            n_present = n_past = 0
            misses: list[str] = []
            past_misses: list[str] = []
            for row in rows:
                if not row["label"] or "question" not in row:
                    continue
                user = f"{row['id']}-{mode.replace(' ', '')}"
                mem.add(FILLER, user_id=user, timestamp=T0 - 60 * DAY)
                if mode == "one call":
                    old_id, new_id = mem.add(
                        [row["older"], row["newer"]], user_id=user, timestamp=T0
                    )
                else:
                    (old_id,) = mem.add(row["older"], user_id=user, timestamp=T0)
                    (new_id,) = mem.add(row["newer"], user_id=user, timestamp=T0 + 30 * DAY)
                result = mem.recall(row["question"], user_id=user, limit=10)
                ids = [m.id for m in result.memories]
                n_present += 1
                ok = _rank(ids, new_id) < _rank(ids, old_id)
                newer_first += ok
                if not ok:
                    misses.append(
                        f"{row['id']} [{row['split']}] {row['question']} -> {result.memories[0].content}"
                    )
                pair = [t for t in result.tensions if {t.a, t.b} == {old_id, new_id}]
                with_tension += bool(pair)
                direction += bool(pair) and pair[0].newer == new_id
                if "past_question" in row:
                    n_past += 1
                    result = mem.recall(row["past_question"], user_id=user, limit=10)
                    ids = [m.id for m in result.memories]
                    ok = _rank(ids, old_id) < _rank(ids, new_id)
                    past_first += ok
                    if not ok:
                        past_misses.append(
                            f"{row['id']} [{row['split']}] {row['past_question']} -> {result.memories[0].content}"
                        )
                    if has_as_of and mode == "two calls":
                        result = mem.recall(row["question"], user_id=user, limit=10, as_of=T0 + DAY)  # type: ignore[call-arg]
                        ids = [m.id for m in result.memories]
                        as_of_first += _rank(ids, old_id) < _rank(ids, new_id)
            out[mode] = {
                "present_questions": n_present,
                "newer_first": round(newer_first / max(1, n_present), 3),
                "tension_reported": round(with_tension / max(1, n_present), 3),
                "direction_right": round(direction / max(1, n_present), 3),
                "past_questions": n_past,
                "past_first": round(past_first / max(1, n_past), 3),
                "misses": misses,
                "past_misses": past_misses,
            }
            if has_as_of and mode == "two calls":
                out[mode]["as_of_older_first"] = round(as_of_first / max(1, n_past), 3)
    return out


def locomo_pairs(turns: list[dict[str, Any]], vecs: Any) -> list[tuple[int, int, float]]:
    """``(earlier, later, cosine)`` for each LoCoMo turn against its 8 most similar earlier
    turns of the same conversation at ``MIN_SIMILARITY`` or more, as ``add`` checks them."""
    pairs: list[tuple[int, int, float]] = []
    for sample in sorted({t["sample_id"] for t in turns}):
        idx = [i for i, t in enumerate(turns) if t["sample_id"] == sample]
        sims = vecs[idx] @ vecs[idx].T
        for r, i in enumerate(idx):
            earlier = [
                (float(sims[r, c]), idx[c]) for c in range(r) if sims[r, c] >= MIN_SIMILARITY
            ]
            pairs += [(j, i, cos) for cos, j in sorted(earlier, reverse=True)[:8]]
    return pairs


def chat_false_alarms(
    data: Path, conversations: int, embedder: DiskCachedEmbedder
) -> dict[str, Any]:
    """Pairs of one speaker's LoCoMo turns the detector flags (each turn against its 8 most
    similar earlier turns of the same conversation, as ``add`` checks it)."""
    turns = locomo_turns(load_locomo(data)[:conversations])
    vecs = embedder.embed([t["text"] for t in turns])
    flagged: list[str] = []
    calls, spent = 0, 0.0
    for j, i, cos in locomo_pairs(turns, vecs):
        a, b = turns[j], turns[i]
        started = time.perf_counter()
        found = detect_tension(
            Statement(str(j), a["text"], float(j), a["speaker"]),
            Statement(str(i), b["text"], float(i), b["speaker"]),
            cos,
            MIN_SIMILARITY,
        )
        spent += time.perf_counter() - started
        calls += 1
        if found is not None:
            # Turn ids only: LoCoMo's text is licensed evaluation data and stays out of the
            # project (the reader finds the turns by id in the dataset).
            flagged.append(f"{a['dia_id']} / {b['dia_id']} ({found.kind}): {found.reason}")
    return {
        "conversations": conversations,
        "turns": len(turns),
        "flagged_pairs": len(flagged),
        "per_1000_turns": round(1000 * len(flagged) / max(1, len(turns)), 2),
        "detector_calls": calls,
        "detector_ms": round(1000 * spent, 1),
        "detector_us_per_call": round(1e6 * spent / max(1, calls), 1),
        "examples": flagged[:12],
        "all": flagged,
    }


def lme_false_alarms(store: Path, scopes: int, offset: int = 0) -> dict[str, Any]:
    """Pairs of one LongMemEval question's user messages the detector flags: every pair with
    cosine >= the gate (the stored vectors), the earlier message first. Scopes are the store's
    user ids in sorted order, ``offset`` onwards."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    users = [
        r[0]
        for r in db.execute(
            "SELECT DISTINCT user_id FROM memories WHERE role = 'user' ORDER BY user_id"
        )
    ][offset : offset + scopes]
    flagged: list[dict[str, Any]] = []
    turns = calls = 0
    spent = 0.0
    kinds: Counter[str] = Counter()
    for user in users:
        rows = db.execute(
            "SELECT id, content, created_at, seq, embedding FROM memories"
            " WHERE user_id = ? AND role = 'user' ORDER BY created_at, seq",
            (user,),
        ).fetchall()
        turns += len(rows)
        vecs = np.stack([np.frombuffer(r[4], dtype=np.float32) for r in rows])
        sims = vecs @ vecs.T
        stmts = [Statement(str(r[0]), str(r[1]), float(r[2]), "user", int(r[3])) for r in rows]
        for j in range(len(rows)):
            for i in range(j):
                cos = float(sims[i, j])
                if cos < MIN_SIMILARITY:
                    continue
                started = time.perf_counter()
                found = detect_tension(stmts[i], stmts[j], cos, MIN_SIMILARITY)
                spent += time.perf_counter() - started
                calls += 1
                if found is not None:
                    kinds[found.kind] += 1
                    flagged.append(
                        {
                            "user": user,
                            "a": found.a,
                            "b": found.b,
                            "kind": found.kind,
                            "reason": found.reason,
                            "cos": round(cos, 3),
                        }
                    )
    db.close()
    return {
        "store": str(store),
        "scopes": len(users),
        "offset": offset,
        "user_turns": turns,
        "pairs_checked": calls,
        "flagged_pairs": len(flagged),
        "per_1000_turns": round(1000 * len(flagged) / max(1, turns), 2),
        "by_kind": dict(kinds),
        "detector_us_per_call": round(1e6 * spent / max(1, calls), 1),
        "all": flagged,
    }


def show_lme(store: Path, flagged: list[dict[str, Any]], n: int, seed: int = 8) -> None:
    """Print a sample of flagged pairs with their text, for reading by hand (terminal only)."""
    import random

    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    rng = random.Random(seed)
    for f in rng.sample(flagged, min(n, len(flagged))):
        text = {
            r[0]: r[1]
            for r in db.execute(
                "SELECT id, content FROM memories WHERE id IN (?, ?)", (f["a"], f["b"])
            )
        }
        print(f"--- {f['user']} {f['kind']} {f['reason']} (cos {f['cos']})")
        print(f"  OLD: {text.get(f['a'], '')[:400]}")
        print(f"  NEW: {text.get(f['b'], '')[:400]}")
    db.close()


def write_markdown(doc: dict[str, Any], path: Path) -> None:
    lines = [
        "# Facts that change: tensions and supersession",
        "",
        f"Command: `{doc['command']}` · machine: {doc['machine']['cpu']}, {doc['machine']['cores']} cores, "
        f"Python {doc['machine']['python']}, load average at start {tuple(round(x, 2) for x in doc['machine']['load_avg_at_start'])}",
        "",
        f"Data: `bench/data/tensions_pairs.jsonl`, {doc['pairs']} (older, newer) pairs written for this project over "
        f"{doc['topics']} topics; {doc['detection']['heldout']['pairs']} of them (`split` = heldout: a third of the "
        "first 180 and a third of the corrections batch) were kept out of tuning, their errors are counted and "
        "never listed; the rest, in batches (field `batch`), are tune. "
        f"Model: the default MiniLM; similarity gate `tension_min_similarity` = {MIN_SIMILARITY}.",
        "",
        "## Detection (`recall.tensions.detect_tension`)",
        "",
        "| set | pairs | contradictions | precision | recall |",
        "|---|---|---|---|---|",
    ]
    for name, d in doc["detection"].items():
        lines.append(
            f"| {name} | {d['pairs']} | {d['contradictions']} | {d['precision']} | {d['recall']} |"
        )
    for split in SPLITS:
        lines += [
            "",
            f"By kind ({split}):",
            "",
            "| kind | found | missed | right (no tension) | false alarm |",
            "|---|---|---|---|---|",
        ]
        for kind, c in sorted(doc["detection"][split]["by_kind"].items()):
            c = Counter(c)
            lines.append(
                f"| {kind} | {c['found']} | {c['missed']} | {c['right']} | {c['false alarm']} |"
            )
    lines += ["", "## Supersession in ranking (`Memory.recall`, limit 10)", ""]
    lines += [
        "Each contradiction in its own scope among six unrelated messages; *one call*: `add([older, newer])`; "
        "*two calls*: the newer added 30 days after the older. Newer-first: the present question ranks the newer "
        "statement above the older. Past-first: the past question ranks the older above the newer. Direction: "
        "recall reports the pair as a tension with `newer` = the newer statement.",
        "",
        "| split | mode | present questions | newer-first | tension reported | direction right | past questions | past-first | as_of: older first |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for split in SPLITS:
        for mode, d in doc["ranking"][split].items():
            lines.append(
                f"| {split} | {mode} | {d['present_questions']} | {d['newer_first']} | {d['tension_reported']} | "
                f"{d['direction_right']} | {d['past_questions']} | {d['past_first']} | {d.get('as_of_older_first', 'n/a')} |"
            )
    fa = doc["chat_false_alarms"]
    lines += [
        "",
        "## False alarms in real chat (LoCoMo)",
        "",
        f"Conversations 1-{fa['conversations']}, {fa['turns']} turns: {fa['flagged_pairs']} flagged pairs "
        f"({fa['per_1000_turns']} per 1,000 turns). The detector ran {fa['detector_calls']} times in "
        f"{fa['detector_ms']} ms ({fa['detector_us_per_call']} µs a pair, on a shared machine). "
        "Examples (LoCoMo turn ids and the rule that fired; the text is licensed and stays in "
        "the dataset):",
        "",
        *[f"- {e}" for e in fa["examples"]],
        "",
    ]
    lme = doc.get("lme_false_alarms")
    if lme:
        lines += [
            "## False alarms in user <-> assistant chat (LongMemEval)",
            "",
            f"`{Path(lme['store']).name}` store, {lme['scopes']} question scopes (user ids in sorted order from "
            f"{lme['offset']}), {lme['user_turns']} user messages, every pair with cosine >= {MIN_SIMILARITY} "
            f"({lme['pairs_checked']} pairs): {lme['flagged_pairs']} flagged "
            f"(**{lme['per_1000_turns']} per 1,000 user turns**; LoCoMo: {fa['per_1000_turns']}); by kind "
            f"{lme['by_kind']}; {lme['detector_us_per_call']} µs a pair. Ids only here: the text is "
            "evaluation data.",
            "",
        ]
    lines += [
        "## Errors",
        "",
        "Held-out pairs' errors are counted above, never listed: their texts stay out of tuning.",
        "",
    ]
    for name, d in doc["detection"].items():
        if d["errors"] and name != "heldout":
            lines += [f"{name}:", "", *[f"- {e}" for e in d["errors"]], ""]
    for split in SPLITS:
        for mode, d in doc["ranking"][split].items():
            if d["misses"] and split != "heldout":
                lines += [
                    f"Newer not first ({split}, {mode}):",
                    "",
                    *[f"- {e}" for e in d["misses"]],
                    "",
                ]
            if d.get("past_misses") and split != "heldout":
                lines += [
                    f"Older not first for the past question ({split}, {mode}):",
                    "",
                    *[f"- {e}" for e in d["past_misses"]],
                    "",
                ]
    lines += ["", HISTORY.strip(), ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=LOCOMO, help="locomo10.json")
    parser.add_argument("--locomo-conversations", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-ranking", action="store_true", help="detection only (fast)")
    parser.add_argument(
        "--splits",
        default=",".join(SPLITS),
        help="comma-separated splits to measure (tune while developing; heldout only to check)",
    )
    parser.add_argument(
        "--no-locomo", action="store_true", help="skip the LoCoMo false-alarm pass (fast)"
    )
    parser.add_argument(
        "--lme-store", type=Path, help="engrammar.db of a LongMemEval store (user false alarms)"
    )
    parser.add_argument("--lme-scopes", type=int, default=20)
    parser.add_argument("--lme-offset", type=int, default=0, help="first scope (sorted user ids)")
    parser.add_argument(
        "--lme-show", type=int, default=0, help="print N flagged LME pairs (terminal only)"
    )
    parser.add_argument(
        "--lme-only", action="store_true", help="only the LongMemEval false-alarm pass"
    )
    args = parser.parse_args()
    command = "python bench/tensions.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    embedder = DiskCachedEmbedder(MiniLMEmbedder())
    rows = load(DATA)
    doc: dict[str, Any] = {
        "command": command.strip(),
        "machine": machine(),
        "pairs": len(rows),
        "topics": len({r["topic"] for r in rows}),
        "detection": {},
        "ranking": {},
    }
    if args.lme_store is not None:
        lme = lme_false_alarms(args.lme_store, args.lme_scopes, args.lme_offset)
        print(
            f"LME flagged pairs: {lme['flagged_pairs']} of {lme['pairs_checked']}"
            f" ({lme['per_1000_turns']} per 1,000 user turns, {lme['user_turns']} turns,"
            f" {lme['scopes']} scopes) {lme['by_kind']}"
        )
        if args.lme_show:
            show_lme(args.lme_store, lme["all"], args.lme_show)
        doc["lme_false_alarms"] = lme
        if args.lme_only:
            return
    splits = [s for s in args.splits.split(",") if s]
    if not set(splits) <= set(SPLITS):
        parser.error(f"--splits: expected some of {', '.join(SPLITS)}, got {args.splits!r}")
    doc["splits"] = splits
    for split in splits:
        doc["detection"][split] = detection(
            [r for r in rows if r["split"] == split], embedder, "label"
        )
    # Replies that correct an earlier statement ("No, Wednesdays now."), and look-alikes.
    for split in splits:
        doc["detection"][f"{split}, corrections"] = detection(
            [r for r in rows if r["split"] == split and r.get("batch") == "corrections"],
            embedder,
            "label",
        )
    for path in OLD_SETS:
        doc["detection"][f"tests/data/{path.name}"] = detection(
            load(path), embedder, "contradiction"
        )
    if not args.no_locomo:
        started = time.perf_counter()
        doc["chat_false_alarms"] = chat_false_alarms(args.data, args.locomo_conversations, embedder)
        doc["chat_false_alarms"]["seconds"] = round(time.perf_counter() - started, 2)
        print(
            f"LoCoMo flagged pairs: {doc['chat_false_alarms']['flagged_pairs']}"
            f" ({doc['chat_false_alarms']['per_1000_turns']} per 1,000 turns,"
            f" detector {doc['chat_false_alarms']['detector_ms']} ms)"
        )
    embedder.save()
    for name, d in doc["detection"].items():
        print(
            f"{name}: precision {d['precision']} recall {d['recall']} ({d['tp']} tp, {d['fp']} fp, {d['fn']} fn)"
        )
    if args.no_ranking:
        return
    with tempfile.TemporaryDirectory(prefix="tensions-") as tmp:
        for split in splits:
            doc["ranking"][split] = ranking(
                [r for r in rows if r["split"] == split], embedder, Path(tmp) / split
            )
            for mode, d in doc["ranking"][split].items():
                print(split, mode, {k: v for k, v in d.items() if "misses" not in k})
    embedder.save()
    if splits != list(SPLITS) or args.no_locomo:
        print("not writing the report: it needs every split and the LoCoMo pass")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    doc["chat_false_alarms"].pop("all", None)
    if "lme_false_alarms" in doc:
        doc["lme_false_alarms"]["examples"] = [
            f"{f['user']}: {f['a']} / {f['b']} ({f['kind']})"
            for f in doc["lme_false_alarms"].pop("all")[:12]
        ]
    # Held-out pairs' individual outcomes stay out of the results: only their counts.
    doc["detection"]["heldout"]["errors"] = []
    for d in doc["ranking"]["heldout"].values():
        d["misses"] = d["past_misses"] = []
    (args.out / "tensions.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    write_markdown(doc, args.out / "tensions.md")
    print(f"wrote {args.out / 'tensions.md'}")


if __name__ == "__main__":
    main()
