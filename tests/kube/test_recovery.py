"""The kill test: the operator is killed with SIGKILL at random (seeded) moments of a
run with preemptions and restarted at once. No lease may be lost, no node ever
over-committed, and every lease must end as the uninterrupted run ends it."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from emulated import until
from leasehold.api.durations import parse_duration
from operated import ROOT, TESTBED, Operated, operated

SCALE = 70.0
KILLS = 20


def simulated_phases() -> dict[str, str]:
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate",
                        str(ROOT / "examples/scenarios/testbed.yaml"), "--policy", "moml",
                        "-o", "json"], capture_output=True, text=True, check=True)
    return {f"lease-{x['name']}": x["phase"] for x in json.loads(r.stdout)["leases"]}


def overcommitted(c: Operated, capacity_m: int = 4000) -> list[str]:
    """Nodes whose live pods (not succeeded, not being deleted) ask for more cpu than
    the node has."""
    used: dict[str, int] = {}
    for pod in c.get("pods", "-A")["items"]:
        if pod["metadata"].get("deletionTimestamp") or pod["status"].get("phase") == "Succeeded":
            continue
        node = pod["spec"].get("nodeName")
        cpu = pod["spec"]["containers"][0].get("resources", {}).get("requests", {}).get("cpu")
        if node and cpu:
            used[node] = used.get(node, 0) + int(cpu.removesuffix("m"))
    return [f"{n}: {m}m" for n, m in used.items() if m > capacity_m]


def test_killed_at_random_the_operator_loses_and_double_books_nothing(tmp_path: Path):
    want = simulated_phases()
    c = operated(tmp_path, "moml", TESTBED / "pool.yaml", SCALE)
    rng = random.Random(2026)
    problems: list[str] = []
    samples = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            try:
                problems.extend(overcommitted(c))
                samples[0] += 1
            except (AssertionError, json.JSONDecodeError, KeyError):
                pass  # a listing that raced a deletion
            time.sleep(0.2)
    watcher = threading.Thread(target=watch, daemon=True)
    try:
        until(lambda: c.recoveries() == 1, 30)
        docs = [d for d in yaml.safe_load_all((TESTBED / "leases.yaml").read_text()) if d]
        start = time.monotonic()

        def arrive() -> None:
            for doc in docs:
                at = parse_duration(doc["metadata"]["annotations"]["leasehold.io/arrival"])
                time.sleep(max(start + at / SCALE - time.monotonic(), 0))
                c.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(doc))
        arrivals = threading.Thread(target=arrive)
        arrivals.start()
        watcher.start()
        # each kill comes at a random moment of a running operator's work: after it
        # has recovered, within the next two seconds
        for kill in range(1, KILLS + 1):
            time.sleep(rng.uniform(0.0, 2.0))
            c.operator.send_signal(signal.SIGKILL)
            c.operator.wait(timeout=10)
            c.start_operator("moml")
            until(lambda k=kill: c.recoveries() == k + 1, 30)
        arrivals.join()
        assert time.monotonic() - start < 7800 / SCALE, "the run ended before the kills"

        def finished():
            """every lease in a final phase"""
            phases = {x["metadata"]["name"]: x.get("status", {}).get("phase")
                      for x in c.get("lhl", "-A")["items"]}
            return all(p in ("Completed", "Rejected", "Cancelled") for p in phases.values()) \
                and phases
        phases = until(finished, timeout=120, step=0.5,
                       explain=lambda: c.kubectl("get", "lhl", "-A").stdout)
        assert phases == want
        # the same preemption as without the kills ({5, 6} under moml), and only once
        preempted = {x["metadata"]["name"]: x["status"].get("preemptions", 0)
                     for x in c.get("lhl", "-A")["items"]}
        assert {n: k for n, k in preempted.items() if k} == {"lease-5": 1, "lease-6": 1}
        assert problems == [], problems[:5]
        assert samples[0] > 100  # the nodes were looked at all along
    finally:
        done.set()
        c.stop_all()


def test_work_that_ended_while_the_operator_was_down_is_not_run_again(tmp_path: Path):
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump({
        "apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "p"},
        "spec": {"emulated": {"nodes": 1, "cpu": 2, "memory": "2Gi"}}}))
    c = operated(tmp_path / "cluster", "moml", pools)  # an emulated minute per second
    try:
        until(lambda: c.recoveries() == 1, 30)
        c.apply({"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
                 "metadata": {"name": "short", "namespace": "lab"},
                 "spec": {"type": "BestEffortSuspendable", "vms": 2, "duration": "1h",
                          "runtime": "3m"}})
        c.until(lambda: c.lease("lab", "short").get("status", {}).get("phase") == "Running")
        c.operator.send_signal(signal.SIGKILL)
        c.operator.wait(timeout=10)
        # the pods succeed after 3 emulated minutes, while nobody watches
        until(lambda: all(p["status"].get("phase") == "Succeeded"
                          for p in c.get("pods", "-n", "lab")["items"]), 15)
        c.start_operator("moml")
        rerun: list[str] = []

        def completed():
            """the lease Completed, its pods never running again meanwhile"""
            rerun.extend(p["metadata"]["name"] for p in c.get("pods", "-n", "lab")["items"]
                         if p["status"].get("phase") in ("Pending", "Running"))
            status = c.lease("lab", "short").get("status", {})
            return status.get("phase") == "Completed" and status
        status = c.until(completed)
        assert rerun == []
        assert 170 <= status["progress"]["ranSeconds"] < 900  # not the hour it planned
    finally:
        c.stop_all()
