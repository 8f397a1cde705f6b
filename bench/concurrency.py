"""Concurrency on one embedded store: N processes x M threads adding, recalling, feeding back,
rating and adjusting edge weights for a bounded time (the load and its checks live in
tests/concurrency_load.py, which tests/test_concurrency.py runs small).

    python bench/concurrency.py --procs 4 --threads 4 --seconds 20
    python bench/concurrency.py --postgres --procs 4 --threads 4 --seconds 60

``--postgres`` runs it on a throwaway PostgreSQL server (tests/pg.py, durable settings: fsync
and synchronous_commit on) instead of a SQLite folder.

Writes a summary to stdout (and --out FILE as JSON).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from concurrency_load import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--postgres", action="store_true", help="on a throwaway PostgreSQL")
    args = parser.parse_args()
    if args.postgres:
        import pg

        bindir, why = pg.find_bindir()
        if bindir is None:
            sys.exit(why)
        server = pg.PgServer(bindir, options="-c max_connections=200 -c shared_buffers=128MB")
        server.start()
        try:
            result = run(server.new_database(), args.procs, args.threads, args.seconds)
            result["store"] = "postgresql (throwaway server, fsync on, synchronous_commit on)"
        finally:
            server.stop()
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = run(str(Path(tmp) / "store"), args.procs, args.threads, args.seconds)
            result["store"] = "sqlite"
    result["machine"] = f"{platform.machine()} {platform.processor()} {mp.cpu_count()} cpus"
    result["load_average_after"] = list(os.getloadavg())
    result["command"] = "python bench/concurrency.py " + " ".join(sys.argv[1:])
    result["errors"] = result["errors"][:5]
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
