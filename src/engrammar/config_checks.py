"""The checks every :class:`~engrammar.config.Config` passes when it is built: each invalid
value fails with a :class:`~engrammar.errors.ValidationError` naming the field."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .errors import ValidationError

if TYPE_CHECKING:
    from .config import Config

__all__ = ["validate"]

#: An origin as browsers send it: scheme, host and optional port, nothing else.
_ORIGIN = re.compile(
    r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
)


def validate(cfg: Config) -> None:
    """Raise :class:`ValidationError` for the first invalid setting of ``cfg``."""
    _at_least(
        cfg,
        0,
        (
            "feedback_strengthen_rate",
            "feedback_weaken_rate",
            "edge_weight_min",
            "edge_weight_max",
            "bm25_k1",
            "bm25_b",
            "context_weight",
            "graph_sequence_weight",
            "rate_limit_per_s",
            "feedback_rate_limit_per_s",
            "request_deadline_s",
            "cost_budget_chars_per_s",
            "feedback_source_window_s",
            "feedback_recall_window_s",
            "feedback_reply_top",
            "feedback_reply_weight",
            "feedback_term_weight",
            "feedback_rating_memory_margin",
            "preferences_limit",
        ),
    )
    for name in (
        "feedback_align_strengthen",
        "feedback_align_weaken",
        "graph_semantic_threshold",
        "tension_min_similarity",
        "preferences_min_similarity",
        "feedback_context_min",
        "feedback_context_full",
        "feedback_rating_context_min",
        "feedback_rating_context_full",
        "feedback_same_output",
        "feedback_reply_context_min",
        "feedback_reply_context_full",
    ):
        v = getattr(cfg, name)
        if not -1.0 <= v <= 1.0:
            raise ValidationError(name, f"must be a cosine in [-1, 1], got {v!r}")
    for origin in cfg.cors_origins:
        if not _ORIGIN.fullmatch(origin):
            raise ValidationError(
                "cors_origins",
                f"{origin!r} is not an origin: give scheme://host[:port], no path, no '*'",
            )
    if cfg.edge_weight_min > cfg.edge_weight_max:
        raise ValidationError(
            "edge_weight_min",
            f"must not exceed edge_weight_max ({cfg.edge_weight_min} > {cfg.edge_weight_max})",
        )
    if cfg.feedback_align_weaken > cfg.feedback_align_strengthen:
        raise ValidationError(
            "feedback_align_weaken",
            "must not exceed feedback_align_strengthen "
            f"({cfg.feedback_align_weaken} > {cfg.feedback_align_strengthen})",
        )
    if cfg.feedback_half_life_days <= 0:
        raise ValidationError(
            "feedback_half_life_days", f"must be > 0, got {cfg.feedback_half_life_days!r}"
        )
    if cfg.feedback_min_samples < 0:
        raise ValidationError(
            "feedback_min_samples", f"must be >= 0, got {cfg.feedback_min_samples!r}"
        )
    if not 0 <= cfg.feedback_max_adjustment < 1:
        raise ValidationError(
            "feedback_max_adjustment",
            f"must be in [0, 1) so a score never turns negative, got {cfg.feedback_max_adjustment!r}",
        )
    if not 0 <= cfg.feedback_conflict_weight <= 1:
        raise ValidationError(
            "feedback_conflict_weight",
            f"must be in [0, 1], got {cfg.feedback_conflict_weight!r}",
        )
    if cfg.feedback_records_limit < 1:
        raise ValidationError(
            "feedback_records_limit", f"must be >= 1, got {cfg.feedback_records_limit!r}"
        )
    if cfg.feedback_reply_context_min >= cfg.feedback_reply_context_full:
        raise ValidationError(
            "feedback_reply_context_min",
            "must be below feedback_reply_context_full "
            f"({cfg.feedback_reply_context_min} >= {cfg.feedback_reply_context_full})",
        )
    if cfg.feedback_rating_context_min >= cfg.feedback_rating_context_full:
        raise ValidationError(
            "feedback_rating_context_min",
            "must be below feedback_rating_context_full "
            f"({cfg.feedback_rating_context_min} >= {cfg.feedback_rating_context_full})",
        )
    if cfg.feedback_context_min >= cfg.feedback_context_full:
        raise ValidationError(
            "feedback_context_min",
            "must be below feedback_context_full "
            f"({cfg.feedback_context_min} >= {cfg.feedback_context_full})",
        )
    if not 0 <= cfg.knowledge_min_score <= 1:
        raise ValidationError(
            "knowledge_min_score", f"must be in [0, 1], got {cfg.knowledge_min_score}"
        )
    if cfg.knowledge_recall_limit < 0:
        raise ValidationError(
            "knowledge_recall_limit", f"must be >= 0, got {cfg.knowledge_recall_limit}"
        )
    if cfg.chunk_chars < 0 or 0 < cfg.chunk_chars < 100:
        raise ValidationError("chunk_chars", f"must be 0 (off) or >= 100, got {cfg.chunk_chars!r}")
    if cfg.bm25_b > 1:
        raise ValidationError("bm25_b", f"must be in [0, 1], got {cfg.bm25_b}")
    _at_least(
        cfg,
        1,
        (
            "busy_timeout_ms",
            "ann_threshold",
            "embed_batch_size",
            "max_content_chars",
            "max_messages_per_add",
            "max_chunks_per_knowledge_base",
            "max_knowledge_chunks_per_scope",
            "cost_budget_chars_burst",
            "recall_limit",
            "candidate_pool",
            "window_limit",
            "formatted_max_chars",
            "excerpt_chars",
            "graph_max_edges_per_memory",
            "graph_max_paths",
            "pool_size",
            "hnsw_ef_search",
            "max_request_bytes",
            "rate_limit_burst",
            "feedback_rate_limit_burst",
            "server_threads",
            "max_pending_connections",
        ),
    )
    if not 0 < cfg.graph_term_max_df <= 1:
        raise ValidationError(
            "graph_term_max_df", f"must be in (0, 1], got {cfg.graph_term_max_df}"
        )
    if cfg.graph_sequence_weight > cfg.edge_weight_max:
        raise ValidationError(
            "graph_sequence_weight", f"must not exceed edge_weight_max ({cfg.edge_weight_max})"
        )
    if not 2 <= cfg.hnsw_m <= 100:
        raise ValidationError("hnsw_m", f"must be in [2, 100], got {cfg.hnsw_m}")
    if not 2 * cfg.hnsw_m <= cfg.hnsw_ef_construction <= 1000:
        raise ValidationError(
            "hnsw_ef_construction",
            f"must be in [2 * hnsw_m, 1000], got {cfg.hnsw_ef_construction}",
        )
    if cfg.hnsw_ef_search > 1000:
        raise ValidationError("hnsw_ef_search", f"must be <= 1000, got {cfg.hnsw_ef_search}")
    if cfg.window_limit > 64:
        raise ValidationError("window_limit", f"must be <= 64, got {cfg.window_limit}")
    for name in ("header_timeout_s", "body_timeout_s", "body_deadline_s", "embed_slice_s"):
        if getattr(cfg, name) <= 0:
            raise ValidationError(name, f"must be > 0, got {getattr(cfg, name)!r}")
    if cfg.scope_cache_bytes < 0:
        raise ValidationError("scope_cache_bytes", "must be >= 0")
    if cfg.scope_graph_max < 0:
        raise ValidationError("scope_graph_max", "must be >= 0")
    if cfg.embed_cache_size < 0:
        raise ValidationError("embed_cache_size", "must be >= 0")
    if cfg.feedback_anchor_bound not in ("ratings", "all", "off"):
        raise ValidationError(
            "feedback_anchor_bound",
            f"must be 'ratings', 'all' or 'off', got {cfg.feedback_anchor_bound!r}",
        )
    if not cfg.workspace.strip():
        raise ValidationError("workspace", "must be a non-empty string")
    if not (cfg.is_sqlite or cfg.store.startswith(("postgresql://", "postgres://"))):
        raise ValidationError(
            "store", f"must be 'sqlite' or a postgresql:// URL, got {cfg.store!r}"
        )
    for url in cfg.replica_urls:
        if not url.startswith(("postgresql://", "postgres://")):
            raise ValidationError("replica_urls", "each must be a postgresql:// URL")
    if cfg.replica_urls and cfg.is_sqlite:
        raise ValidationError("replica_urls", "read replicas need a PostgreSQL `store`")
    if cfg.replica_wait_ms < 0:
        raise ValidationError("replica_wait_ms", "must be >= 0")


def _at_least(cfg: Config, least: int, names: tuple[str, ...]) -> None:
    for name in names:
        if getattr(cfg, name) < least:
            raise ValidationError(name, f"must be >= {least}, got {getattr(cfg, name)!r}")
