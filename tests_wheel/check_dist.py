"""Check what `make dist` built: one sdist and one wheel of the package's version, the wheel
holding the package (with `py.typed`) and its metadata only, no tests, examples or benchmarks.

Usage: python tests_wheel/check_dist.py DIST_DIR   (run by `make dist` after `twine check`)
"""

from __future__ import annotations

import ast
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "keras_recurrent_attention"


def _version() -> str:
    tree = ast.parse((ROOT / "keras_attention" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__version__":
            return ast.literal_eval(node.value)
    raise SystemExit("keras_attention/__init__.py has no __version__")


def check(dist: Path) -> list[str]:
    version = _version()
    problems = []
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if [w.name for w in wheels] != [f"{NAME}-{version}-py3-none-any.whl"]:
        problems.append(f"expected one wheel {NAME}-{version}-py3-none-any.whl, got {wheels}")
    if [s.name for s in sdists] != [f"{NAME}-{version}.tar.gz"]:
        problems.append(f"expected one sdist {NAME}-{version}.tar.gz, got {sdists}")
    if problems:
        return problems

    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
    package = [n for n in names if n.startswith("keras_attention/")]
    metadata = [n for n in names if n.startswith(f"{NAME}-{version}.dist-info/")]
    stray = sorted(set(names) - set(package) - set(metadata))
    if stray:
        problems.append(f"the wheel holds files outside the package: {stray[:10]}")
    for forbidden in ("tests", "tests_wheel", "examples", "benchmarks", "docs"):
        hits = [n for n in names if f"/{forbidden}/" in f"/{n}"]
        if hits:
            problems.append(f"the wheel holds {forbidden}/: {hits[:5]}")
    if "keras_attention/py.typed" not in names:
        problems.append("the wheel lacks keras_attention/py.typed")
    source = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "keras_attention").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    missing = sorted(source - set(package))
    if missing:
        problems.append(f"the wheel lacks modules: {missing[:10]}")
    if not any(n.endswith("licenses/LICENSE") or n.endswith("/METADATA") for n in metadata):
        problems.append("the wheel has no METADATA")

    with tarfile.open(sdists[0]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    for required in (
        "pyproject.toml",
        "README.md",
        "keras_attention/__init__.py",
        "keras_attention/py.typed",
    ):
        if required not in members:
            problems.append(f"the sdist lacks {required}")
    return problems


def main() -> None:
    dist = Path(sys.argv[1] if len(sys.argv) > 1 else "dist")
    problems = check(dist)
    for problem in problems:
        print(f"check_dist: {problem}", file=sys.stderr)
    if problems:
        raise SystemExit(1)
    print(f"check_dist: {', '.join(sorted(p.name for p in dist.iterdir()))} OK")


if __name__ == "__main__":
    main()
