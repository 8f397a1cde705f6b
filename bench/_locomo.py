"""Retrieval quality on LoCoMo through the public API, scored by the shared referee script.

Each conversation goes into its own user scope (``user_id`` = its ``sample_id``), one
``Memory.add`` call per session (``session_id`` = ``"<sample_id>/<n>"``), one memory per dialog
turn: the turn's text (plus its image caption), its speaker as the message's ``name``, the
session's date as its ``timestamp`` and the turn's ``dia_id`` in its metadata. Every question
is asked through ``Memory.recall`` in its own conversation's scope; the ranked memories map
back to ``dia_id`` values through that metadata, and the run file is scored by
``locomo_retrieval.py`` (the project's referee, kept outside the package and imported by path,
never copied, so its figures stay comparable with every other system's).

The data set is read from where it lies (``--data``); nothing of it is copied.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from engrammar.config import Config
from engrammar.memory import Memory

__all__ = [
    "DEFAULT_DATA",
    "LocomoRun",
    "ask",
    "evaluate",
    "ingest",
    "load",
    "parse_numbers",
    "percentile",
    "questions",
    "referee",
    "referee_path",
    "score",
]

# Relative to the working directory, as the project's scripts are run from the repo root.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def load(path: Path | str) -> list[dict[str, Any]]:
    """The LoCoMo conversations from ``path`` (a list of samples)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"LoCoMo data not found at {p}; pass --data PATH")
    data: list[dict[str, Any]] = json.loads(p.read_text(encoding="utf-8"))
    return data


def referee_path(data_path: Path | str) -> Path:
    """The referee script beside the shared data folder (``shared/eval/locomo_retrieval.py``)."""
    p = Path(data_path).resolve().parent.parent / "eval" / "locomo_retrieval.py"
    if not p.is_file():
        raise FileNotFoundError(f"referee script not found at {p}")
    return p


def session_time(text: str) -> datetime:
    """LoCoMo's session stamp ("1:56 pm on 8 May, 2023") as a UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def sessions(sample: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    """``(number, date, turns)`` of each session of a sample, in order."""
    conv = sample["conversation"]
    numbers = sorted(
        int(k.split("_")[1])
        for k, v in conv.items()
        if k.startswith("session_") and k.count("_") == 1 and isinstance(v, list)
    )
    return [
        (n, session_time(conv[f"session_{n}_date_time"]), conv[f"session_{n}"]) for n in numbers
    ]


def turn_content(turn: dict[str, Any]) -> str:
    """A turn's text, with the caption of the image shared in it."""
    text = str(turn["text"])
    caption = turn.get("blip_caption")
    return f"{text} [shared image: {caption}]" if caption else text


def ingest(mem: Memory, sample: dict[str, Any]) -> int:
    """Add one conversation to ``mem`` (user scope = its ``sample_id``); returns turns added."""
    user = str(sample["sample_id"])
    added = 0
    for n, when, turns in sessions(sample):
        if not turns:
            continue
        messages = [
            {
                "role": "user",
                "name": turn["speaker"],
                "content": turn_content(turn),
                "timestamp": when,
                "metadata": {"dia_id": turn["dia_id"]},
            }
            for turn in turns
        ]
        added += len(mem.add(messages, user_id=user, session_id=f"{user}/{n}").stored)
    return added


def referee(path: Path) -> ModuleType:
    """The referee script imported by path (it is a standalone, standard-library module)."""
    spec = importlib.util.spec_from_file_location("locomo_retrieval", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the referee from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def questions(ref: ModuleType, data: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The referee's question list (``question_id``, ``sample_id``, ``question``, …)."""
    return list(ref.build_queries(list(data)))


@dataclass
class LocomoRun:
    """Ranked ``dia_id`` lists per question and the time each recall took (seconds)."""

    ranked: dict[str, list[str]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def write(self, path: Path) -> None:
        with path.open("w", encoding="utf-8") as f:
            for qid, ids in self.ranked.items():
                f.write(json.dumps({"question_id": qid, "retrieved_dialog_ids": ids}) + "\n")


def ask(
    mem: Memory,
    items: Iterable[dict[str, Any]],
    limit: int = 50,
    progress: Callable[[int], None] | None = None,
) -> LocomoRun:
    """Recall every question in its conversation's scope; time each call."""
    run = LocomoRun()
    for i, q in enumerate(items):
        t0 = time.perf_counter()
        result = mem.recall(q["question"], user_id=q["sample_id"], limit=limit)
        run.seconds.append(time.perf_counter() - t0)
        run.ranked[q["question_id"]] = [
            str(m.memory.metadata["dia_id"])
            for m in result.memories
            if "dia_id" in m.memory.metadata
        ]
        if progress is not None:
            progress(i)
    return run


def score(
    ref: ModuleType, data: Sequence[dict[str, Any]], run: LocomoRun
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The referee's report on ``run`` over the conversations ``data`` (``overall_1-4``, per
    category, …) and its per-question metrics."""
    report, per_query, _extra = ref.evaluate(list(data), run.ranked)
    return dict(report), dict(per_query)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``; NaN for none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def parse_numbers(spec: str, top: int) -> list[int]:
    """Conversation numbers from a spec like ``1-5,8``, each between 1 and ``top``."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if not 1 <= a <= b <= top:
            raise ValueError(f"conversation numbers must be within 1-{top}, got {part!r}")
        out += range(a, b + 1)
    return sorted(set(out))


def evaluate(
    data_path: Path | str,
    store_dir: Path | str,
    *,
    conversations: str = "1-10",
    limit: int = 10,
    config: Config | None = None,
    run_file: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Ingest the chosen conversations into a fresh store under ``store_dir``, ask every
    question with evidence through ``recall`` and score the run with the referee.

    Returns ``{"report": <referee report>, "ingest_s", "turns", "recall_ms": {p50, p95}}``.
    """
    data = load(data_path)
    ref = referee(referee_path(data_path))
    chosen = [data[n - 1] for n in parse_numbers(conversations, len(data))]
    cfg = (config or Config()).replace(path=str(store_dir))
    with Memory(cfg) as mem:
        t0 = time.perf_counter()
        turns = 0
        for sample in chosen:
            turns += ingest(mem, sample)
            log(f"ingested {sample['sample_id']} ({turns} turns so far)")
        ingest_s = time.perf_counter() - t0
        items = [q for q in questions(ref, chosen) if q["evidence"]]
        log(f"asking {len(items)} questions")
        run = ask(mem, items, limit=limit)
    if run_file is not None:
        run.write(run_file)
    report, _ = score(ref, chosen, run)
    return {
        "report": report,
        "ingest_s": round(ingest_s, 2),
        "turns": turns,
        "questions": len(items),
        "recall_ms": {
            "p50": round(percentile(run.seconds, 50) * 1000, 2),
            "p95": round(percentile(run.seconds, 95) * 1000, 2),
        },
    }
