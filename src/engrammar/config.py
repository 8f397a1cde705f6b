"""Configuration.

Precedence, per field: an argument given to :class:`Config` > an ``ENGRAMMAR_<FIELD>``
environment variable > a TOML file named by ``ENGRAMMAR_CONFIG`` (top-level keys, or an
``[engrammar]`` table) > the default below. Invalid values fail at construction with a
:class:`~engrammar.errors.ValidationError` naming the field.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config_checks import validate
from .errors import ValidationError

__all__ = ["Config", "RankingProfile"]

_UNSET: Any = object()


def _opt(default: Any, doc: str) -> Any:
    return field(default=_UNSET, metadata={"default": default, "doc": doc})


def _w(default: Any, doc: str, low: float = 0.0, high: float | None = None) -> Any:
    return field(default=default, metadata={"doc": doc, "low": low, "high": high})


@dataclass(frozen=True)
class RankingProfile:
    """The weights of each ranking stage (see docs/recall.md, "How recall ranks")."""

    keyword_weight: float = _w(
        0.45,
        "Share of the full-text (BM25) score in a candidate's relevance; the rest is its best "
        "vector match (the message's own vector or one of its windows). Each score is first "
        "divided by the best of its list.",
        high=1.0,
    )
    session_weight: float = _w(
        0.1,
        "(Relevance + this x the best relevance of any candidate of the same session) / "
        "(1 + this): the turns of a conversation that matches the query strongly rise towards "
        "its best turn together. 0 = off.",
    )
    neighbour_weight: float = _w(
        0.0,
        "Relevance + this x (the best adjacent message's relevance - half the memory's own, "
        "never below 0) x the sequence edge's weight: a reply that means little alone gains "
        "from the message it answers. 0 = off.",
    )
    answer_weight: float = _w(
        0.15,
        "Relevance x (1 + this) for a message that states the kind of thing the question asks "
        "for: a date or time for 'When ...?' or 'What year ...?', a figure or an amount for "
        "'How many / much / long / often ...?'. 0 = off.",
    )
    time_weight: float = _w(
        1.0,
        "Relevance x (1 + this) for a memory dated within a few days of the date or period the "
        "query names ('in May 2023', 'two weeks ago'); half that within a month after it.",
    )
    role_weight: float = _w(
        0.5,
        "Relevance x (1 - this) for the other side's messages when the question says whose "
        "words it asks about: the assistant's for a first-person question about the asker "
        "('Where did I park?'), the user's for one about what the assistant said ('the hotel "
        "you recommended'); for a question naming a speaker ('What did Caroline say?'), the "
        "messages of speakers it does not name. At most 0.5; 0 = off.",
        high=0.5,
    )
    question_weight: float = _w(
        0.3,
        "Relevance x (1 - this) for a message whose every sentence is a question: it asks "
        "for a fact and states none, so it matches the query's words without answering it. "
        "0 = off.",
        high=0.9,
    )
    names_in_vector: int = _w(
        0,
        "1 = the query's vector reads the question as written; 0 reads it as the person it asks "
        "about would put it ('When did Melanie take her kids out?' as 'When did I take my kids "
        "out?'): a person's own messages say 'I' and seldom their name, and keyword search "
        "still matches the name.",
        high=1,
    )
    graph_weight: float = _w(
        0.0,
        "Score + this x graph support (a seed's relevance x the edge weights along the best "
        "walk that reaches the memory). 0 (the default) ranks without it; the walks still run, "
        "so recall returns its paths and feedback learns on their edges.",
    )
    graph_depth: int = _w(2, "Hops a walk follows from its seed; 0 switches the graph off.", high=4)
    graph_fanout: int = _w(3, "Strongest edges followed from each node per hop.", low=1)
    graph_seeds: int = _w(5, "Best candidates the walks start from.", low=1)
    graph_min_edge_weight: float = _w(0.2, "Edges weaker than this are not followed.", high=1.0)
    superseded_factor: float = _w(
        1.0,
        "For a question about the present, the memory that replaced another ranks above it "
        "(with at least its score) and the replaced one keeps this share of its score, "
        "staying below its replacement: 1 keeps it just below, lower pushes it further down.",
        high=1.0,
    )
    recency_similarity: float = _w(
        1.0,
        "For a question about the asker's own present, a later memory at least this similar "
        "(cosine) to an earlier one ranked above it moves above it: a restated, updated fact. "
        "1 = off (the default; 0.3 turns it on).",
        high=1.0,
    )
    recency_term_share: float = _w(
        0.75,
        "A later memory restates an earlier one only if it holds at least this share of the "
        "query terms the earlier one holds (a new figure for the same count halves it).",
        high=1.0,
    )
    recency_min_ratio: float = _w(
        0.5,
        "Least share of the earlier memory's score a restatement needs to move above it.",
        high=1.0,
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            name = f"ranking.{f.name}"
            if f.type in ("int", int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValidationError(name, f"must be an integer, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValidationError(name, f"must be a number, got {value!r}")
            elif not math.isfinite(value):
                raise ValidationError(name, f"must be a finite number, got {value!r}")
            low, high = f.metadata["low"], f.metadata["high"]
            if value < low:
                raise ValidationError(name, f"must be >= {low:g}, got {value!r}")
            if high is not None and value > high:
                raise ValidationError(name, f"must be <= {high:g}, got {value!r}")

    @classmethod
    def describe(cls) -> dict[str, tuple[Any, str]]:
        """Every weight with its default and a one-line description."""
        return {f.name: (f.default, f.metadata["doc"]) for f in dataclasses.fields(cls)}

    def replace(self, **changes: Any) -> RankingProfile:
        """A copy with some weights changed (validated like a new profile)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def of(cls, value: Any, name: str = "profile") -> RankingProfile:
        """``value`` as a profile: a profile, a mapping of weights (the rest default), or a
        JSON object; ``None`` is the default profile."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValidationError(name, "must be a JSON object of ranking weights") from None
        if not isinstance(value, dict):
            raise ValidationError(name, f"must be an object of ranking weights, got {value!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValidationError(
                name, f"unknown ranking weights {unknown}; known: {sorted(known)}"
            )
        ints = {f.name for f in dataclasses.fields(cls) if f.type in ("int", int)}
        fixed = {
            k: (int(v) if k in ints and isinstance(v, float) and v.is_integer() else v)
            for k, v in value.items()
        }
        return cls(**fixed)


@dataclass(frozen=True)
class Config:
    """Every setting of engrammar, with MemWire's feedback parameters and defaults (engrammar is a
    drop-in for it)."""

    # -- storage -----------------------------------------------------------------------------
    path: str = _opt("./engrammar_data", "Folder of the embedded store (SQLite file inside).")
    store: str = _opt(
        "sqlite", "'sqlite' (embedded, under `path`) or a postgresql:// URL for the server store."
    )
    workspace: str = _opt("default", "Workspace used when a call names none.")
    busy_timeout_ms: int = _opt(10_000, "How long a writer waits for another process's lock.")
    ann_threshold: int = _opt(
        200_000,
        "Vectors in one (workspace, user) scope above which the embedded store searches an "
        "approximate IVF index instead of scanning exactly.",
    )
    pool_size: int = _opt(10, "Most connections one process keeps open to a PostgreSQL store.")
    hnsw_m: int = _opt(16, "pgvector HNSW: links per node, fixed when the index is built.")
    hnsw_ef_construction: int = _opt(
        64, "pgvector HNSW: candidate list size while building; higher = better index, slower."
    )
    hnsw_ef_search: int = _opt(
        100, "pgvector HNSW: candidates visited per query (raised to the query's k, max 1000)."
    )
    replica_urls: tuple[str, ...] = _opt(
        (),
        "PostgreSQL streaming replicas (postgresql:// URLs; comma-separated in the environment) "
        "that serve reads: search, get, list, stats and recall's reads. Writes, the recall "
        "record and feedback go to `store`; a replica that fails is skipped until it answers.",
    )
    replica_wait_ms: int = _opt(
        200,
        "How long a read waits for a replica to replay this process's last write before it "
        "reads from the primary instead (a caller always reads its own writes).",
    )

    # -- embedding ---------------------------------------------------------------------------
    embedder: str = _opt(
        "minilm",
        "'minilm' (offline ONNX all-MiniLM-L6-v2), 'hash' (deterministic test double), "
        "'openai' (OpenAI-compatible endpoint) or 'sentence-transformers'.",
    )
    embedder_model: str = _opt(
        "", "Model name for the 'openai' / 'sentence-transformers' embedders."
    )
    embedder_url: str = _opt("", "Base URL of an OpenAI-compatible embeddings endpoint.")
    embed_batch_size: int = _opt(64, "Texts per forward pass of the embedding model.")
    embed_cache_size: int = _opt(4096, "Entries in the LRU cache of embedded texts.")
    embed_slice_s: float = _opt(
        0.1,
        "About how long one large embedding call (an add of many messages, a document) holds "
        "the default model at a time; between its slices other calls' texts are embedded, so "
        "a search waits at most about this long for another request's add.",
    )

    # -- input limits ------------------------------------------------------------------------
    max_content_chars: int = _opt(1_000_000, "Longest memory content accepted, in characters.")
    max_messages_per_add: int = _opt(10_000, "Most messages accepted by one add call.")
    max_chunks_per_knowledge_base: int = _opt(
        5_000, "Most passages one knowledge base holds (a larger document is refused, 413)."
    )
    max_knowledge_chunks_per_scope: int = _opt(
        20_000,
        "Most knowledge-base passages one workspace and user holds across its knowledge bases "
        "(adding past it is refused, 413).",
    )
    max_request_bytes: int = _opt(
        4 * 1024 * 1024, "Largest HTTP request body `engrammar serve` accepts (413 above)."
    )
    server_threads: int = _opt(
        4,
        "Worker threads of `engrammar serve` running requests; more requests wait their turn "
        "(the work is mostly one GIL and a model run that already uses every core).",
    )
    rate_limit_per_s: float = _opt(
        0.0,
        "Requests per second one API key may make to `engrammar serve` (429 above); 0 = no limit.",
    )
    rate_limit_burst: int = _opt(
        100, "Requests one API key may make at once above `rate_limit_per_s` before a 429."
    )
    feedback_rate_limit_per_s: float = _opt(
        2.0,
        "Feedback writes (ratings, events, reviews, pairs, replies, logged events) per second "
        "one source (API key, else agent_id, else client address) may make to "
        "`engrammar serve` (429 above); 0 = no limit.",
    )
    feedback_rate_limit_burst: int = _opt(
        60, "Feedback writes one source may make at once above `feedback_rate_limit_per_s`."
    )
    cors_origins: tuple[str, ...] = _opt(
        (),
        "Browser origins (`https://app.example`) allowed to call `engrammar serve` across "
        "sites (CORS); comma-separated in the environment. Empty: no CORS headers.",
    )

    allowed_hosts: str = _opt(
        "",
        "Host names `engrammar serve` answers for besides loopback and the address it listens "
        "on (comma-separated, e.g. 'memory.example.com'); other Host headers get 421 and "
        "browser Origins outside them 403, on REST and /mcp alike. Setting it also turns the "
        "check on for a server listening on a public address.",
    )
    header_timeout_s: float = _opt(
        10.0, "Seconds `engrammar serve` waits for a request's line and headers before closing."
    )
    body_timeout_s: float = _opt(
        30.0, "Seconds `engrammar serve` waits for each next piece of a request body (408 after)."
    )
    request_deadline_s: float = _opt(
        300.0,
        "Seconds of work `engrammar serve` gives one request; an add or knowledge base still "
        "embedding after it is stopped before it writes anything (503 with Retry-After); "
        "0 = no deadline.",
    )
    cost_budget_chars_per_s: float = _opt(
        50_000.0,
        "Characters to embed (messages, documents, queries) one API key's requests may bring "
        "per second to `engrammar serve`, on average; a key over its budget gets 429 with "
        "Retry-After until it is paid back; 0 = no budget.",
    )
    cost_budget_chars_burst: int = _opt(
        8_000_000,
        "Characters one API key may bring at once above `cost_budget_chars_per_s` (a request "
        "costing more is still let through once the key's budget is full, and then paid back).",
    )
    body_deadline_s: float = _opt(
        120.0,
        "Seconds `engrammar serve` allows for a whole request body, however steadily its "
        "pieces come (408 after).",
    )
    max_pending_connections: int = _opt(
        64,
        "Connections `engrammar serve` keeps open while they are still sending headers; "
        "more are closed at once (slow-client cap).",
    )
    scope_cache_bytes: int = _opt(
        64 * 1024 * 1024,
        "Bytes of in-memory scope indexes (vectors of recent recalls per workspace and user; "
        "PostgreSQL: scope graphs, ~4 kB a memory) a process keeps; the least recently used "
        "scopes are dropped past it and rebuilt on use.",
    )
    scope_graph_max: int = _opt(
        100_000,
        "PostgreSQL: a user scope of at most this many memories keeps its graph in process "
        "past scope_cache_bytes while it is the most recently used (as the embedded store "
        "keeps its newest scope index); ~5 kB a memory, read on a worker thread (~4.4 s at "
        "100,000) while its recalls prefetch. 0: only scopes that fit scope_cache_bytes.",
    )

    # -- recall ------------------------------------------------------------------------------
    recall_limit: int = _opt(10, "Memories returned by recall/search when no limit is given.")
    candidate_pool: int = _opt(100, "Candidates taken from each of vector and keyword search.")
    knowledge_recall_limit: int = _opt(
        3, "Knowledge-base chunks a recall returns beside the memories (0 = none)."
    )
    knowledge_min_score: float = _opt(
        0.3, "Least similarity (0-1) of a knowledge-base chunk for recall to return it."
    )
    formatted_max_chars: int = _opt(4000, "Character budget of RecallResult.formatted.")
    excerpt_chars: int = _opt(
        1000,
        "A recalled memory longer than this carries an excerpt (ScoredMemory.excerpt, shown "
        "in `formatted`): the window of about this many characters holding most of the "
        "query's terms.",
    )
    chunk_chars: int = _opt(
        250,
        "A message longer than this, of any role, gets a vector for each of its overlapping "
        "windows of about this many characters (two sentences or so), and its own vector is "
        "their mean; vector search scores it by its best window, so a fact said in passing is "
        "matched by its own words (0 = one vector per message, reading its start).",
    )
    window_limit: int = _opt(
        4,
        "Most window vectors one message gets (its first windows; 1 to 64): full-text search still "
        "reads the whole text, so a fact past them is found by its words.",
    )
    ranking: RankingProfile = _opt(  # noqa: RUF009 - a frozen dataclass, immutable
        RankingProfile(),
        "The ranking's weights (RankingProfile; docs/recall.md, 'How recall ranks'): a TOML "
        "table [engrammar.ranking], or a JSON object in ENGRAMMAR_RANKING; a call may pass its "
        "own profile.",
    )
    bm25_k1: float = _opt(
        1.2,
        "BM25 term-frequency saturation: the lower, the less a term's repeats in one message add.",
    )
    bm25_b: float = _opt(0.5, "BM25 length normalisation (0 = none, 1 = full).")
    recognise_preferences: bool = _opt(
        True,
        "A user message added as kind 'message' that states a standing preference of the "
        "user ('I prefer', 'I can't stand', 'I always', a pick among options just offered) is "
        "stored as kind 'preference' (engrammar.learn.preferences).",
    )
    preferences_limit: int = _opt(
        3,
        "Most standing preferences (memories of kind 'preference') in RecallResult.preferences; "
        "0 turns the slot off.",
    )
    preferences_min_similarity: float = _opt(
        0.15,
        "Cosine with the query a standing preference needs to be in RecallResult.preferences.",
    )
    embed_context: bool = _opt(
        True,
        "Give a message that replies to someone (the message before it in the same add call, "
        "or the session's latest memory, has another speaker or role) a vector that leans "
        "towards that message: a reply means little without what it answers. The speaker is "
        "the message's name, else a label its text starts with ('Caroline: ...').",
    )
    context_weight: float = _opt(
        0.5,
        "With embed_context, a reply's vector is its own plus this share of the vector of the "
        "message it answers (renormalised); no text is embedded twice.",
    )

    # -- MemWire feedback loop (MemWire's names and defaults: part of the drop-in contract) ---
    feedback_strengthen_rate: float = _opt(
        0.1, "Base amount added to edge weights on aligned paths, scaled by alignment score."
    )
    feedback_weaken_rate: float = _opt(
        0.05, "Amount subtracted from edge weights on misaligned paths."
    )
    feedback_align_strengthen: float = _opt(0.5, "Alignment above which a path is strengthened.")
    feedback_align_weaken: float = _opt(0.2, "Alignment below which a path is weakened.")
    edge_weight_min: float = _opt(0.01, "Floor for edge weights after decay.")
    edge_weight_max: float = _opt(1.0, "Ceiling for edge weights after reinforcement.")
    feedback_recall_window_s: float = _opt(
        600.0,
        "feedback(response=...) without a recall_id acts on the scope's newest recall only if "
        "it was made within this many seconds (and has had no reply yet); an older one is "
        "refused, so a reply never lands on a recall nobody meant. 0 = no limit.",
    )

    # -- memory graph (edges built at add time, followed at recall time) ----------------------
    graph_semantic_threshold: float = _opt(
        0.5, "Cosine above which two memories of a scope get a 'semantic' edge."
    )
    graph_max_edges_per_memory: int = _opt(
        8, "Most edges leaving one memory; the strongest are kept (sequence edges first)."
    )
    graph_sequence_weight: float = _opt(
        0.5, "Initial weight of a 'sequence' edge between consecutive messages of a session."
    )
    graph_term_max_df: float = _opt(
        0.02,
        "A term links memories ('entity' edge) only if it occurs in at most this share of the "
        "scope's memories (at least 2): rare terms and names link, common words never do.",
    )
    graph_max_paths: int = _opt(20, "Most paths a recall returns (and feedback learns from).")
    tension_min_similarity: float = _opt(
        0.3, "Cosine two memories need before they are checked for a contradiction."
    )

    # -- learning from feedback records (docs/learning.md) ------------------------------------
    feedback_half_life_days: float = _opt(
        30.0, "Age in days at which a feedback signal counts half as much as a fresh one."
    )
    feedback_min_samples: float = _opt(
        3.0,
        "Shrinkage: a memory's learned adjustment reaches half its full size once this many "
        "(decayed, context-matched) consistent signals exist; one signal moves it 1/(1+N).",
    )
    feedback_max_adjustment: float = _opt(
        0.5, "Bound on the learned change of a score: relevance × (1 ± this) at most."
    )
    feedback_context_min: float = _opt(
        0.4, "Cosine between a query and a past feedback context below which it does not match."
    )
    feedback_context_full: float = _opt(
        0.8, "Cosine at which a past feedback context matches fully (linear in between)."
    )
    feedback_rating_context_min: float = _opt(
        0.5,
        "A rating that says a memory helped (accepted) or misled (corrected) counts for queries "
        "whose cosine with the rated recall's query is above this (about the memory, so it "
        "carries to related questions; a rejection only says the memory was not what that "
        "question needed and counts like a reply signal, see feedback_reply_context_min).",
    )
    feedback_rating_context_full: float = _opt(
        0.85, "Cosine at which an accepting or correcting rating counts fully."
    )
    feedback_rating_memory_margin: float = _opt(
        0.1,
        "A rating or a reply's signal on a memory, given for one question, carries to another "
        "query by how close the memory is to each (cosine): an acceptance or a correction in "
        "full only when the memory is at least as close to that query as to the rated one, a "
        "rejection or a reply that left it only when it is no closer; the weight falls to 0 "
        "when the memory is this much less (or, for a loss, more) close. A question on the "
        "rated one's topic but about something else is not lifted by an acceptance; one asking "
        "for what the memory says is not sunk by a rejection. 0 = off.",
    )
    feedback_rating_anchor: bool = _opt(
        True,
        "True: a candidate accepted for nearly the same question (the feedback_reply_context_min "
        "/ _full ramp), not contradicted by the reply of that recall, is placed at least at the "
        "level of the query's feedback_reply_top-th candidate while its learned adjustment is "
        "positive, as a memory a reply drew on is. False: an acceptance moves the score only "
        "within feedback_max_adjustment.",
    )
    feedback_anchor_bound: str = _opt(
        "ratings",
        "Which placements (a memory put at the level of a question's feedback_reply_top-th "
        "candidate) count inside their source's bound, so that one source, its share of the "
        "learned adjustment and its placement together, moves a memory's score by at most "
        "feedback_max_adjustment: 'ratings' (default) an acceptance's (feedback_rating_anchor), "
        "'all' a reply's too, 'off' none (taken whole).",
    )
    feedback_edge_context: bool = _opt(
        True,
        "True (default): what a reply's feedback added to (or took from) a graph edge counts for "
        "a recall in proportion to how well its query matches the query of the recall the reply "
        "answered (the feedback_reply_context_min / _full ramp); the edge's weight before "
        "feedback counts everywhere. False: the changed weight counts for every query "
        "(MemWire's rule as written).",
    )
    feedback_source_window_s: float = _opt(
        60.0,
        "Within each window of this many seconds, one source's signals of one kind on one "
        "memory count together as much as the heaviest alone (a flood weighs one rating); "
        "0 = off.",
    )
    feedback_same_output: float = _opt(
        0.9, "Cosine at which a memory counts as the same text as a rated or rejected output."
    )
    feedback_reply_top: int = _opt(
        5,
        "feedback(response=...): the reply's best matches in the recall's scope (up to this "
        "many) count as the memories it drew on (+1 signal); recalled ones it did not, -1.",
    )
    feedback_reply_weight: float = _opt(
        1.0, "Weight of one reply signal, relative to one rating (0 turns reply signals off)."
    )
    feedback_term_weight: float = _opt(
        0.0,
        "Learned query terms: a memory rated accepted for a question learns the question's "
        "topic terms it does not contain; a later query sharing them gives that rating a "
        "signal weighing this times the share of the query's IDF weight they cover, whatever "
        "the two questions' cosine (corrected ratings the other way). 0 = off.",
    )
    feedback_reply_context_min: float = _opt(
        0.85,
        "Cosine between a query and a past reply's recall query below which that reply's "
        "signals do not count (they are about that question, not its topic).",
    )
    feedback_reply_context_full: float = _opt(
        0.98, "Cosine at which a past reply's signals count fully (linear in between)."
    )
    feedback_conflict_weight: float = _opt(
        0.25,
        "Share of its weight the weaker signal keeps when a rating and the reply of the same "
        "recall disagree: a rejection of a memory the reply drew on (and that reply signal), or "
        "the reply's leaving a memory the user accepted (the acceptance counts in full).",
    )
    feedback_records_limit: int = _opt(
        2000,
        "Recall reads at most this many of the newest feedback events and preference pairs.",
    )

    def __new__(cls, *args: Any, **kwargs: Any) -> Config:
        # A misspelt keyword is bad input like any other: a ValidationError naming it, not the
        # TypeError the generated __init__ would raise.
        known = {f.name for f in dataclasses.fields(cls)}
        for name in kwargs:
            if name not in known:
                raise ValidationError(name, f"unknown setting{_did_you_mean(name, known)}")
        return super().__new__(cls)

    def __post_init__(self) -> None:
        _check_environment()
        file_values = _file_values()
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is _UNSET:
                env = os.environ.get(f"ENGRAMMAR_{f.name.upper()}")
                if env is not None:
                    value = _coerce(f.name, hints[f.name], env)
                elif f.name in file_values:
                    value = _coerce(f.name, hints[f.name], file_values[f.name])
                else:
                    value = f.metadata["default"]
            else:
                value = _coerce(f.name, hints[f.name], value)
            object.__setattr__(self, f.name, value)
        validate(self)

    @classmethod
    def describe(cls) -> dict[str, tuple[Any, str]]:
        """Every setting with its default and a one-line description."""
        return {f.name: (f.metadata["default"], f.metadata["doc"]) for f in dataclasses.fields(cls)}

    def replace(self, **changes: Any) -> Config:
        """A copy with some fields changed (validated like a new Config)."""
        return dataclasses.replace(self, **changes)

    @property
    def is_sqlite(self) -> bool:
        return self.store == "sqlite" or self.store.startswith("sqlite:")

    @property
    def sqlite_file(self) -> Path:
        """The SQLite database file of the embedded store."""
        if self.store.startswith("sqlite:///"):
            return Path(self.store[len("sqlite:///") :])
        return Path(self.path) / "engrammar.db"


def _did_you_mean(name: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name.lower(), sorted(known), n=1, cutoff=0.8)
    return f"; did you mean {close[0]!r}?" if close else ""


def _check_environment() -> None:
    """An ``ENGRAMMAR_*`` variable that is one typo away from a setting is an error, as the
    same typo in the TOML file is. Variables far from every setting are left alone: tools
    around engrammar (the test set-up, benchmarks) keep their own ``ENGRAMMAR_*`` names."""
    import difflib

    known = {f.name for f in dataclasses.fields(Config)} | {"config"}
    for var in os.environ:
        if not var.startswith("ENGRAMMAR_"):
            continue
        name = var[len("ENGRAMMAR_") :].lower()
        if name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.8)
        if close:
            raise ValidationError(
                var, f"unknown setting; did you mean ENGRAMMAR_{close[0].upper()}?"
            )


def _file_values() -> dict[str, Any]:
    name = os.environ.get("ENGRAMMAR_CONFIG")
    if not name:
        return {}
    try:
        data = tomllib.loads(Path(name).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValidationError("ENGRAMMAR_CONFIG", f"cannot read {name}: {exc}") from exc
    table = data.get("engrammar", data)
    known = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ValidationError("ENGRAMMAR_CONFIG", f"unknown settings {unknown} in {name}")
    return dict(table)


def _coerce(name: str, hint: Any, value: Any) -> Any:
    if isinstance(hint, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise ValidationError(name, f"must be a boolean, got {value!r}")
    if hint is int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValidationError(name, f"must be an integer, got {value!r}")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ValidationError(name, f"must be an integer, got {value!r}") from None
    if hint is float:
        if isinstance(value, bool):
            raise ValidationError(name, f"must be a number, got {value!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValidationError(name, f"must be a number, got {value!r}") from None
        if not math.isfinite(number):
            raise ValidationError(name, f"must be a finite number, got {value!r}")
        return number
    if hint is RankingProfile:
        return RankingProfile.of(value, name)
    if typing.get_origin(hint) is tuple:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
            raise ValidationError(name, f"must be a list of strings, got {value!r}")
        return tuple(i.strip() for i in items if i.strip())
    if hint is str:
        if not isinstance(value, str):
            raise ValidationError(name, f"must be a string, got {type(value).__name__}")
        return value
    return value
