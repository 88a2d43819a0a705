"""An emulated cluster with `leasehold operator` running against it, for the
operator's end-to-end tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from emulated import KUBECTL, Emulated, until

ROOT = Path(__file__).resolve().parents[1]
TESTBED = ROOT / "examples" / "testbed"


class Operated(Emulated):
    """An emulated cluster with the operator running against it."""

    def start_operator(self, policy: str, metrics_port: int = 0) -> None:
        self.log = (self.data / "operator.log").open("a")
        self.operator = subprocess.Popen(
            [sys.executable, "-m", "leasehold.cli", "operator", "--kubeconfig",
             str(self.kubeconfig), "--policy", policy, "--metrics-port", str(metrics_port)],
            stdout=self.log, stderr=subprocess.STDOUT)

    def stop_all(self) -> None:
        op = getattr(self, "operator", None)
        if op is not None and op.poll() is None:
            op.terminate()
            op.wait(timeout=20)
        self.stop()

    def recoveries(self) -> int:
        """How many times an operator has started and rebuilt its state."""
        return (self.data / "operator.log").read_text().count("] recovered ")

    def lease(self, namespace: str, name: str) -> dict:
        return self.get("lhl", "-n", namespace, name)

    def until(self, check, timeout: float = 30.0):
        return until(check, timeout, 0.1,
                     lambda: (self.data / "operator.log").read_text()[-3000:])


def operated(tmp_path: Path, policy: str, pools: Path, scale: float = 60.0,
             metrics_port: int = 0) -> Operated:
    """The cluster (at ``scale`` emulated seconds per second, an emulated minute per
    second by default), the testbed's namespaces, and the operator."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    c = Operated(tmp_path)
    c.start(0, "--time-scale", str(scale), "--pools", str(pools))
    c.kubectl("apply", "-f", str(TESTBED / "namespaces.yaml"))
    c.start_operator(policy, metrics_port)
    return c
