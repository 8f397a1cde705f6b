"""Configuration.

Precedence, per field: an argument given to :class:`Config` > an ``ENGRAMMAR_<FIELD>``
environment variable > a TOML file named by ``ENGRAMMAR_CONFIG`` (top-level keys, or an
``[engrammar]`` table) > the default below. Invalid values fail at construction with a
:class:`~engrammar.errors.ValidationError` naming the field.
"""

from __future__ import annotations

import dataclasses
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

__all__ = ["Config"]

_UNSET: Any = object()


def _opt(default: Any, doc: str) -> Any:
    return field(default=_UNSET, metadata={"default": default, "doc": doc})


@dataclass(frozen=True)
class Config:
    """Every setting of engrammar, with the MemWire seed's feedback parameters and defaults."""

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

    # -- input limits ------------------------------------------------------------------------
    max_content_chars: int = _opt(1_000_000, "Longest memory content accepted, in characters.")
    max_messages_per_add: int = _opt(10_000, "Most messages accepted by one add call.")
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
        "A message longer than this gets extra vectors for its overlapping windows of about "
        "this many characters (two sentences or so) past the first; vector search scores it "
        "by its best window, so a fact said in passing is matched by its own words rather "
        "than by the whole message's average, and one past what the model reads is found at "
        "all (0 = one vector per message).",
    )
    chunk_assistant: bool = _opt(
        False,
        "Give an assistant's long messages window vectors too. Off: recall discounts "
        "assistant turns (assistant_penalty), and on LongMemEval's chats their windows were "
        "45% of the texts add embedded, the longest ones; such a message is still found by "
        "its opening's vector and by full-text search over its whole text.",
    )
    bm25_k1: float = _opt(1.2, "BM25 term-frequency saturation.")
    bm25_b: float = _opt(0.5, "BM25 length normalisation (0 = none, 1 = full).")
    keyword_weight: float = _opt(0.45, "Share of the keyword score in the fused relevance.")
    fusion: str = _opt("score", "'score' (normalised score blend) or 'rrf' (reciprocal rank).")
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
        "towards that message: a reply means little without what it answers.",
    )
    session_spread: float = _opt(
        0.3,
        "In a chat with an assistant, each further candidate of one session is discounted by "
        "this share more than the one before it (relevance x (1 - this)^n for its n-th), so "
        "other sessions' best turns can pass a session's second-best. Chats between people "
        "are left alone (a topic is talked through within a session there). 0 = off.",
    )
    session_spread_requests: bool = _opt(
        False,
        "Whether session_spread also applies to a request for suggestions ('Can you recommend "
        "...?', 'Any tips for ...?'): what the user said on its topic is mostly in one "
        "conversation, whose second and third messages are as wanted as its first.",
    )
    request_keywords: bool = _opt(
        True,
        "In a request for suggestions ('Can you recommend ...?', 'Any tips for ...?'), the "
        "words that frame it (recommend, tips, ideas, this weekend, upcoming, I'm thinking of "
        "/ planning / looking for ...) are none of its terms: keyword search and the term test "
        "of recency_term_share leave them out. In a chat with an assistant nearly every "
        "message asks for something in those words.",
    )
    request_keyword_weight: float = _opt(
        0.3,
        "keyword_weight for a request for suggestions ('Can you recommend ...?'): what is left "
        "of its words after its frame names the topic in words every request on the topic "
        "shares, while the user's own statement on it is found by its meaning.",
    )
    context_weight: float = _opt(
        0.5,
        "With embed_context, a reply's vector is its own plus this share of the vector of the "
        "message it answers (renormalised); no text is embedded twice.",
    )
    proximity_weight: float = _opt(
        0.3,
        "Relevance x (1 + this x the share of the query's word pairs a memory says within "
        "proximity_window words of each other): a message that names the asked words together "
        "tells the fact more often than one that scatters them. 0 = off.",
    )
    proximity_window: int = _opt(
        12, "Most words from one query word to another that count as said together."
    )
    speaker_boost: float = _opt(
        1.5, "Relevance bonus (x 1+boost) for memories spoken by the one person a query names."
    )
    question_penalty: float = _opt(
        0.5,
        "Relevance x (1 - penalty x the share of the message its closing question takes) for "
        "memories that end with a question: asking states little.",
    )
    assistant_penalty: float = _opt(
        0.9,
        "Relevance x (1 - penalty) for the assistant's messages unless a query asks what the "
        "assistant said: facts about the user are in the user's own words; and for system "
        "prompts unless it asks about the assistant's instructions.",
    )
    query_without_speakers: bool = _opt(
        True,
        "Embed a query without the names of the speakers it mentions (the speaker boost "
        "matches the person; the query vector then matches the topic).",
    )
    time_boost: float = _opt(
        1.0, "Relevance bonus (x 1+boost) for memories dated near the date or month a query names."
    )
    event_cover: bool = _opt(
        True,
        'A question naming several events ("which came first, A or B?", "how many days '
        'between A and B?", "how long had I ... when B?") gets each event\'s best memory '
        "among the first 20 moved up to where the list would otherwise repeat an event already "
        "covered, and a later message of a conversation naming events is preceded by the "
        "first one there that told of them, read from the full-text index when search left "
        "it out (recall/events.py, engine/event_order.py; bench/results/lme_notes.md, "
        "sessions 12, 22 and 23).",
    )
    group_repeats: bool = _opt(
        True,
        "Of the copies of a text said several times (case and spacing aside), the newest takes "
        "the best place any copy earned, the next newest the next, each with the component "
        "repeats (recall/repeats.py). formatted shows such a text once either way.",
    )
    neighbour_weight: float = _opt(
        0.3,
        "Share of the best conversation neighbour's relevance (less half the memory's own: "
        "support fills a gap), times the sequence edge's weight, added to a memory's "
        "relevance; 0 switches it off.",
    )
    second_neighbour_weight: float = _opt(
        0.6,
        "Share of the relevance of the message two steps away in the same conversation (in a "
        "dialogue: the same speaker after the other's reply), times the weaker of the two "
        "sequence edges, added to a memory's relevance; 0 switches it off.",
    )

    # -- MemWire feedback loop (seed 000; names and defaults are part of the contract) --------
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
    graph_depth: int = _opt(2, "Hops recall follows from its seeds; 0 switches the graph off.")
    graph_fanout: int = _opt(3, "Strongest edges followed from each node per hop.")
    graph_seeds: int = _opt(5, "Best direct hits recall starts walking the graph from.")
    graph_min_edge_weight: float = _opt(0.2, "Edges weaker than this are not followed.")
    graph_weight: float = _opt(
        0.1,
        "Weight of graph support (seed relevance x edge weights along the best path) added to a "
        "memory's relevance. 0 keeps the walks (paths, feedback) but ranks without them; "
        "graph_depth=0 switches the graph off. 0.1 measured best of 0 / 0.1 / 0.3 / 0.5 on "
        "LoCoMo (bench/results/graph.md).",
    )
    graph_max_paths: int = _opt(20, "Most paths a recall returns (and feedback learns from).")
    tension_min_similarity: float = _opt(
        0.3, "Cosine two memories need before they are checked for a contradiction."
    )
    superseded_factor: float = _opt(
        0.5,
        "Share of its score a superseded memory keeps for a question about the present (it hands "
        "its score on to the memory that replaced it); 1 ranks it as if current.",
    )
    recency_similarity: float = _opt(
        0.3,
        "For a question about the speaker's own present, a later memory at least this similar "
        "to an earlier one ranked above it moves above it (a restated, updated fact; see "
        "recency_term_share). Only own words restate: never a tool call, a tool's output, a "
        "system prompt or an assistant's answer. 1 switches it off. 0.3 with the term share "
        "measured on the LongMemEval dev set with its evidence at its own dates and at random ones "
        "(bench/results/lme_notes.md, session 9).",
    )
    recency_term_share: float = _opt(
        0.75,
        "A later memory restates an earlier one (recency_similarity) only if it holds at least "
        "this share of the question's terms the earlier one holds: likeness alone also lifts a "
        "later message merely on the same subject above the fact asked about. 0 = likeness "
        "only.",
    )
    recency_new_amount: bool = _opt(
        True,
        "A later memory that gives a new figure for what an earlier one counted restates it "
        "even when it repeats fewer of the question's terms (recency_term_share): a sentence of "
        'each holds an amount of the same unit ("20 videos so far" / "30 videos so far"), '
        "the later value is new, and the later sentence repeats half of the question's terms "
        "the earlier sentence holds (bench/results/lme_notes.md, session 11).",
    )
    recency_min_ratio: float = _opt(
        0.5,
        "Least share of the earlier memory's score a later one needs to move above it (see "
        "recency_similarity).",
    )

    # -- learning from explicit feedback (seeds 002 and 003) ----------------------------------
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
        "An accepting or correcting rating carries to another query in full only when the "
        "memory is at least as close (cosine) to that query as to the rated one; its weight "
        "falls to 0 when the memory is this much less close (a question on the rated one's "
        "topic but about something else is not lifted by it). 0 = off.",
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
        "the two questions' cosine (corrected ratings the other way). 0 = off, the default: "
        "on LoCoMo it carried little to related questions (bench/results/feedback_carryover.md).",
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
        "Share of its weight a rating keeps when the reply of the same recall contradicts it.",
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
