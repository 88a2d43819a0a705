"""`leasehold up`: the emulated cluster, the operator and the metrics in one command."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest
import yaml

from emulated import KUBECTL, until
from leasehold.commands import DISPATCH


def test_up_runs_a_lease_and_stops_everything(tmp_path):
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        metrics = s.getsockname()[1]
    up = subprocess.Popen([sys.executable, "-m", "leasehold.cli", "up", "--port", "0",
                           "--data", str(tmp_path), "--time-scale", "60", "--metrics-port",
                           str(metrics), "--dispatch", DISPATCH[-1]],
                          stdout=subprocess.PIPE, text=True)
    kubeconfig = tmp_path / "kubeconfig"

    def kubectl(*args: str, stdin: str | None = None) -> str:
        return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], input=stdin,
                              capture_output=True, text=True, timeout=30).stdout
    try:
        assert up.stdout
        banner = "".join(until(lambda: up.stdout.readline(), 30) for _ in range(3))
        assert f"kubeconfig: {kubeconfig}" in banner
        until(lambda: len(json.loads(kubectl("get", "nodes", "-o", "json") or "{}")
                          .get("items", [])) == 4, 30)
        lease = {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
                 "metadata": {"name": "hello", "namespace": "default"},
                 "spec": {"type": "BestEffortSuspendable", "vms": 2, "duration": "1h"}}
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(lease))
        until(lambda: "Running" in kubectl("get", "lhl", "hello"), 30)
        # the testbed's local namespace is local by the operator's configuration
        # (`up` names it), not by a label on it
        kubectl("create", "namespace", "owners")
        owned = {**lease, "metadata": {"name": "owned", "namespace": "owners"},
                 "spec": {"type": "DeadlineNonPreemptable", "vms": 1, "duration": "1h"}}
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(owned))
        until(lambda: "local" in kubectl("get", "lhl", "-n", "owners", "owned",
                                         "-o", "jsonpath={.status.origin}"), 30)

        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as r:
                return r.read().decode()
        # the gauges are read at most once a second: within a few, they show it
        until(lambda: 'leasehold_leases{namespace="default",phase="Running"} 1.0' in scrape(),
              30)
        # the dispatch strategy reached the operator's core: its pool's series, from 0;
        # hello (external, naming no pool) is dispatched unless by today's rule, owned
        # (local) never
        sent = 0 if DISPATCH[-1] == "earliest" else 1
        assert re.search(rf'leasehold_dispatched_leases_total{{policy="'
                         rf'{re.escape(DISPATCH[-1])}",pool="default"}} {sent}\.0\n',
                         scrape()), scrape()
    finally:
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=30) == 0
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert left.stdout == "", left.stdout
