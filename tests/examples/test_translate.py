"""The flagship example: the date corpus, the --data reader, and a smoke run end to end."""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _example_loader import EXAMPLES, load_example

from keras_attention.training.resume import MANIFEST

example = load_example("translate")


@pytest.fixture(scope="module")
def corpus():
    return example.make_corpus(6000, seed=0)


def test_corpus_is_large_deterministic_and_split_by_date(corpus):
    assert sum(len(rows) for rows in corpus.values()) >= 20_000
    again = example.make_corpus(300, seed=5)
    assert again == example.make_corpus(300, seed=5)
    assert again != example.make_corpus(300, seed=6)
    dates = {split: {row[1] for row in rows} for split, rows in corpus.items()}
    assert not dates["test"] & dates["train"]
    assert not dates["validation"] & dates["train"]
    assert not dates["test"] & dates["validation"]
    for rows in corpus.values():
        for _, target, _, _ in rows:
            datetime.date.fromisoformat(target)


def test_corpus_covers_the_promised_locales_and_formats(corpus):
    formats = example.usable_formats()
    locales = {locale for locale, _ in formats}
    assert len(locales) >= 8
    assert {"ru_RU", "el_GR", "ja_JP"} <= locales  # Cyrillic, Greek, Japanese
    per_locale = {loc: sum(1 for x, _ in formats if x == loc) for loc in locales}
    assert min(per_locale.values()) >= 3  # several formats per locale
    seen = {(row[2], row[3]) for row in corpus["train"]}
    assert seen == set(formats)
    scripts = "".join(row[0] for row in corpus["train"])
    assert re.search("[а-я]", scripts) and re.search("[α-ω]", scripts) and "年" in scripts


def test_every_source_determines_its_target():
    """All usable formats of 1,500 dates spread over two centuries: no string twice with two
    different dates; and the excluded patterns are exactly the ambiguous kinds."""
    from babel.dates import format_date, get_date_format

    step = (example.LAST_DATE - example.FIRST_DATE) // 1500
    dates = [example.FIRST_DATE + i * step for i in range(1500)]
    dates += [datetime.date(2001, 3, 4), datetime.date(2001, 4, 3)]  # day/month swapped
    meaning: dict[str, datetime.date] = {}
    for locale, name in example.usable_formats():
        for date in dates:
            text = " ".join(format_date(date, format=name, locale=locale).split())
            assert meaning.setdefault(text, date) == date, (text, locale, name)
    excluded = set((loc, name) for loc in example.LOCALES for name in example.FORMATS) - set(
        example.usable_formats()
    )
    for locale, name in excluded:
        pattern = get_date_format(name, locale=locale).pattern
        two_digit_year = re.search(r"(?<!y)yy(?!y)", pattern)
        month_first = re.match(r"M{1,2}\W", pattern)
        assert two_digit_year or month_first, (locale, name, pattern)
    assert ("en_US", "short") in excluded  # M/d/yy


def test_read_corpus_splits_anki_files_and_names_bad_lines(tmp_path):
    good = tmp_path / "good.tsv"
    good.write_text(
        "".join(
            f"word{i}\tmot{i}\tCC-BY 2.0 (France) Attribution: tatoeba.org\n" for i in range(20)
        )
        + "\n",
        encoding="utf-8",
    )
    corpus = example.read_corpus(good)
    assert {k: len(v) for k, v in corpus.items()} == {"test": 2, "validation": 2, "train": 16}
    assert all(row[1].startswith("mot") for rows in corpus.values() for row in rows)
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\nno tab here\nc\td\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.tsv:2: the line has no tab"):
        example.read_corpus(bad)
    short = tmp_path / "short.tsv"
    short.write_text("a\tb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="at least 10 pairs"):
        example.read_corpus(short)


def test_metrics():
    assert example.char_accuracy("2022-03-03", "2022-03-03") == 1.0
    assert example.char_accuracy("2022-03-04", "2022-03-03") == 0.9
    assert example.char_accuracy("", "2022-03-03") == 0.0
    rows = [("a", "x", "fr_FR", "long"), ("b", "y", "fr_FR", "long"), ("c", "z", "de_DE", "long")]
    table, markdown = example.results_table(rows, ["x", "q", "z"])
    by_locale = {row["locale"]: row for row in table}
    assert by_locale["all"]["exact"] == pytest.approx(2 / 3)
    assert by_locale["fr_FR"]["exact"] == 0.5 and by_locale["de_DE"]["exact"] == 1.0
    assert "| fr_FR | 2 | 50.0% |" in markdown


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_smoke_run_trains_draws_exports_and_reloads(tmp_path, capsys):
    results = example.main(["--smoke", "--output-dir", str(tmp_path), "3. März 2022", ""])
    printed = capsys.readouterr().out
    assert "| locale | pairs | exact match | character accuracy |" in printed
    assert "| all |" in printed
    assert len(results["heatmaps"]) == 2
    for path in results["heatmaps"]:
        assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Path(results["keras_model"]).exists()
    assert (Path(results["saved_model"]) / "saved_model.pb").exists()
    assert len(results["reloaded_outputs"]) == 2
    assert results["reload_imported_keras_attention"] is False
    assert 0.0 <= results["test_exact_match"] <= 1.0


@pytest.mark.slow
def test_smoke_run_on_a_user_corpus(tmp_path):
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"{w}\t{w[::-1]}\n" for w in ["abc", "bca", "cab"] * 10))
    results = example.main(["--smoke", "--data", str(data), "--output-dir", str(tmp_path / "o")])
    assert results["pairs"] == {"test": 3, "validation": 3, "train": 24}
    assert results["queries"] == []
    assert [row["locale"] for row in results["table"]] == ["all"]


def test_bad_flags_exit_with_a_message(capsys):
    with pytest.raises(SystemExit):
        example.main(["--window", "0"])
    assert "must be a positive integer" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.main(["--alignment", "local"])
    assert "invalid choice: 'local'" in capsys.readouterr().err


# ---------------------------------------------------------------- the example, killed for real
def _run_translate(output, *extra, stop=None):
    """`translate.py --smoke` in its own process group; with `stop`, SIGKILL it once the backup
    of epoch `stop` is written. Returns the results file's content (or None when killed)."""
    results = output / "results.json"
    code = (
        f"import json, sys; sys.path.insert(0, {str(EXAMPLES)!r}); import translate; "
        "r = translate.main(sys.argv[1:]); "
        "json.dump({'table': r['table'], 'history': r['history'], "
        f"'resumed_from_epoch': r['resumed_from_epoch']}}, open({str(results)!r}, 'w'))"
    )
    args = ["--smoke", "--epochs", "3", "--heatmaps", "0", "--output-dir", str(output), *extra]
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args, "x"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    deadline = time.monotonic() + 600
    try:
        while process.poll() is None:
            if time.monotonic() > deadline:
                pytest.fail("translate.py did not finish within 600 s")
            manifest = output / "backup" / MANIFEST
            if stop is not None and manifest.exists():
                try:
                    epoch = json.loads(manifest.read_text())["epoch"]
                except ValueError:
                    epoch = 0
                if epoch >= stop:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=60)
                    return None
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    assert process.returncode == 0, process.stderr.read().decode()[-3000:]
    return json.loads(results.read_text())


@pytest.mark.slow
@pytest.mark.tensorflow_only
def test_translate_killed_and_resumed_reaches_the_same_metrics(tmp_path):
    """SIGKILL after epoch 1's backup, `--resume`: the same validation history and the same
    test metrics as an uninterrupted run; at most the epoch in progress was repeated."""
    whole = _run_translate(tmp_path / "whole")
    assert _run_translate(tmp_path / "cut", stop=1) is None
    resumed = _run_translate(tmp_path / "cut", "--resume")
    assert resumed["resumed_from_epoch"] >= 1
    assert resumed["history"] == whole["history"]
    assert resumed["table"] == whole["table"]
