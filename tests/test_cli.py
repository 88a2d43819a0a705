"""The `leasehold` command as a user runs it: real subprocesses, real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from leasehold.commands import DISPATCH

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples" / "scenarios").glob("*.yaml"))


def leasehold(*args: str, seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run([sys.executable, "-m", "leasehold.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=120)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_packages(flag):
    """The installed distribution's version, which is pyproject's."""
    r = leasehold(flag)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert (r.returncode, r.stdout, r.stderr) == (0, f"leasehold {pyproject}\n", "")
    assert version("leasehold") == pyproject


def test_examples_exist():
    assert {p.name for p in EXAMPLES} >= {"backfilling.yaml", "advance-reservation.yaml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_same_input_gives_byte_identical_output(path):
    # different hash seeds: no decision may depend on set or dict hash order
    runs = [leasehold("simulate", str(path), "-o", "json", seed=s) for s in ("1", "2", "3")]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout
    doc = json.loads(runs[0].stdout)
    assert set(doc) >= {"leases", "decisions", "metrics"}


def test_json_document_has_the_stable_keys(tmp_path):
    out = tmp_path / "r.json"
    r = leasehold("simulate", str(ROOT / "examples/scenarios/backfilling.yaml"), "--out", str(out))
    assert r.returncode == 0 and r.stdout == ""
    doc = json.loads(out.read_text())
    lease = doc["leases"][0]
    assert list(lease)[:9] == ["name", "origin", "type", "phase", "submitted", "start", "end",
                               "nodes", "preemptions"]
    assert {"suspensions", "migrations", "overheadSeconds", "reason"} <= set(lease)
    assert set(doc["metrics"]) >= {"localRejectionRate", "externalRejectionRate", "utilization",
                                   "preemptions", "overheadSeconds", "makespanBestEffort"}


def test_table_output_and_overrides():
    r = leasehold("simulate", str(ROOT / "examples/scenarios/backfilling.yaml"), "-o", "table",
                  "--backfilling", "none")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["LEASE", "ORIGIN", "TYPE", "PHASE"]
    # FCFS: C may not pass B, so it starts only when B ends at 1:40
    row_c = next(line for line in lines if line.startswith("C "))
    assert "1:40:00" in row_c



def test_table_notes_say_times_as_its_columns_and_durations_as_users_do():
    """Issue 18: the table's reasons were the core's ``t=720s``; only the JSON keeps
    the core's seconds."""
    r = leasehold("simulate", str(ROOT / "examples/scenarios/testbed.yaml"), "-o", "table",
                  "--policy", "nop")
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("7 "))
    assert row.endswith("no slot for 5 VM(s) of 1 cpu and 128 MiB for 1h from 0:12:00 that"
                        " ends by its deadline 1:12:00; policy 'nop' never preempts"), row
    r = leasehold("simulate", str(ROOT / "examples/scenarios/testbed.yaml"), "-o", "json",
                  "--policy", "nop")
    assert "from t=720s that ends by its deadline t=4320s" in r.stdout


BAD = """\
cluster:
  pools:
    - {name: rp1, nodes: 2, cpu: 1, memory: 1024}
leases:
  - {name: ok, type: BestEffortSuspendable, vms: 1, duration: 10}
  - {name: a, type: BestEffortSuspendable, vms: 1}
  - {name: b, type: Foo, vms: 1, duration: 10}
  - {name: c, type: BestEffortSuspendable, vms: -3, duration: 10}
  - {name: d, type: DeadlineMigratable, vms: 1, duration: 3600, deadline: 3000}
  - {name: e, type: BestEffortSuspendable, vms: 1, duration: 10, pool: nope}
"""


def test_malformed_scenario_exits_nonzero_with_one_line_per_problem(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    r = leasehold("simulate", str(path), "-o", "json")
    assert r.returncode == 2
    assert r.stdout == ""  # nothing is half-simulated
    lines = r.stderr.splitlines()
    assert "Traceback" not in r.stderr
    expected = [('"a"', "duration:"), ('"b"', "type:"), ('"c"', "vms:"), ('"d"', "deadline:"),
                ('"e"', "pool:")]
    assert len(lines) == len(expected)
    for line, (lease, field) in zip(lines, expected, strict=True):
        assert line.startswith(f"error: {path}: leases[")
        assert f"(name {lease}): {field}" in line


def test_missing_file_is_one_clear_line(tmp_path):
    r = leasehold("simulate", str(tmp_path / "nope.yaml"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.splitlines()) == 1 and "nope.yaml" in r.stderr


def test_swf_command_on_a_small_trace(tmp_path):
    line = "{} {} 0 {} 1 -1 -1 {} {} -1 1 -1 -1 -1 -1 -1 -1 -1\n"
    trace = tmp_path / "t.swf"
    trace.write_text(line.format(1, 0, 100, 2, 100) + line.format(2, 0, 50, 2, 50))
    r = leasehold("swf", str(trace), "--nodes", "2", "--backfilling", "none")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].split() == ["none", "2", "0.83", "100.0%"]
    r = leasehold("swf", str(trace), "--nodes", "1")
    assert r.returncode == 2 and "needs more than --nodes 1" in r.stderr


def test_swf_injects_the_advance_reservations_of_an_lwf_file(tmp_path):
    line = "{} {} 0 {} 1 -1 -1 {} {} -1 1 -1 -1 -1 -1 -1 -1 -1\n"
    trace = tmp_path / "t.swf"
    trace.write_text(line.format(1, 0, 100, 2, 100) + line.format(2, 0, 50, 2, 50))
    lwf = tmp_path / "ar.lwf"
    # reqTime startTime duration realDuration numNodes CPU mem disk vmImage vmImageSize
    lwf.write_text("0 500 20 20 2 1 1024 0 'NONE.img' 600\n"
                   "0 510 20 20 1 1 1024 0 'NONE.img' 600\n")  # overlaps the first: rejected
    r = leasehold("swf", str(trace), "--nodes", "2", "--backfilling", "none",
                  "--inject", str(lwf))
    assert r.returncode == 0, r.stderr
    header, row = r.stdout.splitlines()
    assert header.split()[-5:] == ["ARs", "rejected", "all", "best-effort", "(h)"]
    # the jobs column counts the trace's jobs, done by 150 s; the nodes are busy for
    # 2·100 + 2·50 + 2·20 of 2·520 node-seconds
    assert row.split() == ["none", "2", "0.83", "32.7%", "0", "1/2", "0.0"]
    lwf.write_text("0 500 20 20 0 1 1024 0 'NONE.img' 600\n")
    r = leasehold("swf", str(trace), "--nodes", "2", "--inject", str(lwf))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [f"error: {lwf}:1: numNodes must be >= 1, got 0"
                                     " (--skip-bad-lines leaves such lines out)"]


def test_workload_lublin99_prints_what_the_c_program_prints(tmp_path):
    out = tmp_path / "w.swf"
    r = leasehold("workload", "lublin99", "--jobs", "300", "--seed", "42", "--rng", "drand48",
                  "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text() == (ROOT / "tests/workloads/data/lublin99-typed-seed42.swf").read_text()
    r = leasehold("workload", "lublin99", "--jobs", "50", "--seed", "3", "--preset", "papers")
    jobs = [line.split() for line in r.stdout.splitlines() if not line.startswith(";")]
    assert r.returncode == 0 and len(jobs) == 50 and all(len(j) == 18 for j in jobs)
    assert "; MaxNodes: 32" in r.stdout and max(int(j[4]) for j in jobs) <= 32


@pytest.mark.parametrize(("args", "message"), [
    (["lublin99", "--jobs", "0"], "argument --jobs: must be at least 1, got 0"),
    (["lublin99", "--jobs", "many"], "argument --jobs: expected a whole number, got 'many'"),
    (["das3"], "invalid choice: 'das3'"),
    (["das2", "--preset", "papers"], "--preset papers: das2 has the presets gridsim, c64"),
    (["das2", "--rng", "drand48"], "--rng drand48: only lublin99 has the C program's stream"),
    (["lublin99", "--out", "/nonexistent/dir/w.swf"], "error: cannot write /nonexistent/dir/w.swf"),
])
def test_workload_bad_input_is_one_clear_line(args, message):
    r = leasehold("workload", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert message in r.stderr.splitlines()[-1]


def test_workload_das2_writes_a_trace_of_its_cluster():
    r = leasehold("workload", "das2", "--preset", "c128", "--jobs", "400", "--seed", "5")
    jobs = [line.split() for line in r.stdout.splitlines() if not line.startswith(";")]
    assert r.returncode == 0 and len(jobs) == 400 and "; MaxNodes: 128" in r.stdout
    assert max(int(j[4]) for j in jobs) <= 128
    assert [int(j[1]) for j in jobs] == sorted(int(j[1]) for j in jobs)


@pytest.mark.parametrize(("flags", "wait", "suspended"), [
    # the job cannot end before the reservation, known before the job came: without
    # suspension it waits for the reservation's end, 1,010 s
    ((), "16.83", "0"),
    # 004's suspend/resume: it runs in the hole and is suspended for the reservation
    (("--suspend-before-blocking",), "0.00", "1"),
], ids=["plans-around", "suspends"])
def test_swf_says_how_many_jobs_a_replay_suspended(tmp_path, flags, wait, suspended):
    trace = tmp_path / "t.swf"
    trace.write_text("1 10 0 1000 1 -1 -1 1 1000 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
    lwf = tmp_path / "ar.lwf"
    lwf.write_text("0 1000 20 20 2 1 1024 0 'NONE.img' 600\n")
    r = leasehold("swf", str(trace), "--nodes", "2", "--backfilling", "conservative",
                  "--inject", str(lwf), *flags)
    assert r.returncode == 0, r.stderr
    header, row = r.stdout.splitlines()
    assert header.split()[6] == "suspended"
    mode, jobs, mean_wait, _, jobs_suspended, *_ = row.split()
    assert (mode, jobs, mean_wait, jobs_suspended) == ("conservative", "1", wait, suspended)


def test_swf_stops_at_a_malformed_line_unless_told_to_skip(tmp_path):
    line = "{} {} 0 {} 1 -1 -1 {} {} -1 1 -1 -1 -1 -1 -1 -1 -1\n"
    trace = tmp_path / "t.swf"
    trace.write_text(line.format(1, 0, 100, 2, 100) + "2 0 oops\n" + line.format(3, 0, 50, 2, 50))
    r = leasehold("swf", str(trace), "--nodes", "2", "--backfilling", "none")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [
        f"error: {trace}:2: expected 18 fields, found 3 (--skip-bad-lines leaves such lines out)"]
    r = leasehold("swf", str(trace), "--nodes", "2", "--backfilling", "none", "--skip-bad-lines")
    assert r.returncode == 0
    assert r.stderr.startswith(f"warning: skipped 1 malformed lines; the first: {trace}:2:")
    assert r.stdout.splitlines()[1].split()[:2] == ["none", "2"]
    r = leasehold("swf", str(tmp_path / "missing.swf"))
    assert r.returncode == 2 and r.stderr.startswith("error: cannot read")


def test_experiment_run_writes_results_and_a_report(tmp_path):
    spec = tmp_path / "e.yaml"
    spec.write_text(
        "name: tiny\n"
        "workload: {model: das2, preset: c64, jobs: 80}\n"
        "cluster: {pools: [{name: c64, nodes: 64, exclusive: true}]}\n"
        "policies: [nop, mov]\n"
        "replications: 2\n"
        "baseline: nop\n")
    r = leasehold("experiment", "run", str(spec), "--quiet", "--processes", "1")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "results-tiny"
    assert r.stdout.startswith("2 of 2 units run") and (out / "report.html").exists()
    r = leasehold("experiment", "run", str(spec), "--quiet")
    assert r.stdout.startswith("0 of 2 units run (2 were already in")


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux /proc)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def test_experiment_whose_worker_is_killed_says_so_in_one_line_and_keeps_what_finished(
        tmp_path):
    """A worker killed under the run (the kernel's out-of-memory killer did this to a
    003-duration run) ends it with one line saying what happened and how to go on,
    not a traceback of the process pool."""
    if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
        pytest.skip("this kernel does not list a process's children in /proc")
    spec = tmp_path / "e.yaml"
    spec.write_text(
        "name: long\n"
        "workload: {model: das2, preset: c64, jobs: 4000}\n"
        "cluster: {pools: [{name: c64, nodes: 64, exclusive: true}]}\n"
        "policies: [nop, mlip, mov, moml]\n"
        "replications: 40\n"
        "baseline: nop\n")
    proc = subprocess.Popen([sys.executable, "-m", "leasehold.cli", "experiment", "run",
                             str(spec), "--quiet", "--processes", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(workers := children(proc.pid)) < 2 and proc.poll() is None:
            assert time.monotonic() < deadline, "no worker processes started"
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before a worker could be killed"
        os.kill(workers[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 2 and "Traceback" not in stderr, stderr
    [line] = stderr.splitlines()
    assert line.startswith("error: a worker process died") and "run it again" in line, line
    results = tmp_path / "results-long" / "results.csv"
    assert results.read_text().startswith("point,seed,")  # what finished is kept


def test_experiment_bad_file_is_one_line_per_problem(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\nworkload: {model: lublin99, jobs: -5}\npolicies: [moml]\n")
    r = leasehold("experiment", "run", str(spec))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [
        f"error: {spec}: workload.jobs: must be >= 1, got -5",
        f"error: {spec}: cluster: required field is missing"]
    r = leasehold("experiment", "run", str(tmp_path / "none.yaml"))
    assert r.returncode == 2 and "cannot read file" in r.stderr


@pytest.mark.parametrize("args", [
    ("simulate", "examples/scenarios/backfilling.yaml"),
    ("trace", "convert", "examples/scenarios/backfilling.yaml"),
    ("workload", "das2", "--jobs", "5"),
])
def test_an_output_that_cannot_be_written_is_one_clear_line(tmp_path, args):
    r = leasehold(*args, "--out", str(tmp_path / "no-such-dir" / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("error: cannot write ") and len(r.stderr.splitlines()) == 1


def _operator_args(*argv: str):
    from leasehold.cli import build_parser
    return build_parser().parse_args(["operator", *argv])


@pytest.mark.parametrize(("config", "argv", "want"), [
    ("", [], ("moml", "median", "conservative", False)),
    ("policy: mov\nbackfilling: easy\nalpha: p75\nsuspendBeforeBlocking: true\n", [],
     ("mov", "p75", "easy", True)),
    # a flag on the command line wins over the file
    ("policy: mov\nbackfilling: easy\n", ["--policy", "mlip", "--alpha", "600"],
     ("mlip", 600.0, "easy", False)),
])
def test_the_operator_reads_its_config_file_under_its_flags(tmp_path, config, argv, want):
    from leasehold.cli import operator_config
    path = tmp_path / "config.yaml"
    path.write_text(config)
    got = operator_config(_operator_args("--config", str(path), *argv))
    assert (got.policy, got.alpha, got.backfilling.value, got.suspend_before_blocking) == want


@pytest.mark.parametrize("name", DISPATCH)
@pytest.mark.parametrize(("config", "argv"), [
    pytest.param("dispatch: {name}\n", [], id="in-the-file"),
    pytest.param("dispatch: {default}\n", ["--dispatch", "{name}"], id="the-flag-wins"),
    pytest.param("policy: mov\n", ["--dispatch", "{name}"], id="the-flag-alone"),
])
def test_the_operator_reads_its_dispatch_strategy(tmp_path, name, config, argv):
    """Issue 21: ``dispatch`` in the config (the chart's ``scheduler.dispatch``) or
    ``--dispatch`` reaches the core's configuration; every declared strategy is
    accepted."""
    from leasehold.cli import operator_config
    path = tmp_path / "config.yaml"
    path.write_text(config.format(name=name, default=DISPATCH[0]))
    argv = [a.format(name=name) for a in argv]
    assert operator_config(_operator_args("--config", str(path), *argv)).dispatch == name


def test_the_operators_dispatch_strategy_is_the_default_without_a_config():
    from leasehold.cli import operator_config
    from leasehold.core.model import SchedulerConfig
    assert operator_config(_operator_args()).dispatch == SchedulerConfig().dispatch \
        == DISPATCH[0]


@pytest.mark.parametrize(("text", "message"), [
    ("bogus: 1\n", "bogus: unknown field; expected one of policy, alpha"),
    ("policy: mvo\n", 'policy: unknown policy "mvo"'),
    ("policy: [\n", "invalid YAML"),
    # the tenancy block (issue 17): the label mode needs the admins' explicit trust
    ("tenancy:\n  localNamespaceSelector: {matchLabels: {team: owners}}\n",
     "tenancy.localNamespaceSelector reads namespace labels, which whoever may create or"
     " label a namespace writes: set trustNamespaceLabels: true only if tenants cannot"),
    ("tenancy:\n  trustNamespaceLabels: true\n  localNamespaceSelector: {}\n",
     "tenancy.localNamespaceSelector: an empty selector would make every namespace local"),
    ("tenancy:\n  localNamespaces: [Owners]\n", "tenancy.localNamespaces: 'Owners': not a"
     " namespace name"),
    ("tenancy:\n  maxPendingLeases: 0\n", "tenancy.maxPendingLeases: must be >= 1, got 0"),
    ("tenancy:\n  localNamespace: [owners]\n", "tenancy.localNamespace: unknown field"),
    ("tenancy: [owners]\n", "tenancy: a mapping, got list"),
    ("tenancy:\n  trustNamespaceLabels: true\n  localNamespaceSelector:\n"
     "    matchExpressions: [{key: team, operator: In}]\n",
     "operator In needs values"),
    ("dispatch: bogus\n", 'dispatch: unknown dispatch "bogus"; expected one of '
     + ", ".join(DISPATCH)),
    ("dispatch: [rr]\n", "dispatch: must be one of " + ", ".join(DISPATCH) + ", got a list"),
], ids=["unknown-key", "unknown-policy", "yaml", "selector-untrusted", "selector-empty",
        "namespace-name", "cap-zero", "tenancy-unknown-key", "tenancy-not-a-mapping",
        "expression-without-values", "unknown-dispatch", "dispatch-not-a-name"])
def test_a_bad_operator_config_is_one_clear_line(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    r = leasehold("operator", "--config", str(path))
    assert r.returncode == 2 and message in r.stderr and str(path) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


def test_an_operator_config_with_a_duplicate_key_is_refused(tmp_path):
    """As in scenario files: PyYAML alone would let the second ``policy`` win unseen."""
    path = tmp_path / "config.yaml"
    path.write_text("policy: mov\nbackfilling: easy\npolicy: moml\n")
    r = leasehold("operator", "--config", str(path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [f'error: {path}: invalid YAML: duplicate key "policy"'
                                     " (first at line 1) (line 3, column 1)"]


def test_an_operator_without_a_usable_kubeconfig_is_one_clear_line(tmp_path):
    r = leasehold("operator", "--kubeconfig", str(tmp_path / "none"), "--metrics-port", "0")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [f"error: cannot read {tmp_path / 'none'}:"
                                     " No such file or directory"]


def test_help_lists_the_operators_and_the_emulators_commands_in_order():
    """The emulator's commands come from its entry points; the order is as it was."""
    r = leasehold("--help")
    assert r.returncode == 0
    listed = [line.split()[0] for line in r.stdout.split("COMMAND\n", 1)[1].splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == ["simulate", "trace", "whatif", "swf", "operator", "up", "demo", "crds",
                      "dashboards", "emulator", "workload", "experiment"]
