"""The checkpoint fixtures: how each model is built and what it is fed.

Shared by `make_fixtures.py` (which writes the fixtures) and `test_checkpoints.py` (which builds
the same models afresh and loads the stored weights into them). Every fixture is a functional
`keras.Model` wrapping one public object, with named inputs and dict outputs, so that the
`.keras` file, the `.weights.h5` file and the `.npz` of inputs and outputs line up by name.
The inputs have fixed step counts: a symbolic call with unknown steps makes the PyTorch backend
trace the recurrent loop over ~90 placeholder steps (seconds per model).

Changing a builder here changes what a fixture means: only do it together with regenerating
the fixtures, a version bump and a CHANGELOG line (see README.md in this folder). A spec's
`since` is the first version whose fixture set holds it: the 0.2.0 set re-saves every 0.1.0 spec
with 0.2.0 and adds what 0.2.0 brought (monotonic and location-sensitive attention, the tfa
`AttentionWrapper` options, `Seq2Seq(attention="monotonic")`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np

from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    BahdanauMonotonicAttention,
    LocationSensitiveAttention,
    LuongAttention,
    LuongAttentionCell,
    LuongMonotonicAttention,
)
from keras_attention.models import Seq2Seq

BATCH, STEPS, MEMORY = 3, 4, 5
D_QUERY, D_VALUE = 3, 3
D_Y, D_MEMORY, UNITS = 2, 3, 4
GARBAGE = 50.0  # padded memory positions hold large numbers: they must not matter


@dataclass(frozen=True)
class Spec:
    """One fixture: a model builder, an input maker, and what the reference needs to know."""

    name: str
    # "layer", "luong_rnn", "bahdanau_rnn", "seq2seq" (0.1.0); "monotonic_layer",
    # "location_layer", "stateful_rnn" (attention with carried state) and "rnn" (no reference
    # of its own) since 0.2.0
    kind: str
    build: Callable[[], keras.Model]
    inputs: Callable[[np.random.Generator], dict]
    description: str
    reference: dict = field(default_factory=dict)
    since: str = "0.1.0"


# ----------------------------------------------------------------------------- inputs
def _memory_mask() -> np.ndarray:
    """Row 0 full, row 1 right-padded, row 2 with a hole and padding at the end."""
    return np.array(
        [
            [True] * MEMORY,
            [True, True, True, False, False],
            [True, False, True, True, False],
        ]
    )


def _with_garbage(rng, array, mask):
    array = array.copy()
    array[~mask] = GARBAGE * rng.normal(size=array[~mask].shape)
    return array.astype("float32")


def _layer_inputs(rng: np.random.Generator) -> dict:
    mask = _memory_mask()
    return {
        "query": rng.normal(size=(BATCH, STEPS, D_QUERY)).astype("float32"),
        "value": _with_garbage(rng, rng.normal(size=(BATCH, MEMORY, D_VALUE)), mask),
        "value_mask": mask,
    }


def _rnn_inputs(rng: np.random.Generator) -> dict:
    mask = _memory_mask()
    return {
        "sequences": rng.normal(size=(BATCH, STEPS, D_Y)).astype("float32"),
        "memory": _with_garbage(rng, rng.normal(size=(BATCH, MEMORY, D_MEMORY)), mask),
        "memory_mask": mask,
        "target_mask": np.array(
            [[True] * STEPS, [True, True, True, False], [True, True, False, False]]
        ),
    }


def _seq2seq_inputs(rng: np.random.Generator) -> dict:
    return {
        "source_ids": np.array([[5, 6, 7, 3, 0], [4, 8, 3, 0, 0], [9, 3, 0, 0, 0]], "int32"),
        "target_ids": np.array([[2, 4, 5, 6], [2, 7, 8, 0], [2, 5, 0, 0]], "int32"),
    }


# ----------------------------------------------------------------------------- builders
def _layer_model(make_layer: Callable[[], Any]) -> Callable[[], keras.Model]:
    def build() -> keras.Model:
        query = keras.Input((STEPS, D_QUERY), name="query")
        value = keras.Input((MEMORY, D_VALUE), name="value")
        value_mask = keras.Input((MEMORY,), dtype="bool", name="value_mask")
        layer = make_layer()
        output, weights = layer(query, value, value_mask=value_mask, return_attention_scores=True)
        return keras.Model(
            {"query": query, "value": value, "value_mask": value_mask},
            {"output": output, "weights": weights},
        )

    return build


def _rnn_model(make_cell: Callable[[], Any]) -> Callable[[], keras.Model]:
    def build() -> keras.Model:
        sequences = keras.Input((STEPS, D_Y), name="sequences")
        memory = keras.Input((MEMORY, D_MEMORY), name="memory")
        memory_mask = keras.Input((MEMORY,), dtype="bool", name="memory_mask")
        target_mask = keras.Input((STEPS,), dtype="bool", name="target_mask")
        rnn = AttentionRNN(make_cell(), return_attention_scores=True, return_state=True)
        outputs, alignments, *states = rnn(
            sequences, memory, memory_mask=memory_mask, mask=target_mask
        )
        named = {"outputs": outputs, "alignments": alignments}
        named.update({f"state_{i}": s for i, s in enumerate(states)})
        inputs = {
            "sequences": sequences,
            "memory": memory,
            "memory_mask": memory_mask,
            "target_mask": target_mask,
        }
        return keras.Model(inputs, named)

    return build


def _seq2seq_model() -> keras.Model:
    source = keras.Input((MEMORY,), dtype="int32", name="source_ids")
    target = keras.Input((STEPS,), dtype="int32", name="target_ids")
    seq2seq = Seq2Seq(
        source_vocabulary_size=10,
        target_vocabulary_size=9,
        embedding_dim=3,
        units=4,
        encoder_units=2,
        name="seq2seq",
    )
    logits = seq2seq({"source_ids": source, "target_ids": target})
    return keras.Model({"source_ids": source, "target_ids": target}, {"logits": logits})


def _luong_specs() -> list[Spec]:
    specs = []
    for mode in ("dot", "general", "concat"):
        for alignment in ("global", "local_monotonic", "local_predictive"):
            radius = 1

            def make(mode=mode, alignment=alignment, radius=radius):
                return LuongAttention(
                    mode, alignment, window_radius=radius, units=3, name="attention"
                )

            specs.append(
                Spec(
                    name=f"luong_{mode}_{alignment}",
                    kind="layer",
                    build=_layer_model(make),
                    inputs=_layer_inputs,
                    description=(
                        f"LuongAttention(score_mode={mode!r}, alignment={alignment!r}, "
                        f"window_radius={radius}, units=3)"
                    ),
                    reference={"mode": mode, "alignment": alignment, "window_radius": radius},
                )
            )
    return specs


def _additive_specs() -> list[Spec]:
    return [
        Spec(
            name="additive",
            kind="layer",
            build=_layer_model(lambda: AdditiveAttention(units=3, name="attention")),
            inputs=_layer_inputs,
            description="AdditiveAttention(units=3)",
            reference={"mode": "additive"},
        ),
        Spec(
            name="additive_normalize_scale",
            kind="layer",
            build=_layer_model(
                lambda: AdditiveAttention(units=3, normalize=True, use_scale=True, name="attention")
            ),
            inputs=_layer_inputs,
            description="AdditiveAttention(units=3, normalize=True, use_scale=True)",
            reference={"mode": "additive", "normalize": True, "use_scale": True},
        ),
    ]


def _rnn_specs() -> list[Spec]:
    return [
        Spec(
            name="rnn_luong_lstm_input_feeding",
            kind="luong_rnn",
            build=_rnn_model(
                lambda: LuongAttentionCell(
                    keras.layers.LSTMCell(UNITS), LuongAttention("general"), attention_layer_size=3
                )
            ),
            inputs=_rnn_inputs,
            description=(
                "AttentionRNN(LuongAttentionCell(LSTMCell(4), LuongAttention('general'), "
                "attention_layer_size=3), input feeding)"
            ),
            reference={
                "cells": ["lstm"],
                "attention": {"mode": "general"},
                "input_feeding": True,
            },
        ),
        Spec(
            name="rnn_luong_gru_local_predictive",
            kind="luong_rnn",
            build=_rnn_model(
                lambda: LuongAttentionCell(
                    keras.layers.GRUCell(UNITS),
                    LuongAttention("concat", "local_predictive", window_radius=1, units=3),
                    input_feeding=False,
                )
            ),
            inputs=_rnn_inputs,
            description=(
                "AttentionRNN(LuongAttentionCell(GRUCell(4), LuongAttention('concat', "
                "'local_predictive', window_radius=1, units=3), input_feeding=False))"
            ),
            reference={
                "cells": ["gru"],
                "attention": {
                    "mode": "concat",
                    "alignment": "local_predictive",
                    "window_radius": 1,
                },
                "input_feeding": False,
            },
        ),
        Spec(
            name="rnn_bahdanau_gru",
            kind="bahdanau_rnn",
            build=_rnn_model(
                lambda: BahdanauAttentionCell(
                    keras.layers.GRUCell(UNITS), AdditiveAttention(units=3)
                )
            ),
            inputs=_rnn_inputs,
            description="AttentionRNN(BahdanauAttentionCell(GRUCell(4), AdditiveAttention(3)))",
            reference={"cells": ["gru"], "attention": {"mode": "additive"}},
        ),
        Spec(
            name="rnn_bahdanau_stacked",
            kind="bahdanau_rnn",
            build=_rnn_model(
                lambda: BahdanauAttentionCell(
                    keras.layers.StackedRNNCells(
                        [keras.layers.GRUCell(3), keras.layers.LSTMCell(UNITS)]
                    ),
                    AdditiveAttention(units=3, normalize=True),
                )
            ),
            inputs=_rnn_inputs,
            description=(
                "AttentionRNN(BahdanauAttentionCell(StackedRNNCells([GRUCell(3), "
                "LSTMCell(4)]), AdditiveAttention(3, normalize=True)))"
            ),
            reference={
                "cells": ["gru", "lstm"],
                "attention": {"mode": "additive", "normalize": True},
            },
        ),
    ]


def _seq2seq_specs() -> list[Spec]:
    return [
        Spec(
            name="seq2seq_luong",
            kind="seq2seq",
            build=_seq2seq_model,
            inputs=_seq2seq_inputs,
            description=(
                "Seq2Seq(source_vocabulary_size=10, target_vocabulary_size=9, embedding_dim=3, "
                "units=4, encoder_units=2), no tokenizers: teacher-forced logits"
            ),
        )
    ]


def _specs_0_2_0() -> list[Spec]:
    """What 0.2.0 added: monotonic and location-sensitive attention (as layers over a query
    sequence and inside both cells), several attention layers on one Luong cell with
    `output_attention=False`, and a monotonic `Seq2Seq`."""
    layers = [
        Spec(
            name="bahdanau_monotonic_parallel",
            kind="monotonic_layer",
            build=_layer_model(
                lambda: BahdanauMonotonicAttention(
                    units=3, normalize=True, mode="parallel", name="attention"
                )
            ),
            inputs=_layer_inputs,
            description="BahdanauMonotonicAttention(units=3, normalize=True, mode='parallel')",
            reference={"family": "additive", "mode": "parallel", "normalize": True},
            since="0.2.0",
        ),
        Spec(
            name="luong_monotonic_recursive",
            kind="monotonic_layer",
            build=_layer_model(
                lambda: LuongMonotonicAttention(use_scale=True, mode="recursive", name="attention")
            ),
            inputs=_layer_inputs,
            description="LuongMonotonicAttention(use_scale=True, mode='recursive')",
            reference={"family": "general", "mode": "recursive", "use_scale": True},
            since="0.2.0",
        ),
        Spec(
            name="location_sensitive_cumulative",
            kind="location_layer",
            build=_layer_model(
                lambda: LocationSensitiveAttention(
                    units=3,
                    filters=2,
                    kernel_size=3,
                    cumulative=True,
                    use_scale=True,
                    name="attention",
                )
            ),
            inputs=_layer_inputs,
            description=(
                "LocationSensitiveAttention(units=3, filters=2, kernel_size=3, cumulative=True, "
                "use_scale=True)"
            ),
            reference={"cumulative": True, "use_scale": True},
            since="0.2.0",
        ),
    ]
    rnns = [
        Spec(
            name="rnn_luong_lstm_monotonic",
            kind="stateful_rnn",
            build=_rnn_model(
                lambda: LuongAttentionCell(
                    keras.layers.LSTMCell(UNITS), LuongMonotonicAttention(mode="parallel")
                )
            ),
            inputs=_rnn_inputs,
            description=(
                "AttentionRNN(LuongAttentionCell(LSTMCell(4), "
                "LuongMonotonicAttention(mode='parallel')))"
            ),
            reference={"kind": "luong", "cells": ["lstm"], "family": "general", "mode": "parallel"},
            since="0.2.0",
        ),
        Spec(
            name="rnn_bahdanau_gru_location",
            kind="stateful_rnn",
            build=_rnn_model(
                lambda: BahdanauAttentionCell(
                    keras.layers.GRUCell(UNITS),
                    LocationSensitiveAttention(3, filters=2, kernel_size=3, cumulative=True),
                )
            ),
            inputs=_rnn_inputs,
            description=(
                "AttentionRNN(BahdanauAttentionCell(GRUCell(4), LocationSensitiveAttention(3, "
                "filters=2, kernel_size=3, cumulative=True)))"
            ),
            reference={
                "kind": "bahdanau",
                "cells": ["gru"],
                "family": "location",
                "cumulative": True,
            },
            since="0.2.0",
        ),
        Spec(
            name="rnn_luong_two_attentions",
            kind="rnn",
            build=_rnn_model(
                lambda: LuongAttentionCell(
                    keras.layers.GRUCell(UNITS),
                    [LuongAttention("general"), AdditiveAttention(units=3)],
                    attention_layer_size=[2, 3],
                    output_attention=False,
                )
            ),
            inputs=_rnn_inputs,
            description=(
                "AttentionRNN(LuongAttentionCell(GRUCell(4), [LuongAttention('general'), "
                "AdditiveAttention(3)], attention_layer_size=[2, 3], output_attention=False))"
            ),
            since="0.2.0",
        ),
    ]

    def seq2seq_monotonic() -> keras.Model:
        source = keras.Input((MEMORY,), dtype="int32", name="source_ids")
        target = keras.Input((STEPS,), dtype="int32", name="target_ids")
        seq2seq = Seq2Seq(
            source_vocabulary_size=10,
            target_vocabulary_size=9,
            embedding_dim=3,
            units=4,
            encoder_units=2,
            attention="monotonic",
            name="seq2seq",
        )
        logits = seq2seq({"source_ids": source, "target_ids": target})
        return keras.Model({"source_ids": source, "target_ids": target}, {"logits": logits})

    models = [
        Spec(
            name="seq2seq_monotonic",
            kind="seq2seq",
            build=seq2seq_monotonic,
            inputs=_seq2seq_inputs,
            description=(
                "Seq2Seq(source_vocabulary_size=10, target_vocabulary_size=9, embedding_dim=3, "
                "units=4, encoder_units=2, attention='monotonic'): teacher-forced logits"
            ),
            since="0.2.0",
        )
    ]
    return layers + rnns + models


SPECS: dict[str, Spec] = {
    spec.name: spec
    for spec in _luong_specs()
    + _additive_specs()
    + _rnn_specs()
    + _seq2seq_specs()
    + _specs_0_2_0()
}

# The fixture sets: the folder each version's fixtures live in (0.1.0's predate this table).
FIXTURE_DIRS = {"0.1.0": "fixtures", "0.2.0": "fixtures-0.2.0"}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def specs_for(version: str) -> dict[str, Spec]:
    """The specs a fixture set made by `version` holds (those with `since <= version`)."""
    return {
        name: spec
        for name, spec in SPECS.items()
        if _version_key(spec.since) <= _version_key(version)
    }


def randomize(model: keras.Model, rng: np.random.Generator) -> None:
    """Replace every weight by random numbers (so that no initial value can pass for loaded)."""
    for weight in model.weights:
        if "float" not in str(weight.dtype):
            continue  # e.g. a seed generator's state
        if weight.name in ("scale", "norm_scale"):
            weight.assign(np.asarray(rng.uniform(0.5, 1.5), dtype=weight.dtype))
        else:
            weight.assign((0.5 * rng.normal(size=weight.shape)).astype(weight.dtype))


def to_numpy(outputs: dict) -> dict:
    """A model's dict of outputs as NumPy arrays."""
    return {k: np.asarray(keras.ops.convert_to_numpy(v)) for k, v in outputs.items()}
