"""How one `AttentionRNN` call runs: the fused Luong decoder or the stepped loop, and why.

`AttentionRNN.call` makes the plan first (`plan_execution`), then runs it. The fused decoder
(`cells/_fused_luong.py`) computes exactly what the stepped cell computes, but only for the
models it was written for; which those are is declared here, once, as a contract over the
components' full `get_config()` (`CONTRACTS`): every config key of the `LuongAttentionCell`, its
`LSTMCell` and its `LuongAttention` must be declared, with a supported value. An option added
later to any of them (or a subclass's) is a key the contract does not know, so the model runs
the stepped loop until the option is checked against the fused math and declared. The rest of
the decision is about the call: scheduled sampling, `return_sequences`, the backend, the
compute dtypes, the layer's `implementation`.
"""

from __future__ import annotations

from typing import NamedTuple

import keras

from keras_attention.cells.base_attention_cell import foldable
from keras_attention.cells.luong_attention_cell import LuongAttentionCell
from keras_attention.layers.luong_attention import LuongAttention


class ExecutionPlan(NamedTuple):
    """Which path one `AttentionRNN` call takes (`AttentionRNN.execution_plan`).

    Attributes:
        path: `"fused"` (`cells._fused_luong.luong_lstm_sequence`: the whole sequence in one
            function with a hand-written gradient) or `"stepped"` (the cell stepped in
            `functional.time_loop`, differentiated automatically).
        reason: Why: for `"stepped"`, what ruled the fused decoder out.
        reads_table: The fused decoder reads the embedding table itself (token ids in, a
            plain `keras.layers.Embedding`; no lookup first, see `foldable`).
        sampled: Scheduled sampling feeds the stepped loop its own predictions.
    """

    path: str
    reason: str
    reads_table: bool = False
    sampled: bool = False


IMPLEMENTATIONS = ("auto", "fused", "stepped")


def plan_execution(rnn, training=None, token_ids: bool = False, embedding=None) -> ExecutionPlan:
    """The plan of one call of `rnn` (an `AttentionRNN`): see `AttentionRNN.execution_plan`."""
    sampled = bool(rnn._sampling is not None and training)
    if rnn.implementation == "stepped":
        return ExecutionPlan("stepped", "implementation='stepped'", sampled=sampled)
    refusal = fused_refusal(rnn, rnn.cell, sampled, training)
    if refusal is not None:
        if rnn.implementation == "fused":
            raise ValueError(
                f"Layer {rnn.name} has implementation='fused', but the fused decoder cannot "
                f"run this call: {refusal}. Use implementation='auto' to run the stepped loop "
                "there. Received: implementation='fused'"
            )
        return ExecutionPlan("stepped", refusal, sampled=sampled)
    reads_table = bool(token_ids) and foldable(embedding, rnn.cell)
    return ExecutionPlan("fused", "the model is within the fused decoder's contract", reads_table)


# ------------------------------------------------------------------ the fused decoder's contract
class Contract(NamedTuple):
    """What the fused decoder supports of one component, declared over its `get_config()`.

    Every key of the component's config must be declared here, or the fused path is refused:
    an option added later to `LuongAttention`, `LuongAttentionCell` or Keras' `LSTMCell` sends
    the decoder to the stepped loop until someone checks it against `luong_lstm_sequence` and
    declares it. `values` holds the keys the fused math depends on, with the values it
    computes exactly as the stepped cell; `any_value` the keys it does not read (names,
    initializers, regularizers, constraints, sizes it takes from the weights); `in_training`
    narrows `values` for calls with `training=True`; `components` are the keys holding other
    components (each checked against its own contract).
    """

    component: type
    values: dict
    any_value: frozenset
    in_training: dict = {}
    components: tuple = ()


_WEIGHT_OPTIONS = frozenset(
    f"{kind}_{role}"
    for kind in ("kernel", "recurrent", "bias")
    for role in ("initializer", "regularizer", "constraint")
)
# `dtype` is checked once for all the components by the plan (`fused_refusal`): one float32 or
# float64 compute dtype throughout, not mixed precision.
_LAYER_OPTIONS = frozenset({"name", "trainable", "dtype"})


# The fused decoder's contract: one `Contract` per component, the cell first.
CONTRACTS = (
    Contract(
        LuongAttentionCell,
        values={
            "input_feeding": (True,),
            "attention_layer": (True,),
            "output_attention": (True,),
            "attention_activation": ("tanh", "linear", None),  # act in f' = act(...)
            "use_attention_bias": (False,),  # f' has no bias
        },
        any_value=_LAYER_OPTIONS | {"attention_units", "kernel_initializer"},
        components=("cell", "attention"),
    ),
    Contract(
        keras.layers.LSTMCell,
        values={
            "activation": ("tanh",),
            "recurrent_activation": ("sigmoid",),
            "use_bias": (True,),
            "dropout": (0.0,),
            "recurrent_dropout": (0.0,),
        },
        any_value=_LAYER_OPTIONS | _WEIGHT_OPTIONS | {"units", "unit_forget_bias", "seed"},
    ),
    Contract(
        LuongAttention,
        values={
            "alignment": ("global",),
            "score_mode": ("dot", "general"),
            "use_scale": (False,),
            "probability_fn": ("softmax",),
            "attention_units": (None,),  # (the cell refuses it anyway)
            "use_query_bias": (False,),  # (concat only, which is not fused)
            "use_attention_bias": (False,),  # (needs attention_units)
        },
        # `score_units` sizes local-p's network and the concat score; `window_radius`,
        # `attention_activation` and `seed` serve options the values above rule out
        # (local windows, h̃, dropout: an inference call applies no dropout).
        any_value=_LAYER_OPTIONS
        | _WEIGHT_OPTIONS
        | {"score_units", "window_radius", "attention_activation", "seed", "dropout"},
        in_training={"dropout": (0.0,)},
    ),
)


def contract_refusal(component, training, config: dict | None = None) -> str | None:
    """Why `component` (and the components in its config) breaks the fused path's contract,
    or `None` when its whole config is declared, with supported values. `config`: its
    `get_config()`, when the caller has it (the components' configs are read from their
    holder's, which serialises them anyway: one `get_config()` per component and call)."""
    contract = next((c for c in CONTRACTS if type(component) is c.component), None)
    if contract is None:
        return f"{type(component).__name__} is not a component of the fused decoder"
    name = contract.component.__name__
    config = component.get_config() if config is None else config
    for key, value in config.items():
        if key in contract.components:
            continue
        supported = contract.in_training.get(key) if training else None
        supported = supported or contract.values.get(key)
        if supported is not None:
            if value not in supported:
                return f"{name}({key}={value!r}) is not supported (supported: {supported!r})"
        elif key not in contract.any_value:
            return f"{name}'s option {key!r} is not declared by the fused decoder"
    for key in contract.components:
        inner, serialized = getattr(component, key), config[key]  # (the attention: maybe a list)
        if not isinstance(inner, (list, tuple)):
            inner, serialized = [inner], [serialized]
        if len(inner) != 1:
            return f"{name} holds {len(inner)} attention layers (the fused decoder takes one)"
        refusal = contract_refusal(inner[0], training, serialized[0]["config"])
        if refusal is not None:
            return refusal
    return None


def fused_refusal(rnn, cell, sampled, training) -> str | None:
    """Why `AttentionRNN.call` may not run `luong_lstm_sequence` for this cell and call, or
    `None` when it may: the layer's own options, the call (`sampled`: scheduled sampling
    feeds this call's inputs, which the fused loop cannot), the backend, then the components'
    configs against `CONTRACTS` and their compute dtypes."""
    if sampled:
        return "scheduled sampling feeds the decoder its own predictions"
    if not rnn.return_sequences:
        return "return_sequences=False"
    if keras.backend.backend() not in ("tensorflow", "jax"):
        return "PyTorch's custom gradients take a single output"
    if not cell.built:
        return "the cell is not built"
    refusal = contract_refusal(cell, training)
    if refusal is not None:
        return refusal
    layers = (cell, cell.cell, cell.attentions[0])
    dtype = keras.backend.standardize_dtype(rnn.compute_dtype)
    # Not under mixed precision (the stepped cell computes the scores in float32 there).
    if dtype not in ("float32", "float64") or any(
        keras.backend.standardize_dtype(layer.compute_dtype) != dtype for layer in layers
    ):
        return "not one float32 or float64 compute dtype throughout"
    return None
