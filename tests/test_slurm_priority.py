"""`slurm dispatch --priority slurm`: Slurm's priorities become the dispatcher's job weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.errors import CpdispatchError
from cpdispatch.slurm.priority import check_priority, slurm_weights

from .test_cli import cli


def test_weights_are_priorities_over_the_highest() -> None:
    assert slurm_weights([4000, 1000, 2000]) == [1.0, 0.25, 0.5]
    assert slurm_weights([4000, 0, 2000]) == [1.0, 0.75, 0.5]  # not computed yet: the others' mean
    assert slurm_weights([0, 0]) == [1.0, 1.0]
    assert slurm_weights([]) == []


def test_a_dispatcher_that_would_ignore_the_weights_is_refused() -> None:
    check_priority("slurm", make_dispatcher("pcp20"))
    check_priority("papers", make_dispatcher("easy"))
    with pytest.raises(CpdispatchError, match="dispatcher easy has no per-job objective"):
        check_priority("slurm", make_dispatcher("easy"))
    with pytest.raises(CpdispatchError, match="dispatcher eurora14 has no per-job objective"):
        check_priority("slurm", make_dispatcher("eurora14", {"objective": "makespan"}))
    with pytest.raises(CpdispatchError, match="--priority fair: expected one of papers, slurm"):
        check_priority("fair", make_dispatcher("pcp20"))


@pytest.mark.parametrize("args, message", [
    (["--dispatcher", "easy", "--priority", "slurm"], "dispatcher easy has no per-job objective to weigh"),
    (["--priority", "slurm", "--fail-closed"], "--priority slurm needs the fail-open lease"),
])
def test_the_command_refuses_before_any_round(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = cli("slurm", "dispatch", "--state-dir", str(tmp_path), "--conf", str(tmp_path / "none"), *args)
    assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
