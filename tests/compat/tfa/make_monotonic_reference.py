"""Reference numbers for the monotonic attention layers, from real TensorFlow Addons 0.23.

Runs tfa's `BahdanauMonotonicAttention` (plain and `normalize=True`) and
`LuongMonotonicAttention` (plain and `scale=True`) in the modes "parallel", "recursive" and
"hard" on fixed weights, queries, memories with padding (`memory_sequence_length`) and previous
alignments, steps each mechanism three times (feeding its alignment back as the next previous
alignment, as `AttentionWrapper` does) and writes every input, weight and output to
`monotonic_reference.npz` next to this file. `tests/layers/test_monotonic_tfa.py` compares our
layers against it (1e-5). The environment (TF 2.15 + tensorflow-addons 0.23; tfa does not import
under Keras 3):

    python3 -m venv /work/tfa-venv
    /work/tfa-venv/bin/pip install tensorflow==2.15.1 tensorflow-addons==0.23.0
    /work/tfa-venv/bin/python tests/compat/tfa/make_monotonic_reference.py

Keys of the npz: for each case `<name>` (e.g. `bahdanau_normalize_parallel_start`):
`<name>/query` `[T, B, d_s]`, `<name>/memory` `[B, S, d_h]`, `<name>/lengths` `[B]`,
`<name>/previous` `[B, S]` (the alignment before the first step), `<name>/alignments`
`[T, B, S]` and `<name>/contexts` `[T, B, d_h]` (tfa's), and `<name>/w/<our weight name>` for
each weight, under the keras_attention names (`query_kernel` = tfa's `query_layer/kernel`,
`key_kernel` = `memory_layer/kernel`, `score_vector` = `attention_v`, `norm_scale` =
`attention_g` of the Bahdanau form, `norm_bias` = `attention_b`, `score_kernel` = Luong's
`memory_layer/kernel`, `scale` = Luong's `attention_g`, `score_bias` = `attention_score_bias`).
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import tensorflow_addons as tfa  # noqa: E402

B, T, S, D_S, D_H, U = 3, 3, 6, 4, 5, 7
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "monotonic_reference.npz")


def _inputs(rng, d_query):
    query = rng.normal(size=(T, B, d_query)).astype("float32")
    memory = rng.normal(size=(B, S, D_H)).astype("float32")
    lengths = np.array([S, 4, 2], "int32")
    return query, memory, lengths


def _previous(rng, kind, lengths):
    if kind == "start":
        previous = np.zeros((B, S), "float32")
        previous[:, 0] = 1.0
        return previous
    if kind == "onehot":  # for hard mode: a one-hot inside the valid part of each row
        previous = np.zeros((B, S), "float32")
        previous[np.arange(B), [2, 1, 1]] = 1.0
        return previous
    previous = rng.dirichlet(np.ones(S), size=B).astype("float32") * 0.9  # sums to 0.9
    previous[np.arange(S)[None, :] >= lengths[:, None]] = 0.0
    return previous


def _case(rng, family, variant, mode, previous_kind):
    d_query = D_S if family == "bahdanau" else D_H
    query, memory, lengths = _inputs(rng, d_query)
    # hard mode: a positive bias, so that some positions are chosen (else every row is zero)
    score_bias = np.float32(rng.uniform(0.5, 1.5) if mode == "hard" else rng.uniform(-1.0, 1.0))
    if family == "bahdanau":
        mech = tfa.seq2seq.BahdanauMonotonicAttention(
            U,
            memory=memory,
            memory_sequence_length=lengths,
            normalize=variant == "normalize",
            mode=mode,
        )
    else:
        mech = tfa.seq2seq.LuongMonotonicAttention(
            D_H,
            memory=memory,
            memory_sequence_length=lengths,
            scale=variant == "scale",
            mode=mode,
        )
    previous = _previous(rng, previous_kind, lengths)
    mech([query[0], tf.constant(previous)])  # builds every weight
    ours = {}
    if family == "bahdanau":
        ours["query_kernel"] = mech.query_layer.kernel
        ours["key_kernel"] = mech.memory_layer.kernel
        ours["score_vector"] = mech.attention_v
        if variant == "normalize":
            ours["norm_scale"] = mech.attention_g
            ours["norm_bias"] = mech.attention_b
    else:
        ours["score_kernel"] = mech.memory_layer.kernel
        if variant == "scale":
            ours["scale"] = mech.attention_g
    ours["score_bias"] = mech.attention_score_bias
    weights = {}
    for name, var in ours.items():  # every weight away from its initializer
        if name in ("norm_scale", "scale"):
            value = np.float32(rng.uniform(0.5, 1.5))
        elif name == "score_bias":
            value = score_bias
        else:
            value = (0.6 * rng.normal(size=var.shape)).astype("float32")
        var.assign(value)
        weights[name] = np.asarray(value, "float32")
    # tfa projects the keys once, in setup_memory: run it again with the new memory_layer.
    mech.setup_memory(memory, memory_sequence_length=lengths)
    alignments, contexts, state = [], [], tf.constant(previous)
    for t in range(T):
        alignment, state = mech([query[t], state])
        context = tf.squeeze(tf.matmul(tf.expand_dims(alignment, 1), mech.values), [1])
        alignments.append(alignment.numpy())
        contexts.append(context.numpy())
    record = {
        "query": query,
        "memory": memory,
        "lengths": lengths,
        "previous": previous,
        "alignments": np.stack(alignments),
        "contexts": np.stack(contexts),
    }
    record.update({f"w/{k}": v for k, v in weights.items()})
    return record


def main() -> None:
    rng = np.random.default_rng(20261201)
    arrays = {}
    for family, variants in (("bahdanau", ("plain", "normalize")), ("luong", ("plain", "scale"))):
        for variant in variants:
            for mode in ("parallel", "recursive", "hard"):
                kinds = ("start", "onehot") if mode == "hard" else ("start", "spread")
                for kind in kinds:
                    name = f"{family}_{variant}_{mode}_{kind}"
                    for key, value in _case(rng, family, variant, mode, kind).items():
                        arrays[f"{name}/{key}"] = value
    arrays["versions/tensorflow"] = np.array(tf.__version__)
    arrays["versions/tensorflow_addons"] = np.array(tfa.__version__)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT}: {len(arrays)} arrays")


if __name__ == "__main__":
    main()
