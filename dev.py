#!/usr/bin/env python3
"""Set-up and everyday commands, needing nothing but Python 3.11+ (no make, no pre-installed pip).

    python3 dev.py demo    # create .venv if needed, install, run the demo (main job on the embedded default)
    python3 dev.py test    # create .venv if needed, install, lint, type-check and run the whole test suite
    python3 dev.py bench   # the benchmarks (long)

The virtual environment lives in .venv. On Debian's python3 without the python3-venv package
(no ensurepip), the venv is made without pip and pip is fetched from PyPI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
STAMP = VENV / ".cpdispatch-installed"


def run(*cmd: str | os.PathLike[str]) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT)


def _bootstrap_pip() -> None:
    """Install pip into a venv made --without-pip, from the pip wheel on PyPI."""
    with urllib.request.urlopen("https://pypi.org/pypi/pip/json", timeout=60) as resp:
        meta = json.load(resp)
    wheel = next(f for f in meta["urls"] if f["filename"].endswith(".whl"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / wheel["filename"]
        with urllib.request.urlopen(wheel["url"], timeout=120) as resp:
            path.write_bytes(resp.read())
        run(PY, f"{path}/pip", "install", "--no-index", str(path))


def ensure_venv() -> None:
    if not PY.exists():
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)], cwd=ROOT)
        if made.returncode != 0 or subprocess.run([str(PY), "-m", "pip", "--version"],
                                                  capture_output=True).returncode != 0:
            print("venv without ensurepip: bootstrapping pip from PyPI", flush=True)
            run(sys.executable, "-m", "venv", "--clear", "--without-pip", VENV)
            _bootstrap_pip()
    pyproject = ROOT / "pyproject.toml"
    if not STAMP.exists() or STAMP.stat().st_mtime < pyproject.stat().st_mtime:
        run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        run(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev]")
        STAMP.touch()


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):
        print("cpdispatch needs Python 3.11 or newer", file=sys.stderr)
        return 2
    what = argv[0] if argv else "help"
    rest = argv[1:]
    if what not in ("demo", "test", "bench", "lint"):
        print(__doc__)
        return 0 if what == "help" else 2
    ensure_venv()
    bin_ = VENV / "bin"
    try:
        if what == "demo":
            run(bin_ / "cpdispatch", "demo", *rest)
        elif what == "lint":
            run(bin_ / "ruff", "check", "src", "tests", "benchmarks")
            run(bin_ / "mypy")
        elif what == "test":
            run(bin_ / "ruff", "check", "src", "tests", "benchmarks")
            run(bin_ / "mypy")
            run(PY, "-m", "pytest", "-n", "2", "-q", *rest)
        elif what == "bench":
            for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
                run(PY, script, *rest)
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
