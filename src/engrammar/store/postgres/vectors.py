"""The vector indexes of the PostgreSQL store, and the vector query of one scope.

One HNSW graph over every memory answers a user's query badly once the store holds many users:
the graph walk meets mostly other users' rows, which the filter throws away (a user holding 1%
of the rows makes the iterative scan visit about 100 rows per hit: ~100 ms at 1M memories).
So besides the global index (which serves scopes without a user), memories are spread over
``BUCKETS`` partial HNSW indexes by a hash of (workspace, user): a user's query walks the graph
of its bucket, where its own rows are a large share (one user, or a few sharing the hash).

A small user is scanned exactly instead (its rows through the scope's btree, every distance
computed: exact, and faster than a graph walk below ``EXACT_MAX`` rows). The number of the
user's active memories comes from ``keyword_stats`` (kept exact by a trigger) inside the same
statement: both ways are planned, and a one-time filter runs only the chosen one.

Vectors are stored inline (``STORAGE MAIN``) so that reading a row's vector needs no TOAST
lookup: an exact scan costs a third of what it did with the vectors out of line.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from psycopg.abc import Buffer
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from ...errors import StoreError
from .connection import Conn

__all__ = [
    "BUCKETS",
    "BUCKET_OF_ROW",
    "EXACT_MAX",
    "VECTOR_STORAGE",
    "Vector",
    "chunk_scope",
    "create_vector_indexes",
    "drop_vector_indexes",
    "exact_rows",
    "execute_searching",
    "hnsw_options",
    "own_hits",
    "register_vector",
    "scope_keys",
    "vector_index_names",
]


class Vector:
    """A float32 vector on its way to a ``vector`` parameter (binary wire format)."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = np.ascontiguousarray(array, dtype=np.float32)


def register_vector(conn: Conn) -> None:
    """Teach the connection pgvector's binary format, both ways, with no extra dependency."""
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise StoreError("the pgvector extension is not installed in this database")
    vector_oid = info.oid

    class VectorDumper(Dumper):
        format = Format.BINARY
        oid = vector_oid

        def dump(self, obj: Vector) -> Buffer:
            a = obj.array
            return struct.pack(">HH", len(a), 0) + a.astype(">f4").tobytes()

    class VectorBinaryLoader(Loader):
        format = Format.BINARY

        def load(self, data: Buffer) -> np.ndarray:
            dim = struct.unpack_from(">H", data)[0]
            return np.frombuffer(data, dtype=">f4", count=dim, offset=4).astype(np.float32)

    class VectorTextLoader(Loader):
        format = Format.TEXT

        def load(self, data: Buffer) -> np.ndarray:
            text = bytes(data).decode()
            return np.array(text[1:-1].split(","), dtype=np.float32)

    conn.adapters.register_dumper(Vector, VectorDumper)
    conn.adapters.register_loader(vector_oid, VectorBinaryLoader)
    conn.adapters.register_loader(vector_oid, VectorTextLoader)
    info.register(conn)  # lists of Vector go as vector[] (a batch of queries in one statement)


#: partial HNSW indexes per store. Every statement on ``memories`` plans against every index
#: (about 3 us each), so more buckets cost every query a little; 32 keeps a store of 100 users
#: at about 3 users per bucket.
BUCKETS = 32
#: the bucket of a row, exactly as the partial indexes' predicates say it (a query repeats it
#: word for word, or the planner cannot prove that the index covers the query).
BUCKET_OF_ROW = f"(hashtext(workspace || '/' || coalesce(user_id, '')) & {BUCKETS - 1})"
#: users with at most this many active memories are scanned exactly (no graph walk).
EXACT_MAX = 2000
#: how ``memories.embedding`` is stored: in the row (``vector``'s own default, EXTERNAL,
#: moves a row's vector to TOAST once the row passes ~2 kB: most 384-d rows), so that an
#: exact scan reads no TOAST. Changing the column's type resets it: set it again after.
VECTOR_STORAGE = "MAIN"

_GLOBAL = "memories_embedding_hnsw"


def vector_index_names() -> list[str]:
    """Every vector index of ``memories``: the global one, then the buckets'."""
    return [_GLOBAL] + [f"memories_embedding_b{b}" for b in range(BUCKETS)]


def hnsw_options(conn: Conn, m: int, ef_construction: int) -> tuple[int, int]:
    """The build parameters of the existing global index (else ``m``, ``ef_construction``)."""
    row = conn.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (_GLOBAL,)).fetchone()
    options = dict(o.split("=", 1) for o in (row[0] or [])) if row else {}
    return int(options.get("m", m)), int(options.get("ef_construction", ef_construction))


def create_vector_indexes(conn: Conn, m: int, ef_construction: int) -> None:
    """The global HNSW index and the buckets' (those missing)."""
    with_ = f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
    for b, name in enumerate(vector_index_names()):
        where = "" if b == 0 else f" WHERE {BUCKET_OF_ROW} = {b - 1}"
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON memories "
            f"USING hnsw (embedding vector_cosine_ops) {with_}{where}"
        )


def drop_vector_indexes(conn: Conn) -> None:
    conn.execute(f"DROP INDEX IF EXISTS {', '.join(vector_index_names())}")


def execute_searching(cur: Any, sql: str, args: Any, ef: int | None) -> None:
    """Queue a vector search on ``cur`` (of a connection in pipeline mode) with the
    ``hnsw.ef_search`` it needs (None: the connection's), set for its own transaction only so
    that the pooled connection goes back unchanged."""
    if ef is None:
        cur.execute(sql, args)
        return
    conn = cur.connection
    with conn.transaction():
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
        cur.execute(sql, args)


def scope_keys(scope: Any) -> list[str]:
    """The keys a scope sets besides its workspace, in the order queries name them."""
    return [key for key in ("user_id", "agent_id", "session_id") if getattr(scope, key) is not None]


def chunk_scope(keys: list[str]) -> str:
    """The scope's condition on ``memory_chunks c`` (parameters ``%(ws)s``, ``%(user_id)s`` ...)."""
    return " AND ".join(["c.workspace = %(ws)s"] + [f"c.{key} = %({key})s" for key in keys])


_SIZE = (
    "(SELECT coalesce(max(n), 0) FROM keyword_stats "
    "WHERE workspace = %(ws)s::text AND user_key = %(user_id)s::text)"
)


def exact_rows(keys: list[str], narrowed: str) -> str:
    """The ``(id, embedding)`` of a small user's scope (none for a large one): what the exact
    branch of :func:`own_hits` scans, read once for a batch of queries (a CTE named as
    ``own_hits``'s ``rows`` says). Only for scopes with a user."""
    rest = "".join(f" AND {key} = %({key})s" for key in keys if key != "user_id")
    return (
        "SELECT id, embedding FROM memories WHERE workspace = %(ws)s AND user_id = %(user_id)s"
        f"{rest} AND status = 'active'{narrowed} AND {_SIZE} <= {EXACT_MAX}"
    )


def own_hits(keys: list[str], narrowed: str, rows: str | None = None) -> str:
    """The nearest ``%(k)s`` active memories of a scope to ``%(q)s`` as ``(id, distance)``
    rows: a query to put in a CTE. ``keys``: the scope's keys besides the workspace
    (``user_id``, ``agent_id``, ``session_id``; parameters ``%(ws)s``, ``%(user_id)s`` ...);
    ``narrowed``: a recall filter's condition on ``memories`` (empty, or starting with
    `` AND``); ``rows``: the name of a CTE of :func:`exact_rows` for the same scope, which
    the exact branch then scans instead of the table (a batch of queries reads the scope's
    rows once: ~0.65 ms a query against ~1.9 ms at 2,000 memories)."""
    rest = "".join(f" AND {key} = %({key})s" for key in keys if key != "user_id")
    tail = f"{rest} AND status = 'active'{narrowed}"
    if "user_id" not in keys:
        return f"SELECT id, embedding <=> %(q)s AS distance FROM memories " \
               f"WHERE workspace = %(ws)s{tail} ORDER BY embedding <=> %(q)s LIMIT %(k)s"  # fmt: skip
    size = _SIZE
    exact = (
        f"SELECT id, embedding <=> %(q)s AS distance FROM {rows}"
        if rows is not None
        else f"""SELECT id, distance FROM (
             SELECT id, embedding <=> %(q)s AS distance FROM memories
             WHERE workspace = %(ws)s AND user_id = %(user_id)s{tail} OFFSET 0
         ) exact WHERE {size} <= {EXACT_MAX}"""
    )
    bucket = f"(hashtext(%(ws)s::text || '/' || %(user_id)s::text) & {BUCKETS - 1})"
    # Exact: the subquery (OFFSET 0 keeps it whole) reads the scope's rows through its btree
    # and computes every distance; ordering its output cannot use an HNSW index.
    # Graph: the bucket's condition lets the planner use the bucket's partial index; the scope
    # condition filters the walk (iterative scans go on until k rows pass). The user is
    # matched through coalesce() so that no btree serves it: the planner, which misjudges
    # how few rows the bucket's condition leaves, would otherwise sort the user's rows.
    return f"""
        ({exact} ORDER BY distance LIMIT %(k)s)
        UNION ALL
        (SELECT id, embedding <=> %(q)s FROM memories
         WHERE {BUCKET_OF_ROW} = {bucket} AND workspace = %(ws)s
           AND coalesce(user_id, '') = %(user_id)s::text{tail} AND {size} > {EXACT_MAX}
         ORDER BY embedding <=> %(q)s LIMIT %(k)s)
    """
