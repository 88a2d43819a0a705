"""The Lease CRD's typed status holds every field the operator writes (issue 18).

The emulated API server, as kube-apiserver, prunes a field the status schema does
not declare and refuses a null where it is not ``nullable``. A field left out of the
schema would be lost on a real cluster: the operator would take its own status, shown
back without it, for another writer's and write it again and again (it logs each
time), and a refused status is not written at all (logged too). So the operator runs
the testbed, with a Lease that completes, one rejected and one waiting for its pool
(statuses written before the core holds a Lease), and every status it wrote must come
back unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leasehold.api.statuses import LeaseResourceStatus
from operated import TESTBED, Operated, apply_testbed, operated

SCALE = 120.0
#: the testbed's NodePool (pool.yaml; 2-pool.yaml where its files are numbered in the
#: order kubectl applies them)
POOL = next(TESTBED.glob("*pool.yaml"))


def lease(name: str, namespace: str = "lab", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Operated]:
    c = operated(tmp_path, "moml", POOL, SCALE)
    try:
        c.until(lambda: c.recoveries() == 1)  # the operator is up
        yield c
    finally:
        c.stop_all()


def phase(c: Operated, namespace: str, name: str) -> str | None:
    return c.lease(namespace, name).get("status", {}).get("phase")


def test_every_status_the_operator_writes_comes_back_unchanged(cluster):
    c = cluster
    thread, _ = apply_testbed(c, SCALE)
    c.apply(lease("short", type="BestEffortCancellable", vms=1, duration="60s",
                  resources={"cpu": 1, "memory": "128Mi"}),
            lease("too-late", type="DeadlineMigratable", vms=1, duration="1h", deadline="30m"),
            lease("elsewhere", type="BestEffortSuspendable", vms=1, duration="1h",
                  pool="later"))
    thread.join()
    # the testbed's lease-7 preempts others (conditions, preemptions, reservations)
    c.until(lambda: phase(c, "owners", "lease-7") == "Running"
            and phase(c, "lab", "short") == "Completed"
            and phase(c, "lab", "too-late") == "Rejected"
            and phase(c, "lab", "elsewhere") == "Pending", timeout=60)
    log = (c.data / "operator.log").read_text()
    assert "written by someone else" not in log, log[-3000:]
    assert "could not write the status" not in log, log[-3000:]
    statuses = {x["metadata"]["name"]: x["status"] for x in c.get("lhl", "-A")["items"]}
    for status in statuses.values():
        LeaseResourceStatus.model_validate(status)  # what the schema says of each field
    # a Lease the core holds has every field; nulls are kept where they are allowed
    every = {f.alias or n for n, f in LeaseResourceStatus.model_fields.items()}
    assert set(statuses["short"]) == every
    assert statuses["short"]["reservation"] is None
    assert statuses["lease-7"]["reservation"]["nodes"]
    assert any(s.get("preemptions") for s in statuses.values())
    assert {x["type"] for x in statuses["short"]["conditions"]} == {"Admitted", "Finished"}
    assert statuses["elsewhere"]["conditions"][0]["reason"] == "PoolMissing"
    assert statuses["too-late"]["conditions"][0]["reason"] == "InvalidSpec"
