"""Write the checkpoint fixtures of the installed version (run by hand, never by the tests).

The fixtures of version V go to `tests/compat/<FIXTURE_DIRS[V]>/` (`fixtures/` for 0.1.0,
`fixtures-0.2.0/` for 0.2.0; `_specs.py`); a folder that already holds a MANIFEST.json is never
overwritten. For every spec of `tests/compat/_specs.py` that V holds (`specs_for(V)`): build
the functional model with a fixed seed, give every weight fixed random values, run it on fixed
inputs (masks and garbage-filled padding included) and save

- `<name>.keras`: the whole model (`model.save`), loaded by the tests with `safe_mode=True`;
- `<name>.weights.h5`: its weights (`model.save_weights`), loaded into a freshly built model;
- `<name>.npz`: the inputs (`input__<name>`) and the outputs at creation time (`output__<name>`);

and `MANIFEST.json` (package and Keras versions, backend, date, one line per fixture).

Usage (from the repository root; the fixtures are made on TensorFlow):

    KERAS_BACKEND=tensorflow .venv/bin/python tests/compat/make_fixtures.py

Run it once per version, at the version bump, with a CHANGELOG line: fixtures made by a
released version must keep loading in every later one, so they are never regenerated (see
tests/compat/README.md); a new version adds its own folder and an entry in `FIXTURE_DIRS`.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_attention  # noqa: E402
from tests.compat._specs import FIXTURE_DIRS, SPECS, randomize, specs_for, to_numpy  # noqa: E402

VERSION = keras_attention.__version__
if VERSION not in FIXTURE_DIRS:
    raise SystemExit(f"add {VERSION!r} to FIXTURE_DIRS in tests/compat/_specs.py first")
FIXTURES = Path(__file__).resolve().parent / FIXTURE_DIRS[VERSION]
SEED = 1234


def make_fixture(name: str, index: int) -> dict:
    """Build, randomise, run and save one fixture; return its MANIFEST entry."""
    spec = SPECS[name]
    keras.utils.set_random_seed(SEED + index)  # index: the spec's place in SPECS (all versions)
    model = spec.build()
    rng = np.random.default_rng(SEED + index)
    randomize(model, rng)
    inputs = spec.inputs(rng)
    outputs = to_numpy(model(inputs))
    model.save(FIXTURES / f"{name}.keras")
    model.save_weights(FIXTURES / f"{name}.weights.h5")
    arrays = {f"input__{k}": v for k, v in inputs.items()}
    arrays.update({f"output__{k}": v for k, v in outputs.items()})
    np.savez_compressed(FIXTURES / f"{name}.npz", **arrays)
    return {
        "kind": spec.kind,
        "description": spec.description,
        "files": {
            f"{name}.keras": "the whole model (keras.Model.save)",
            f"{name}.weights.h5": "its weights (keras.Model.save_weights)",
            f"{name}.npz": "inputs (input__*) and outputs at creation time (output__*)",
        },
        "inputs": sorted(inputs),
        "outputs": sorted(outputs),
    }


def main() -> None:
    if (FIXTURES / "MANIFEST.json").exists():
        raise SystemExit(f"{FIXTURES} already holds {VERSION}'s fixtures: never regenerate them")
    FIXTURES.mkdir(exist_ok=True)
    manifest = {
        "keras_attention_version": keras_attention.__version__,
        "keras_version": keras.__version__,
        "backend": keras.backend.backend(),
        "numpy_version": np.__version__,
        "created": datetime.date.today().isoformat(),
        "generator": "tests/compat/make_fixtures.py",
        "promise": (
            "Fixtures made with a released keras_attention version keep loading, with the "
            "same outputs, in every later version and on every backend."
        ),
        "fixtures": {},
    }
    wanted = specs_for(VERSION)
    for index, name in enumerate(SPECS):
        if name in wanted:
            manifest["fixtures"][name] = make_fixture(name, index)
            print(f"wrote {name}")
    (FIXTURES / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    total = sum(p.stat().st_size for p in FIXTURES.iterdir())
    print(f"{len(wanted)} fixtures, {total / 1024:.0f} KiB in {FIXTURES}")


if __name__ == "__main__":
    main()
