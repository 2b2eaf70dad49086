"""`Vocabulary` numbers symbols as the text tokenizers do; `choose_settings`' rule and checks."""

from __future__ import annotations

import numpy as np
import pytest

from keras_attention.pairs import Settings, Vocabulary, choose_settings


def test_vocabulary_ids_follow_the_specials_in_sorted_order():
    vocabulary = Vocabulary(["N", "AY", "F", "AY"])
    assert vocabulary.tokens == ["[PAD]", "[UNK]", "[START]", "[END]", "AY", "F", "N"]
    assert vocabulary.encode(["N", "AY", "F", "ZH", "[END]"]) == [6, 4, 5, 1, 1]
    assert vocabulary.decode([2, 6, 4, 1, 99, 3, 5]) == ("N", "AY", "[UNK]", "[UNK]")
    assert vocabulary.decode(np.array([5, 0, 6])) == ("F",)
    np.testing.assert_array_equal(
        vocabulary.encode_batch([["N"], ["AY", "F"]]), [[6, 3, 0], [4, 5, 3]]
    )


@pytest.mark.parametrize("bad", ["", "[PAD]", None])
def test_vocabulary_refuses_empty_and_special_symbols(bad):
    with pytest.raises((ValueError, TypeError), match="symbols"):
        Vocabulary(["a", bad])


@pytest.mark.parametrize(
    "pairs, units, batch_size, dropout, budget, members",
    [
        (120_000, 256, 256, 0.0, 24.5, 2),
        (8_000, 256, 64, 0.2, 10.0, 2),
        (800, 128, 16, 0.3, 8.0, 4),
    ],
)
def test_settings_follow_the_data_size(pairs, units, batch_size, dropout, budget, members):
    settings = choose_settings(pairs, longest_target=10, lengths=[3, 5, 7, 9, 11])
    assert (settings.units, settings.batch_size, settings.dropout) == (units, batch_size, dropout)
    assert settings.time_budget == budget and settings.members == members
    assert settings.max_length == 17  # ceil(1.5 * 10) + 2
    assert settings.buckets[-1] == 11
    assert settings.learning_rate == (6e-3 if pairs >= 50_000 else 3e-3)


@pytest.mark.parametrize(
    "pairs, buckets",
    [
        # five quantile bounds (20%, ..., 80%: "higher" of 1..100), the 95th percentile, the longest
        (8_000, (21, 41, 61, 81, 96, 100)),
        # small data: the 95th percentile and the longest alone (each bound is a compiled shape)
        (2_999, (96, 100)),
    ],
)
def test_length_buckets_follow_the_data_size(pairs, buckets):
    assert choose_settings(pairs, 10, lengths=list(range(1, 101))).buckets == buckets


def test_given_settings_override_the_rule_and_round_trip():
    settings = choose_settings(800, 10, units=64, members=None, time_budget=1.5)
    assert settings.units == 64 and settings.members == 4 and settings.time_budget == 1.5
    assert Settings.from_dict(settings.to_dict()) == settings


@pytest.mark.parametrize(
    "name, value",
    [
        ("rnn", "rnn_tanh"),
        ("attention", "monotonic"),
        ("units", 0),
        ("dropout", 1.0),
        ("members", True),
        ("cpu_budget", -1),
    ],
)
def test_bad_settings_name_the_setting_and_value(name, value):
    with pytest.raises(ValueError, match=rf"`{name}`.*Received: {name}={value!r}"):
        Settings(**{name: value})
    with pytest.raises(ValueError, match=r"Unknown settings \['colour'\]"):
        Settings.from_dict({"colour": 1})
