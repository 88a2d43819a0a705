"""An emulated cluster with `leasehold operator` running against it, for the
operator's end-to-end tests."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from emulated import KUBECTL, Emulated, until
from leasehold.api.clock import Clock, epoch
from leasehold.api.durations import parse_duration

ROOT = Path(__file__).resolve().parents[1]
TESTBED = ROOT / "examples" / "testbed"
#: the testbed's local namespace, which its admins name in the operator's configuration
LOCAL = ("owners",)


class Operated(Emulated):
    """An emulated cluster with the operator running against it."""

    def start_operator(self, policy: str, metrics_port: int = 0, *extra: str,
                       log: str = "operator.log",
                       program: Sequence[str] = ("-m", "leasehold.cli"),
                       env: Mapping[str, str] | None = None,
                       local: Sequence[str] = LOCAL) -> subprocess.Popen:
        """Another operator process (``self.operator`` is the latest), its output
        appended to ``log`` in the data directory. ``program`` runs ``leasehold``'s
        command line (tests/kube/gated_operator.py looks into it), with ``env``;
        ``local``: the namespaces the admins make local (the testbed's)."""
        with (self.data / log).open("a") as out:
            self.operator = subprocess.Popen(
                [sys.executable, *program, "operator", "--kubeconfig",
                 str(self.kubeconfig), "--policy", policy, "--metrics-port",
                 str(metrics_port), *(a for ns in local for a in ("--local-namespace", ns)),
                 *extra], stdout=out, stderr=subprocess.STDOUT,
                env=None if env is None else dict(env))
        self.operators = [*getattr(self, "operators", []), self.operator]
        return self.operator

    def stop_all(self) -> None:
        for op in getattr(self, "operators", []):
            if op.poll() is None:
                op.terminate()
                op.wait(timeout=20)
        self.stop()

    def recoveries(self, log: str = "operator.log") -> int:
        """How many times an operator has started and rebuilt its state."""
        return (self.data / log).read_text().count("] recovered ")

    def lease(self, namespace: str, name: str) -> dict:
        return self.get("lhl", "-n", namespace, name)

    def until(self, check, timeout: float = 30.0, step: float = 0.1):
        """``check()``'s first truthy value, polled every ``step`` s (each poll is a
        kubectl process and an API request: a wait for a whole run's end, tens of
        seconds, polls at 0.5 s so as not to take the CPU from what it waits for)."""
        return until(check, timeout, step,
                     lambda: (self.data / "operator.log").read_text()[-3000:])


def operated(tmp_path: Path, policy: str, pools: Path, scale: float = 60.0,
             metrics_port: int = 0, *extra: str,
             program: Sequence[str] = ("-m", "leasehold.cli"),
             env: Mapping[str, str] | None = None) -> Operated:
    """The cluster (at ``scale`` emulated seconds per second, an emulated minute per
    second by default), the testbed's namespaces, and the operator (``program`` and
    ``env`` as :meth:`Operated.start_operator` takes them)."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    c = Operated(tmp_path)
    c.start(0, "--time-scale", str(scale), "--pools", str(pools))
    c.kubectl("apply", "-f", str(TESTBED / "1-namespaces.yaml"))
    c.start_operator(policy, metrics_port, *extra, program=program, env=env)
    return c


def one_node_pool(tmp_path: Path) -> Path:
    """A NodePool file: one emulated node of 2 cpus and 2 GiB."""
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump({
        "apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "p"},
        "spec": {"emulated": {"nodes": 1, "cpu": 2, "memory": "2Gi"}}}))
    return pools


def one_node(tmp_path: Path, policy: str = "moml") -> Operated:
    """The cluster of :func:`one_node_pool` (an emulated minute per second), with the
    operator up and its first recovery done: ready for Leases."""
    c = operated(tmp_path / "cluster", policy, one_node_pool(tmp_path))
    try:
        c.until(lambda: c.recoveries() == 1)
    except BaseException:
        c.stop_all()
        raise
    return c


def simulated_phases(policy: str = "moml") -> dict[str, str]:
    """How `leasehold simulate` ends the testbed's leases, by Lease name."""
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate",
                        str(ROOT / "examples/scenarios/testbed.yaml"), "--policy", policy,
                        "-o", "json"], capture_output=True, text=True, check=True)
    return {f"lease-{x['name']}": x["phase"] for x in json.loads(r.stdout)["leases"]}


def simulated_as_run(c: Operated, policy: str = "moml") -> tuple[dict[str, str],
                                                                 dict[str, int]]:
    """How `leasehold simulate` ends the testbed's leases when each arrives when the
    operator was told of it (its journaled ``submittedAt``, in its order), not when
    the testbed meant it to: by Lease name, the phases and the preemptions (those
    preempted). A Lease created while no replica was active is submitted when one
    takes over; this compares the operator with the core on what really happened,
    however long that took."""
    scenario = yaml.safe_load((ROOT / "examples/scenarios/testbed.yaml").read_text())
    clock = Clock.from_configmap(c.get("cm", "-n", "kube-system", "leasehold-clock")["data"])
    # the core's times of the statuses' RFC 3339 submittedAt (to the microsecond)
    told = {x["metadata"]["name"]: (clock.core(epoch(x["status"]["submittedAt"])),
                                    x["status"]["sequence"])
            for x in c.get("lhl", "-A")["items"]}
    leases = sorted(scenario["leases"], key=lambda x: told[f"lease-{x['name']}"])
    zero = told[f"lease-{leases[0]['name']}"][0]
    for x in leases:
        x["arrival"] = told[f"lease-{x['name']}"][0] - zero
    scenario["leases"] = leases
    path = c.data / "as-run.yaml"
    path.write_text(yaml.safe_dump(scenario))
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate", str(path),
                        "--policy", policy, "-o", "json"], capture_output=True, text=True,
                       check=True)
    out = json.loads(r.stdout)["leases"]
    return ({f"lease-{x['name']}": x["phase"] for x in out},
            {f"lease-{x['name']}": x["preemptions"] for x in out if x["preemptions"]})


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


class Sampler(threading.Thread):
    """Looks for over-committed nodes every 0.2 s until stopped."""

    def __init__(self, c: Operated) -> None:
        super().__init__(daemon=True)
        self.c = c
        self.problems: list[str] = []
        self.samples = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                self.problems.extend(overcommitted(self.c))
                self.samples += 1
            except (AssertionError, json.JSONDecodeError, KeyError):
                pass  # a listing that raced a deletion
            time.sleep(0.2)


def apply_testbed(c: Operated, scale: float) -> tuple[threading.Thread, float]:
    """A thread applying the testbed's leases at their arrival times (scaled), and
    its start on the monotonic clock."""
    docs = [d for d in yaml.safe_load_all((TESTBED / "3-leases.yaml").read_text()) if d]
    start = time.monotonic()

    def arrive() -> None:
        for doc in docs:
            at = parse_duration(doc["metadata"]["annotations"]["leasehold.io/arrival"])
            time.sleep(max(start + at / scale - time.monotonic(), 0))
            c.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(doc))
    thread = threading.Thread(target=arrive)
    thread.start()
    return thread, start


def final_phases(c: Operated, failed: bool = False) -> dict[str, str] | bool:
    """Every Lease's phase once all are final (``Failed`` counting as final if
    ``failed``), else False."""
    phases = {x["metadata"]["name"]: x.get("status", {}).get("phase")
              for x in c.get("lhl", "-A")["items"]}
    final = ("Completed", "Rejected", "Cancelled", *(("Failed",) if failed else ()))
    return all(p in final for p in phases.values()) and phases


def preemptions(c: Operated) -> dict[str, int]:
    """The Leases preempted, with how many times."""
    counts = {x["metadata"]["name"]: x["status"].get("preemptions", 0)
              for x in c.get("lhl", "-A")["items"]}
    return {name: n for name, n in counts.items() if n}


def lease_events(c: Operated, name: str, namespace: str = "lab") -> dict[str, str]:
    """A Lease's events: reason -> message (the last of each)."""
    return {e["reason"]: e["message"] for e in c.get("events", "-n", namespace)["items"]
            if e["involvedObject"]["name"] == name}


def free_port() -> int:
    """A TCP port on loopback nobody listens on now (for an operator's metrics)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[str, float]:
    """The samples an operator's ``/metrics`` on ``port`` exposes, by series."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {line.split(" ")[0]: float(line.split(" ")[1])
            for line in text.splitlines() if line and not line.startswith("#")}
