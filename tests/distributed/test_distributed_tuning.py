"""keras-tuner's distributed search with `Seq2SeqHyperModel`: a chief and 2 workers, 127.0.0.1.

keras-tuner's own mode (`tuner_worker.py`): the chief (`KERASTUNER_TUNER_ID=chief`) serves the
oracle on 127.0.0.1, workers `tuner0` and `tuner1` ask it for trials of a `RandomSearch` of
MAX_TRIALS trials. `tuner1` is killed (SIGKILL, its whole process group) in the middle of its
first trial and started again with the same id. What keras-tuner promises there (1.4.8,
`Oracle.create_trial`): a worker that comes back with the same `KERASTUNER_TUNER_ID` is handed
the trial it had not finished, so no trial is lost or given to two workers. Checked:

- every trial of the search ends exactly once, all COMPLETED in the oracle's saved state;
  each trial starts once, except the killed one, which starts twice (killed, then rerun by
  the restarted `tuner1`, the same trial id) and ends once;
- the best model, reloaded from the directory by a fresh process (`get_best_models`), gives
  the outputs its trial's model had when trained.

The chief never returns from `search` (keras-tuner 1.4.8 serves until killed): the test kills
it when the workers are done.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.distributed.cluster import HOST, ProcessGroup, free_ports, worker_env
from tests.distributed.tuner_worker import MAX_TRIALS

HERE = Path(__file__).resolve().parent
TIMEOUT = 600  # seconds for the whole search (about 1 minute on an idle 2-core machine)

pytestmark = [pytest.mark.slow, pytest.mark.tensorflow_only]


def read_events(out: Path, pattern: str) -> list[tuple[str, str]]:
    return [
        tuple(line.split())
        for path in sorted(out.glob(pattern))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


@pytest.fixture(scope="module")
def search(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("tuning")
    directory, out = root / "search", root / "out"
    out.mkdir()
    (port,) = free_ports(1)
    command = [sys.executable, str(HERE / "tuner_worker.py")]
    command += ["--directory", str(directory), "--out", str(out)]
    oracle = {"KERASTUNER_ORACLE_IP": HOST, "KERASTUNER_ORACLE_PORT": str(port)}
    env = {name: worker_env("tensorflow", KERASTUNER_TUNER_ID=name, **oracle)
           for name in ("chief", "tuner0", "tuner1")}  # fmt: skip
    with ProcessGroup(root, timeout=TIMEOUT) as group:
        group.start("chief", command, env["chief"])
        group.start("tuner0", command, env["tuner0"])
        group.start("tuner1", [*command, "--pause-first-trial", "600"], env["tuner1"])
        # Kill tuner1 once it is inside its first trial (it pauses there).
        while not read_events(out, "trials-tuner1-*.log"):
            if time.monotonic() > group.deadline or group.processes["tuner1"].poll() is not None:
                group.kill_all()
                pytest.fail(f"tuner1 did not start a trial\n{group.logs()}")
            time.sleep(0.5)
        group.kill("tuner1")
        killed_trial = read_events(out, "trials-tuner1-*.log")[0][1]
        group.start("tuner1-restarted", command, env["tuner1"])
        for name in ("tuner0", "tuner1-restarted"):
            code = group.wait(name)
            assert code == 0, f"{name} exited with {code}\n{group.logs()}"
        assert group.processes["chief"].poll() is None  # still serving, as documented
        group.kill("chief")
        group.start("reader", [*command, "--role", "reader"], worker_env("tensorflow"))
        assert group.wait("reader") == 0, group.logs()
    return {
        "events": read_events(out, "trials-*.log"),
        "killed_trial": killed_trial,
        "reader": json.loads((out / "reader.json").read_text(encoding="utf-8")),
        "out": out,
    }


def test_every_trial_ends_exactly_once(search):
    events = [event for event in search["events"] if event[0] != "search-finished"]
    ends = Counter(trial for event, trial in events if event == "end")
    starts = Counter(trial for event, trial in events if event == "start")
    assert len(ends) == MAX_TRIALS and set(ends.values()) == {1}, ends
    killed = search["killed_trial"]
    assert starts[killed] == 2  # killed mid-trial, then rerun by the restarted worker
    assert all(count == 1 for trial, count in starts.items() if trial != killed), starts
    statuses = search["reader"]["trials"]
    assert sorted(statuses) == sorted(ends)
    assert set(statuses.values()) == {"COMPLETED"}, statuses


def test_the_killed_trial_is_finished_by_the_restarted_worker(search):
    killed = search["killed_trial"]
    restarted = [
        tuple(line.split())
        for path in sorted(search["out"].glob("trials-tuner1-*.log"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    assert ("start", killed) in restarted and ("end", killed) in restarted


def test_best_model_reloads_with_its_outputs(search):
    reader = search["reader"]
    trained = np.load(search["out"] / f"outputs-{reader['best_trial']}.npy")
    np.testing.assert_allclose(reader["outputs"], trained, rtol=0, atol=1e-6)
