"""A set-up step of a local cluster: a command that must succeed, or a one-line error with the
end of what it said."""

from __future__ import annotations

import subprocess

from ..errors import CpdispatchError


def run_step(cmd: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise CpdispatchError(f"{what} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-400:]}")
