from __future__ import annotations

import math
from pathlib import Path

import pytest

from engrammar import Config, ValidationError


def test_documented_defaults() -> None:
    c = Config()
    assert c.feedback_strengthen_rate == 0.1
    assert c.feedback_weaken_rate == 0.05
    assert c.feedback_align_strengthen == 0.5
    assert c.feedback_align_weaken == 0.2
    assert c.edge_weight_min == 0.01
    assert c.edge_weight_max == 1.0
    assert c.path == "./engrammar_data"
    assert c.store == "sqlite"


def test_env_overrides_default_but_not_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAMMAR_FEEDBACK_WEAKEN_RATE", "0.2")
    monkeypatch.setenv("ENGRAMMAR_PATH", "/tmp/from-env")
    c = Config(path="/tmp/from-arg")
    assert c.feedback_weaken_rate == 0.2
    assert c.path == "/tmp/from-arg"


def test_file_is_below_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    f = tmp_path / "engrammar.toml"
    f.write_text("[engrammar]\nrecall_limit = 7\nbm25_k1 = 1.5\n")
    monkeypatch.setenv("ENGRAMMAR_CONFIG", str(f))
    monkeypatch.setenv("ENGRAMMAR_BM25_K1", "0.9")
    c = Config()
    assert c.recall_limit == 7
    assert c.bm25_k1 == 0.9


def test_unknown_file_key_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("recal_limit = 3\n")
    monkeypatch.setenv("ENGRAMMAR_CONFIG", str(f))
    with pytest.raises(ValidationError, match="recal_limit"):
        Config()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"feedback_strengthen_rate": -0.1}, "feedback_strengthen_rate"),
        ({"feedback_weaken_rate": math.nan}, "feedback_weaken_rate"),
        ({"edge_weight_min": 0.9, "edge_weight_max": 0.5}, "edge_weight_min"),
        ({"feedback_align_weaken": 0.6}, "feedback_align_weaken"),
        ({"feedback_align_strengthen": 2.0}, "feedback_align_strengthen"),
        ({"recall_limit": 0}, "recall_limit"),
        ({"recall_limit": "many"}, "recall_limit"),
        ({"bm25_b": 1.5}, "bm25_b"),
        ({"fusion": "magic"}, "fusion"),
        ({"store": "mysql://x"}, "store"),
        ({"workspace": " "}, "workspace"),
        ({"edge_weight_max": math.inf}, "edge_weight_max"),
        ({"question_penalty": 1.5}, "question_penalty"),
        ({"second_neighbour_weight": -0.1}, "second_neighbour_weight"),
    ],
)
def test_invalid_values_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Config(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_invalid_env_value_names_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAMMAR_EDGE_WEIGHT_MIN", "nan")
    with pytest.raises(ValidationError) as info:
        Config()
    assert info.value.field == "edge_weight_min"


def test_describe_documents_every_field() -> None:
    described = Config.describe()
    assert "feedback_strengthen_rate" in described
    assert all(doc for _, doc in described.values())
