"""Learning-rate management: pure functions, no I/O."""

from __future__ import annotations

import pytest

from engrammar.learn.rates import Signal, aggregate, context_match, decay

DAY = 86_400.0
NOW = 1_000_000_000.0
RULES = {"half_life_days": 30.0, "min_samples": 3.0, "max_adjustment": 0.5}


def signals(values: list[float], age_days: float = 0.0) -> list[Signal]:
    return [Signal(v, 1.0, NOW - age_days * DAY, "rating") for v in values]


def test_decay_halves_every_half_life() -> None:
    assert decay(0, 30) == 1.0
    assert decay(30 * DAY, 30) == pytest.approx(0.5)
    assert decay(90 * DAY, 30) == pytest.approx(0.125)
    assert decay(-5, 30) == 1.0  # a clock skewed into the future counts as fresh


def test_one_outlier_moves_little_and_a_sustained_pattern_a_lot() -> None:
    one = aggregate(signals([-1.0]), now=NOW, **RULES)
    many = aggregate(signals([-1.0] * 20), now=NOW, **RULES)
    assert one.value == pytest.approx(-0.5 / 4)  # 1/(1+min_samples) of the bound
    assert many.value == pytest.approx(-0.5 * 20 / 23)
    assert abs(many.value) > 3 * abs(one.value)


def test_an_outlier_inside_a_pattern_barely_dents_it() -> None:
    pattern = aggregate(signals([1.0] * 10), now=NOW, **RULES)
    dented = aggregate(signals([1.0] * 10 + [-1.0]), now=NOW, **RULES)
    assert dented.value > 0.75 * pattern.value


def test_old_signals_fade() -> None:
    fresh = aggregate(signals([1.0] * 10), now=NOW, **RULES)
    old = aggregate(signals([1.0] * 10, age_days=120), now=NOW, **RULES)
    ancient = aggregate(signals([1.0] * 10, age_days=720), now=NOW, **RULES)
    assert fresh.value > old.value > ancient.value
    assert ancient.value < 0.01
    # A fresh pattern outweighs an old opposite one.
    mixed = aggregate(signals([-1.0] * 10, age_days=180) + signals([1.0] * 10), now=NOW, **RULES)
    assert mixed.value > 0.3


def test_total_adjustment_is_bounded_whatever_the_weights() -> None:
    huge = [Signal(1.0, 1e9, NOW, "pair") for _ in range(100)]
    assert aggregate(huge, now=NOW, **RULES).value <= 0.5
    neg = [Signal(-5.0, 1e9, NOW, "pair")]  # values are clamped to [-1, 1] too
    assert aggregate(neg, now=NOW, **RULES).value >= -0.5


def test_no_signals_no_adjustment_and_sources_add_up() -> None:
    assert aggregate([], now=NOW, **RULES).value == 0.0
    adj = aggregate(
        [Signal(1.0, 1.0, NOW, "rating"), Signal(1.0, 2.0, NOW, "pair")], now=NOW, **RULES
    )
    assert sum(adj.by_source.values()) == pytest.approx(adj.value)
    assert adj.by_source["pair"] == pytest.approx(2 * adj.by_source["rating"])


def test_context_match_ramps_between_thresholds() -> None:
    assert context_match(0.3, 0.4, 0.8) == 0.0
    assert context_match(0.6, 0.4, 0.8) == pytest.approx(0.5)
    assert context_match(0.95, 0.4, 0.8) == 1.0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"feedback_half_life_days": 0}, "feedback_half_life_days"),
        ({"feedback_min_samples": -1}, "feedback_min_samples"),
        ({"feedback_max_adjustment": 1.0}, "feedback_max_adjustment"),
        ({"feedback_max_adjustment": -0.1}, "feedback_max_adjustment"),
        ({"feedback_context_min": 0.9}, "feedback_context_min"),
        ({"feedback_same_output": 1.5}, "feedback_same_output"),
        ({"feedback_conflict_weight": 1.5}, "feedback_conflict_weight"),
        ({"feedback_reply_context_min": 0.99}, "feedback_reply_context_min"),
        ({"feedback_records_limit": 0}, "feedback_records_limit"),
        ({"feedback_reply_top": -1}, "feedback_reply_top"),
        ({"feedback_reply_weight": -1.0}, "feedback_reply_weight"),
    ],
)
def test_learning_settings_are_validated(change: dict[str, float], field: str) -> None:
    from engrammar import Config, ValidationError

    with pytest.raises(ValidationError) as err:
        Config(**change)
    assert err.value.field == field


def test_learning_settings_are_documented_with_defaults() -> None:
    from engrammar import Config

    described = Config.describe()
    for name in (
        "feedback_half_life_days",
        "feedback_min_samples",
        "feedback_max_adjustment",
        "feedback_context_min",
        "feedback_context_full",
        "feedback_same_output",
        "feedback_reply_top",
        "feedback_reply_weight",
        "feedback_reply_context_min",
        "feedback_reply_context_full",
        "feedback_conflict_weight",
        "feedback_records_limit",
    ):
        default, doc = described[name]
        assert doc and getattr(Config(), name) == default


def test_corroborated_signals_apply_more_but_a_lone_outlier_does_not() -> None:
    lone = aggregate(signals([1.0]), now=NOW, **RULES)
    # A rating and the reply of the same recall agreeing: two consistent samples.
    pair = [Signal(1.0, 1.0, NOW, "rating", 1.0), Signal(1.0, 1.0, NOW, "reply", 1.0)]
    agreed = aggregate(pair, now=NOW, **RULES)
    uncorroborated = aggregate(
        [Signal(1.0, 1.0, NOW, "rating"), Signal(1.0, 1.0, NOW, "reply")], now=NOW, **RULES
    )
    assert lone.value == pytest.approx(0.5 / 4)
    assert uncorroborated.value == pytest.approx(0.5 * 2 / 5)
    assert agreed.value == pytest.approx(0.5 * 2 / (2 + 3 / 3))
    assert agreed.value <= 0.5
    # Many corroborated signals still stop at the bound.
    many = [Signal(-1.0, 5.0, NOW, "rating", 1.0) for _ in range(50)]
    assert aggregate(many, now=NOW, **RULES).value >= -0.5
