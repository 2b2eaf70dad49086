"""Start a cluster of local worker processes for a test, and always tear it down.

Every process talks to 127.0.0.1 only (the coordinator port is a free one found here), runs in
its own session (process group), and is SIGKILLed with its group when the `Cluster` closes,
whatever happened; `wait` fails the test (`pytest.fail`) past its timeout instead of hanging.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """`count` processes of `python script args... --process-id i`, in their own sessions."""

    def __init__(self, script: Path, count: int, args: list[str], env: dict | None = None):
        self.logs = []
        self.processes = []
        base = {**os.environ, **(env or {})}
        for i in range(count):
            log = open(Path(args[args.index("--out") + 1]).with_suffix(f".{i}.log"), "w+b")
            self.logs.append(log)
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, str(script), *args, "--process-id", str(i)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=base,
                    start_new_session=True,
                )
            )

    def wait(self, timeout: float, until_one_dies: bool = False) -> list[int | None]:
        """Wait for every process (or, with `until_one_dies`, for the first to end); fail the
        test past `timeout` seconds. Returns the exit codes (None: still running)."""
        deadline = time.monotonic() + timeout
        while True:
            codes = [p.poll() for p in self.processes]
            if all(c is not None for c in codes):
                return codes
            if until_one_dies and any(c is not None for c in codes):
                return codes
            if time.monotonic() > deadline:
                pytest.fail(f"the cluster did not finish within {timeout} s:\n{self.output()}")
            time.sleep(0.05)

    def output(self) -> str:
        text = []
        for i, log in enumerate(self.logs):
            log.flush()
            log.seek(0)
            text.append(f"--- process {i}\n" + log.read().decode(errors="replace")[-3000:])
        return "\n".join(text)

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:  # pragma: no cover - the kernel reaps it
                pass
        for log in self.logs:
            log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
