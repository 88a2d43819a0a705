"""leasehold traces: JSON Lines of scenario leases, read with line numbers, written
back unchanged, replayed by `leasehold simulate` and by experiments."""

from __future__ import annotations

import gzip
import json

import pytest

from leasehold.api.scenario import ScenarioError, load_scenario
from leasehold_emulator.workloads.trace import (
    FORMAT,
    TraceError,
    TraceHeader,
    lease_of,
    read_trace,
    trace_lines,
    trace_scenario,
    write_trace,
)
from test_cli import ROOT, leasehold

HEADER = {"format": FORMAT, "version": 1}
CLUSTER = {"pools": [{"name": "p", "nodes": 4, "exclusive": True}]}


def write(path, *records, header=HEADER):
    lines = [json.dumps(header) if isinstance(header, dict) else header]
    lines += [json.dumps(r) if isinstance(r, dict) else r for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def lease(name, **kw):
    return {"name": name, "type": "BestEffortSuspendable", "vms": 1, "duration": "1h", **kw}


def test_a_trace_reads_in_submission_order_with_units_and_blank_lines(tmp_path):
    path = write(tmp_path / "t.jsonl", lease("late", arrival="2m", cpu=2, memory="2Gi"), "",
                 "# a comment", lease("early", arrival=30, runtime="10m"))
    trace = read_trace(path)
    assert trace.header.cluster is None
    assert [(r.name, r.submitted, r.shape.cpu, r.shape.memory, r.actual_runtime)
            for r in trace.requests()] == [("early", 30, 1000, 1024, 600),
                                           ("late", 120, 2000, 2048, 3600)]


@pytest.mark.parametrize("records, message", [
    ([lease("a", vms=0)], 't.jsonl:2: lease "a": vms: must be >= 1, got 0'),
    ([lease("a", duraton="1h")], 'duraton: unknown field; expected one of name,'),
    ([lease("a"), lease("a")], 't.jsonl:3: duplicate lease name "a" (first at line 2)'),
    ([lease("a", type="DeadlineMigratable")], "t.jsonl:2: lease \"a\": deadline: required"),
    (['{"name": "a",'], "t.jsonl:2: not JSON"),
    (["[1, 2]"], "t.jsonl:2: expected one lease as a JSON object"),
    ([lease("a", extended={"nvidia.com/gpu": -1})],
     't.jsonl:2: lease "a": extended: nvidia.com/gpu: must be a whole number >= 0, got -1'),
])
def test_a_bad_lease_is_one_line_with_its_number(tmp_path, records, message):
    path = write(tmp_path / "t.jsonl", *records)
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert message in str(err.value) and "\n" not in str(err.value)
    skipped: list[str] = []
    kept = read_trace(path, skip_bad_lines=True, skipped=skipped)
    assert len(skipped) == 1 and message in skipped[0]
    assert len(kept.leases) == len(records) - 1


@pytest.mark.parametrize("header, message", [
    ({"format": "swf"}, "t.jsonl:1: not a leasehold trace: the first line must be a header"),
    ({**HEADER, "version": 2}, "t.jsonl:1: header: version: "),
    ({**HEADER, "cluster": {"pools": []}}, "t.jsonl:1: header: cluster.pools: "),
    ("not json", "t.jsonl:1: header: not JSON"),
])
def test_a_bad_header_is_one_line(tmp_path, header, message):
    with pytest.raises(TraceError, match=None) as err:
        read_trace(write(tmp_path / "t.jsonl", lease("a"), header=header))
    assert message in str(err.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(TraceError, match="cannot read file"):
        read_trace(tmp_path / "nope.jsonl")
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(TraceError, match="empty file; expected a header line"):
        read_trace(tmp_path / "e.jsonl")


def test_every_example_scenario_round_trips_through_a_gzipped_trace(tmp_path):
    for path in sorted((ROOT / "examples" / "scenarios").glob("*.yaml")):
        scenario = load_scenario(path)
        out = tmp_path / f"{path.stem}.jsonl.gz"
        write_trace(out, scenario.leases,
                    TraceHeader(format=FORMAT, version=1, cluster=scenario.cluster))
        with gzip.open(out, "rt") as fh:
            assert json.loads(fh.readline())["format"] == FORMAT
        back = trace_scenario(read_trace(out), str(out))
        assert back.leases == scenario.leases and back.cluster == scenario.cluster
        assert back.requests() == scenario.requests()
        # and the requests a simulation holds convert back to the same leases
        assert [lease_of(r) for r in scenario.requests()] == [
            lease_of(r) for r in back.requests()]
        assert [lease_of(r).to_request() for r in scenario.requests()] == scenario.requests()


def test_replaying_needs_a_cluster_that_fits_the_leases(tmp_path):
    bare = read_trace(write(tmp_path / "t.jsonl", lease("a")))
    with pytest.raises(ScenarioError, match="the header names no cluster"):
        trace_scenario(bare, "t.jsonl")
    big = read_trace(write(tmp_path / "b.jsonl", lease("a", cpu=4),
                           header={**HEADER, "cluster": CLUSTER}))
    with pytest.raises(ScenarioError, match='leases\\[0\\] \\(name "a"\\): cpu: one VM needs'):
        trace_scenario(big, "b.jsonl")


def test_simulate_replays_a_trace_as_it_replays_the_scenario(tmp_path):
    scenario = ROOT / "examples" / "scenarios" / "testbed.yaml"
    trace = tmp_path / "testbed.jsonl"
    r = leasehold("trace", "convert", str(scenario), "--out", str(trace))
    assert r.returncode == 0, r.stderr
    runs = [leasehold("simulate", str(p), "--policy", "moml", "-o", "json")
            for p in (scenario, trace)]
    assert all(x.returncode == 0 for x in runs), runs[1].stderr
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)
    back = leasehold("trace", "convert", str(trace))
    assert back.returncode == 0 and "leases:" in back.stdout


def test_simulate_stops_at_a_bad_trace_line_unless_told_to_skip(tmp_path):
    path = write(tmp_path / "t.jsonl", lease("a"), lease("b", vms=0),
                 header={**HEADER, "cluster": CLUSTER})
    r = leasehold("simulate", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f'error: {path}:3: lease "b": vms: must be >= 1, got 0'
        " (--skip-bad-lines leaves such lines out)"]
    r = leasehold("simulate", str(path), "--skip-bad-lines", "-o", "json")
    assert r.returncode == 0 and "skipped 1 malformed lines" in r.stderr
    assert [x["name"] for x in json.loads(r.stdout)["leases"]] == ["a"]


def test_a_file_that_cannot_be_read_gets_no_hint_about_skipping(tmp_path):
    r = leasehold("simulate", str(tmp_path / "nope.jsonl"))
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and "cannot read file" in r.stderr
    assert "--skip-bad-lines" not in r.stderr and "Traceback" not in r.stderr


def test_extended_resources_are_written_only_for_leases_that_have_them(tmp_path):
    scenario = load_scenario(ROOT / "examples" / "scenarios" / "gpu.yaml")
    lines = [json.loads(line) for line in trace_lines(lease_of(r) for r in scenario.requests())]
    assert {r["name"]: r.get("extended") for r in lines[1:]} == {
        "train": {"nvidia.com/gpu": 1}, "render": {"nvidia.com/gpu": 1}, "batch": None,
        "infer": {"nvidia.com/gpu": 1}}
