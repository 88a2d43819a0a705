"""The operator end to end: the emulated cluster, the real kubectl applying Leases as
a user would, and `leasehold operator` in its own process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from leasehold.api.durations import parse_duration
from operated import ROOT, TESTBED, Operated, operated


def simulated_victims(policy: str) -> tuple[list[str], list[str]]:
    """(victims, rejected) of `leasehold simulate` on the testbed scenario."""
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate",
                        str(ROOT / "examples/scenarios/testbed.yaml"), "--policy", policy,
                        "-o", "json"], capture_output=True, text=True, check=True)
    doc = json.loads(r.stdout)
    victims = sorted(v for d in doc["decisions"] for v in d["chosen"])
    return victims, sorted(x["name"] for x in doc["leases"] if x["phase"] == "Rejected")


@pytest.fixture
def testbed(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Operated]:
    c = operated(tmp_path, request.param, TESTBED / "2-pool.yaml")
    try:
        yield c
    finally:
        c.stop_all()


@pytest.mark.parametrize("testbed", ["nop", "mlip", "mov", "moml"], indirect=True,
                         ids=lambda p: p)
def test_the_testbed_preempts_what_the_simulator_preempts(testbed, request):
    policy = request.node.callspec.params["testbed"]
    victims, rejected = simulated_victims(policy)
    testbed.until(lambda: testbed.recoveries() == 1)  # the operator is up
    docs = [d for d in yaml.safe_load_all((TESTBED / "3-leases.yaml").read_text()) if d]
    start = time.monotonic()
    for doc in docs:
        at = parse_duration(doc["metadata"]["annotations"]["leasehold.io/arrival"]) / 60.0
        time.sleep(max(start + at - time.monotonic(), 0))
        testbed.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(doc))

    def decided():
        seven = testbed.lease("owners", "lease-7").get("status", {})
        return seven.get("phase") in ("Running", "Rejected") and seven
    seven = testbed.until(decided)
    if rejected:
        assert rejected == ["7"] and seven["phase"] == "Rejected"
        assert "deadline" in seven["message"] or "no slot" in seven["message"]
        return
    preempted = sorted(
        lease["metadata"]["name"].removeprefix("lease-")
        for lease in testbed.get("lhl", "-n", "lab")["items"]
        if lease.get("status", {}).get("preemptions", 0) > 0)
    assert preempted == victims
    # the victims' pods are gone, the preemptor's run, and both sides have events
    pods = testbed.get("pods", "-n", "lab")["items"]
    assert not [p for p in pods if p["metadata"]["labels"]["leasehold.io/lease"]
                in {f"lease-{v}" for v in victims}]
    assert len(testbed.get("pods", "-n", "owners")["items"]) == 5
    events = testbed.get("events", "-A")["items"]
    preempted_events = {e["involvedObject"]["name"] for e in events if e["reason"] == "Preempted"}
    assert preempted_events == {f"lease-{v}" for v in victims}
    others = [e["message"] for e in events if e["reason"] == "PreemptedOthers"]
    assert len(others) == len(victims)
    # the victims (lab) and their preemptor (owners) are different tenants: neither
    # is told the other's namespace or Lease (tenancy.discloseOtherTenants is off)
    told = {(e["involvedObject"]["namespace"], e["message"]) for e in events}
    assert not [m for ns, m in told if ("owners" if ns == "lab" else "lab") in m
                or (ns == "lab" and "lease-7" in m)], told
    statuses = [x["status"] for x in testbed.get("lhl", "-n", "lab")["items"]]
    assert not [s for s in statuses if "owners" in json.dumps(s)]
    lines = testbed.kubectl("get", "lhl", "-n", "lab").stdout.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "ORIGIN", "VMS", "PHASE", "POOL", "START", "AGE",
                                "MESSAGE"]


def lease(name: str, namespace: str = "lab", **spec) -> dict:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_pods_go_on_suspension_and_come_back_on_resume(small):
    small.apply(lease("a", type="BestEffortSuspendable", vms=2, duration="10m",
                      resources={"cpu": 1, "memory": "256Mi"}))

    def pods(ns: str) -> list[str]:
        return sorted(p["metadata"]["name"] for p in small.get("pods", "-n", ns)["items"]
                      if not p["metadata"].get("deletionTimestamp"))
    small.until(lambda: pods("lab") == ["a-vm-0", "a-vm-1"])
    small.apply(lease("b", "owners", type="DeadlineNonPreemptable", vms=2, duration="2m",
                      resources={"cpu": 1, "memory": "256Mi"}))
    small.until(lambda: pods("lab") == [] and pods("owners") == ["b-vm-0", "b-vm-1"])
    assert small.lease("lab", "a")["status"]["phase"] in ("Suspending", "Suspended")
    # b runs two emulated minutes, then a resumes on the freed node
    small.until(lambda: small.lease("owners", "b")["status"]["phase"] == "Completed", 15)
    small.until(lambda: pods("lab") == ["a-vm-0", "a-vm-1"], 15)
    small.until(lambda: small.lease("lab", "a")["status"]["phase"] == "Running", 15)
    reasons = {e["reason"] for e in small.get("events", "-n", "lab")["items"]
               if e["involvedObject"]["name"] == "a"}
    assert {"Started", "Preempted", "Resumed"} <= reasons


@pytest.mark.parametrize(("bad", "message"), [
    (lease("local-please", type="DeadlineMigratable", vms=1, duration="1h", deadline="3h",
           origin="local"), "a Lease cannot make itself local"),
    (lease("too-late", type="DeadlineMigratable", vms=1, duration="1h", deadline="30m"),
     "is before the earliest end"),
    (lease("too-big", type="BestEffortSuspendable", vms=50, duration="1h"), "50"),
    (lease("not-a-pod", type="BestEffortSuspendable", vms=1, duration="1h",
           template={"containers": [{"name": "x"}]}), "not a pod template"),
])
def test_bad_leases_are_rejected_and_others_still_run(small, bad, message):
    small.apply(bad)
    name = bad["metadata"]["name"]
    status = small.until(lambda: small.lease("lab", name).get("status", {}).get("phase")
                         == "Rejected" and small.lease("lab", name)["status"])
    assert message in status["message"], status["message"]
    small.apply(lease("fine", type="BestEffortSuspendable", vms=1, duration="1h"))
    small.until(lambda: small.lease("lab", "fine").get("status", {}).get("phase") == "Running")


def test_a_deleted_lease_releases_its_vms_and_its_name(small):
    spec = {"type": "BestEffortSuspendable", "vms": 2, "duration": "1h",
            "resources": {"cpu": 1, "memory": "256Mi"}}
    small.apply(lease("again", **spec))
    small.until(lambda: small.lease("lab", "again").get("status", {}).get("phase") == "Running")
    small.apply(lease("waiting", **spec))  # the node is full: it waits
    small.until(lambda: small.lease("lab", "waiting").get("status", {}).get("phase")
                == "Scheduled")
    small.kubectl("delete", "lhl", "-n", "lab", "again")
    # its pods go with it, and the waiting lease gets the node
    small.until(lambda: small.lease("lab", "waiting").get("status", {}).get("phase")
                == "Running")
    small.kubectl("delete", "lhl", "-n", "lab", "waiting")
    small.apply(lease("again", **spec))  # the same name: a new lease
    small.until(lambda: small.lease("lab", "again").get("status", {}).get("phase") == "Running")
    names = sorted(p["metadata"]["name"] for p in small.get("pods", "-n", "lab")["items"]
                   if not p["metadata"].get("deletionTimestamp"))
    assert names == ["again-vm-0", "again-vm-1"]


def test_metrics_follow_the_run(tmp_path):
    import socket
    import urllib.request
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = operated(tmp_path, "moml", TESTBED / "2-pool.yaml", metrics_port=port)
    try:
        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return r.read().decode()
        c.until(lambda: "leasehold_leases" in _or_empty(scrape))
        docs = [d for d in yaml.safe_load_all((TESTBED / "3-leases.yaml").read_text()) if d]
        for doc in docs[:6]:  # the external leases fill the pool
            c.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(doc))
        c.until(lambda: all(x.get("status", {}).get("phase") == "Running"
                            for x in c.get("lhl", "-n", "lab")["items"]))
        c.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(docs[6]))  # and 7 preempts
        c.until(lambda: c.lease("owners", "lease-7").get("status", {}).get("phase")
                == "Running")
        # the counters move at every step, the gauges at most once a second
        text = c.until(lambda: 'leasehold_preemptions_total{action="suspend",policy="moml"'
                       in (t := scrape())
                       and 'leasehold_leases{namespace="owners",phase="Running"} 1.0' in t
                       and t)
        samples = {line.split(" ")[0]: float(line.split(" ")[1])
                   for line in text.splitlines() if line and not line.startswith("#")}
        admitted = sum(v for k, v in samples.items()
                       if k.startswith("leasehold_lease_requests_total{")
                       and 'outcome="admitted"' in k)
        assert admitted == 7
        assert samples['leasehold_leases{namespace="owners",phase="Running"}'] == 1
        assert samples['leasehold_operator_active'] == 1
        # each lease's own series: lease 7 running (3), lease 5 suspended once
        lease7 = {k: v for k, v in samples.items()
                  if k.startswith('leasehold_lease_phase{lease="lease-7",namespace="owners",'
                                  'origin="local",')}
        assert [k for k, v in lease7.items() if v == 1] == [
            'leasehold_lease_phase{lease="lease-7",namespace="owners",origin="local",'
            'phase="Running",type="DeadlineNonPreemptable"}'] and len(lease7) == 12
        assert samples['leasehold_lease_preemptions{lease="lease-5",namespace="lab"}'] == 1
        assert samples["leasehold_preempted_vms_total"] >= 5
        assert samples["leasehold_candidate_sets_count"] >= 1
        assert samples["leasehold_decision_cpu_seconds_count"] >= 1
        assert samples['leasehold_pool_capacity_cpu_cores{pool="rp1"}'] == 12
        assert 0 < samples['leasehold_pool_cpu_utilization_ratio{pool="rp1"}'] <= 1
        assert "_created" not in text  # no series that only says when it began
    finally:
        c.stop_all()


def _or_empty(scrape) -> str:
    try:
        return scrape()
    except OSError:
        return ""
