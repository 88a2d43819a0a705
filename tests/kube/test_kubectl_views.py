"""What a kubectl user sees of a Lease on the emulated cluster, the operator
running: its story in ``kubectl get events``, and a clear answer where a real
cluster would stream from its VM pods' containers (``logs``, ``exec``, ``attach``,
``port-forward``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from operated import Operated, one_node

POD = "a-vm-0"


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operated]:
    """A Lease ``lab/a`` the operator has started, with its VM pod running."""
    c = one_node(Path(tmp_path_factory.mktemp("views")))
    try:
        c.apply({"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
                 "metadata": {"name": "a", "namespace": "lab"},
                 "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                          "resources": {"cpu": 1, "memory": "256Mi"}}})
        c.until(lambda: c.lease("lab", "a").get("status", {}).get("phase") == "Running")
        c.until(lambda: c.get("pod", "-n", "lab", POD).get("status", {}).get("phase")
                == "Running")
        yield c
    finally:
        c.stop_all()


def _table(text: str) -> list[list[str]]:
    """kubectl's table, each line's cells (columns are two or more spaces apart)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]


def test_get_events_shows_the_operators_reasons_and_messages(running):
    started = running.until(lambda: next(
        (e for e in running.get("events", "-n", "lab")["items"]
         if e["reason"] == "Started" and e["involvedObject"]["name"] == "a"), None))
    shown = _table(running.kubectl("get", "events", "-n", "lab").stdout)
    assert shown[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert ["Normal", "Started", "lease/a", started["message"]] in [row[1:] for row in shown]


@pytest.mark.parametrize("command", [
    ["logs", POD], ["logs", f"pod/{POD}", "-c", "vm"], ["exec", POD, "--", "true"],
    ["attach", POD], ["port-forward", f"pod/{POD}", "0:80"],
], ids=["logs", "logs-container", "exec", "attach", "port-forward"])
def test_streams_from_a_vm_pod_answer_that_pods_here_run_no_containers(running, command):
    r = running.kubectl("-n", "lab", *command, check=False, timeout=30)
    assert r.returncode != 0
    assert f'pod "{POD}" runs no containers' in r.stderr, r.stderr
    assert "kubectl describe leases.leasehold.io a -n lab" in r.stderr, r.stderr
    assert "could not find the requested resource" not in r.stderr
