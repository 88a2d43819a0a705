"""The export → whatif round trip (issue 24): the operator schedules the testbed on
the emulated cluster as a user applies it; `leasehold trace export` writes what the
cluster holds; `leasehold whatif` replays it under the operator's policy, and the
replay makes the cluster's own decisions: the same victims, the same start order,
the same preemptor, the same waits and ends (to the emulated second)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from leasehold.api.clock import Clock, epoch
from operated import TESTBED, Operated, apply_testbed, final_phases, operated

#: an emulated 10 minutes per second: the testbed's 2 h 10 min take about 15 s
SCALE = 600.0
POLICY = "moml"


def leasehold(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "leasehold.cli", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Operated, Path]]:
    """The testbed run to its end under the operator (disclosing other tenants, so
    that a victim's status names its preemptor), and its export."""
    tmp = tmp_path_factory.mktemp("whatif")
    config = tmp / "operator.yaml"
    config.write_text("tenancy:\n  localNamespaces: [owners]\n  discloseOtherTenants: true\n")
    c = operated(tmp / "cluster", POLICY, TESTBED / "2-pool.yaml", SCALE, 0,
                 "--config", str(config))
    try:
        c.until(lambda: c.recoveries() == 1)
        thread, _ = apply_testbed(c, SCALE)
        thread.join()
        c.until(lambda: final_phases(c), timeout=90, step=0.5)
        trace = tmp / "testbed.jsonl"
        r = leasehold("trace", "export", "--kubeconfig", str(c.kubeconfig), "--out",
                      str(trace))
        assert r.returncode == 0, r.stderr
        yield c, trace
    finally:
        c.stop_all()


def test_the_export_holds_the_leases_as_the_operator_submitted_them(ran):
    c, trace = ran
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    header, leases = lines[0], lines[1:]
    assert header["cluster"]["pools"][0] | {"overhead": None} == {
        "name": "rp1", "nodes": 3, "cpu": "4000m", "memory": 4096, "exclusive": False,
        "overhead": None}
    assert header["cluster"]["pools"][0]["overhead"]["suspendRate"] == 36.12
    # in the operator's order of submission, named as its scheduler names them, with
    # the origin its tenancy gave them
    statuses = {f"{x['metadata']['namespace']}/{x['metadata']['name']}": x["status"]
                for x in c.get("lhl", "-A")["items"]}
    assert [x["name"] for x in leases] == sorted(statuses, key=lambda n:
                                                 statuses[n]["sequence"])
    assert {x["name"]: x["origin"] for x in leases} == {
        n: s["origin"] for n, s in statuses.items()}
    assert {x["name"] for x in leases if x["origin"] == "local"} == {"owners/lease-7"}
    # arrivals in emulated seconds from the first submission, as the operator's
    # scheduler had them: lease-7 came about 12 emulated minutes after lease-1, not
    # the 1.2 s of the wall clock between them
    clock = Clock.from_configmap(c.get("cm", "-n", "kube-system", "leasehold-clock")["data"])
    told = {n: clock.core(epoch(s["submittedAt"])) for n, s in statuses.items()}
    zero = min(told.values())
    assert {x["name"]: x["arrival"] for x in leases} == pytest.approx(
        {n: t - zero for n, t in told.items()}, abs=1e-6)
    assert leases[0]["arrival"] == 0 and leases[-1]["arrival"] > 600
    assert all(x["observed"]["phase"] == "Completed" for x in leases)
    # where each ran: a finished Lease's status has no reservation left, the
    # operator's events say
    assert {x["observed"]["pool"] for x in leases} == {"rp1"}
    assert all(n.startswith("rp1-") for x in leases for n in x["observed"]["nodes"])


def test_whatif_under_the_operators_policy_makes_the_clusters_decisions(ran, tmp_path):
    _, trace = ran
    out = tmp_path / "report"
    r = leasehold("whatif", str(trace), "--policy", f"{POLICY},mlip", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "replaying 7 leases under moml (1/2)" in r.stderr
    rows = {x["run"]: x for x in csv.DictReader((out / "results.csv").open())}
    cluster, replay = rows["cluster"], rows[POLICY]
    # the testbed's preemption happened: the round trip has decisions to reproduce
    assert cluster["victims"] == "lab/lease-5 lab/lease-6"
    assert (replay["victims"], replay["startOrder"]) == (cluster["victims"],
                                                         cluster["startOrder"])
    assert replay["sameVictims"] == replay["sameStartOrder"] == "True"
    # and mlip chooses other victims (000 §8.3): the comparison tells them apart
    assert rows["mlip"]["sameVictims"] == "False"
    leases = list(csv.DictReader((out / "leases.csv").open()))
    seen = {x["lease"]: x for x in leases if x["run"] == "cluster"}
    for x in (x for x in leases if x["run"] == POLICY):
        was = seen[x["lease"]]
        assert (x["phase"], x["preemptions"], x["preemptedBy"]) == (
            was["phase"], was["preemptions"], was["preemptedBy"]), x["lease"]
        for key in ("start", "end", "waitSeconds"):
            assert float(x[key]) == pytest.approx(float(was[key]), abs=1.0), (x["lease"], key)
    assert {p.name for p in out.iterdir()} >= {"report.md", "report.html", "results.csv",
                                               "leases.csv", "totals.png", "waits.png",
                                               "schedule.png"}
