"""MemWire 0.1.x code runs with only its import line changed.

Written from MemWire's README, docs (configuration, multi-tenancy, knowledge base) and
examples; where engrammar deliberately differs, docs/memwire.md says why and the test below
that pins the difference is named there.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engrammar import HashEmbedder, Memory, ValidationError
from engrammar.compat import memwire as mwc
from engrammar.compat.memwire import (
    APPLIED,
    IGNORED,
    MAPPED,
    GraphEdge,
    GraphNode,
    KnowledgeChunk,
    MemoryRecord,
    MemWire,
    MemWireConfig,
    RecallPath,
    RecallResult,
    TokenEmbedding,
)
from engrammar.embed.onnx import MiniLMEmbedder

#: MemWireConfig's documented options and defaults (docs/configuration.mdx, memwire 0.1.2).
DEFAULTS: dict[str, Any] = {
    "embedding_provider": "fastembed",
    "model_name": "sentence-transformers/all-MiniLM-L6-v2",
    "embedding_dim": 384,
    "embedding_api_url": "http://localhost:11434/v1",
    "embedding_api_key": None,
    "embedding_model": "nomic-embed-text",
    "sparse_model_name": "prithivida/Splade_PP_en_v1",
    "reranker_model_name": "Xenova/ms-marco-MiniLM-L-6-v2",
    "qdrant_url": None,
    "qdrant_api_key": None,
    "qdrant_path": None,
    "qdrant_collection_prefix": "",
    "use_hybrid_search": True,
    "use_reranking": False,
    "displacement_threshold": 0.15,
    "edge_weight_default": 0.5,
    "edge_weight_min": 0.01,
    "edge_weight_max": 1.0,
    "edge_decay_rate": 0.02,
    "edge_reinforce_amount": 0.1,
    "node_merge_similarity": 0.85,
    "classification_threshold": 0.05,
    "recall_max_paths": 10,
    "recall_max_depth": 4,
    "recall_min_relevance": 0.25,
    "tension_threshold": 0.6,
    "recency_weight": 0.3,
    "recency_halflife": 3600.0,
    "recall_seed_top_k": 5,
    "recall_bfs_max_branch": 5,
    "recall_bfs_max_paths": 200,
    "feedback_strengthen_rate": 0.1,
    "feedback_weaken_rate": 0.05,
    "feedback_align_strengthen": 0.5,
    "feedback_align_weaken": 0.2,
    "database_url": None,
    "org_id": "default",
    "embedding_cache_maxsize": 10_000,
    "cross_memory_recent_limit": 50,
    "background_threads": 2,
}


def _mw(**config: Any) -> MemWire:
    config.setdefault("database_url", "sqlite:///:memory:")
    return MemWire(MemWireConfig(**config), embedder=HashEmbedder())


# -- names, options, defaults ----------------------------------------------------------------------
def test_every_public_name_field_and_default() -> None:
    for name in (
        "MemWire", "MemWireConfig", "TokenEmbedding", "GraphNode", "GraphEdge", "MemoryRecord",
        "RecallPath", "RecallResult", "KnowledgeChunk",
    ):  # fmt: skip
        assert name in mwc.__all__
    config = MemWireConfig()
    for name, default in DEFAULTS.items():
        assert getattr(config, name) == default, name
    assert set(config.default_anchors) == {"fact", "preference", "instruction", "event", "entity"}
    assert config.get_database_url() == "sqlite:///memwire_default.db"
    assert MemWireConfig(org_id="acme").get_database_url() == "sqlite:///memwire_acme.db"
    assert MemWireConfig(database_url="sqlite:///x.db").get_database_url() == "sqlite:///x.db"
    options = {f.name for f in dataclasses.fields(MemWireConfig)} - {"engrammar"}
    assert options == set(MAPPED) | set(APPLIED) | set(IGNORED)
    fields = {
        MemoryRecord: "memory_id user_id content role embedding category strength timestamp "
        "node_ids agent_id access_count org_id workspace_id app_id",
        KnowledgeChunk: "chunk_id kb_id user_id agent_id content metadata score workspace_id "
        "app_id",
        GraphNode: "node_id token embedding memory_ids user_id app_id workspace_id",
        GraphEdge: "source_id target_id weight displacement_sim user_id",
        RecallPath: "nodes edges score memories",
        RecallResult: "query supporting conflicting knowledge formatted engrammar",
        TokenEmbedding: "token position isolated contextual displacement",
    }
    for cls, names in fields.items():
        assert [f.name for f in dataclasses.fields(cls)] == names.split(), cls
    token = TokenEmbedding("a", 0, np.zeros(2), np.ones(2), np.ones(2))
    assert token.displacement_magnitude == pytest.approx(2**0.5)
    assert GraphEdge("a", "b").key == ("a", "b")


def test_config_is_mapped_and_checked(tmp_path: Path) -> None:
    mapped, temp = MemWireConfig(
        qdrant_path=str(tmp_path / "d"), org_id="acme", recall_max_depth=3,
        recall_bfs_max_branch=4, feedback_strengthen_rate=0.2, use_reranking=True,
    ).to_config()  # fmt: skip
    assert temp is None
    ranking = mapped.ranking
    assert (mapped.path, mapped.workspace, ranking.graph_depth, ranking.graph_fanout) == (
        str(tmp_path / "d"), "acme", 3, 4,
    )  # fmt: skip
    assert mapped.feedback_strengthen_rate == 0.2
    pg, _ = MemWireConfig(database_url="postgresql+psycopg2://u@db/mw").to_config()
    assert pg.store == "postgresql://u@db/mw"
    remote, _ = MemWireConfig(
        embedding_provider="openai-compatible", embedding_model="nomic-embed-text"
    ).to_config()
    assert (remote.embedder, remote.embedder_model) == ("openai", "nomic-embed-text")
    with pytest.raises(TypeError):
        MemWireConfig(not_a_memwire_option=1)  # type: ignore[call-arg]
    for bad, field in (
        ({"database_url": "mysql://db/x"}, "database_url"),
        ({"embedding_provider": "magic"}, "embedding_provider"),
        ({"engrammar": {"nope": 1}}, "engrammar"),
    ):
        with pytest.raises(ValidationError) as err:
            MemWireConfig(**bad).to_config()
        assert err.value.field == field


def test_config_passed_positionally_and_shared_in_memory_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    mw = _mw()
    with pytest.raises(ValidationError) as err:
        MemWire("alice")  # type: ignore[arg-type]
    assert err.value.field == "config"
    mw.add(user_id="alice", messages=[{"role": "user", "content": "I prefer green tea."}])
    # Other threads use other connections of the store: they see the same database.
    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(mw.get_stats(user_id="alice")["memories"]))
    worker.start()
    worker.join()
    assert seen == [1]
    assert mw.search("green tea", user_id="alice")[0][0].content == "I prefer green tea."
    other = _mw()  # a second instance has a database of its own
    assert other.get_stats(user_id="alice")["memories"] == 0
    mw.close()
    other.close()
    assert list(tmp_path.iterdir()) == []  # nothing written to disk


# -- MemWire's leniency, in this layer only ----------------------------------------------------------
def test_input_memwire_skips_or_defaults() -> None:
    with _mw() as mw:
        assert mw.add(user_id="u", messages=[]) == []
        records = mw.add(
            user_id="u",
            messages=[
                {"role": "user", "content": ""},
                {"role": "user", "content": "   "},
                {"role": "user", "content": None},
                {"content": "No role given."},
                {"role": "assistant", "content": "Noted."},
            ],
        )
        assert [(r.role, r.content) for r in records] == [
            ("user", "No role given."),
            ("assistant", "Noted."),
        ]
        assert mw.recall("", user_id="u") == RecallResult(query="")
        assert mw.recall("   ", user_id="u").formatted == ""
        assert mw.search("", user_id="u") == []
        assert mw.search_knowledge("", user_id="u") == []
        assert mw.feedback("", user_id="u") == {"strengthened": 0, "weakened": 0}
        # engrammar's own API keeps refusing the same input.
        with pytest.raises(ValidationError):
            mw.memory.add([], user_id="u")
        with pytest.raises(ValidationError):
            mw.memory.recall("", user_id="u")


def test_feedback_without_a_recall_is_exactly_memwires_answer() -> None:
    with _mw() as mw:
        assert mw.feedback(assistant_response="Hello!", user_id="u") == {
            "strengthened": 0,
            "weakened": 0,
        }
        mw.add(user_id="u", messages=[{"role": "user", "content": "I like sailing."}])
        mw.recall("What do I like?", user_id="u")
        out = mw.feedback("You like sailing.", user_id="u")
        assert set(out) == {"strengthened", "weakened"}
        assert mw.feedback(response="again", user_id="u") == {"strengthened": 0, "weakened": 0}


def test_identical_messages_are_separate_memories_as_in_memwire() -> None:
    with _mw() as mw:
        records = mw.add(user_id="u", messages=[{"role": "user", "content": "ping"}] * 5)
        assert len({r.memory_id for r in records}) == 5
        assert mw.get_stats(user_id="u")["memories"] == 5
        # engrammar's own add keeps storing an exact repeat once.
        assert len(set(mw.memory.add(["pong"] * 3, user_id="u"))) == 1


def test_records_carry_memwires_fields() -> None:
    with _mw(org_id="acme") as mw:
        (r,) = mw.add(
            user_id="u", agent_id="a1", app_id="app", workspace_id="ws",
            messages=[{"role": "user", "content": "I prefer dark mode."}],
        )  # fmt: skip
        assert (r.user_id, r.agent_id, r.org_id, r.workspace_id, r.app_id) == (
            "u", "a1", "acme", "ws", "app",
        )  # fmt: skip
        assert r.category in MemWireConfig().default_anchors
        assert r.embedding.shape == (HashEmbedder().dim,) and r.strength == 1.0
        assert r.node_ids == [r.memory_id] and r.timestamp > 0


# -- tenancy -------------------------------------------------------------------------------------------
def test_org_workspace_app_and_user_isolation(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    # Isolation is the point here, not relevance: keep every memory recall finds.
    acme = _mw(database_url=url, org_id="acme", recall_min_relevance=0.0)
    globex = _mw(database_url=url, org_id="globex", recall_min_relevance=0.0)
    text = [{"role": "user", "content": "I prefer minimalist UI patterns."}]
    acme.add(user_id="alice", workspace_id="team_design", app_id="design_assistant", messages=text)
    acme.add(user_id="alice", messages=[{"role": "user", "content": "Deploys are on Fridays."}])
    acme.add_knowledge("Runbook", [{"content": "Deploy with ./deploy.sh"}], user_id="alice",
                       workspace_id="team_design", app_id="design_assistant")  # fmt: skip
    query = "What are my design preferences?"
    scoped = acme.recall(
        query, user_id="alice", workspace_id="team_design", app_id="design_assistant"
    )
    assert "minimalist" in scoped.formatted
    assert acme.recall(query, user_id="bob", workspace_id="team_design",
                       app_id="design_assistant").formatted == ""  # fmt: skip
    assert acme.recall(query, user_id="alice", workspace_id="team_engineering",
                       app_id="code_assistant").formatted == ""  # fmt: skip
    # The organisation level does not see an app's memories, nor an app the organisation's.
    assert "minimalist" not in acme.recall(query, user_id="alice").formatted
    assert acme.get_stats(user_id="alice")["memories"] == 1
    stats = acme.get_stats(user_id="alice", workspace_id="team_design", app_id="design_assistant")
    assert (stats["memories"], stats["knowledge_bases"]) == (1, 1)
    # Another organisation on the same database sees nothing at all.
    assert globex.get_stats(user_id="alice")["memories"] == 0
    assert globex.search("Deploys", user_id="alice") == []
    assert globex.search_knowledge("deploy", user_id="alice", workspace_id="team_design",
                                   app_id="design_assistant") == []  # fmt: skip
    acme.close()
    globex.close()


# -- categories ------------------------------------------------------------------------------------
def test_categories_are_metadata_with_a_filter_and_survive_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    with _mw(database_url=url) as mw:
        mw.add_category("complaint", "Your product broke after one week", user_id="alice")
        assert "complaint" in mw.get_stats(user_id="alice")["anchors"]
        assert "complaint" not in mw.get_stats(user_id="bob")["anchors"]
        (r,) = mw.add(user_id="alice", messages=[
            {"role": "user", "content": "Your product broke after one week"}])  # fmt: skip
        assert r.category == "complaint"
        assert mw.memory.get(r.memory_id).metadata["category"] == "complaint"
        mw.add(user_id="alice", messages=[{"role": "user", "content": "Water boils at 100 C"}])
        hits = mw.search("product", user_id="alice", category="complaint")
        assert [h[0].memory_id for h in hits] == [r.memory_id]
        assert mw.search("product", user_id="alice", category="praise") == []
    with _mw(database_url=url) as again:
        assert "complaint" in again.get_stats(user_id="alice")["anchors"]


def test_per_scope_caches_are_bounded_and_lose_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mwc, "SCOPE_CACHE_SIZE", 8)
    with _mw() as mw:
        mw.add_category("complaint", "Your product broke after one week", user_id="alice",
                        app_id="app_0")  # fmt: skip
        for i in range(40):  # every new app id or user is a new scope
            mw.add(user_id=f"user_{i}", app_id=f"app_{i}", messages=["Water boils at 100 C"])
            mw.add_knowledge("faq", [{"content": "Free shipping over $50."}], app_id=f"app_{i}")
        assert len(mw._centroids) <= 8 and len(mw._kb_workspaces) <= 8
        assert len(mw._own_anchors) <= 8
        # The first scope's own category was dropped from memory, not lost: it is read again.
        (r,) = mw.add(user_id="alice", app_id="app_0", messages=[
            {"role": "user", "content": "Your product broke after one week"}])  # fmt: skip
        assert r.category == "complaint"
        assert "complaint" in mw.get_stats(user_id="alice", app_id="app_0")["anchors"]
        assert "complaint" not in mw.get_stats(user_id="alice", app_id="app_1")["anchors"]


# -- knowledge ---------------------------------------------------------------------------------------
def test_knowledge_base_add_search_recall_delete_and_ingest(tmp_path: Path) -> None:
    with _mw() as mw:
        kb_id = mw.add_knowledge(
            name="Company Handbook",
            chunks=[
                {"content": "All employees must complete onboarding within the first 30 days."},
                {"content": "Remote work is allowed up to 3 days per week."},
                {"content": "Expenses above $500 require manager approval.",
                 "metadata": {"source": "policy.pdf"}},
                {"content": "   "},
            ],
            user_id="alice",
        )  # fmt: skip
        assert kb_id.startswith("kb_")
        chunks = mw.search_knowledge("Expenses above manager approval", user_id="alice", top_k=2)
        assert chunks[0].content.startswith("Expenses above") and chunks[0].kb_id == kb_id
        assert chunks[0].metadata == {"source": "policy.pdf"}
        assert all(0 <= c.score <= 1 for c in chunks) and len(chunks) == 2
        result = mw.recall("expenses above $500 manager approval", user_id="alice")
        assert result.knowledge and result.knowledge[0].kb_id == kb_id
        assert "[Relevant knowledge]" in result.formatted and "[policy.pdf]" in result.formatted
        assert mw.get_stats(user_id="alice")["knowledge_bases"] == 1
        mw.delete_knowledge(kb_id=kb_id)
        mw.delete_knowledge(kb_id="kb_missing")  # ignored, as in MemWire
        assert mw.get_stats(user_id="alice")["knowledge_bases"] == 0
        doc = tmp_path / "sample_report.txt"
        doc.write_text("Revenue grew 20% this quarter.\n\n" + "Costs were flat. " * 80)
        page = tmp_path / "page.html"
        page.write_text("<html><script>x()</script><p>Revenue &amp; margin rose.</p></html>")
        kb_text = mw.ingest(str(doc), name="quarterly-report", user_id="alice",
                            chunk_max_characters=300, chunk_overlap=30)  # fmt: skip
        mw.ingest(page, user_id="alice")
        found = mw.search_knowledge("revenue growth", user_id="alice", top_k=10)
        assert {c.metadata["source"] for c in found} == {"sample_report.txt", "page.html"}
        assert all(len(c.content) <= 300 for c in found if c.kb_id == kb_text)
        assert any(c.content == "Revenue & margin rose." for c in found)
        with pytest.raises(ValidationError) as err:
            mw.ingest(tmp_path / "specs.pdf", user_id="alice")
        assert err.value.field == "file_path"


# -- REST ----------------------------------------------------------------------------------------------
def test_memwire_rest_routes_payloads_keys_and_tenancy(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from engrammar import Config
    from engrammar.compat.memwire_server import create_app
    from engrammar.keys import create_api_key

    memory = Memory(Config(path=str(tmp_path)), embedder=HashEmbedder())
    acme, _ = create_api_key(memory.store, "acme")
    alice_only, _ = create_api_key(memory.store, "acme", user_id="alice")
    globex, _ = create_api_key(memory.store, "globex")
    with TestClient(create_app(memory), base_url="http://127.0.0.1") as http:
        assert http.get("/health").json() == {"status": "ok", "version": "0.1.2"}
        body = {"user_id": "alice", "app_id": "app_a", "workspace_id": "team_1",
                "messages": [{"role": "user", "content": "I prefer dark mode and short answers."}]}  # fmt: skip
        assert http.post("/v1/memories", json=body).status_code == 401
        h = {"X-API-Key": acme}
        stored = http.post("/v1/memories", json=body, headers=h)
        assert stored.status_code == 200, stored.text
        (record,) = stored.json()
        assert set(record) == {"memory_id", "user_id", "content", "role", "category",
                               "strength", "timestamp", "node_ids", "agent_id"}  # fmt: skip
        tenant = {"user_id": "alice", "app_id": "app_a", "workspace_id": "team_1"}
        recall = http.post("/v1/memories/recall", headers=h,
                           json={**tenant, "query": "dark mode answers"}).json()  # fmt: skip
        assert set(recall) == {"query", "supporting", "conflicting", "knowledge", "formatted",
                               "has_conflicts"}  # fmt: skip
        assert recall["supporting"][0]["memories"][0]["memory_id"] == record["memory_id"]
        assert set(recall["supporting"][0]) == {"tokens", "score", "memories"}
        hits = http.post("/v1/memories/search", headers=h,
                         json={**tenant, "query": "dark mode", "limit": 10}).json()  # fmt: skip
        assert hits[0]["memory"]["memory_id"] == record["memory_id"] and 0 <= hits[0]["score"] <= 1
        fb = http.post("/v1/memories/feedback", headers=h,
                       json={**tenant, "assistant_response": "Dark mode, briefly."})  # fmt: skip
        assert set(fb.json()) == {"strengthened", "weakened"}
        stats = http.post("/v1/stats", headers=h, json=tenant).json()
        assert set(stats) == {"memories", "nodes", "edges", "anchors", "knowledge_bases"}
        assert stats["memories"] == 1
        cat = http.post("/v1/categories", headers=h,
                        json={**tenant, "name": "ui", "text": "I like dark themes"})  # fmt: skip
        assert cat.json() == {"status": "ok", "category": "ui"}
        kb = http.post("/v1/knowledge", headers=h, json={"name": "faq", "user_id": "alice",
                       "chunks": [{"content": "Free shipping on orders over $50."}]})  # fmt: skip
        kb_id = kb.json()["kb_id"]
        found = http.post("/v1/knowledge/search", headers=h,
                          json={"query": "free shipping", "user_id": "alice"}).json()  # fmt: skip
        assert found[0]["kb_id"] == kb_id
        assert set(found[0]) == {"chunk_id", "kb_id", "content", "score", "metadata"}
        gone = http.delete(f"/v1/knowledge/{kb_id}?user_id=bob", headers=h)
        assert gone.status_code == 404
        assert http.delete(f"/v1/knowledge/{kb_id}?user_id=alice", headers=h).json() == {
            "deleted": kb_id
        }
        # A key of another workspace is another organisation: it sees nothing.
        other = http.post("/v1/stats", headers={"X-API-Key": globex}, json=tenant).json()
        assert other["memories"] == 0
        # A key bound to alice acts only for alice (Bearer works too).
        bearer = {"Authorization": f"Bearer {alice_only}"}
        assert http.post("/v1/stats", headers=bearer, json={"user_id": "bob"}).status_code == 403
        assert http.post("/v1/stats", headers=bearer, json=tenant).json()["memories"] == 1
        bad = http.post("/v1/memories/search", headers=h, json={"user_id": "alice"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "query"]
    memory.close()


def test_engrammar_serve_memwire_compat_keeps_mcp_and_keys(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from engrammar import Config
    from engrammar.keys import create_api_key
    from engrammar.server import build_app

    memory = Memory(Config(path=str(tmp_path)), embedder=HashEmbedder())
    key, _ = create_api_key(memory.store, "acme")
    with TestClient(build_app(memory, memwire_compat=True), base_url="http://127.0.0.1") as http:
        assert http.get("/health").json()["status"] == "ok"
        stored = http.post(
            "/v1/memories",
            headers={"X-API-Key": key},
            json={"user_id": "u", "messages": [{"role": "user", "content": "hello"}]},
        )
        assert stored.status_code == 200 and stored.json()[0]["content"] == "hello"
        assert memory.stats(user_id="u", workspace="acme")["memories"] == 1
        assert http.post("/mcp", json={}).status_code == 401  # MCP still needs a key
    memory.close()


# -- with the real model: MemWire's own documentation, verbatim but for the import ----------------
class _Completions:
    def __init__(self, reply: str) -> None:
        self.reply = reply

    def create(self, **kwargs: Any) -> Any:
        if kwargs.get("stream"):
            delta = types.SimpleNamespace(content=self.reply)
            return iter([types.SimpleNamespace(choices=[types.SimpleNamespace(delta=delta)])])
        message = types.SimpleNamespace(content=self.reply)
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])


def _openai_stub(monkeypatch: pytest.MonkeyPatch, reply: str) -> None:
    """``openai`` and ``dotenv`` modules whose client answers ``reply`` (no network)."""

    class OpenAI:
        def __init__(self, **_: Any) -> None:
            self.chat = types.SimpleNamespace(completions=_Completions(reply))

    monkeypatch.setitem(sys.modules, "openai", types.SimpleNamespace(OpenAI=OpenAI))
    monkeypatch.setitem(sys.modules, "dotenv", types.SimpleNamespace(load_dotenv=lambda: None))


def _run(source: str, name: str) -> dict[str, Any]:
    source = source.replace("from memwire import", "from engrammar.compat.memwire import")
    namespace: dict[str, Any] = {"__name__": name}
    exec(compile(source, name, "exec"), namespace)
    return namespace


@pytest.fixture
def minilm_memwire(minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """MemWire() as MemWire code calls it, on the session's already loaded model."""
    original = MemWire.__init__

    def init(self: MemWire, config: MemWireConfig | None = None, **kw: Any) -> None:
        kw.setdefault("embedder", minilm)
        original(self, config, **kw)

    monkeypatch.setattr(MemWire, "__init__", init)


README_QUICKSTART = (
    Path(__file__).parent / "data" / "memwire" / "readme_quickstart.py"
).read_text()


@pytest.mark.usefixtures("minilm_memwire")
def test_readme_quickstart_runs_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    ns = _run(README_QUICKSTART, "memwire_readme")
    out = capsys.readouterr().out
    assert "[stored] (preference) I prefer dark mode and short answers." in out
    assert "I prefer dark mode and short answers." in ns["result"].formatted
    ((record, score),) = ns["hits"]
    assert record.category == "preference" and 0.3 < score <= 1.0
    assert ns["stats"]["memories"] == 1 and ns["stats"]["knowledge_bases"] == 0
    assert (tmp_path / "memwire_data" / "engrammar.db").exists()


@pytest.mark.usefixtures("minilm_memwire")
def test_recall_min_relevance_leaves_unrelated_memories_out() -> None:
    with MemWire(MemWireConfig(database_url="sqlite:///:memory:")) as mw:
        mw.add(user_id="u", messages=[{"role": "user", "content": "I prefer dark mode."}])
        unrelated = mw.recall("What is the boiling point of tungsten?", user_id="u")
        assert unrelated.formatted == "" and unrelated.supporting == []
        related = mw.recall("Which colour theme do I like?", user_id="u")
        assert all(0 <= p.score <= 1 for p in related.all_paths)
        assert "dark mode" in related.formatted
        strict = MemWire(
            MemWireConfig(database_url="sqlite:///:memory:", recall_min_relevance=0.99)
        )
        strict.add(user_id="u", messages=[{"role": "user", "content": "I prefer dark mode."}])
        assert strict.recall("Which colour theme do I like?", user_id="u").formatted == ""
        strict.close()


@pytest.mark.usefixtures("minilm_memwire")
def test_tensions_come_back_as_conflicting_paths() -> None:
    with MemWire(MemWireConfig(database_url="sqlite:///:memory:")) as mw:
        mw.add(user_id="bob", messages=[{"role": "user", "content": "I live in Paris."}])
        mw.add(
            user_id="bob", messages=[{"role": "user", "content": "I moved to Berlin last month."}]
        )
        result = mw.recall("Where do you live?", user_id="bob")
        assert result.has_conflicts
        (conflict,) = result.conflicting
        assert {m.content for m in conflict.memories} == {
            "I live in Paris.", "I moved to Berlin last month."}  # fmt: skip
        assert "[Potentially conflicting memories (review carefully)]" in result.formatted


@pytest.mark.usefixtures("minilm_memwire")
def test_sdk_ingest_example_runs_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sample_report.txt").write_text(
        "Quarterly report.\n\nRevenue growth reached 18% this quarter, driven by new customers."
        "\n\nOperating costs stayed flat."
    )
    # The example also ingests a PDF; engrammar reads text formats only (docs/memwire.md),
    # so the same content is given as the text that PDF would hold.
    (tmp_path / "detailed_specs.pdf.txt").write_text("The device weighs 1.2 kg.")
    source = (Path(__file__).parent / "data" / "memwire" / "sdk_ingest.py").read_text()
    source = source.replace('"detailed_specs.pdf"', '"detailed_specs.pdf.txt"')
    ns = _run(source, "sdk_ingest")
    out = capsys.readouterr().out
    assert "Revenue growth reached 18%" in out and "source: sample_report.txt" in out
    assert len(ns["result"].knowledge) >= 1 and "[Relevant knowledge]" in ns["result"].formatted
    assert out.rstrip().endswith("Done.")


@pytest.mark.usefixtures("minilm_memwire")
def test_chat_example_runs_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _openai_stub(monkeypatch, "Since you like Python, use pytest for the tests.")
    (tmp_path / "notes.txt").write_text(
        "Our team writes all services in Python.\n\nTests run with pytest on every push."
    )
    inputs = iter([
        "I write all my code in Python.", "memory", "search", "Python", "kb load notes.txt",
        "kb search testing tools", "kb list", "How should I test my code?", "quit",
    ])  # fmt: skip
    monkeypatch.setattr("builtins.input", lambda prompt="": next(inputs))
    source = (Path(__file__).parent / "data" / "memwire" / "chat.py").read_text()
    previous = signal.getsignal(signal.SIGINT)
    try:
        ns = _run(source, "memwire_chat")
        with pytest.raises(SystemExit):
            ns["main"]()
    finally:
        signal.signal(signal.SIGINT, previous)
    out = capsys.readouterr().out
    assert "Assistant: Since you like Python" in out
    assert "(preference) I write all my code in Python." in out or "] (" in out
    assert "[Knowledge Results]" in out and "[notes.txt]" in out
    assert "[Knowledge Bases] 1 loaded" in out
    assert "found " in out  # the second turn recalled the first
    assert (tmp_path / "chat_memory.db").exists()
