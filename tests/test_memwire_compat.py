"""The MemWire seed example runs with only its import line changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engrammar import ValidationError
from engrammar.compat.memwire import IGNORED, MAPPED, MemWire, MemWireConfig, RecallPath
from engrammar.embed.onnx import MiniLMEmbedder

# What a model given the recalled memories typically answers: it builds on both of them.
FIXED_REPLY = (
    "Since you always write documentation before code and find long meetings unproductive, "
    "start each project by writing the documentation first, then code, and keep meetings short."
)


class _Completions:
    def create(self, **kwargs: Any) -> Any:
        assert kwargs["messages"][-1]["content"] == "How do you approach software projects?"
        message = type("Message", (), {"content": FIXED_REPLY})()
        choice = type("Choice", (), {"message": message})()
        return type("Response", (), {"choices": [choice]})()


class OpenAI:
    """Stands in for the OpenAI client: returns a fixed reply instead of calling the API."""

    def __init__(self) -> None:
        self.chat = type("Chat", (), {"completions": _Completions()})()


@pytest.mark.model
def test_seed_example_runs_with_only_the_import_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"OpenAI": OpenAI}
    # The seed's example, verbatim but for the import line (and the OpenAI import above).
    example = """
from engrammar import ValidationError
from engrammar.compat.memwire import MemWire, MemWireConfig

client = OpenAI()
config = MemWireConfig(qdrant_path="./memwire_data")
memory = MemWire(config=config)

USER_ID = "alice"

memory.add(user_id=USER_ID, messages=[
    {"role": "user", "content": "I always write documentation before code."},
    {"role": "user", "content": "I find long meetings unproductive."},
])

result = memory.recall("How do you approach software projects?", user_id=USER_ID)

messages = [{"role": "system", "content": "You are a helpful assistant."}]
if result.formatted:
    messages.append({"role": "system", "content": f"Memory:\\n{result.formatted}"})
messages.append({"role": "user", "content": "How do you approach software projects?"})

response = client.chat.completions.create(model="gpt-4o", messages=messages)
reply = response.choices[0].message.content

# Feed the response back — edges that contributed to this answer get stronger
stats = memory.feedback(response=reply, user_id=USER_ID)
print(stats)  # {"strengthened": 4, "weakened": 1}
"""
    exec(compile(example, "seed_000_example", "exec"), namespace)
    result, stats, memory = namespace["result"], namespace["stats"], namespace["memory"]
    assert "documentation before code" in result.formatted
    assert isinstance(result.supporting, list) and isinstance(result.conflicting, list)
    assert all(isinstance(p, RecallPath) for p in result.all_paths)
    assert stats["consumed"] is True
    assert stats["paths"]  # the two messages are one conversation: a path each way
    assert stats["strengthened"] >= 1
    assert "strengthened" in capsys.readouterr().out
    assert (tmp_path / "memwire_data" / "engrammar.db").exists()
    memory.close()


def test_config_names_map_or_are_documented_as_ignored(tmp_path: Path) -> None:
    names = {f for f in MemWireConfig.__dataclass_fields__ if f not in ("user_id", "engrammar")}
    assert names == set(MAPPED) | set(IGNORED)
    config = MemWireConfig(
        qdrant_path=str(tmp_path / "d"),
        org_id="acme",
        recall_max_depth=3,
        recall_bfs_max_branch=4,
        feedback_strengthen_rate=0.2,
        qdrant_collection_prefix="app_",
        use_reranking=True,
        tension_threshold=0.9,
    )
    mapped, temp = config.to_config()
    assert temp is None
    assert (mapped.path, mapped.workspace, mapped.graph_depth, mapped.graph_fanout) == (
        str(tmp_path / "d"),
        "acme",
        3,
        4,
    )
    assert mapped.feedback_strengthen_rate == 0.2
    with pytest.raises(TypeError):
        MemWireConfig(not_a_memwire_option=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError) as err:
        MemWireConfig(database_url="mysql://db/x").to_config()
    assert err.value.field == "database_url"
    with pytest.raises(ValidationError) as err:
        MemWireConfig(engrammar={"nope": 1}).to_config()
    assert err.value.field == "engrammar"
    tuned, _ = MemWireConfig(engrammar={"graph_weight": 0.2}).to_config()
    assert tuned.graph_weight == 0.2


@pytest.mark.model
def test_assistant_response_keyword_and_tensions(minilm: MiniLMEmbedder) -> None:
    with MemWire(
        user_id="bob", config=MemWireConfig(qdrant_path=":memory:"), embedder=minilm
    ) as mw:
        records = mw.add(messages=[{"role": "user", "content": "I live in Paris."}])
        assert records[0].content == "I live in Paris."
        mw.add(messages="I moved to Berlin last month.")
        result = mw.recall("Where do you live?")
        assert result.has_tensions
        (conflict,) = result.conflicting
        assert {m.content for m in conflict.memories} == {
            "I live in Paris.",
            "I moved to Berlin last month.",
        }
        stats = mw.feedback(assistant_response="Enjoy Berlin, then!")
        assert stats["consumed"] is True
        assert mw.feedback(response="again")["consumed"] is False
        hits = mw.search("Berlin")
        assert hits and hits[0][0].content == "I moved to Berlin last month."
        assert mw.get_stats()["memories"] == 2
        temp = mw._temp
        assert temp is not None and Path(temp).exists()
    assert not Path(temp).exists()
