"""Acceptance of real chats: every LongMemEval dev haystack through ``Memory.add``, as it comes.

Each question's haystack (about 44 sessions, 470 user and assistant turns, some empty, some
over 20,000 characters) goes in one ``add`` call per session, in its own user scope, with the
session's date as the timestamp. The turns are passed as ``{role, content}`` with no filtering,
stripping or truncation (the dataset's ``has_answer`` label is not a message field). Counts
questions whose ingest failed, messages stored and skipped (by reason), and the longest
message stored. Only acceptance is measured, so the deterministic ``HashEmbedder`` stands in
for the model.

    python ../shared/eval/lme_dev.py /tmp/lme_dev.json
    python bench/ingest_lme.py --data /tmp/lme_dev.json [--limit N] [--out bench/results/ingest_lme.md]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import RESULTS, machine
from engrammar import Config, EngrammarError, HashEmbedder, Memory
from engrammar.engine import validate


def _when(date: str) -> float:
    return datetime.strptime(date, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC).timestamp()


def _affected(q: dict[str, Any]) -> bool:
    turns = [t["content"] for s in q["haystack_sessions"] for t in s]
    return any(not t.strip() or len(t) > 20_000 for t in turns)


def ingest(questions: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    failed: list[tuple[str, str]] = []
    reasons: collections.Counter[str] = collections.Counter()
    stored = given = longest = 0
    start = time.perf_counter()
    for n, q in enumerate(questions):
        mem = Memory(Config(path=str(folder / q["question_id"])), embedder=HashEmbedder())
        try:
            for sid, date, session in zip(
                q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
            ):
                turns = [{"role": t["role"], "content": t["content"]} for t in session]
                given += len(turns)
                ids = mem.add(
                    turns, user_id=q["question_id"], session_id=sid, timestamp=_when(date)
                )
                stored += len(ids.stored)
                reasons.update(s.reason for s in ids.skipped)
                longest = max([longest, *(len(t["content"]) for t in turns)])
        except EngrammarError as exc:
            failed.append((q["question_id"], str(exc)))
        finally:
            mem.close()
        if (n + 1) % 20 == 0:
            print(f"{n + 1}/{len(questions)} questions, {len(failed)} failed", file=sys.stderr)
    return {
        "questions": len(questions),
        "failed": failed,
        "messages": given,
        "stored": stored,
        "skipped": dict(reasons),
        "longest_message": longest,
        "seconds": round(time.perf_counter() - start, 1),
    }


def check_all(questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Every session of every question through the checks ``add`` runs first (no store):
    which messages it would store and which it would skip, and why."""
    config = Config()
    reasons: collections.Counter[str] = collections.Counter()
    failed: list[tuple[str, str]] = []
    stored = 0
    for q in questions:
        try:
            for session in q["haystack_sessions"]:
                checked = validate.messages(
                    [{"role": t["role"], "content": t["content"]} for t in session],
                    default_kind="message",
                    base_metadata={},
                    default_time=0.0,
                    max_messages=config.max_messages_per_add,
                    max_chars=config.max_content_chars,
                )
                stored += len(checked.messages)
                reasons.update(reason for _, reason in checked.skipped)
        except EngrammarError as exc:
            failed.append((q["question_id"], str(exc)))
    return {"questions": len(questions), "failed": failed, "stored": stored, "skipped": reasons}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="lme_dev.json written by lme_dev.py")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument(
        "--affected",
        action="store_true",
        help="only the questions holding an empty or a >20,000-character message (those "
        "that failed before skipping and the 1,000,000 limit)",
    )
    ap.add_argument("--out", default=str(RESULTS / "ingest_lme.md"))
    a = ap.parse_args()
    questions = json.loads(Path(a.data).read_text(encoding="utf-8"))
    if a.limit:
        questions = questions[: a.limit]
    everything = check_all(questions)
    if a.affected:
        questions = [q for q in questions if _affected(q)]
    with tempfile.TemporaryDirectory() as tmp:
        report = ingest(questions, Path(tmp))
    print(json.dumps({"add": report, "checked": everything}, indent=2))
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(report["skipped"].items())) or "none"
    lines = [
        "# LongMemEval dev haystacks through `add`",
        "",
        f"`python bench/ingest_lme.py --data lme_dev.json{' --affected' if a.affected else ''}`"
        " (see the script's docstring).",
        "",
        "| questions | failed | messages | stored | skipped (by reason) | longest message |",
        "|---|---|---|---|---|---|",
        f"| {report['questions']} | {len(report['failed'])} | {report['messages']} | "
        f"{report['stored']} | {skipped} | {report['longest_message']} characters |",
        "",
        f"Machine: {machine()['cpu']}; {report['seconds']} s with the hash embedder.",
    ]
    lines += [f"- failed {qid}: {why}" for qid, why in report["failed"]]
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(everything["skipped"].items())) or "none"
    lines += [
        "",
        f"All {everything['questions']} questions through the checks `add` runs before it "
        f"stores (`engine.validate.messages`): {len(everything['failed'])} refused, "
        f"{everything['stored']} messages to store, skipped: {skipped}.",
    ]
    Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
