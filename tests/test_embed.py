from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engrammar import CachedEmbedder, Config, EmbedderError, HashEmbedder, Memory
from engrammar.embed.onnx import MiniLMEmbedder


@pytest.mark.model
def test_minilm_is_normalised_and_meaningful(minilm: MiniLMEmbedder) -> None:
    v = minilm.embed(
        [
            "I love hiking in the mountains.",
            "Mountain trekking is my passion.",
            "The tax form is due.",
        ]
    )
    assert v.shape == (3, 384)
    assert v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.5
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3


@pytest.mark.model
def test_minilm_batches_agree_with_single_calls(minilm: MiniLMEmbedder) -> None:
    texts = ["short", "a somewhat longer sentence about cooking pasta at home", "x " * 400]
    batch = minilm.embed(texts)
    for i, t in enumerate(texts):
        assert np.allclose(batch[i], minilm.embed([t])[0], atol=1e-4)


def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="cannot load the embedding model"):
        MiniLMEmbedder(model_path=tmp_path / "nope.onnx")


class _Counting:
    def __init__(self) -> None:
        self.inner = HashEmbedder(dim=32)
        self.name = self.inner.name
        self.dim = self.inner.dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)


def test_cache_embeds_each_text_once() -> None:
    inner = _Counting()
    cached = CachedEmbedder(inner, size=2)
    a = cached.embed(["a", "b", "a"])
    cached.embed(["a", "b"])
    assert inner.calls == [["a", "b"]]
    assert np.array_equal(a[0], a[2])
    cached.embed(["c"])  # evicts "a" (least recently used)
    cached.embed(["a"])
    assert inner.calls[-1] == ["a"]


def test_dimension_change_against_existing_store_is_refused(store_path: Path) -> None:
    Memory(Config(path=str(store_path)), embedder=HashEmbedder(dim=64)).close()
    with pytest.raises(EmbedderError, match="64-dimensional"):
        Memory(Config(path=str(store_path)), embedder=HashEmbedder(dim=32))


def test_an_object_that_is_not_an_embedder_is_refused(store_path: Path) -> None:
    with pytest.raises(EmbedderError):
        Memory(Config(path=str(store_path)), embedder=object())  # type: ignore[arg-type]


def test_unknown_embedder_name(store_path: Path) -> None:
    with pytest.raises(EmbedderError, match="unknown embedder"):
        Memory(Config(path=str(store_path), embedder="word2vec"))


@pytest.mark.model
def test_concurrent_calls_are_batched_and_each_gets_its_own_vectors(minilm: MiniLMEmbedder) -> None:
    import threading

    texts = [
        f"Sentence number {i} about {['tea', 'deploys', 'budgets'][i % 3]}." for i in range(48)
    ]
    alone = {t: minilm.embed([t])[0] for t in texts}
    got: dict[str, np.ndarray] = {}
    barrier = threading.Barrier(12)

    def worker(mine: list[str]) -> None:
        barrier.wait()
        for t in mine:
            got[t] = minilm.embed([t])[0]

    threads = [threading.Thread(target=worker, args=(texts[k::12],)) for k in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(got) == set(texts)
    for t in texts:  # padding inside a shared batch is masked out: the same vector
        assert float(np.dot(got[t], alone[t])) > 0.999, t
