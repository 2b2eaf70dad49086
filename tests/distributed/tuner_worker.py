"""One process of keras-tuner's distributed search with `Seq2SeqHyperModel`, on 127.0.0.1.

Run as a subprocess by `test_distributed_tuning.py`. keras-tuner's own distributed mode: every
process builds the same `RandomSearch` on the same directory, and the environment says its
role: `KERASTUNER_TUNER_ID=chief` runs the oracle (a gRPC server on
`KERASTUNER_ORACLE_IP:KERASTUNER_ORACLE_PORT`; `search` then never returns, keras-tuner 1.4.8
serves until killed), any other id is a worker that asks the chief for trials and runs them.
`--role reader` (no keras-tuner variables) reloads the finished search from the directory and
writes the best model's outputs.

Workers log `start <trial>` and `end <trial>` lines to `<out>/trials-<tuner id>-<pid>.log`
and save the outputs of each trained model on a probe batch
(`<out>/outputs-<trial>.npy`; with one epoch the checkpoint keras-tuner keeps is that model's).
`--pause-first-trial S` sleeps S seconds at the start of this process's first trial's training,
so the test can kill it mid-trial.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, not an install

MAX_TRIALS = 4
FIXED = {"units": 8, "embedding_dim": 4, "dropout": 0.0, "learning_rate": 1e-2}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=("search", "reader"), default="search")
    parser.add_argument("--directory", required=True, help="keras-tuner's directory (shared)")
    parser.add_argument("--out", required=True, help="logs and outputs")
    parser.add_argument("--pause-first-trial", type=float, default=0.0)
    return parser.parse_args(argv)


def main(args: argparse.Namespace) -> None:
    import keras
    import keras_tuner
    import numpy as np

    from keras_attention.tuning import Seq2SeqHyperModel
    from tests.distributed.train_worker import SOURCE_VOCABULARY, TARGET_VOCABULARY, make_data

    out = Path(args.out)
    tuner_id = os.environ.get("KERASTUNER_TUNER_ID", "reader")
    log_path = out / f"trials-{tuner_id}-{os.getpid()}.log"
    inputs, labels = make_data()
    probe = {k: v[:4] for k, v in inputs.items()}
    pause = [args.pause_first_trial]

    def log(event: str, trial_id: str) -> None:
        with open(log_path, "a", encoding="utf-8") as file:
            file.write(f"{event} {trial_id}\n")

    class Probe(keras.callbacks.Callback):
        def __init__(self, trial_id):
            super().__init__()
            self.trial_id = trial_id

        def on_train_begin(self, logs=None):
            if pause[0]:
                time.sleep(pause[0])  # killed here by the test
            pause[0] = 0.0

        def on_train_end(self, logs=None):
            outputs = np.asarray(self.model(probe), "float64")
            np.save(out / f"outputs-{self.trial_id}.npy", outputs)

    class RecordingSearch(keras_tuner.RandomSearch):
        def run_trial(self, trial, *fit_args, **fit_kwargs):
            log("start", trial.trial_id)
            callbacks = [*fit_kwargs.pop("callbacks", []), Probe(trial.trial_id)]
            result = super().run_trial(trial, *fit_args, callbacks=callbacks, **fit_kwargs)
            log("end", trial.trial_id)
            return result

    hypermodel = Seq2SeqHyperModel(
        SOURCE_VOCABULARY, TARGET_VOCABULARY, fixed=FIXED, jit_compile=False
    )
    tuner = RecordingSearch(
        hypermodel, objective="val_loss", max_trials=MAX_TRIALS, seed=1,
        directory=args.directory, project_name="search", overwrite=False,
    )  # fmt: skip
    if args.role == "reader":
        best = tuner.get_best_models(1)[0]
        trial = tuner.oracle.get_best_trials(1)[0]
        result = {
            "best_trial": trial.trial_id,
            "outputs": np.asarray(best(probe), "float64").tolist(),
            "trials": {t.trial_id: str(t.status) for t in tuner.oracle.trials.values()},
        }
        (out / "reader.json").write_text(json.dumps(result), encoding="utf-8")
        return
    tuner.search(
        inputs, labels, validation_data=(inputs, labels), epochs=1, batch_size=8, verbose=0
    )
    log("search-finished", "-")


if __name__ == "__main__":
    main(parse_args())
