"""Optional embedders: an OpenAI-compatible HTTP endpoint and sentence-transformers."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbedderError
from .base import normalise

__all__ = ["OpenAICompatibleEmbedder", "SentenceTransformerEmbedder"]


class OpenAICompatibleEmbedder:
    """Embeddings from any server speaking the OpenAI ``/v1/embeddings`` API.

    Args:
        model: model name sent to the server.
        base_url: e.g. ``http://localhost:11434/v1``; defaults to ``$OPENAI_BASE_URL``.
        api_key: bearer token; defaults to ``$OPENAI_API_KEY`` (may be empty for local servers).
        dim: the model's dimension; probed with one request when not given.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
    ) -> None:
        if not model:
            raise EmbedderError("the 'openai' embedder needs a model name (embedder_model)")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/")
        if not self.base_url:
            raise EmbedderError("the 'openai' embedder needs a base URL (embedder_url)")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout = timeout
        self.name = f"openai:{model}"
        self.dim = dim if dim is not None else int(self._request(["dimension probe"]).shape[1])

    def _request(self, texts: Sequence[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": list(texts)}).encode()
        req = urllib.request.Request(
            f"{self.base_url}/embeddings",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload: dict[str, Any] = json.loads(resp.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise EmbedderError(f"embedding request to {self.base_url} failed: {exc}") from exc
        try:
            rows = sorted(payload["data"], key=lambda d: d["index"])
            return np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"unexpected embeddings response from {self.base_url}") from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        vectors = self._request(texts)
        if vectors.shape != (len(texts), self.dim):
            raise EmbedderError(f"{self.name} returned shape {vectors.shape}")
        return normalise(vectors)


class SentenceTransformerEmbedder:
    """A sentence-transformers model (needs the optional ``sentence-transformers`` install)."""

    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "sentence-transformers is not installed: pip install 'engrammar[sentence-transformers]'"
            ) from exc
        self._model = SentenceTransformer(model)
        self.name = f"st:{model}"
        dim = self._model.get_sentence_embedding_dimension()
        if not dim:
            raise EmbedderError(f"{model} does not report its embedding dimension")
        self.dim = int(dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(list(texts), convert_to_numpy=True, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)
