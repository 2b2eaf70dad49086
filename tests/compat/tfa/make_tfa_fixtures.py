"""Write the TensorFlow Addons reference fixtures of tests/compat/tfa (run with real tfa).

Reference numbers for `keras_attention.migrate.load_tfa_weights` and for the tfa options of
`LuongAttentionCell`, made by tfa 0.23's own `AttentionWrapper`, never by keras_attention (this
script does not import it). It needs TensorFlow 2.15 and tensorflow-addons 0.23 (tfa does not
import under Keras 3), in a separate environment:

    python3 -m venv /work/tfa-venv
    /work/tfa-venv/bin/pip install tensorflow==2.15.1 tensorflow-addons==0.23.0
    TF_CPP_MIN_LOG_LEVEL=2 /work/tfa-venv/bin/python tests/compat/tfa/make_tfa_fixtures.py

For every case it builds an `AttentionWrapper` over a small memory with
`memory_sequence_length` (one row padded, the padding full of garbage), runs one step to build
the variables, moves every variable away from its initializer (a random offset, so a weight
loaded into the wrong place or left at its initial value cannot pass), re-runs `setup_memory`
on every mechanism (tfa projects the keys there, once, with the memory layer's kernel of that
moment), then runs the wrapper step by step over the teacher-forced inputs. It writes:

- `fixtures/<case>.index` / `<case>.data-00000-of-00001`: `tf.train.Checkpoint(decoder=wrapper)`
  (cases with `"save": "keras"` instead save a tf.keras `Model` holding the wrapper, an
  embedding and a second reference to the first mechanism, with `Model.save_weights`);
- `fixtures/<case>.npz`: `inputs` `[B, T, d_y]`, `memory` `[B, S, d_h]` (padding included),
  `lengths` `[B]`, `outputs` `[B, T, d]` (what the wrapper returned at each step),
  `alignments_<k>` `[B, T, S]` per mechanism, the final `cell_state_<i>` and `attention`, and
  `initial_state_<i>` when the case starts from a given (encoder) cell state;
- `fixtures/two_wrappers.*`: one checkpoint holding two cases' wrappers (`first`, `second`), for
  the `scope` argument;
- `fixtures/MANIFEST.json`: the versions, the date and each case's tfa settings.
"""

from __future__ import annotations

import datetime
import json
import pathlib

import numpy as np
import tensorflow as tf
import tensorflow_addons as tfa

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
BATCH, MEMORY, STEPS, D_Y, D_H, UNITS = 2, 5, 4, 3, 4, 4
LENGTHS = [MEMORY, 3]

# name -> (cell, mechanisms, AttentionWrapper kwargs, extras). Mechanisms are
# (class name, kwargs) with the memory added here. UNITS is the cell size: tfa's LuongAttention
# needs its `units` equal to the query (cell output) size.
CASES = {
    "luong_lstm": (
        "lstm",
        [("LuongAttention", {"units": UNITS})],
        {"attention_layer_size": 5},
        {"initial_state": True},
    ),
    "luong_scaled_gru_context": (
        "gru",
        [("LuongAttention", {"units": UNITS, "scale": True})],
        {"attention_layer_size": None},
        {},
    ),
    "bahdanau_normalized_lstm": (
        "lstm",
        [("BahdanauAttention", {"units": 3, "normalize": True})],
        {"attention_layer_size": [6]},
        {},
    ),
    "bahdanau_gru_output_cell": (
        "gru",
        [("BahdanauAttention", {"units": 3})],
        {"attention_layer_size": 5, "output_attention": False},
        {},
    ),
    "luong_hardmax_gru": (
        "gru",
        [("LuongAttention", {"units": UNITS, "probability_fn": "hardmax"})],
        {"attention_layer_size": 4},
        {},
    ),
    "two_mechanisms_lstm": (
        "lstm",
        [
            ("LuongAttention", {"units": UNITS, "scale": True}),
            ("BahdanauAttention", {"units": 3, "normalize": True}),
        ],
        {"attention_layer_size": [2, 3]},
        {},
    ),
    "two_mechanisms_gru_context_output_cell": (
        "gru",
        [("LuongAttention", {"units": UNITS}), ("BahdanauAttention", {"units": 3})],
        {"attention_layer_size": None, "output_attention": False},
        {},
    ),
    "stacked_luong_keras_model": (
        "stacked",
        [("LuongAttention", {"units": UNITS})],
        {"attention_layer_size": 3},
        {"save": "keras"},
    ),
}
# Monotonic attention (Raffel et al. 2017): every mode of both mechanisms; tfa carries the
# previous alignments in the wrapper state and starts from all weight on the first position.
for _mode in ("parallel", "recursive", "hard"):
    CASES[f"bahdanau_monotonic_{_mode}"] = (
        "lstm",
        [
            (
                "BahdanauMonotonicAttention",
                {
                    "units": 3,
                    "normalize": _mode == "parallel",
                    "score_bias_init": -0.5,
                    "mode": _mode,
                },
            )
        ],
        {"attention_layer_size": 5},
        {},
    )
    CASES[f"luong_monotonic_{_mode}"] = (
        "gru",
        [
            (
                "LuongMonotonicAttention",
                {"units": UNITS, "scale": _mode != "hard", "score_bias_init": 0.5, "mode": _mode},
            )
        ],
        {"attention_layer_size": 4},
        {},
    )

TWO_WRAPPERS = ("luong_lstm", "two_mechanisms_lstm")  # checkpoint `two_wrappers`: first, second


def _cell(kind):
    if kind == "lstm":
        return tf.keras.layers.LSTMCell(UNITS)
    if kind == "gru":
        return tf.keras.layers.GRUCell(UNITS)
    return tf.keras.layers.StackedRNNCells(
        [tf.keras.layers.GRUCell(3), tf.keras.layers.LSTMCell(UNITS)]
    )


def _perturb(variables, rng):
    """Move every variable away from its initializer (scalars stay positive: g and scale)."""
    for variable in variables:
        shape = tuple(variable.shape)
        if shape == ():
            variable.assign(variable + rng.uniform(0.3, 0.8))
        else:
            variable.assign(variable + rng.normal(scale=0.4, size=shape).astype("float32"))


def _flat(state):
    return [np.asarray(s) for s in tf.nest.flatten(state)]


def make_case(name, seed):
    kind, mechanisms, wrapper_kwargs, extras = CASES[name]
    rng = np.random.default_rng(seed)
    inputs = rng.normal(size=(BATCH, STEPS, D_Y)).astype("float32")
    memory = rng.normal(size=(BATCH, MEMORY, D_H)).astype("float32")
    valid = np.arange(MEMORY)[None, :] < np.array(LENGTHS)[:, None]
    memory[~valid] = 30.0 * rng.normal(size=memory[~valid].shape)  # masked by tfa
    lengths = np.array(LENGTHS, "int32")
    made = [
        getattr(tfa.seq2seq, cls)(memory=memory, memory_sequence_length=lengths, **kwargs)
        for cls, kwargs in mechanisms
    ]
    wrapper = tfa.seq2seq.AttentionWrapper(
        _cell(kind), made if len(made) > 1 else made[0], **wrapper_kwargs
    )
    state = wrapper.get_initial_state(batch_size=BATCH, dtype=tf.float32)
    wrapper(inputs[:, 0], state)  # builds every variable
    _perturb(wrapper.weights, rng)
    for mechanism in made:  # the keys are projected here, with the perturbed memory layer
        mechanism.setup_memory(memory, memory_sequence_length=lengths)

    state = wrapper.get_initial_state(batch_size=BATCH, dtype=tf.float32)
    record = {"inputs": inputs, "memory": memory, "lengths": lengths}
    if extras.get("initial_state"):
        cell_state = [
            np.tanh(rng.normal(size=(BATCH, UNITS))).astype("float32") for _ in state.cell_state
        ]
        state = state.clone(cell_state=[tf.constant(s) for s in cell_state])
        for i, s in enumerate(cell_state):
            record[f"initial_state_{i}"] = s
    outputs, alignments = [], [[] for _ in made]
    for t in range(STEPS):
        output, state = wrapper(inputs[:, t], state)
        outputs.append(np.asarray(output))
        step_alignments = state.alignments if len(made) > 1 else (state.alignments,)
        for k, a in enumerate(step_alignments):
            alignments[k].append(np.asarray(a))
    record["outputs"] = np.stack(outputs, axis=1)
    for k, a in enumerate(alignments):
        record[f"alignments_{k}"] = np.stack(a, axis=1)
    for i, s in enumerate(_flat(state.cell_state)):
        record[f"cell_state_{i}"] = s
    record["attention"] = np.asarray(state.attention)
    np.savez(FIXTURES / f"{name}.npz", **record)

    if extras.get("save") == "keras":

        class Decoder(tf.keras.Model):
            def __init__(self):
                super().__init__()
                self.embedding = tf.keras.layers.Embedding(7, D_Y)
                self.embedding.build((None,))
                self.first_mechanism = made[0]  # a second path to the mechanism's variables
                self.decoder_cell = wrapper

        Decoder().save_weights(str(FIXTURES / name))
        (FIXTURES / "checkpoint").unlink(missing_ok=True)
    else:
        tf.train.Checkpoint(decoder=wrapper).write(str(FIXTURES / name))
    return wrapper


def main():
    FIXTURES.mkdir(exist_ok=True)
    wrappers = {}
    manifest = {
        "tensorflow": tf.__version__,
        "tensorflow_addons": tfa.__version__,
        "date": datetime.date.today().isoformat(),
        "sizes": {
            "batch": BATCH,
            "memory": MEMORY,
            "steps": STEPS,
            "d_y": D_Y,
            "d_h": D_H,
            "units": UNITS,
        },
        "lengths": LENGTHS,
        "cases": {},
    }
    for seed, name in enumerate(CASES):
        wrappers[name] = make_case(name, seed)
        kind, mechanisms, wrapper_kwargs, extras = CASES[name]
        manifest["cases"][name] = {
            "cell": kind,
            "mechanisms": [{"class": c, **k} for c, k in mechanisms],
            "wrapper": wrapper_kwargs,
            **extras,
        }
    first, second = (wrappers[n] for n in TWO_WRAPPERS)
    tf.train.Checkpoint(first=first, second=second).write(str(FIXTURES / "two_wrappers"))
    manifest["two_wrappers"] = dict(zip(("first", "second"), TWO_WRAPPERS))
    (FIXTURES / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(p.stat().st_size for p in FIXTURES.iterdir())
    print(f"wrote {len(CASES)} cases + two_wrappers, {total} bytes, to {FIXTURES}")


if __name__ == "__main__":
    main()
