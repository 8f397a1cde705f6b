from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engrammar import Config, HashEmbedder, Memory, ValidationError
from engrammar.recall.text import embedding_text


def _edge(mem: Memory, src: str, dst: str) -> None:
    # Written directly, so the test knows one edge and its weight whatever add links itself.
    with sqlite3.connect(mem.config.sqlite_file) as conn:
        conn.execute(
            "INSERT INTO edges (workspace, src, dst, kind, weight, updated_at) "
            "VALUES ('default', ?, ?, 'sequence', 0.7, 0) "
            "ON CONFLICT (src, dst, kind) DO UPDATE SET weight = 0.7",
            (src, dst),
        )


def _memory(path: Path) -> Memory:
    return Memory(Config(path=str(path)), embedder=HashEmbedder())


def test_export_then_import_restores_memories_and_edges(mem: Memory, tmp_path: Path) -> None:
    ids = mem.add(
        [
            {"role": "user", "content": "I write docs before code.", "metadata": {"n": 1}},
            {"role": "assistant", "content": "Documentation first, noted."},
        ],
        user_id="alice",
        session_id="s1",
        timestamp="2024-05-01T10:00:00Z",
    )
    mem.add("Bob likes tea.", user_id="bob", kind="fact")
    mem.add("Elsewhere.", user_id="carol", workspace="other")
    _edge(mem, ids[0], ids[1])
    seen: list[tuple[int, int]] = []
    out = tmp_path / "export.jsonl"
    assert mem.export(out, progress=lambda d, t: seen.append((d, t))) == 3
    assert seen[-1] == (3, 3)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["type"] == "engrammar-export"
    assert [entry["type"] for entry in lines[1:4]] == ["memory"] * 3
    exported_edges = [e for e in lines[4:] if e["type"] == "edge"]
    assert len(exported_edges) == len(lines) - 4
    assert {(e["src"], e["dst"], e["kind"], e["weight"]) for e in exported_edges} >= {
        (ids[0], ids[1], "sequence", 0.7)
    }
    assert all("embedding" not in entry for entry in lines)

    with _memory(tmp_path / "copy") as copy:
        result = copy.import_(out)
        assert result == {
            "memories": 3,
            "duplicates": 0,
            "edges": len(exported_edges),
            "records": 0,
            "knowledge_bases": 0,
            "knowledge_chunks": 0,
            "edges_built": 0,
            "skipped": [],
        }
        restored = copy.get(ids[0])
        original = mem.get(ids[0])
        assert (restored.content, restored.user_id, restored.session_id, restored.metadata) == (
            original.content,
            original.user_id,
            original.session_id,
            original.metadata,
        )
        assert restored.created_at == original.created_at
        edges = copy.store.edges_from("default", [ids[0]])
        assert (ids[1], "sequence", 0.7) in [(e.dst, e.kind, e.weight) for e in edges]
        assert copy.search("tea", user_id="bob")[0].content == "Bob likes tea."
        # A second import finds everything already there.
        again = copy.import_(out)
        assert (again["memories"], again["duplicates"]) == (0, 3)
        # ... and says it wrote nothing: no links, no records.
        assert (again["edges"], again["records"], again["edges_built"]) == (0, 0, 0)
        assert copy.stats()["memories"] == 3


def test_an_export_without_links_gets_the_links_add_builds(mem: Memory, tmp_path: Path) -> None:
    """Imported memories are linked as `add` links them, so recall walks."""
    mem.add(
        ["I go bouldering on weekends.", "The purple overhang is my favourite route."],
        user_id="alice",
        session_id="s1",
    )
    out = tmp_path / "links.jsonl"
    mem.export(out)
    bare = tmp_path / "bare.jsonl"
    bare.write_text(
        "".join(line for line in out.read_text().splitlines(True) if '"type": "edge"' not in line)
    )
    with _memory(tmp_path / "copy") as copy:
        result = copy.import_(bare)
        assert result["memories"] == 2 and result["edges_built"] > 0
        assert result["edges"] == result["edges_built"] == copy.stats()["edges"]
        ids = [m.id for m in copy.list(user_id="alice")]
        kinds = {e.kind for e in copy.store.edges_from("default", ids)}
        assert "sequence" in kinds
        # A second import of the same bare file builds nothing more.
        again = copy.import_(bare)
        assert (again["memories"], again["edges"], again["edges_built"]) == (0, 0, 0)


def test_a_file_that_is_not_utf8_is_a_validation_error(mem: Memory, tmp_path: Path) -> None:
    """Binary input names the line, no UnicodeDecodeError escapes."""
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00bin")
    with pytest.raises(ValidationError, match="line 1: is not UTF-8 text"):
        mem.import_(binary)
    assert mem.stats()["memories"] == 0


def test_import_into_another_workspace_gets_new_ids(mem: Memory) -> None:
    (mid,) = mem.add("Scoped export.", user_id="alice")
    buffer = io.StringIO()
    mem.export(buffer, user_id="alice")
    buffer.seek(0)
    assert mem.import_(buffer, workspace="copy")["memories"] == 1
    (moved,) = mem.list(workspace="copy")
    assert moved.content == "Scoped export." and moved.id != mid
    assert mem.get(mid).workspace == "default"


def test_a_bad_line_names_itself_and_writes_nothing(mem: Memory, tmp_path: Path) -> None:
    good = {"type": "memory", "id": "a1", "workspace": "default", "content": "fine", "role": "user"}
    bad = {**good, "id": "a2", "role": "robot"}
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValidationError) as info:
        mem.import_(source)
    assert info.value.field == "line 2: role"
    source.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(ValidationError, match="line 2"):
        mem.import_(source)
    assert mem.stats()["memories"] == 0


def test_import_blends_replies_as_add_did(tmp_path: Path) -> None:
    # A reply's vector leans on the message it answers (Config.embed_context); the export
    # holds no vectors, so import must blend again for recall to rank the same.
    turns = [
        ("Ana", "I moved to Porto in March."),
        ("Ben", "How do you like it there?"),
        ("Ana", "Love the river walks."),
        ("Ana", "And the bakeries."),
        ("Ben", "Sounds great."),
    ]
    messages = [{"role": "user", "name": n, "content": c} for n, c in turns]
    out = tmp_path / "s.jsonl"
    with Memory(Config(path=str(tmp_path / "a")), embedder=HashEmbedder()) as source:
        ids = source.add(messages, user_id="u", session_id="s1")
        source.add("Unrelated note.", user_id="u")
        source.export(out)
        before = source.store.vectors("default", ids)
    with Memory(Config(path=str(tmp_path / "b")), embedder=HashEmbedder()) as fresh:
        fresh.import_(out)
        after = fresh.store.vectors("default", ids)
        plain = fresh.embedder.embed([embedding_text(c, n) for n, c in turns])
    for memory_id in ids:
        np.testing.assert_allclose(after[memory_id], before[memory_id], atol=1e-6)
    # The replies really were blended (the second and third answer another speaker).
    assert float(after[ids[1]] @ plain[1]) < 0.999 and float(after[ids[2]] @ plain[2]) < 0.999
    assert float(after[ids[3]] @ plain[3]) > 0.999  # the same speaker again: not a reply


def test_import_reads_parts_and_skips_blank_memories_as_add_does(
    mem: Memory, tmp_path: Path
) -> None:
    line = {"type": "memory", "workspace": "default", "role": "user", "user_id": "u"}
    lines = [
        {**line, "id": "b1", "content": "kept"},
        {**line, "id": "b2", "content": "   "},
        {**line, "id": "b3", "content": [{"type": "text", "text": "from parts"}]},
        {**line, "id": "b4", "content": [{"type": "image_url", "image_url": {"url": "x"}}]},
    ]
    source = tmp_path / "parts.jsonl"
    source.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = mem.import_(source)
    assert result["memories"] == 2
    assert result["skipped"] == [{"line": 2, "reason": "empty"}, {"line": 4, "reason": "no_text"}]
    assert [m.content for m in mem.list(user_id="u")] == ["kept", "from parts"]
    source.write_text(json.dumps({**line, "id": "b5", "content": [{"text": "no type"}]}) + "\n")
    with pytest.raises(ValidationError) as info:
        mem.import_(source)
    assert info.value.field == "line 1: content[0].type"
