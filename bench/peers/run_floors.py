"""The floors, in the project's environment: exact numpy vector search over the MiniLM vectors
(the physical limit of recall) and plain BM25 (bm25s). ``job["system"]`` picks ``numpy`` or
``bm25``. The raw embedder alone is timed inside engrammar's own speed pass (beside each add),
which also saves the vectors of every workload text (job["vectors"]); numpy reuses them, so
each text is embedded once by the same model and code.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from peerlib import Adapter, main


class _Scope:
    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.texts: list[str] = []
        self.refs: list[str] = []
        self.matrix = np.empty((0, 384), dtype=np.float32)
        self.index: Any = None


class NumpyAdapter(Adapter):
    """Exact cosine search: embed the query, one matrix product, top k."""

    name = "numpy"

    def import_system(self) -> None:
        global MiniLMEmbedder
        from engrammar.embed.onnx import MiniLMEmbedder

    def open(self, path: Path, job: dict[str, Any]) -> None:
        self.e = MiniLMEmbedder()
        self.path = path
        self.scopes: dict[str, _Scope] = {}
        saved = path / "matrix.npz"
        if saved.is_file():
            z = np.load(saved, allow_pickle=False)
            s = self.scopes.setdefault("bench", _Scope())
            s.matrix, s.refs = z["matrix"], list(z["refs"])
            return
        w = json.loads(Path(job["workload"]).read_text())
        vecs = np.load(job["vectors"])
        self.table = dict(zip(w["texts"][: len(vecs)], vecs, strict=True))

    def _s(self, scope: str) -> _Scope:
        return self.scopes.setdefault(scope, _Scope())

    def add_one(self, scope: str, text: str, ref: str) -> None:
        s = self._s(scope)
        s.parts.append(self.table[text][None, :])
        s.refs.append(ref)

    def add_many(self, scope: str, texts: list[str], refs: list[str]) -> None:
        s = self._s(scope)
        s.parts.append(np.stack([self.table[t] for t in texts]))
        s.refs.extend(refs)

    def flush(self) -> None:
        for s in self.scopes.values():
            if s.parts:
                s.matrix = np.vstack([s.matrix, *s.parts])
                s.parts = []

    def recall(self, scope: str, query: str, k: int) -> list[str]:
        s = self._s(scope)
        qv = self.e.embed([query])[0]
        sims = np.einsum("ij,j->i", s.matrix, qv)  # the fastest exact scan (see peerlib.Limit)
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top])]
        return [s.refs[i] for i in top]

    def bulk_fill(
        self, scope: str, texts: list[str], refs: list[str], vectors: np.ndarray, budget: Any
    ) -> tuple[str, int]:
        s = self._s(scope)
        s.matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        s.refs = list(refs)
        return "one float32 matrix of the precomputed vectors", len(texts)

    def close(self) -> None:
        s = self.scopes.get("bench")
        if self.path.name == "A" and s is not None and not (self.path / "matrix.npz").exists():
            self.path.mkdir(parents=True, exist_ok=True)
            np.savez(self.path / "matrix.npz", matrix=s.matrix, refs=np.array(s.refs))


class BM25Adapter(Adapter):
    """bm25s with English stop words and the Snowball stemmer; rebuilt over the whole corpus."""

    name = "bm25"

    def import_system(self) -> None:
        global bm25s, Stemmer
        import bm25s
        import Stemmer

    def open(self, path: Path, job: dict[str, Any]) -> None:
        self.stemmer = Stemmer.Stemmer("english")
        self.path = path
        self.scopes: dict[str, _Scope] = {}
        if (path / "index").is_dir():
            s = self._s("bench")
            s.index = bm25s.BM25.load(str(path / "index"))
            s.refs = json.loads((path / "refs.json").read_text())

    def _s(self, scope: str) -> _Scope:
        return self.scopes.setdefault(scope, _Scope())

    def add_many(self, scope: str, texts: list[str], refs: list[str]) -> None:
        s = self._s(scope)
        s.texts.extend(texts)
        s.refs.extend(refs)
        s.index = None

    def flush(self) -> None:
        for s in self.scopes.values():
            if s.index is None and s.texts:
                tokens = bm25s.tokenize(
                    s.texts, stopwords="en", stemmer=self.stemmer, show_progress=False
                )
                s.index = bm25s.BM25()
                s.index.index(tokens, show_progress=False)

    def recall(self, scope: str, query: str, k: int) -> list[str]:
        s = self._s(scope)
        if s.index is None:
            self.flush()
        q = bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not q.vocab:
            return []
        docs, _scores = s.index.retrieve(q, k=min(k, len(s.refs)), show_progress=False)
        return [s.refs[int(i)] for i in docs[0]]

    def bulk_fill(
        self, scope: str, texts: list[str], refs: list[str], vectors: np.ndarray, budget: Any
    ) -> tuple[str, int]:
        self.add_many(scope, texts, refs)
        return "index built over the texts (vectors unused)", len(texts)

    def close(self) -> None:
        s = self.scopes.get("bench")
        if self.path.name == "A" and s is not None and s.index is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            if not (self.path / "index").is_dir():
                s.index.save(str(self.path / "index"))
                (self.path / "refs.json").write_text(json.dumps(s.refs))


ADAPTERS = {"numpy": NumpyAdapter, "bm25": BM25Adapter}

if __name__ == "__main__":
    job = json.loads(Path(sys.argv[1]).read_text())
    main(ADAPTERS[job["system"]]())
