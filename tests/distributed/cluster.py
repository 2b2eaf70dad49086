"""Start a small cluster of worker processes on 127.0.0.1 for a test, and always tear it down.

    ports = free_ports(2)
    with ProcessGroup(tmp_path, timeout=120) as group:
        for index in range(2):
            group.start(f"worker{index}", [sys.executable, "worker.py", ...], env={...})
        group.wait_all()          # fails the test on a timeout or a non-zero exit

- `free_ports(n)`: n distinct free TCP ports on 127.0.0.1 (held together while chosen, so they
  differ; another process could still take one before the worker binds it, which would fail
  the test, not hang it).
- `ProcessGroup`: each process runs in its own session (its own process group), its stdout and
  stderr go to `<name>.log` in the test's directory; `wait_all` / `wait` fail the test with the
  tails of the logs when a process exits with an error or when the group's deadline passes;
  leaving the `with` block (normally, on a failure or on a timeout) kills every process group
  still alive (SIGKILL), children included, and reaps it. On Linux each worker also gets
  SIGKILL if the test process itself dies (`PR_SET_PDEATHSIG`: a pytest killed by a CI timeout
  leaves no worker behind).
- `worker_env(backend, **extra)`: the environment for a worker: the parent's, with its own
  `KERAS_BACKEND` (the test process keeps its backend), quiet TensorFlow logs, the checkout on
  `PYTHONPATH`, and no proxy for local addresses.

Only 127.0.0.1 is used, by every caller: nothing here listens on another interface.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the parent dies (Linux; a no-op elsewhere)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_ports(count: int) -> list[int]:
    """`count` distinct free TCP ports on 127.0.0.1."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in sockets]


def worker_env(backend: str, **extra: str) -> dict:
    """The environment of a worker process on `backend` (see the module docstring)."""
    env = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    for name in ("TF_CONFIG", "XLA_FLAGS", "KERASTUNER_TUNER_ID", "KERASTUNER_ORACLE_IP"):
        env.pop(name, None)  # never inherited: each worker gets its own
    env.update(extra)
    return env


class ProcessGroup:
    """Worker processes with a shared deadline and a teardown that kills them all.

    Args:
        directory: Where the logs (`<name>.log`) go.
        timeout: Seconds from entering the `with` block after which waiting fails the test.
    """

    def __init__(self, directory: Path, timeout: float) -> None:
        self.directory = Path(directory)
        self.timeout = timeout
        self.processes: dict[str, subprocess.Popen] = {}
        self.deadline = None

    def __enter__(self) -> ProcessGroup:
        self.deadline = time.monotonic() + self.timeout
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill_all()

    def start(self, name: str, command: list[str], env: dict) -> subprocess.Popen:
        """Start `command` as `name` in its own process group, logging to `<name>.log`."""
        log = open(self.directory / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        try:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                start_new_session=True, preexec_fn=_die_with_parent,
            )  # fmt: skip
        finally:
            log.close()  # the child holds its own descriptor
        self.processes[name] = process
        return process

    def log(self, name: str, tail: int = 3000) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(f"----- {name} -----\n{self.log(name)}" for name in self.processes)

    def wait(self, name: str) -> int:
        """Wait for `name` until the deadline; fail the test (killing all) if it passes."""
        remaining = max(self.deadline - time.monotonic(), 0.1)
        try:
            return self.processes[name].wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            self.kill_all()
            pytest.fail(f"{name} did not finish within {self.timeout:.0f} s\n{self.logs()}")

    def wait_all(self, expect_success: bool = True) -> dict[str, int]:
        """Wait for every process; fail the test on a timeout, or (by default) on an error.

        Processes are polled together, so one that fails early (and would leave the others
        waiting for it forever) fails the test at once instead of at the deadline.
        """
        codes: dict[str, int] = {}
        while len(codes) < len(self.processes):
            for name, process in self.processes.items():
                if name not in codes and process.poll() is not None:
                    codes[name] = process.returncode
                    if expect_success and process.returncode != 0:
                        self.kill_all()
                        pytest.fail(f"{name} exited with {process.returncode}\n{self.logs()}")
            if time.monotonic() > self.deadline:
                self.kill_all()
                waiting = sorted(set(self.processes) - set(codes))
                pytest.fail(f"{waiting} did not finish within {self.timeout:.0f} s\n{self.logs()}")
            time.sleep(0.2)
        return codes

    def kill(self, name: str) -> None:
        """SIGKILL `name`'s process group (the process and any children) and reap it."""
        process = self.processes[name]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # its group outlives it while children live
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def kill_all(self) -> None:
        for name in self.processes:
            self.kill(name)
