"""`AttentionRNN`'s execution plan: the fused decoder's declared contract, the fallback to the
stepped loop for an option the contract does not declare, and the `implementation` option.

The numbers of the two paths are compared in `test_fused_luong.py`; here, which path a call
takes (the plan, and the call of `luong_lstm_sequence` itself) and that a model falling back
computes what the stepped loop computes.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell
from keras_attention.cells import _execution_plan, attention_rnn
from tests.backend_utils import BACKEND, to_numpy
from tests.conftest import count_calls

FUSED = BACKEND in ("tensorflow", "jax")  # PyTorch always steps (see `fused_refusal`)
UNITS = 6


def _rnn(**kwargs):
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(UNITS), LuongAttention("general"), attention_units=5
    )
    return AttentionRNN(cell, return_attention_scores=True, **kwargs)


def _inputs():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(2, 4, 3)).astype("float32")
    memory = rng.normal(size=(2, 5, UNITS)).astype("float32")
    return y, memory


def _run(rnn, monkeypatch):
    """The outputs of one call and whether it ran the fused decoder."""
    calls = count_calls(monkeypatch, attention_rnn, fused="luong_lstm_sequence")
    outputs = [to_numpy(x) for x in rnn(*_inputs())]
    return outputs, calls["fused"] == 1


def _with_option(cls, key, value):
    """`cls.get_config` as if `cls` had gained the option `key` (set to `value`)."""
    get_config = cls.get_config

    def patched(self):
        return {**get_config(self), key: value}

    return patched


@pytest.mark.parametrize(
    "component",
    [LuongAttention, LuongAttentionCell, keras.layers.LSTMCell],
    ids=lambda c: c.__name__,
)
def test_an_option_the_contract_does_not_declare_runs_the_stepped_loop(monkeypatch, component):
    rnn = _rnn()
    want, fused = _run(rnn, monkeypatch)
    assert fused is FUSED
    assert (rnn.execution_plan().path == "fused") is FUSED

    monkeypatch.setattr(component, "get_config", _with_option(component, "new_option", True))
    plan = rnn.execution_plan()
    assert plan.path == "stepped"
    if FUSED:
        assert "'new_option' is not declared" in plan.reason and component.__name__ in plan.reason
    got, fused = _run(rnn, monkeypatch)
    assert not fused
    rnn.implementation = "stepped"
    stepped, _ = _run(rnn, monkeypatch)
    for g, s, w in zip(got, stepped, want):
        np.testing.assert_array_equal(g, s)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)  # fused vs stepped: round-off


def test_a_subclass_with_a_new_option_runs_the_stepped_loop(monkeypatch):
    class WithOption(LuongAttention):
        def __init__(self, new_option=False, **kwargs):
            super().__init__(**kwargs)
            self.new_option = new_option

        def get_config(self):
            return {**super().get_config(), "new_option": self.new_option}

    cell = LuongAttentionCell(keras.layers.LSTMCell(UNITS), WithOption(score_mode="general"))
    rnn = AttentionRNN(cell)
    _, fused = _run(rnn, monkeypatch)
    assert not fused
    plan = rnn.execution_plan()
    assert plan.path == "stepped"
    if FUSED:
        assert "WithOption is not a component of the fused decoder" in plan.reason


def test_unsupported_values_are_named():
    refusal = _execution_plan.contract_refusal
    assert refusal(LuongAttention(probability_fn="hardmax"), False) == (
        "LuongAttention(probability_fn='hardmax') is not supported (supported: ('softmax',))"
    )
    assert refusal(LuongAttention(dropout=0.1), False) is None  # no dropout outside training
    assert "dropout=0.1" in refusal(LuongAttention(dropout=0.1), True)
    assert "recurrent_activation='hard_sigmoid'" in refusal(
        keras.layers.LSTMCell(3, recurrent_activation="hard_sigmoid"), False
    )
    two = LuongAttentionCell(keras.layers.LSTMCell(4), [LuongAttention(), LuongAttention()])
    assert refusal(two, False) == (
        "LuongAttentionCell holds 2 attention layers (the fused decoder takes one)"
    )


def test_the_contract_declares_every_option_of_the_default_components():
    """Fails when Keras (or this package) adds an option to a component: check it against
    `luong_lstm_sequence`, then declare it in `_execution_plan.CONTRACTS`."""
    cell = LuongAttentionCell(keras.layers.LSTMCell(UNITS), LuongAttention())
    for component in (cell, cell.cell, cell.attentions[0]):
        contract = next(c for c in _execution_plan.CONTRACTS if type(component) is c.component)
        declared = set(contract.values) | contract.any_value | set(contract.components)
        assert set(component.get_config()) - declared == set(), component
        assert _execution_plan.contract_refusal(component, training=True) is None


@pytest.mark.skipif(not FUSED, reason="PyTorch always runs the stepped loop")
def test_supported_options_keep_the_fused_path(monkeypatch):
    """Options the contract declares with any value (weights' initializers, regularizers and
    constraints, sizes, names), supported values, a list of one attention layer."""
    lstm = keras.layers.LSTMCell(
        UNITS,
        unit_forget_bias=False,
        kernel_regularizer="l2",
        recurrent_constraint="non_neg",
        bias_initializer="ones",
        seed=3,
        name="decoder_lstm",
    )
    attention = LuongAttention("dot", dropout=0.3, kernel_initializer="zeros", seed=1)
    cell = LuongAttentionCell(lstm, [attention], attention_activation=None)
    rnn = AttentionRNN(cell, return_state=True)
    _, fused = _run(rnn, monkeypatch)
    assert fused
    assert rnn.execution_plan(training=False).path == "fused"
    plan = rnn.execution_plan(training=True)  # attention dropout in training: stepped
    assert plan.path == "stepped" and "dropout=0.3" in plan.reason


def test_implementation_option(monkeypatch):
    with pytest.raises(ValueError, match="Received: implementation='cudnn'"):
        AttentionRNN(
            LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention()), implementation="cudnn"
        )
    rnn = _rnn(implementation="stepped")
    _, fused = _run(rnn, monkeypatch)
    assert not fused
    assert rnn.execution_plan() == ("stepped", "implementation='stepped'", False, False)
    config = rnn.get_config()
    assert config["implementation"] == "stepped"
    assert AttentionRNN.from_config(config).implementation == "stepped"
    assert "implementation" not in _rnn().get_config()  # "auto": older configs unchanged
    assert AttentionRNN.from_config(_rnn().get_config()).implementation == "auto"

    concat = AttentionRNN(
        LuongAttentionCell(keras.layers.LSTMCell(UNITS), LuongAttention("concat")),
        implementation="fused",
    )
    match = "score_mode='concat'" if FUSED else "PyTorch"
    with pytest.raises(ValueError, match=f"implementation='fused'.*{match}"):
        concat(*_inputs())
    if FUSED:
        rnn = _rnn(implementation="fused")
        _, fused = _run(rnn, monkeypatch)
        assert fused


def test_the_private_switch_still_works():
    """`_allow_fused` (set by tests written before `implementation`) maps onto it."""
    rnn = _rnn()
    rnn._allow_fused = False
    assert rnn.implementation == "stepped" and not rnn._allow_fused
    rnn._allow_fused = True
    assert rnn.implementation == "auto"
