"""engrammar (embedded SQLite store, default config) under the shared peer workload."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from peerlib import Adapter, Limit, Unsupported, main


class LookupEmbedder:
    """The real MiniLM embedder, answering texts already embedded by the raw-embedder floor
    from those vectors (identical model and code), so the quality pass re-times nothing."""

    def __init__(self, inner: Any, table: dict[str, np.ndarray]) -> None:
        self.inner, self.table = inner, table
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing = [i for i, t in enumerate(texts) if t not in self.table]
        for i, t in enumerate(texts):
            if t in self.table:
                out[i] = self.table[t]
        if missing:
            out[missing] = self.inner.embed([texts[i] for i in missing])
        return out


class Recorder:
    """engrammar's default embedder, keeping each vector it computes for an add (a dict store
    per text), so the exact-scan limit and the other systems reuse them without re-embedding."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.table: dict[str, np.ndarray] = {}
        self.active = False
        self.seen: list[str] = []  # every text embedded while active (the last add's)

    def embed(self, texts: list[str]) -> np.ndarray:
        out: np.ndarray = self.inner.embed(texts)
        if self.active:
            self.table.update(zip(texts, out, strict=True))
            self.seen.extend(texts)
        return out


class Engrammar(Adapter):
    name = "engrammar"
    limit: Limit | None = None

    def import_system(self) -> None:
        global Config, Memory
        from engrammar import Config, Memory

    def open(self, path: Path, job: dict[str, Any]) -> None:
        embedder = None
        self.locomo: dict[str, Any] | None = None
        if job["phase"] == "quality":
            # engrammar's own LoCoMo ingestion (bench/_locomo.py, as bench/ranking.py's locomo-rich):
            # one add per session, speaker as the message name, session date as timestamp.
            import sys

            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            import _locomo as ev

            self.ev = ev
            self.locomo = {s["sample_id"]: s for s in ev.load(job["data"])}
            self.notes.append(
                "quality: ingested by bench/_locomo.py's ingest (one add per session, "
                "speaker as name, session date as timestamp), recalled as _locomo.ask does"
            )
        elif job.get("lookup"):
            from engrammar.embed.onnx import MiniLMEmbedder

            w = json.loads(Path(job["workload"]).read_text())
            vecs = np.load(job["vectors"])
            table = dict(zip(w["texts"][: w["n_turns"]], vecs[: w["n_turns"]], strict=True))
            embedder = LookupEmbedder(MiniLMEmbedder(), table)
            self.notes.append("quality: turn vectors from the raw-embedder pass (same model)")
        self.recorder: Recorder | None = None
        if job["phase"] == "large" and self.limit is None:
            from engrammar.embed.onnx import MiniLMEmbedder

            self.limit = Limit(MiniLMEmbedder(), {})
        if job["phase"] == "speed":
            from engrammar.embed.onnx import MiniLMEmbedder

            if self.limit is None:
                inner = MiniLMEmbedder()
                self.table: dict[str, np.ndarray] = {}
                # The same raw embedder (same session, no cache), timed beside the adds.
                self.limit = Limit(inner, self.table)
            self.recorder = Recorder(self.limit.embedder)
            self.recorder.table = self.table
            embedder = self.recorder
            self.notes.append(
                "speed: default MiniLM embedder behind a recorder keeping each add's vectors "
                "(one dict store per text) for the limit and the other systems"
            )
        url = job.get("store_urls", {}).get(path.name)
        config = Config(path=str(path), store=url) if url else Config(path=str(path))
        self.m = Memory(config, embedder=embedder)
        self.refs: dict[str, list[str]] = {}

    def _keep(self, ids: list[str], refs: list[str]) -> None:
        for mid, ref in zip(ids, refs, strict=True):
            self.refs.setdefault(mid, []).append(ref)

    def _recording(self, on: bool) -> None:
        if self.recorder is not None:
            if on:
                self.recorder.seen = []
            self.recorder.active = on

    def embedded_extra(self, texts: list[str]) -> list[str]:
        """The chunk windows the last add embedded besides the messages (a long message's
        windows past its first; ``Config.chunk_chars``)."""
        if self.recorder is None:
            return []
        left = Counter(texts)
        extra = []
        for t in self.recorder.seen:
            if left[t] > 0:
                left[t] -= 1
            else:
                extra.append(t)
        return extra

    def add_one(self, scope: str, text: str, ref: str) -> None:
        self._recording(True)
        self._keep(self.m.add(text, user_id=scope), [ref])
        self._recording(False)

    def add_many(self, scope: str, texts: list[str], refs: list[str]) -> None:
        self._recording(True)
        ids = self.m.add([{"role": "user", "content": t} for t in texts], user_id=scope)
        self._recording(False)
        self._keep(ids, refs)

    def ingest_conversation(self, sample_id: str, dia_ids: list[str]) -> bool:
        if self.locomo is None:
            return False
        keep = set(dia_ids)
        sample = json.loads(json.dumps(self.locomo[sample_id]))
        conv = sample["conversation"]
        for key, value in list(conv.items()):
            if key.startswith("session_") and isinstance(value, list):
                conv[key] = [t for t in value if t["dia_id"] in keep]
        self.ev.ingest(self.m, sample)
        return True

    def recall(self, scope: str, query: str, k: int) -> list[str]:
        r = self.m.recall(query, user_id=scope, limit=k)
        if self.locomo is not None:
            return [
                str(m.memory.metadata["dia_id"])
                for m in r.memories
                if "dia_id" in m.memory.metadata
            ]
        out: list[str] = []
        for item in r.memories:
            out.extend(self.refs.get(item.id, [item.id]))
        return out

    def feedback(self, scope: str, response: str) -> Any:
        fb = getattr(self.m, "feedback", None)
        if fb is None:
            raise Unsupported("Memory.feedback is not on main yet (graph branch)")
        return fb(response=response, user_id=scope)

    def bulk_fill(
        self, scope: str, texts: list[str], refs: list[str], vectors: np.ndarray, budget: Any
    ) -> tuple[str, int]:
        from engrammar.store import NewMemory

        ws = self.m.config.workspace
        now = time.time()
        for start in range(0, len(texts), 5000):
            rows = [
                NewMemory(
                    id=uuid.uuid4().hex,
                    workspace=ws,
                    user_id=scope,
                    agent_id=None,
                    session_id=None,
                    role="user",
                    content=texts[i],
                    kind="message",
                    created_at=now,
                    metadata={},
                    dedup_key=uuid.uuid4().hex,
                    embedding=vectors[i],
                )
                for i in range(start, min(len(texts), start + 5000))
            ]
            self.m.store.add_memories(rows)
        return "Memory.store.add_memories in chunks of 5,000 with precomputed vectors", len(texts)

    def close(self) -> None:
        self.m.close()


if __name__ == "__main__":
    import sys

    adapter = Engrammar()
    if json.loads(Path(sys.argv[1]).read_text()).get("store_urls"):
        adapter.name = "engrammar-pg"
    main(adapter)
