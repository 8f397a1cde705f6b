"""mem0 (mem0ai, its own virtual environment) under the shared peer workload.

``add(..., infer=False)`` stores each message as it is, so no LLM is called; its default local
vector store (Qdrant in local mode) under the run's folder; its FastEmbed embedder reading the
same local MiniLM folder as MemWire. mem0 builds an OpenAI client at construction even when no
LLM is ever called, so the LLM config gets a placeholder key and a closed loopback URL: any call
would fail at once instead of reaching a network.
"""

from __future__ import annotations

import hashlib
import json
import uuid
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from peerlib import Adapter, Unsupported, main

warnings.filterwarnings("ignore", category=FutureWarning)


class Mem0Adapter(Adapter):
    name = "mem0"

    def import_system(self) -> None:
        global Memory
        from mem0 import Memory

    def open(self, path: Path, job: dict[str, Any]) -> None:
        path.mkdir(parents=True, exist_ok=True)
        cfg = {
            "embedder": {
                "provider": "fastembed",
                "config": {
                    "model": "sentence-transformers/all-MiniLM-L6-v2",
                    "embedding_dims": 384,
                },
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": str(path / "qdrant"),
                    "collection_name": "bench",
                    "embedding_model_dims": 384,
                },
            },
            "llm": {
                "provider": "openai",
                "config": {
                    "api_key": "unused-infer-false",
                    "openai_base_url": "http://127.0.0.1:9/v1",
                },
            },
            "history_db_path": str(path / "history.db"),
        }
        self.m = Memory.from_config(cfg)
        self.refs: dict[str, str] = {}
        if job.get("lookup"):
            w = json.loads(Path(job["workload"]).read_text())
            vecs = np.load(job["vectors"])
            table = dict(
                zip(w["texts"][: w["n_turns"]], vecs[: w["n_turns"]].tolist(), strict=True)
            )
            inner = self.m.embedding_model.embed

            def embed(text: str, memory_action: Any = None) -> Any:
                return table.get(text) or inner(text, memory_action)

            self.m.embedding_model.embed = embed
            self.notes.append("quality: turn vectors from the raw-embedder pass (same model)")

    def add_one(self, scope: str, text: str, ref: str) -> None:
        r = self.m.add([{"role": "user", "content": text}], user_id=scope, infer=False)
        for item in r["results"]:
            self.refs[item["id"]] = ref

    def add_many(self, scope: str, texts: list[str], refs: list[str]) -> None:
        r = self.m.add([{"role": "user", "content": t} for t in texts], user_id=scope, infer=False)
        for item, ref in zip(r["results"], refs, strict=True):
            self.refs[item["id"]] = ref

    def recall(self, scope: str, query: str, k: int) -> list[str]:
        r = self.m.search(query, filters={"user_id": scope}, top_k=k)
        return [self.refs.get(x["id"], x["id"]) for x in r["results"]]

    def feedback(self, scope: str, response: str) -> Any:
        raise Unsupported("the open-source Memory has no feedback call (only the hosted client)")

    def bulk_fill(
        self, scope: str, texts: list[str], refs: list[str], vectors: np.ndarray, budget: Any
    ) -> tuple[str, int]:
        now = datetime.now(UTC).isoformat()
        end = 0
        for start in range(0, len(texts), 1000):
            if budget.spent():
                break
            end = min(len(texts), start + 1000)
            payloads = [
                {
                    "data": texts[i],
                    "hash": hashlib.md5(texts[i].encode()).hexdigest(),
                    "created_at": now,
                    "updated_at": now,
                    "user_id": scope,
                    "role": "user",
                    "text_lemmatized": texts[i].lower(),
                }
                for i in range(start, end)
            ]
            self.m.vector_store.insert(
                vectors=vectors[start:end].tolist(),
                payloads=payloads,
                ids=[str(uuid.uuid4()) for _ in range(start, end)],
            )
        return (
            "Memory.vector_store.insert in chunks of 1,000 with precomputed vectors "
            "(its add path minus the history rows)",
            end,
        )

    def close(self) -> None:
        close = getattr(self.m, "close", None)
        if close is not None:
            close()
        else:
            self.m.vector_store.client.close()


if __name__ == "__main__":
    main(Mem0Adapter())
