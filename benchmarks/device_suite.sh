#!/usr/bin/env bash
# The device suite (benchmarks/device_suite.py): the figures a CPU machine cannot give, in one
# run of at most 8 minutes on one GPU, printed as one table and written to
# $OUT/device_suite.json (OUT: the folder given by --out, else device_suite_out/).
#
#   benchmarks/device_suite.sh               # on a GPU machine with `make setup`'s packages
#   benchmarks/device_suite.sh --quick       # tiny sizes on CPU, seconds per step (the test)
#   PYTHON=python3 benchmarks/device_suite.sh --out "$OUT"   # another interpreter
#
# Every other argument goes to device_suite.py (--budget, --steps, --backends).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$root/.venv/bin/python" ]]; then PYTHON="$root/.venv/bin/python"; else PYTHON=python3; fi
fi
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
cd "$root"
exec "$PYTHON" -u "$here/device_suite.py" "$@"
