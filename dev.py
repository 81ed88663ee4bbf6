#!/usr/bin/env python3
"""Set-up and everyday commands, needing nothing but Python 3.11+ (no make, no pre-installed pip).

    python3 dev.py demo    # create .venv if needed, install, run the demo (main job on the embedded default)
    python3 dev.py test    # create .venv if needed, install, lint, type-check and run the whole test suite
    python3 dev.py test --fast   # the same, without the slow tests (real Slurm, whole traces): under 2 min
    python3 dev.py bench   # the benchmarks (long)

The virtual environment lives in .venv. Debian's python3 makes venvs with pip only when the
python3-venv package is installed; if it is missing, dev.py installs it with apt-get (as root),
or says which command to run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
STAMP = VENV / ".cpdispatch-installed"


def run(*cmd: str | os.PathLike[str]) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT)


def _venv_works() -> bool:
    made = subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], cwd=ROOT)
    return made.returncode == 0 and subprocess.run(
        [str(PY), "-m", "pip", "--version"], capture_output=True).returncode == 0


def _install_venv_package() -> None:
    """Debian ships `venv`'s pip bootstrap (ensurepip) in a separate package."""
    package = f"python{sys.version_info.major}.{sys.version_info.minor}-venv"
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        sys.exit(f"dev.py: this Python cannot make a virtual environment with pip; install "
                 f"{package} (Debian: sudo apt-get install {package}) and rerun")
    run("apt-get", "update", "-qq")
    run("apt-get", "install", "-y", "-qq", package)


#: A blocked job behind a full system: the smallest run that goes through EASY's compiled pass;
#: then pcp20's compiled 1-D greedy plan.
WARM_UP = """
import numpy as np
import cpdispatch as cpd
from cpdispatch.dispatchers.cp.models.pcp20.fluid_kernel import first_fits
system = cpd.System.preset("kth-sp2")
n = system.max_units((1,))
jobs = [cpd.Job("a", 0, n, (1,), 100, 100), cpd.Job("b", 1, n, (1,), 10, 10), cpd.Job("c", 2, 1, (1,), 10, 10)]
cpd.simulate(system, jobs, "easy")
one = np.ones(1, np.int64)
first_fits(one * 0, one, one, one)
"""


def ensure_venv() -> None:
    if not PY.exists() and not _venv_works():
        _install_venv_package()
        if not _venv_works():
            sys.exit("dev.py: could not make a virtual environment with pip in .venv")
    pyproject = ROOT / "pyproject.toml"
    if not STAMP.exists() or STAMP.stat().st_mtime < pyproject.stat().st_mtime:
        run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
        run(PY, "-m", "pip", "install", "--quiet", "-e", ".[dev]")
        print("dev.py: compiling the EASY and pcp20 kernels once (numba, ~20 s; cached afterwards)", flush=True)
        run(PY, "-c", WARM_UP)
        STAMP.touch()


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 (dev.py may be run by an older python3)
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
            run(bin_ / "cpdispatch", "demo", "--overwrite", *rest)  # a rerun replaces the last demo's results
        elif what == "lint":
            run(bin_ / "ruff", "check", "src", "tests", "benchmarks")
            run(bin_ / "mypy")
        elif what == "test":
            run(bin_ / "ruff", "check", "src", "tests", "benchmarks")
            run(bin_ / "mypy")
            fast = ["-m", "not slow"] if "--fast" in rest else []  # the fast lane: tests/conftest.py, SLOW_*
            run(PY, "-m", "pytest", "-n", "2", "-q", *fast, *(a for a in rest if a != "--fast"))
        elif what == "bench":
            for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
                run(PY, script, *rest)
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
