"""Embedders: the protocol, the offline default, a test double, and optional providers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import EmbedderError
from .base import CachedEmbedder, Embedder, HashEmbedder

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["CachedEmbedder", "Embedder", "HashEmbedder", "make_embedder"]


def make_embedder(config: Config) -> Embedder:
    """The embedder that ``config.embedder`` names (not yet cached)."""
    kind = config.embedder
    if kind == "minilm":
        from .onnx import MiniLMEmbedder

        return MiniLMEmbedder(batch_size=config.embed_batch_size, slice_s=config.embed_slice_s)
    if kind == "hash":
        return HashEmbedder()
    if kind == "openai":
        from .providers import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(config.embedder_model, base_url=config.embedder_url or None)
    if kind == "sentence-transformers":
        from .providers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(config.embedder_model or "all-MiniLM-L6-v2")
    raise EmbedderError(
        f"unknown embedder {kind!r}: use 'minilm', 'hash', 'openai' or 'sentence-transformers'"
    )
