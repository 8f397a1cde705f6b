"""A batched add's neighbour searches answered in process (PostgreSQL).

An add of many messages asks for each one's nearest stored memories. Sent as one statement,
the server walks the user's HNSW graph once per message (a scope past 2,000 memories) or
scores the scope's rows for every message (one up to 2,000): at 3,000-4,000 memories ~1.5 s
of server time per 1,000 messages when nothing else runs, and 4.4-5 s beside the batch's own
insert, which the add begins at the same time (both on a 2-core machine, with the caller's
tension rules on the third stream): the longest step of the add after the embedding.

When the scope is small enough next to the batch, the add reads the scope's vectors (and its
long memories' window vectors) instead, scores every message against all of them with one
matrix product per block of messages (:mod:`.exact_vectors`), as the embedded store does
(``ScopeIndex``), and then
reads the records and edge counts of the memories found, with their similarities as the
server computes them (numpy's rounding ranks nothing: a few more candidates than asked are
ranked by the server's figures). The search is then exact: for a scope of at most 2,000
memories the same answer as the server's statement, which scans such a scope exactly; past
that, the neighbours the embedded store finds, of which the HNSW walk finds nearly all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from .reads import M_COLUMNS
from .vectors import Vector, chunk_scope

__all__ = [
    "IN_PROCESS_MAX",
    "IN_PROCESS_MIN_QUERIES",
    "IN_PROCESS_PER_QUERY",
    "hit_rows",
    "queue_scope_vectors",
    "searched_here",
]

Cursor = psycopg.Cursor[Any]
#: The largest scope whose vectors an add reads (~1.5 kB a memory: 30 MB at this size) ...
IN_PROCESS_MAX = 20_000
#: ... and at most this many memories per message searched: a single message or a small
#: batch walks the graph on the server (reading 20,000 vectors for one message would cost
#: far more than its walk).
IN_PROCESS_PER_QUERY = 20
#: The fewest messages searched in process.
IN_PROCESS_MIN_QUERIES = 16


def searched_here(n_queries: int, size: int | None) -> bool:
    """Whether ``n_queries`` searches of a user scope of ``size`` memories (None: unknown)
    are answered in process."""
    return (
        size is not None
        and n_queries >= IN_PROCESS_MIN_QUERIES
        and size <= min(IN_PROCESS_MAX, IN_PROCESS_PER_QUERY * n_queries)
    )


def queue_scope_vectors(
    vectors: Cursor, windows: Cursor, args: dict[str, Any], keys: list[str]
) -> None:
    """Send (in the caller's pipeline) the reads of a scope's active memories' vectors and of
    their window vectors, each as one row: the ids and the vectors in pgvector's binary
    format, one after another (decoded at once by :func:`stacked`: at 10,000 memories the
    client's CPU for the read is ~11 ms instead of ~47 ms row by row, time the worker held
    the GIL beside the add's tension checks); ``args``: ``ws`` and the scope's ``keys``."""
    rest = "".join(f" AND {key} = %({key})s" for key in keys)
    vectors.execute(
        "SELECT array_agg(id ORDER BY id), string_agg(vector_send(embedding), ''::bytea "
        f"ORDER BY id) FROM memories WHERE workspace = %(ws)s{rest} AND status = 'active'",
        args,
    )
    windows.execute(
        "SELECT array_agg(c.memory_id ORDER BY c.memory_id, c.position), "
        "string_agg(vector_send(c.embedding), ''::bytea ORDER BY c.memory_id, c.position) "
        f"FROM memory_chunks c WHERE {chunk_scope(keys)}",
        args,
    )


def hit_rows(
    cur: Cursor,
    args: dict[str, Any],
    queries: np.ndarray,
    found: Sequence[Sequence[tuple[str, float]]],
    k: int,
    rows: tuple[list[str], np.ndarray],
    windowed: set[str],
) -> list[list[tuple[Any, ...]]]:
    """Each query's hits as the server's search statement gives them: ``(id, similarity,
    record columns..., vector, edge count)``, the best ``k`` first (ties by id). The
    similarities are the server's own (its cosine and its windows', as its search statement
    computes them), and the candidates ``found`` in process (a few more than ``k``) are
    ranked by them, so that numpy's rounding decides nothing; ``args``: ``ws`` and
    ``user_id``; ``rows``: the scope's ids and vectors as :func:`stacked` read them (the hits'
    vectors are taken from there); ``windowed``: the memories that have window vectors (only
    theirs are looked up: most memories have none).

    The similarities come one row per (query, candidate), the records and edge counts one
    row per memory found, both in one exchange: a batch of 1,000 messages has ~14,000
    candidates among a few thousand memories, and reading a record with its vector for every
    candidate took ~0.7-1 s of a 4,000-memory scope's add."""
    pairs = [(i + 1, mid) for i, hits in enumerate(found) for mid, _ in hits]
    if not pairs:
        return [[] for _ in found]
    ids = sorted({mid for _, mid in pairs})
    conn = cur.connection
    records = conn.cursor(binary=True)
    with conn.pipeline():
        cur.execute(
            "SELECT p.i, p.id, CASE WHEN p.w THEN least(m.embedding <=> x.q, "
            "(SELECT min(c.embedding <=> x.q) FROM memory_chunks c WHERE c.workspace = %(ws)s "
            "AND c.memory_id = p.id AND c.user_id = %(user_id)s)) ELSE m.embedding <=> x.q END "
            "FROM unnest(%(pi)s::int[], %(pid)s::text[], %(pw)s::bool[]) AS p(i, id, w) "
            "JOIN unnest(%(qs)b::vector[]) WITH ORDINALITY AS x(q, i) ON x.i = p.i "
            "JOIN memories m ON m.workspace = %(ws)s AND m.id = p.id",
            {
                **args,
                "pi": [i for i, _ in pairs],
                "pid": [mid for _, mid in pairs],
                "pw": [mid in windowed for _, mid in pairs],
                "qs": [Vector(q) for q in queries],
            },
        )
        records.execute(
            f"SELECT {M_COLUMNS}, (SELECT count(*) FROM edges e WHERE e.workspace = "
            "m.workspace AND e.src = m.id) FROM memories m WHERE m.workspace = %(ws)s "
            "AND m.id = ANY(%(ids)s)",
            {"ws": args["ws"], "ids": ids},
        )
    slot = {mid: i for i, mid in enumerate(rows[0])}
    matrix = rows[1]
    # (record columns..., vector, edge count) of each memory found
    tail = {r[0]: (*r[:-1], matrix[slot[r[0]]], r[-1]) for r in records.fetchall()}
    per_query: list[list[tuple[str, float]]] = [[] for _ in found]
    for i, mid, distance in cur.fetchall():
        per_query[i - 1].append((mid, distance))
    out = []
    for hits in per_query:
        hits.sort(key=lambda h: (h[1], h[0]))
        # (a memory forgotten between the two statements is left out, as a join would)
        kept = [(mid, distance) for mid, distance in hits if mid in tail][:k]
        out.append([(mid, 1 - distance, *tail[mid]) for mid, distance in kept])
    return out
