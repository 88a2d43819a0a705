"""`leasehold whatif`: a trace replayed under several settings beside what the cluster
did (its ``observed`` lines), in one report; and its bad input. The round trip from a
live cluster is tests/kube/test_whatif_roundtrip.py."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from leasehold.api.scenario import load_scenario
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.whatif import CLUSTER, compare, settings
from leasehold_emulator.workloads.trace import (
    FORMAT,
    VERSION,
    Observed,
    TraceHeader,
    read_trace,
    trace_scenario,
    write_trace,
)

ROOT = Path(__file__).resolve().parents[2]
TESTBED = ROOT / "examples" / "scenarios" / "testbed.yaml"


def trace_of_testbed(path: Path, policy: str = "moml", observed: bool = True) -> Path:
    """The testbed scenario as a trace, with (``observed``) what a cluster running
    ``policy`` did: the simulator's run of it stands for the cluster's."""
    scenario = load_scenario(TESTBED)
    pools = scenario.pool_specs()
    result = simulate(pools, scenario.scheduler_config(policy), scenario.requests())
    seen = {}
    for s in result.scheduler.leases():
        seen[s.name] = Observed.model_validate({
            "phase": s.phase.value, "sequence": s.sequence, "start": s.first_start,
            "end": s.end, "preemptions": s.preemptions, "preemptedBy": s.preempted_by,
            "overheadSeconds": s.overhead, "ranSeconds": s.ran, "pool": s.pool})
    header = TraceHeader(format=FORMAT, version=VERSION, source="the testbed",
                         cluster=scenario.cluster)
    write_trace(path, scenario.leases, header, seen if observed else None)
    return path


def whatif(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "leasehold.cli", "whatif", *args],
                          capture_output=True, text=True, timeout=120)


def test_observed_lines_are_read_beside_the_leases_and_a_replay_ignores_them(tmp_path):
    plain = read_trace(trace_of_testbed(tmp_path / "plain.jsonl", observed=False))
    seen = read_trace(trace_of_testbed(tmp_path / "seen.jsonl.gz"))
    assert plain.observed == {} and seen.leases == plain.leases
    assert seen.observed["5"].preemptions == 1 and seen.observed["5"].preempted_by == "7"
    assert trace_scenario(seen, "seen") == trace_scenario(plain, "plain")


@pytest.mark.parametrize(("policy", "same"), [
    pytest.param("moml", True, id="the-clusters-policy"),
    pytest.param("mlip", False, id="another-policy"),
])
def test_a_replay_under_the_clusters_policy_makes_its_decisions(tmp_path, policy, same):
    trace = read_trace(trace_of_testbed(tmp_path / "t.jsonl"))
    runs = compare(trace, trace_scenario(trace, "t"),
                   settings([policy], ["conservative"], ["earliest"]))
    cluster, replay = runs
    assert cluster.label == CLUSTER and replay.label == policy
    assert cluster.victims() == ["5", "6"]
    assert (replay.victims() == cluster.victims()) is same
    assert (replay.metrics == cluster.metrics) is same


def test_settings_are_labelled_by_what_varies():
    assert [label for label, _ in settings(["moml", "mov"], ["easy"], ["earliest"])] \
        == ["moml", "mov"]
    assert [label for label, _ in settings(["moml"], ["easy", "none"], ["rr", "lrf"])] \
        == ["moml easy rr", "moml easy lrf", "moml none rr", "moml none lrf"]


def test_the_report_has_the_cluster_as_its_baseline_row(tmp_path):
    trace = trace_of_testbed(tmp_path / "t.jsonl")
    out = tmp_path / "report"
    r = whatif(str(trace), "--policy", "moml,mov,mlip", "--out", str(out))
    assert r.returncode == 0, r.stderr
    # progress, a line per replay and a bar of its submissions (not repeated per step)
    assert "replaying 7 leases under mlip (3/3)" in r.stderr
    assert r.stderr.count("7/7 units") == 3
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [x["run"] for x in rows] == ["cluster", "moml", "mov", "mlip"]
    assert [x["sameVictims"] for x in rows] == ["True", "True", "True", "False"]
    leases = list(csv.DictReader((out / "leases.csv").open()))
    assert len(leases) == 4 * 7
    report = (out / "report.md").read_text()
    for title in ("## Totals", "## Decisions", "## Wait per lease (min)",
                  "## Preemptions per lease", "![totals](totals.png)"):
        assert title in report
    assert "| cluster | 5 (7), 6 (7) |" in report
    assert (out / "report.html").read_text().count("<table>") == 5


def test_a_trace_without_observed_lines_has_no_baseline(tmp_path):
    trace = trace_of_testbed(tmp_path / "t.jsonl", observed=False)
    r = whatif(str(trace), "--quiet", "--out", str(tmp_path / "r"))
    assert r.returncode == 0
    assert r.stderr.startswith("warning: ") and "no observed lines" in r.stderr
    assert [x["run"] for x in csv.DictReader((tmp_path / "r" / "results.csv").open())] \
        == ["moml"]


def bad_line(tmp_path: Path) -> Path:
    path = trace_of_testbed(tmp_path / "t.jsonl")
    lines = path.read_text().splitlines()
    lease = json.loads(lines[3])
    lease["observed"]["preemptions"] = -1
    lines[3] = json.dumps(lease)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(("args", "said"), [
    pytest.param(lambda tmp: [str(trace_of_testbed(tmp / "t.jsonl")), "--policy", "moml,fifo"],
                 "--policy moml,fifo: 'fifo' is not one of", id="unknown-policy"),
    pytest.param(lambda tmp: [str(trace_of_testbed(tmp / "t.jsonl")), "--backfilling", ","],
                 "--backfilling ,: empty is not one of", id="empty-list"),
    pytest.param(lambda tmp: [str(bad_line(tmp))],
                 't.jsonl:4: lease "3": observed.preemptions: Input should be greater than'
                 " or equal to 0", id="malformed-observed"),
    pytest.param(lambda tmp: [str(tmp / "none.jsonl")], "none.jsonl: cannot read file",
                 id="missing-trace"),
    pytest.param(lambda tmp: [str(TESTBED)], "not a leasehold trace", id="a-scenario"),
])
def test_bad_input_is_one_error(tmp_path, args, said):
    r = whatif(*args(tmp_path), "--out", str(tmp_path / "r"))
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and said in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "r").exists()
