"""Helpers shared by the benchmark scripts: LoCoMo turns, machine description, timing."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo10.json"
RESULTS = ROOT / "bench" / "results"


def load_locomo(path: Path | str = DEFAULT_DATA) -> list[dict[str, Any]]:
    """The LoCoMo conversations (read from the shared folder; never copied into the repo)."""
    p = Path(path)
    if not p.is_file():
        sys.exit(f"LoCoMo data not found at {p}; pass --data PATH")
    data: list[dict[str, Any]] = json.loads(p.read_text(encoding="utf-8"))
    return data


def locomo_turns(conversations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every dialog turn in order: sample_id, session, dia_id, speaker, text, date string."""
    out = []
    for conv in conversations:
        c = conv["conversation"]
        n = 1
        while f"session_{n}" in c:
            date = c.get(f"session_{n}_date_time", "")
            for turn in c[f"session_{n}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text = f"{text} [shares an image: {turn['blip_caption']}]"
                out.append(
                    {
                        "sample_id": conv["sample_id"],
                        "session": n,
                        "dia_id": turn["dia_id"],
                        "speaker": turn["speaker"],
                        "text": text,
                        "date": date,
                    }
                )
            n += 1
    return out


def load_other_engrammar(src: str | Path) -> Any:
    """Another checkout's package (``src`` holds its ``engrammar`` folder) importable beside
    this one, as ``engrammar_other`` (the package imports itself relatively), for benches that
    run two code versions in one process. The copy is removed when the process exits."""
    import atexit
    import importlib
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="engrammar-other-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    shutil.copytree(Path(src) / "engrammar", Path(tmp) / "engrammar_other")
    sys.path.insert(0, tmp)
    return importlib.import_module("engrammar_other")


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_avg_at_start": os.getloadavg(),
    }


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def summary_ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(pct(values, 50) * 1000, 3),
        "p95_ms": round(pct(values, 95) * 1000, 3),
        "mean_ms": round(statistics.fmean(values) * 1000, 3) if values else float("nan"),
        "n": len(values),
    }


#: The throwaway PostgreSQL server of the store benchmarks (as bench/results/stores.md states).
PG_BENCH_OPTIONS = (
    "-c synchronous_commit=off -c shared_buffers=1GB -c work_mem=16MB "
    "-c maintenance_work_mem=1GB -c max_connections=100"
)


def start_pg_server() -> Any:
    """A throwaway local PostgreSQL server (tests/pg.py, on the caller's ``sys.path``) with
    :data:`PG_BENCH_OPTIONS`, started; exits the benchmark when none is installed."""
    import pg

    bindir, reason = pg.find_bindir()
    if bindir is None:
        sys.exit(f"no PostgreSQL server: {reason}")
    server = pg.PgServer(bindir, options=PG_BENCH_OPTIONS)
    server.start()
    return server
