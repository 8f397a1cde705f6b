"""Facts that change, end to end with the real model: the newer memory ranks first for a
question about the present, the older for one about the past; the superseded memory carries
``valid_until`` and ``superseded_by`` through get, history, export and import; ``as_of``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from engrammar import Config, Memory
from engrammar.embed.onnx import MiniLMEmbedder

pytestmark = pytest.mark.model
both_stores = pytest.mark.every_store

MOVE = ["I love hiking in the Alps.", "I live in Paris.", "I moved to Berlin last month."]


@both_stores
def test_a_move_in_one_add_ranks_the_new_home_first(real_mem: Memory) -> None:
    _, paris, berlin = real_mem.add(MOVE, user_id="u", timestamp=1_700_000_000)
    result = real_mem.recall("Where do I live?", user_id="u")
    assert result.memories[0].id == berlin
    ranks = [m.id for m in result.memories]
    assert paris in ranks  # still recallable
    assert ranks.index(paris) > ranks.index(berlin)
    pair = [t for t in result.tensions if {t.a, t.b} == {paris, berlin}]
    assert pair, "the contradiction is reported"
    assert (pair[0].a, pair[0].b, pair[0].newer) == (paris, berlin, berlin)
    past = real_mem.recall("Where did I live before Berlin?", user_id="u")
    assert past.memories[0].id == paris


@both_stores
@pytest.mark.parametrize("calls", [1, 2])
def test_a_changed_value_reports_the_right_direction(real_mem: Memory, calls: int) -> None:
    texts = ["My favourite colour is blue.", "My favourite colour is green."]
    if calls == 1:
        blue, green = real_mem.add(texts, user_id="u")
    else:
        (blue,) = real_mem.add(texts[0], user_id="u", timestamp=1_700_000_000)
        (green,) = real_mem.add(texts[1], user_id="u", timestamp=1_700_000_000)  # same second
    result = real_mem.recall("What is my favourite colour?", user_id="u")
    assert result.memories[0].id == green
    (tension,) = result.tensions
    assert (tension.a, tension.b, tension.newer) == (blue, green, green)
    assert tension.reason == "'blue' became 'green'"


@both_stores
def test_the_superseded_memory_says_when_and_by_what(real_mem: Memory) -> None:
    _, paris, berlin = real_mem.add(MOVE, user_id="u", timestamp=1_700_000_000)
    old, new = real_mem.get(paris), real_mem.get(berlin)
    assert old.superseded_by == berlin
    assert old.valid_until == new.created_at
    assert new.superseded_by is None and new.valid_until is None
    shown = old.to_dict()
    assert shown["superseded_by"] == berlin and shown["valid_until"] == new.created_at
    ops = [h["op"] for h in real_mem.history(paris)]
    assert ops[-1] == "supersede"


@both_stores
def test_a_backdated_add_is_the_older_side(real_mem: Memory) -> None:
    # Stored first, said later: the timestamp decides, not the order of the calls.
    (berlin,) = real_mem.add("I moved to Berlin last month.", user_id="u", timestamp=2e9)
    (paris,) = real_mem.add("I live in Paris.", user_id="u", timestamp=1e9)
    assert real_mem.get(paris).superseded_by == berlin
    assert real_mem.get(berlin).superseded_by is None
    assert real_mem.recall("Where do I live?", user_id="u").memories[0].id == berlin


@both_stores
def test_recall_as_of_ranks_by_what_was_current_then(real_mem: Memory) -> None:
    (paris,) = real_mem.add("I live in Paris.", user_id="u", timestamp=1e9)
    (berlin,) = real_mem.add("I moved to Berlin last month.", user_id="u", timestamp=2e9)
    then = real_mem.recall("Where do I live?", user_id="u", as_of=1.5e9)
    assert then.memories[0].id == paris
    assert berlin not in {m.id for m in then.memories}  # not said yet
    now = real_mem.recall("Where do I live?", user_id="u", as_of=2.5e9)
    assert now.memories[0].id == berlin


@both_stores
def test_forgetting_the_newer_makes_the_older_current_again(real_mem: Memory) -> None:
    _, paris, berlin = real_mem.add(MOVE, user_id="u")
    real_mem.forget(berlin)
    old = real_mem.get(paris)
    assert old.superseded_by is None and old.valid_until is None
    assert real_mem.recall("Where do I live?", user_id="u").memories[0].id == paris


@both_stores
def test_export_and_import_keep_the_supersession(
    real_mem: Memory, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    _, paris, berlin = real_mem.add(MOVE, user_id="u")
    buf = io.StringIO()
    real_mem.export(buf, user_id="u")
    assert '"superseded_by"' in buf.getvalue()
    with Memory(Config(path=str(tmp_path / "copy")), embedder=minilm) as other:
        other.import_(io.StringIO(buf.getvalue()))
        old = other.get(paris)
        assert old.superseded_by == berlin
        assert old.valid_until == other.get(berlin).created_at


def test_a_store_from_before_the_validity_columns_is_migrated(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    import sqlite3

    from engrammar.store.sqlite.migrations import MIGRATIONS
    from test_store_schema import _migrated_to

    store_dir = tmp_path / "old"
    store_dir.mkdir()
    with Memory(Config(path=str(store_dir)), embedder=minilm) as mem:
        file = mem.store.file  # type: ignore[attr-defined]
    file.unlink()
    _migrated_to(file, [m for m in MIGRATIONS if m.__name__ < "m009"])
    with sqlite3.connect(file) as conn:
        conn.execute(
            "INSERT INTO memories (id, workspace, user_id, role, content, created_at, "
            "updated_at, dedup_key, embedding) VALUES ('old', 'default', 'u', 'user', "
            "'I live in Paris.', 1.0, 1.0, 'k', ?)",
            (minilm.embed(["I live in Paris."])[0].tobytes(),),
        )
    with Memory(Config(path=str(store_dir)), embedder=minilm) as mem:
        assert mem.get("old").valid_until is None
        (berlin,) = mem.add("I moved to Berlin last month.", user_id="u", timestamp=2.0)
        assert mem.get("old").superseded_by == berlin


@both_stores
def test_insertion_order_tells_one_batch_apart(real_mem: Memory) -> None:
    ids = real_mem.add(["first", "second", "third"], user_id="u", timestamp=1_700_000_000)
    (later,) = real_mem.add("fourth", user_id="u", timestamp=1_600_000_000)
    order = real_mem.store.insertion_order("default", [*reversed(ids), later, "missing"])
    assert [order[i] for i in ids] == sorted(order[i] for i in ids)
    assert order[later] > order[ids[-1]]
    assert "missing" not in order


@both_stores
def test_an_assistants_answers_never_replace_each_other(real_mem: Memory) -> None:
    # An assistant's answer is advice, not a fact of the user's that changes: the same words
    # said by the user are a move, said by the assistant nothing is replaced or reported.
    said = [
        {"role": "assistant", "content": "I live in Paris."},
        {"role": "assistant", "content": "I moved to Berlin last month."},
    ]
    paris, berlin = real_mem.add(said, user_id="u", timestamp=1_700_000_000)
    assert real_mem.get(paris).superseded_by is None
    assert real_mem.tensions(user_id="u")["tensions"] == []
    result = real_mem.recall("Where does the assistant live?", user_id="u")
    assert result.tensions == []
    mine = [{**m, "role": "user"} for m in said]
    paris, berlin = real_mem.add(mine, user_id="v", timestamp=1_700_000_000)
    assert real_mem.get(paris).superseded_by == berlin
