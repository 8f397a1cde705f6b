"""How well does engrammar recognise a stated preference? Precision and recall on a labelled set.

``bench/data/preference_sentences.tsv``: hand-written user messages (label 1 = the user states a
standing preference of their own, explicitly or by picking among options the assistant offered;
0 = anything else, many of them near misses: requests, questions, other people's tastes,
one-off events, reactions). The rules of :func:`engrammar.learn.preferences.recognise_preference`
were written looking at the rows whose position is not 2 mod 3 ("dev"); the rows at 2 mod 3
are the held-out third.

    python bench/preference_recognition.py [--show-errors]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from engrammar.learn.preferences import recognise_preference

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "preference_sentences.tsv"


def load(path: Path) -> list[tuple[int, str, str | None]]:
    rows = []
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if not row or row[0].startswith("#"):
                continue
            previous = row[2] if len(row) > 2 and row[2] else None
            rows.append((int(row[0]), row[1], previous))
    return rows


def scores(rows: list[tuple[int, str, str | None]]) -> dict[str, float]:
    tp = fp = fn = tn = 0
    for label, text, previous in rows:
        got = recognise_preference(text, previous, "assistant" if previous else None) is not None
        tp += got and label == 1
        fp += got and label == 0
        fn += (not got) and label == 1
        tn += (not got) and label == 0
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "n": len(rows),
        "positives": tp + fn,
        "precision": precision,
        "recall": recall,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--show-errors", action="store_true", help="print the dev-part errors")
    parser.add_argument(
        "--out", default=str(ROOT / "bench" / "results" / "preference_recognition.md")
    )
    args = parser.parse_args()
    rows = load(Path(args.data))
    parts = {
        "dev (rows not at 2 mod 3)": [r for i, r in enumerate(rows) if i % 3 != 2],
        "held-out (rows at 2 mod 3)": [r for i, r in enumerate(rows) if i % 3 == 2],
        "all": rows,
    }
    if args.show_errors:
        for label, text, previous in parts["dev (rows not at 2 mod 3)"]:
            got = recognise_preference(text, previous, "assistant" if previous else None)
            if (got is not None) != bool(label):
                print(f"{'FN' if label else 'FP'}: {text} {got}", file=sys.stderr)
    command = "python bench/" + " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])
    lines = [
        "# Recognising stated preferences",
        "",
        f"Command: `{command}`; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  ",
        "Data: `bench/data/preference_sentences.tsv`, hand-written, labelled by the author; "
        "target precision and recall >= 0.85 each on the held-out third.",
        "",
        "| part | sentences | preferences | precision | recall | TP | FP | FN | TN |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, part in parts.items():
        s = scores(part)
        lines.append(
            f"| {name} | {s['n']} | {s['positives']} | {s['precision']:.3f} | "
            f"{s['recall']:.3f} | {s['tp']} | {s['fp']} | {s['fn']} | {s['tn']} |"
        )
    held = scores(parts["held-out (rows at 2 mod 3)"])
    met = held["precision"] >= 0.85 and held["recall"] >= 0.85
    lines += ["", f"Held-out target met: {'yes' if met else 'no'}.", ""]
    text = "\n".join(lines)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
