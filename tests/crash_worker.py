"""The process tests/test_crash.py kills: endless adds, feedback rounds or imports on one store,
logging each call only after it has returned (one JSON line, fsynced).

    python tests/crash_worker.py SCENARIO STORE LOG START [IMPORT_FILE]

STORE is a folder (SQLite) or a ``postgresql://`` URL. After the first call has returned the
worker prints ``ready``: the test's kill points start there.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from backends import open_memory
from engrammar import Memory

ADD_BATCH = 40
USERS = ("ann", "ben", "cat")


def edge_snapshot(mem: Memory) -> dict[str, float]:
    """Every edge of the store and its weight (read after a call returned: committed state)."""
    rows, _ = mem.store.export_rows("edges", None, 1_000_000)
    return {f"{r['src']}|{r['dst']}|{r['kind']}": r["weight"] for r in rows}


def main() -> None:
    scenario, store, log_path, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    mem = open_memory(store)
    fd = os.open(log_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        # One write() per entry, yet Linux may still stop a write to a regular file part way
        # when SIGKILL arrives (between pages): a killed worker can leave half a line. Start on
        # a line of our own so that half line never swallows this run's first entry; the test
        # skips such a line (that call returned but was not logged, which is allowed).
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.write(fd, b"\n")

        def done(entry: dict[str, Any]) -> None:
            data = (json.dumps(entry) + "\n").encode()
            if os.write(fd, data) != len(data):
                raise OSError(f"short write to {log_path}")
            os.fsync(fd)

        n = start
        while True:
            if scenario == "add":
                ids = mem.add(
                    [f"batch {n} message {i} about topic {i % 7}" for i in range(ADD_BATCH)],
                    user_id="u",
                    metadata={"batch": n},
                )
                done({"n": n, "step": "add", "ids": ids})
            elif scenario == "feedback":
                user = USERS[n % len(USERS)]
                r = mem.recall(f"what about topic {n % 5}", user_id=user)
                done({"n": n, "step": "recall", "recall_id": r.recall_id})
                reply = (
                    r.memories[0].content
                    if r.memories and n % 2
                    else f"Something unrelated number {n}."
                )
                mem.feedback(response=reply, user_id=user)
                done({"n": n, "step": "feedback", "recall_id": r.recall_id,
                      "edges": edge_snapshot(mem)})  # fmt: skip
                if r.memories:
                    target = r.memories[-1].id
                    rating = mem.rate_memory(
                        target,
                        "corrected" if n % 3 == 0 else ("accepted" if n % 2 else "rejected"),
                        correction=f"Correction {n}: topic {n % 5} is settled."
                        if n % 3 == 0
                        else None,
                        recall_id=r.recall_id,
                        user_id=user,
                    )
                    done({"n": n, "step": "rate", "rating_id": rating.id,
                          "correction_memory_id": rating.correction_memory_id})  # fmt: skip
                event = mem.create_feedback_event(
                    f"Question {n} about topic {n % 5}",
                    f"Answer {n} that was wrong.",
                    "corrected" if n % 2 else "adopted",
                    user_correction=f"Right answer {n}.",
                    corrected_output=f"Corrected output {n}.",
                    reason=f"reason {n}",
                    user_id=user,
                    source_event_id=f"src-{n}",
                )
                done({"n": n, "step": "event", "event_id": event.id})
            elif scenario == "import":
                result = mem.import_(sys.argv[5], workspace=f"imp{n}")
                done({"n": n, "step": "import", "workspace": f"imp{n}", "result": result})
            else:
                raise SystemExit(f"unknown scenario {scenario!r}")
            if n == start:
                print("ready", flush=True)
            n += 1
    finally:
        os.close(fd)


if __name__ == "__main__":
    main()
