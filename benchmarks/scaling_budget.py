"""A calculation, not a measurement: data-parallel communication vs compute per training step.

For the demo (examples/translate.py, default arguments) and the default G2P model
(examples/pronounce.py, default arguments), builds the model with the vocabularies its data
gives, counts the parameters and the mean source / target lengths of the training data, and
prints (docs/scaling.md explains every line):

- bytes all-reduced per step: a ring all-reduce of the float32 gradients sends and receives
  2 (N - 1) / N × 4 × P bytes per worker (P parameters; the embedding gradients are reduced
  dense, as `MirroredStrategy` and `DataParallel` reduce them);
- training FLOPs per example: 3 × the forward FLOPs (backward ≈ 2 × forward), the forward
  counted as 2 × the multiply-adds of the matmuls: every encoder RNN weight once per source
  step; every decoder weight except the embedding and the state bridge once per target step;
  the attention's memory-side work (keys once per source position; scores, context and, for
  additive attention, the tanh features per (target, source) pair);
- the per-worker batch b at which one step's compute time equals its all-reduce time, with
  no overlap of the two: b* = (bytes / bandwidth) × (device FLOP/s) / (FLOPs per example);
  above N × b* the step is compute-bound.

    python benchmarks/scaling_budget.py [--bandwidth-gbit 25] [--device-tflops 1 0.05]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "examples")]

import numpy as np  # noqa: E402

from keras_attention.models import Seq2Seq  # noqa: E402


def demo_model():
    """examples/translate.py's model at its defaults, and its data's mean lengths."""
    import translate

    from keras_attention.text import CharTokenizer

    train = translate.make_corpus(6000, seed=0)["train"]
    source, target = CharTokenizer(), CharTokenizer()
    source.adapt([row[0] for row in train])
    target.adapt([row[1] for row in train])
    model = Seq2Seq(
        source_vocabulary_size=source.vocabulary_size,
        target_vocabulary_size=target.vocabulary_size,
        embedding_dim=64, units=128, attention="luong", score_mode="general",
    )  # fmt: skip
    lengths = (
        np.mean([len(row[0]) + 1 for row in train]),  # + END
        np.mean([len(row[1]) + 1 for row in train]),  # START … / … END
    )
    return model, lengths


def g2p_model():
    """examples/pronounce.py's model at its defaults, and its data's mean lengths."""
    import pronounce

    lexicon = pronounce.load_lexicon(False)
    letters = {c for word in lexicon for c in word}
    phones = {p for refs in lexicon.values() for r in refs for p in r}
    model = Seq2Seq(
        source_vocabulary_size=len(letters) + 4,  # + the 4 special tokens
        target_vocabulary_size=len(phones) + 4,
        embedding_dim=64, units=256, encoder_units=128, rnn="gru", attention="bahdanau",
        dropout=0.1,
    )  # fmt: skip
    lengths = (
        np.mean([len(word) + 1 for word in lexicon]),
        np.mean([len(ref) + 1 for refs in lexicon.values() for ref in refs]),
    )
    return model, lengths


def build(model) -> None:
    model({"source_ids": np.ones((1, 4), "int32"), "target_ids": np.ones((1, 3), "int32")})


def forward_macs(model, source_length: float, target_length: float) -> float:
    """Multiply-adds of one example's forward pass (see the module docstring)."""
    encoder_rnn = sum(
        int(np.prod(w.shape)) for w in model.encoder.weights if "embedding" not in w.path
    )
    decoder_steps = sum(
        int(np.prod(w.shape))
        for w in model.decoder.weights
        if "embedding" not in w.path and "bridge" not in w.path
    )
    memory = model.encoder.output_dim
    pairs = source_length * target_length
    # The memory-side kernel (Bahdanau's key kernel, Luong "general"'s W_a) is applied once per
    # source position, not per target step: take it out of the per-step count above.
    name = "key_kernel" if model.decoder.attention == "bahdanau" else "score_kernel"
    (kernel,) = [w for w in model.decoder.weights if w.path.endswith(name)]
    size, dim = int(np.prod(kernel.shape)), kernel.shape[-1]
    memory_side = (source_length - target_length) * size
    if model.decoder.attention == "bahdanau":  # per pair: tanh features, score, context
        memory_side += pairs * (2 * dim + memory)
    else:  # per pair: the score (a dot product of keys) and the context
        memory_side += pairs * 2 * memory
    return source_length * encoder_rnn + target_length * decoder_steps + memory_side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bandwidth-gbit", type=float, default=25.0, help="per worker")
    parser.add_argument("--device-tflops", type=float, nargs="+", default=[1.0, 0.05])
    parser.add_argument("--workers", type=int, nargs="+", default=[8, 64])
    args = parser.parse_args()
    bandwidth = args.bandwidth_gbit * 1e9 / 8  # bytes/s
    print(f"interconnect: {args.bandwidth_gbit:g} Gbit/s per worker, ring all-reduce, fp32\n")
    print("| model | parameters | vocabulary-sized | mean S, T | training GFLOP/example "
          "| N | MB all-reduced/step/worker | all-reduce ms | device TFLOP/s | b* per worker "
          "| compute-bound global batch |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, make in (("demo (translate.py)", demo_model), ("G2P (pronounce.py)", g2p_model)):
        model, (source_length, target_length) = make()
        build(model)
        parameters = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
        vocabulary = sum(
            int(np.prod(w.shape))
            for w in model.trainable_weights
            if "embedding" in w.path or "projection" in w.path
        )
        flops = 3 * 2 * forward_macs(model, source_length, target_length)
        for workers in args.workers:
            sent = 2 * (workers - 1) / workers * 4 * parameters
            seconds = sent / bandwidth
            for tflops in args.device_tflops:
                per_worker = seconds * tflops * 1e12 / flops
                print(
                    f"| {name} | {parameters:,} | {vocabulary:,} "
                    f"| {source_length:.1f}, {target_length:.1f} | {flops / 1e9:.4f} "
                    f"| {workers} | {sent / 1e6:.2f} | {seconds * 1e3:.2f} | {tflops:g} "
                    f"| {per_worker:,.0f} | {workers * per_worker:,.0f} |"
                )


if __name__ == "__main__":
    main()
