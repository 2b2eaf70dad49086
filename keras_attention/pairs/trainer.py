"""`train`: a seq2seq model (or an ensemble of several seeds) on TSV pairs, within a budget,
the weights kept by validation WER, resumable, saved as a model folder (`PairModel` reads it).

The model folder:

- `config.json`: the settings, both vocabularies, the package version;
- `model.keras`: the `Seq2Seq` (or `Seq2SeqEnsemble`), loadable with `keras.saving.load_model`;
- `training.json`: what training did and took (budget, epochs, the validation curve of each
  member, wall and CPU seconds) and the validation WER / PER of the model kept;
- `backup/` (`backup-0/`, ... for several members): the last epoch's backup that
  `resume=True` goes on from.

`config.json`, `model.keras` and `training.json` are written to temporary names and renamed
into place once all three are complete, so a stopped or failed run leaves no half-written model.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import keras
import numpy as np

from keras_attention import __version__
from keras_attention.metrics import sequence_error_rates
from keras_attention.models import Seq2Seq, Seq2SeqEnsemble, Translator
from keras_attention.pairs.files import Pairs, read_pairs
from keras_attention.pairs.settings import Settings, choose_settings
from keras_attention.pairs.vocabulary import Vocabulary
from keras_attention.training import (
    BucketedBatches,
    ResumableTraining,
    SmoothedSparseCrossentropy,
    TrainingControl,
    cpu_seconds,
    host,
)

__all__ = ["DECODE_BATCH", "DECODE_PAD", "FORMAT", "decode", "error_rates", "train"]

FORMAT = 1  # of config.json
FILES = ("config.json", "model.keras", "training.json")
VALID_BATCH = 1024
# Decoding (`decode`, `PairModel.predict`, validation WER): batches of 256 sources sorted by
# length, padded to a multiple of 4 characters. Issue 41: a search runs until the longest beam
# of its batch ends, so smaller batches of similar words waste fewer steps, and the attention
# reads fewer padded positions (BENCHMARKS.md §7, "Decoding throughput").
DECODE_BATCH = 256
DECODE_PAD = 4


def train(
    train_path: str | os.PathLike,
    valid_path: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    time_budget: float | None = None,
    cpu_budget: float | None = None,
    members: int | None = None,
    seed: int = 0,
    resume: bool = False,
    target_chars: bool = False,
    verbose: int | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Train on `train_path`'s pairs, select on `valid_path`'s, write the model folder.

    Settings not given are chosen from the training data (`choose_settings`); `settings`
    takes any `Settings` field (`units=128`, `epochs=3`, `jit_compile=False`, ...).

    Args:
        train_path: The training pairs (`source<TAB>target` lines, UTF-8).
        valid_path: The validation pairs: each epoch's WER on them chooses the weights kept.
        output_dir: The model folder (created).
        time_budget: Wall minutes for training all members. Defaults to the rule's.
        cpu_budget: CPU minutes of this process for training instead (the same figure
            whatever else runs on the machine). Defaults to `None`.
        members: Models of several seeds decoded as one ensemble. Defaults to the rule's.
        seed: Seed of the first member. Defaults to `0`.
        resume: Go on from the backups in `output_dir` (same data and settings).
            Defaults to `False`.
        target_chars: Targets are characters, not space-separated symbols. Defaults to
            `False`.
        verbose: `0` silent, `1` progress bars, `2` a line per epoch. Defaults to `1` on a
            terminal, else `2`.

    Returns:
        `training.json`'s content.

    Raises:
        PairsFileError: a data file cannot be read (the message names file and line).
        FileExistsError: `output_dir` holds a model and `resume` is off.
    """
    started, cpu_started = time.perf_counter(), cpu_seconds()
    verbose = (1 if sys.stdout.isatty() else 2) if verbose is None else int(verbose)
    train_pairs = read_pairs(train_path, target_chars, argument="--train")
    valid_pairs = read_pairs(valid_path, target_chars, argument="--valid")
    output = Path(output_dir)
    if not resume and any((output / name).exists() for name in FILES):
        raise FileExistsError(
            f"{output} already holds a model; choose another --output-dir or resume a "
            f"stopped run with --resume. Received: output_dir={str(output)!r}"
        )
    pairs = train_pairs.pairs()
    source_vocabulary = Vocabulary(c for s in train_pairs.sources for c in s)
    target_vocabulary = Vocabulary(p for _, t in pairs for p in t)
    lengths = [max(len(s), len(t)) + 1 for s, t in pairs]
    chosen = choose_settings(
        len(pairs),
        max(len(t) for _, t in pairs),
        lengths,
        time_budget=time_budget,
        cpu_budget=cpu_budget,
        members=members,
        seed=seed,
        target_chars=target_chars,
        **settings,
    )
    machine = host()
    if verbose:
        print(
            f"{len(train_pairs)} training sources ({len(pairs)} pairs), "
            f"{len(valid_pairs)} validation sources; {len(source_vocabulary) - 4} source "
            f"characters, {len(target_vocabulary) - 4} target symbols"
        )
        print("settings: " + ", ".join(f"{k}={v}" for k, v in chosen.to_dict().items()))
        print(
            f"host: {machine['cpu']}, {machine['cpus']} CPUs, AVX-512 "
            f"{'yes' if machine['avx512'] else 'no'}, AMX {'yes' if machine['amx'] else 'no'}; "
            f"{chosen.parallel_members()} model(s) trained at once"
        )
    output.mkdir(parents=True, exist_ok=True)
    data = {
        "sources": [source_vocabulary.encode(s) for s, _ in pairs],
        "targets": [target_vocabulary.encode(t) for _, t in pairs],
        "valid": valid_pairs,
        "source_vocabulary": source_vocabulary,
        "target_vocabulary": target_vocabulary,
    }
    models, trainings = _train_members(
        chosen, data, output, resume, verbose, (started, cpu_started)
    )
    model = models[0] if len(models) == 1 else Seq2SeqEnsemble(models)
    translator = Translator(
        model, chosen.search(), jit_compile=chosen.jit_compile, pad_to_multiple=DECODE_PAD
    )
    valid = error_rates(translator, valid_pairs, source_vocabulary, target_vocabulary)
    training = {
        "valid": {k: valid[k] for k in ("wer", "per", "words")},
        "wall_seconds": time.perf_counter() - started,
        "cpu_seconds": cpu_seconds() - cpu_started,
        "train_pairs": len(pairs),
        "train_sources": len(train_pairs),
        "members": trainings,
        "curve": trainings[0]["curve"],
        "machine": machine,
    }
    if verbose:
        print(
            f"validation ({valid['words']} sources, beam {chosen.beam_width}): "
            f"WER {valid['wer']:.2f}%, PER {valid['per']:.2f}%; "
            f"{training['wall_seconds'] / 60:.1f} min, "
            f"{training['cpu_seconds'] / 60:.1f} CPU min"
        )
    config = {
        "format": FORMAT,
        "keras_attention": __version__,
        "settings": chosen.to_dict(),
        "source_vocabulary": source_vocabulary.symbols,
        "target_vocabulary": target_vocabulary.symbols,
        "longest_source": max(len(s) for s in train_pairs.sources),
    }
    _write_model(output, model, config, training)
    return training


def build_model(settings: Settings, source_size: int, target_size: int) -> Seq2Seq:
    """The compiled `Seq2Seq` of `settings`: a bidirectional encoder of `units // 2` per
    direction, the attentional decoder, Adam with gradient clipping at norm 1, label-smoothed
    cross-entropy."""
    model = Seq2Seq(
        source_vocabulary_size=source_size,
        target_vocabulary_size=target_size,
        embedding_dim=settings.embedding_dim,
        units=settings.units,
        encoder_units=max(1, settings.units // 2),
        rnn=settings.rnn,
        encoder_num_layers=settings.encoder_layers,
        attention=settings.attention,
        dropout=settings.dropout,
    )
    loss = (
        SmoothedSparseCrossentropy(target_size, settings.label_smoothing)
        if settings.label_smoothing
        else keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.compile(
        keras.optimizers.Adam(settings.learning_rate, clipnorm=1.0),
        loss=loss,
        metrics=["accuracy"],
        jit_compile=settings.jit_compile,
    )
    return model


def decode(
    translator: Translator,
    sources: list[str],
    vocabulary: Vocabulary,
    batch_size: int = DECODE_BATCH,
) -> list[dict]:
    """`translator`'s result for each source (`"ids"`, `"scores"`, and with beams
    `"beam_ids"`, `"beam_scores"`), decoded in batches of sources of similar length."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    out: list[Any] = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        result = translator(vocabulary.encode_batch([sources[i] for i in rows]))
        for j, i in enumerate(rows):
            out[i] = {k: v[j] for k, v in result.items() if k != "alignments"}
    return out


def error_rates(translator, pairs: Pairs, source_vocabulary, target_vocabulary) -> dict:
    """WER and PER (%) of `translator`'s first-best on `pairs` (right if it equals any of a
    source's references; PER against the closest), the predictions, their scores, and the
    seconds decoding took."""
    started = time.perf_counter()
    results = decode(translator, pairs.sources, source_vocabulary)
    seconds = time.perf_counter() - started
    predictions = [target_vocabulary.decode(r["ids"]) for r in results]
    rates = sequence_error_rates(predictions, pairs.references)
    return {
        "wer": 100 * rates["sequence_error_rate"],
        "per": 100 * rates["token_error_rate"],
        "words": len(pairs),
        "predictions": predictions,
        "scores": [float(r["scores"]) for r in results],
        "seconds": seconds,
    }


def _budget(
    settings: Settings, members_left: int, waves_left: int, clocks: tuple[float, float]
) -> tuple[str, float]:
    """`(clock, seconds)` of each member of the next wave: what is left of the budget,
    shared equally among the members still to train (CPU time, which each member spends
    alone) or among the waves still to run (wall time, which a wave's members share)."""
    started, cpu_started = clocks
    if settings.cpu_budget:
        return "cpu", (settings.cpu_budget * 60 - (cpu_seconds() - cpu_started)) / members_left
    return "wall", (settings.time_budget * 60 - (time.perf_counter() - started)) / waves_left


def _train_members(
    settings: Settings, data: dict, output: Path, resume: bool, verbose: int, clocks
) -> tuple[list, list[dict]]:
    """`(models, trainings)`: the members, trained in waves of `settings.parallel_members()`,
    each wave's members at once in processes of their own (one wave of one member: in this
    process), each within its share of the budget."""
    workers = settings.parallel_members()
    waves = [
        list(range(first, min(first + workers, settings.members)))
        for first in range(0, settings.members, workers)
    ]
    sizes = (len(data["source_vocabulary"]), len(data["target_vocabulary"]))
    models, trainings = [], []
    for index, wave in enumerate(waves):
        budget = _budget(settings, settings.members - wave[0], len(waves) - index, clocks)
        if len(wave) == 1 and workers == 1:
            model = _member_model(settings, sizes, wave[0])
            trainings.append(
                _train_member(model, settings, data, output, wave[0], resume, verbose, budget)
            )
            models.append(model)
            continue
        jobs = {
            "settings": settings.to_dict(),
            "data": data,
            "output": str(output),
            "resume": resume,
            "verbose": min(verbose, 2) and 2,  # a line per epoch: no bars side by side
            "budget": budget,
            "threads": max(1, (os.cpu_count() or 1) // len(wave)),
        }
        for member, record in zip(wave, _run_in_processes(jobs, wave)):
            model = _member_model(settings, sizes, member)
            model.build_from_config(None)
            path = _member_files(output, member)["weights"]
            with np.load(path) as weights:  # the model's, not its optimizer's
                model.set_weights([weights[f"w{i}"] for i in range(len(weights.files))])
            path.unlink()
            model.optimizer.build(model.trainable_variables)  # saved as a trained one is
            trainings.append(record)
            models.append(model)
    return models, trainings


def _member_model(settings: Settings, sizes: tuple[int, int], member: int):
    """Member `member`'s compiled model, its weights drawn from seed `settings.seed + member`."""
    keras.utils.set_random_seed(settings.seed + member)
    return build_model(settings, *sizes)


def _member_files(output: Path, member: int) -> dict[str, Path]:
    """A member's process's files: its job (written for it), and what it leaves for the
    process that started it: its weights, record or error."""
    return {
        "weights": output / f".member-{member}.weights.npz",
        "record": output / f".member-{member}.json",
        "error": output / f".member-{member}.error",
        "job": output / f".member-{member}.job",
    }


def _run_in_processes(jobs: dict, members: list[int]) -> list[dict]:
    """Train `members` at once, each in a new Python process (nothing of this one's
    TensorFlow, nor its `__main__`, is inherited) limited to `jobs["threads"]` threads;
    their records, in order."""
    import pickle
    import subprocess

    import keras_attention

    output = Path(jobs["output"])
    threads = str(jobs["threads"])
    env = {**os.environ, "TF_NUM_INTRAOP_THREADS": threads, "TF_NUM_INTEROP_THREADS": threads}
    package_root = str(Path(keras_attention.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    code = (
        "import sys; from keras_attention.pairs import trainer; trainer._member_main(sys.argv[1])"
    )
    processes = []
    try:
        for member in members:
            files = _member_files(output, member)
            for path in files.values():
                path.unlink(missing_ok=True)
            with open(files["job"], "wb") as f:
                job = {**jobs, "member": member, "spawned": time.time(), "parent": os.getpid()}
                pickle.dump(job, f)
            command = [sys.executable, "-c", code, str(files["job"])]
            processes.append(subprocess.Popen(command, env=env))
        for process in processes:
            process.wait()
    finally:  # interrupted: no member goes on training alone
        for process in processes:
            if process.poll() is None:
                process.terminate()
                process.wait()
        for member in members:
            _member_files(output, member)["job"].unlink(missing_ok=True)
    records = []
    for member, process in zip(members, processes):
        files = _member_files(output, member)
        if process.returncode != 0 or not files["record"].exists():
            error = files["error"].read_text() if files["error"].exists() else ""
            files["error"].unlink(missing_ok=True)
            raise RuntimeError(
                f"Training model {member + 1} failed in its process (exit code "
                f"{process.returncode}):\n{error}"
            )
        records.append(json.loads(files["record"].read_text()))
        files["record"].unlink()
    return records


def _member_main(job_path: str) -> None:
    """A member's process (`_run_in_processes`): read its job, train it (`_train_member`),
    then write its weights and record for the process that started it (or the error that
    stopped it)."""
    import pickle
    import traceback

    _die_with_parent()
    with open(job_path, "rb") as f:
        job = pickle.load(f)
    if os.getppid() != job["parent"]:  # the caller died before the line above took effect
        sys.exit(1)
    member, output = job["member"], Path(job["output"])
    files = _member_files(output, member)
    try:
        settings = Settings.from_dict(job["settings"])
        data = job["data"]
        sizes = (len(data["source_vocabulary"]), len(data["target_vocabulary"]))
        model = _member_model(settings, sizes, member)
        clock, seconds = job["budget"]
        if clock == "wall":  # the time this process took to start was the wave's too
            seconds -= time.time() - job["spawned"]
        record = _train_member(
            model, settings, data, output, member, job["resume"], job["verbose"], (clock, seconds)
        )
        with open(files["weights"], "wb") as f:
            np.savez(f, **{f"w{i}": w for i, w in enumerate(model.get_weights())})
        files["record"].write_text(json.dumps(record), encoding="utf-8")
    except BaseException:
        files["error"].write_text(traceback.format_exc(), encoding="utf-8")
        raise


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this process when the one that started it dies (a
    killed `train` leaves no member training alone; `resume` goes on from the backups)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _train_member(
    model,
    settings: Settings,
    data: dict,
    output: Path,
    member: int,
    resume: bool,
    verbose: int,
    budget: tuple[str, float],
) -> dict:
    """Train one member within `budget` (`(clock, seconds)`), with backups that `resume`
    goes on from; what training did and took."""
    train = BucketedBatches(
        data["sources"],
        data["targets"],
        settings.batch_size,
        bounds=settings.buckets or None,
        seed=settings.seed + member,
    )
    valid_pairs = data["valid"].pairs()
    valid = BucketedBatches(
        [data["source_vocabulary"].encode(s) for s, _ in valid_pairs],
        [data["target_vocabulary"].encode(t) for _, t in valid_pairs],
        VALID_BATCH,
        shuffle=False,
    )
    valid_data = valid.dataset()
    translator = Translator(
        model, settings.search(), jit_compile=settings.jit_compile, pad_to_multiple=DECODE_PAD
    )

    def monitor() -> dict:
        scores = error_rates(
            translator, data["valid"], data["source_vocabulary"], data["target_vocabulary"]
        )
        return {"wer": scores["wer"], "per": scores["per"]}

    clock, budget = budget
    control = TrainingControl(
        settings.learning_rate,
        settings.epochs,
        max(budget, 1.0),
        settings.patience,
        verbose=verbose == 2,  # its line a epoch; the progress bar shows val_wer itself
        monitor=monitor,
        clock=clock,
        validation=valid_data,
        select=("wer", "per"),
        average_last=settings.average_last,
        label=f"model {member + 1}: " if settings.members > 1 else "",
    )
    backup = output / ("backup" if settings.members == 1 else f"backup-{member}")
    fingerprint = {**settings.to_dict(), "pairs": len(data["sources"]), "valid": len(valid_pairs)}
    for name in ("time_budget", "cpu_budget", "workers"):  # how long and where, not what
        fingerprint.pop(name)
    resumable = ResumableTraining(backup, settings=fingerprint)
    resumable.set_callbacks([control])
    initial_epoch, epochs = 0, settings.epochs
    if resume:
        model.build_from_config(None)
        initial_epoch = resumable.restore(model, [control])
        if control.resumed_stopped:  # stopped by its budget or early stopping: no more
            epochs = initial_epoch
        if verbose and initial_epoch:
            print(f"resumed from {backup} after epoch {initial_epoch}")
    stream, steps = resumable.epoch_stream(train.dataset(), initial_epoch)
    if verbose:
        print(
            f"model {member + 1} of {settings.members}: {clock} budget "
            f"{control.seconds / 60:.1f} min"
        )
    model.fit(
        stream,
        steps_per_epoch=steps,
        validation_data=valid_data,
        epochs=epochs,
        initial_epoch=initial_epoch,
        callbacks=[control, resumable],
        verbose=1 if verbose == 1 else 0,
        shuffle=False,  # BucketedBatches shuffles; Keras would warn that it cannot
    )
    return {
        "epochs": len(control.curve),
        "steps": control.steps_done,
        "curve": control.curve,
        "budget_clock": clock,
        "budget_seconds": control.seconds,
        "seconds": control.spent("wall"),
        "cpu_seconds": control.spent("cpu"),
        "stopped_by": control.stopped_by,
        "resumed_from_epoch": initial_epoch,
        "best_epoch": control.best_epoch,
        "best_score": dict(zip(control.select, control.best or [])),
        "selection": control.selection,
    }


def _write_model(output: Path, model, config: dict, training: dict) -> None:
    """Write the three files to temporary names, then rename them into place."""
    # Saved compiled with Keras' own loss, so that `keras.saving.load_model` opens it
    # without this package's training loss (training is over).
    for trained in model.members if isinstance(model, Seq2SeqEnsemble) else [model]:
        trained.compile(
            optimizer=trained.optimizer,
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    partial = {name: output / f".{name}.partial" for name in FILES}
    try:
        model.save(str(partial["model.keras"]) + ".keras")
        os.replace(str(partial["model.keras"]) + ".keras", partial["model.keras"])
        for name, content in (("config.json", config), ("training.json", training)):
            partial[name].write_text(json.dumps(content, indent=1), encoding="utf-8")
        for name in ("model.keras", "training.json", "config.json"):  # config.json last
            os.replace(partial[name], output / name)
    finally:
        for path in partial.values():
            if path.exists():
                path.unlink()
