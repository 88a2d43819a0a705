"""What the emulated cluster's tests check, checked on a real cluster (kind): the
same CRD, printer columns and schema errors through kubectl, and the emulated nodes
(`leasehold emulator nodes`) playing pods on a real API server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

from emulated import CRD, widget

ROOT = Path(__file__).resolve().parents[2]


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin,
                       capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_crd_columns_and_schema_errors_match_a_real_server(kind_kubeconfig):
    kubectl(kind_kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(CRD))
    kubectl(kind_kubeconfig, "wait", "--for=condition=Established",
            "crd/widgets.example.io", "--timeout=60s")
    kubectl(kind_kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(widget("k1", 3)))
    lines = kubectl(kind_kubeconfig, "get", "wd").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "PHASE", "AGE"]
    bad = kubectl(kind_kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(widget("k2", 0)),
                  check=False)
    assert "spec.size: Invalid value: 0: spec.size in body should be greater than or equal" \
           " to 1" in bad.stderr


def test_emulated_nodes_play_pods_on_a_real_cluster(kind_kubeconfig):
    crd = ROOT / "crds" / "nodepools.leasehold.io.yaml"
    kubectl(kind_kubeconfig, "apply", "-f", str(crd))
    kubectl(kind_kubeconfig, "wait", "--for=condition=Established",
            "crd/nodepools.leasehold.io", "--timeout=60s")
    kubectl(kind_kubeconfig, "apply", "-f", str(ROOT / "examples" / "emulator" / "pools.yaml"))
    nodes = subprocess.Popen([sys.executable, "-m", "leasehold.cli", "emulator", "nodes",
                              "--kubeconfig", str(kind_kubeconfig), "--time-scale", "60"])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = kubectl(kind_kubeconfig, "get", "nodes", "-l", "leasehold.io/emulated",
                            "-o", "name").stdout.split()
            if len(names) == 6:
                break
            time.sleep(1)
        assert len(names) == 6
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "vm", "annotations": {
                   "leasehold.io/runtime-seconds": "60"}},
               "spec": {"nodeName": "rp-0", "containers": [{"name": "vm", "image": "x"}],
                        "tolerations": [{"operator": "Exists"}]}}
        kubectl(kind_kubeconfig, "apply", "-f", "-", stdin=json.dumps(pod))
        deadline = time.monotonic() + 60
        phase = ""
        while time.monotonic() < deadline and phase != "Succeeded":
            phase = kubectl(kind_kubeconfig, "get", "pod", "vm", "-o",
                            "jsonpath={.status.phase}").stdout
            time.sleep(1)
        assert phase == "Succeeded"
    finally:
        nodes.terminate()
        nodes.wait(timeout=30)
