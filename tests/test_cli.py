"""The command line: contracts, and one-line errors (file, line, field) with a non-zero exit."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cpdispatch.cli import main
from cpdispatch.errors import CpdispatchError

SWF_OK = "1 0 -1 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n2 10 -1 50 1 -1 -1 1 100 -1 1 2 1 -1 1 -1 -1 -1\n"


def cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "cpdispatch", *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_systems_list_and_toml_round_trip(tmp_path: Path) -> None:
    code, out, _ = cli("systems")
    assert code == 0
    for name in ["eurora", "kit-forhlr2", "hpc2n", "kth-sp2", "ricc", "cea-curie", "alibaba-gpu-2023"]:
        assert name in out
    code, toml, _ = cli("systems", "eurora", "--toml")
    assert code == 0
    path = tmp_path / "mine.toml"
    path.write_text(toml.replace('name = "eurora"', 'name = "mine"'))
    code, out, _ = cli("systems", str(path))
    assert code == 0 and "mine: 64 nodes (core 1,024, mem 1,048,576, gpu 64, mic 64)" in out


def test_unknown_preset_is_a_clear_error() -> None:
    code, out, err = cli("systems", "nosuch")
    assert code == 2
    assert err.startswith("cpdispatch: error: nosuch: no such system file or preset (presets: ")
    assert "Traceback" not in err


def test_simulate_writes_contract_files(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text("; header\n" + SWF_OK)
    out = tmp_path / "out"
    assert main(["simulate", "--system", "kth-sp2", "--workload", str(trace), "--dispatcher", "fifo",
                 "--out", str(out), "--no-progress"]) == 0
    header = (out / "schedule.csv").read_text().splitlines()[0]
    assert header == "job_id,user,submit,start,end,units,req_core,walltime,runtime,predicted,nodes,status,reason"
    assert (out / "decisions.csv").read_text().startswith(
        "time,queued,running,started,wall_ms,cpu_ms,status,variables,constraints,objective")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 2 and summary["completed"] == 2
    # the room probe and the figures cost time every run: each only when asked
    assert "room" not in summary and summary["options"]["room"] is False and not list(out.glob("*.png"))
    assert main(["simulate", "--system", "kth-sp2", "--workload", str(trace), "--dispatcher", "fifo",
                 "--out", str(out), "--no-progress", "--overwrite", "--room", "--plots"]) == 0
    assert json.loads((out / "summary.json").read_text())["room"]["source"] in ("probe", "none")
    assert sorted(p.name for p in out.glob("*.png")) == ["queue.png", "utilization.png"]


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ("3 20 -1 100 2 -1 -1 2\n", ":4"),  # truncated
        ("3 20 -1 abc 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n", ":4"),  # non-numeric run time
        ("3 20 -1 -5 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n", ":4"),  # negative run time
    ],
)
def test_bad_lines_strict_and_default(tmp_path: Path, line: str, where: str) -> None:
    trace = tmp_path / "bad.swf"
    trace.write_text("; header\n" + SWF_OK + line)
    code, _, err = cli("simulate", "--system", "kth-sp2", "--workload", str(trace), "--out", str(tmp_path / "o"),
                       "--strict", "--no-plots")
    assert code == 2, err
    assert f"bad.swf{where}: field '" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = cli("simulate", "--system", "kth-sp2", "--workload", str(trace), "--out", str(tmp_path / "o"),
                       "--no-plots")
    assert code == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["skipped_lines"] == 1
    assert "1 malformed line(s) skipped" in err


def test_job_larger_than_system_rejected_with_reason(tmp_path: Path) -> None:
    trace = tmp_path / "big.swf.gz"
    with gzip.open(trace, "wt") as f:
        f.write(SWF_OK + "3 20 -1 100 500 -1 -1 500 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    out = tmp_path / "o"
    assert main(["simulate", "--system", "kth-sp2", "--workload", str(trace), "--out", str(out),
                 "--no-progress", "--no-plots"]) == 0
    rows = (out / "schedule.csv").read_text().splitlines()
    assert rows[3].startswith("3,") and ",rejected,needs 500 units of {core 1} but at most 100 fit" in rows[3]


def test_unknown_dispatcher_and_option() -> None:
    code, _, err = cli("simulate", "--system", "eurora", "--workload", "x.swf", "--out", "o", "--dispatcher", "nope")
    assert code == 2 and "error:" in err
    code, out, err = cli("dispatchers")
    assert code == 0 and "last2-pcp21" in out.split("predictors: ")[1]  # every name --predictor accepts


def test_generate_convert_inspect(tmp_path: Path, workloads_dir: Path) -> None:
    gen = tmp_path / "g.csv"
    assert cli("generate", "eurora", "--jobs", "50", "--seed", "3", "--out", str(gen))[0] == 0
    assert gen.read_text().splitlines()[0].startswith("job_id,submit,user,name,queue,units,walltime,runtime,req_")
    contended = tmp_path / "c.csv"
    code, out, _ = cli("generate", "eurora", "--jobs", "50", "--mix", "gpu-contended", "--out", str(contended))
    assert code == 0 and "mix gpu-contended" in out and contended.read_text() != gen.read_text()
    conv = tmp_path / "kth.csv.gz"
    code, out, err = cli("convert", str(workloads_dir / "KTH-SP2-1996-2.1-cln.swf.gz"), "--system", "kth-sp2",
                         "--out", str(conv))
    assert code == 0, err
    code, out, err = cli("inspect", str(conv), "--system", "kth-sp2")
    assert code == 0 and "28,47" in out


def test_skip_and_limit_take_a_slice(workloads_dir: Path) -> None:
    from cpdispatch.system import load_system
    from cpdispatch.workloads import load_workload

    system = load_system("kth-sp2")
    path = workloads_dir / "KTH-SP2-1996-2.1-cln.swf.gz"
    whole = load_workload(path, system, limit=300)
    part = load_workload(path, system, limit=100, skip=200)
    ids = sorted(j.line for j in whole.jobs)[200:]
    assert sorted(j.line for j in part.jobs) == ids
    assert "slice" in part.notes
    code, _, err = cli("simulate", "--system", "kth-sp2", "--workload", str(path), "--out", "o", "--skip-jobs", "-1")
    assert code == 2 and "--skip-jobs must be at least 0" in err


def test_load_factor_compresses_arrivals(tmp_path: Path, workloads_dir: Path) -> None:
    from cpdispatch.system import load_system
    from cpdispatch.workloads import load_workload, scale_arrivals

    system = load_system("alibaba-gpu-2023")
    path = workloads_dir / "alibaba_gpu_v2023" / "openb_pod_list_default.csv.gz"
    base = load_workload(path, system, limit=400)
    fast = scale_arrivals(base, 4)
    t0 = min([j.submit for j in base.jobs] + [r.job.submit for r in base.rejected])
    assert [j.id for j in fast.jobs] == [j.id for j in base.jobs]  # same jobs, same order
    assert [j.submit for j in fast.jobs] == [t0 + (j.submit - t0) // 4 for j in base.jobs]
    assert [(j.runtime, j.units, j.req) for j in fast.jobs] == [(j.runtime, j.units, j.req) for j in base.jobs]
    assert len(fast.rejected) == len(base.rejected) and "load_factor" in fast.notes
    assert scale_arrivals(base, 1) is base
    with pytest.raises(CpdispatchError, match="between 0.001 and 1000"):
        scale_arrivals(base, 0)
    out = tmp_path / "o"
    code, _, err = cli("simulate", "--system", "alibaba-gpu-2023", "--workload", str(path), "--out", str(out),
                       "--limit-jobs", "400", "--load-factor", "4", "--no-plots", "--no-progress")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 400 and summary["options"]["load_factor"] == 4
    code, _, err = cli("simulate", "--system", "eurora", "--workload", "x.swf", "--out", "o", "--load-factor", "0")
    assert code == 2 and "--load-factor must be between 0.001 and 1000" in err
