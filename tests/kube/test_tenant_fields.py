"""Nothing a tenant writes steers the scheduler (issue 17, item 2). A tenant may write
its Leases' labels, annotations and status (any role granting ``leases/status``) and
may try the spec: each is forged here on a running Lease and on one waiting for it,
the operator is killed and restarted, and the schedule is the one it made before —
the same phases, order, start times and reservations, the same pods (not recreated) —
while the forged status is written over with what did happen."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from emulated import until
from leasehold.api.clock import epoch
from operated import Operated, one_node

LABEL_PREFIX = "leasehold.io/"
#: what the core decided, as a status shows it (progress grows with time; stamps of
#: conditions say when a status was written)
DECIDED = ("phase", "origin", "preemptions", "submittedAt", "sequence", "startedAt",
           "endedAt", "reservation", "message")

FORGED_STATUS = {
    "phase": "Completed", "origin": "local", "preemptions": 99, "overheadSeconds": 1e9,
    "submittedAt": "2057-01-01T00:00:00.000000Z", "sequence": 0,
    "startedAt": "2020-01-01T00:00:00.000000Z", "endedAt": "2020-01-01T01:00:00.000000Z",
    "finishedAt": 1.0,
    "observedGeneration": 7, "message": "forged",
    "progress": {"ranSeconds": 3600, "remainingSeconds": 0},
    "reservation": {"pool": "elsewhere", "start": "2020-01-01T00:00:00Z",
                    "end": "2020-01-01T01:00:00Z", "nodes": ["nowhere"]},
    "conditions": [{"type": "Finished", "status": "True", "reason": "Completed",
                    "message": "forged", "lastTransitionTime": "2020-01-01T00:00:00Z"}],
}

EDITS = [
    pytest.param({"metadata": {"labels": {
        f"{LABEL_PREFIX}origin": "local", f"{LABEL_PREFIX}lease": "other",
        f"{LABEL_PREFIX}vm": "0", f"{LABEL_PREFIX}pool": "elsewhere"}}}, None, id="labels"),
    pytest.param({"metadata": {"annotations": {
        f"{LABEL_PREFIX}runtime-seconds": "1", f"{LABEL_PREFIX}resume-seconds": "99999",
        f"{LABEL_PREFIX}lease-name": "other", f"{LABEL_PREFIX}origin": "local"}}}, None,
        id="annotations"),
    pytest.param({"status": FORGED_STATUS}, "status", id="status"),
    # a status of the wrong types the API server refuses (tests/api/test_crds.py)
]


def lease(name: str, duration: str) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": "BestEffortSuspendable", "vms": 2, "duration": duration,
                     "resources": {"cpu": 1, "memory": "256Mi"}}}


def decided(c: Operated, name: str) -> dict[str, Any]:
    status = c.lease("lab", name).get("status") or {}
    return {k: status.get(k) for k in DECIDED}


def pods(c: Operated) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in c.get("pods", "-n", "lab")
            ["items"] if not p["metadata"].get("deletionTimestamp")}


def patch(c: Operated, name: str, body: dict[str, Any], subresource: str | None) -> None:
    c.kubectl("patch", "lhl", "-n", "lab", name, "--type=merge", "-p", json.dumps(body),
              *([f"--subresource={subresource}"] if subresource else []))


@pytest.mark.parametrize(("edit", "subresource"), EDITS)
def test_a_tenants_edit_moves_stops_and_reorders_nothing_after_a_restart(
        tmp_path: Path, edit: dict[str, Any], subresource: str | None):
    c = one_node(tmp_path)
    try:
        # the node's two cpus: "first" holds them for an hour, "second" waits for it
        c.apply(lease("first", "1h"))
        c.until(lambda: c.lease("lab", "first").get("status", {}).get("phase") == "Running")
        c.apply(lease("second", "10m"))
        c.until(lambda: (c.lease("lab", "second").get("status") or {}).get("reservation"))
        before = {n: decided(c, n) for n in ("first", "second")}
        pods_before = pods(c)
        assert sorted(pods_before) == ["first-vm-0", "first-vm-1"]
        for name in before:
            patch(c, name, edit, subresource)
        c.operator.send_signal(signal.SIGKILL)
        c.operator.wait(timeout=10)
        c.start_operator("moml")
        c.until(lambda: c.recoveries() == 2)
        # the statuses say again what was decided: nothing forged survives, nothing moved
        until(lambda: all(decided(c, n) == before[n] for n in before), 30, 0.1,
              lambda: {n: decided(c, n) for n in before})
        assert pods(c) == pods_before  # the same pods, never deleted and made again
        log = (c.data / "operator.log").read_text()
        assert "Traceback" not in log, log[-3000:]
    finally:
        c.stop_all()


def test_a_lease_s_spec_cannot_be_edited_once_created(tmp_path: Path):
    """The spec the operator admitted is the one it schedules: the server refuses an
    edit (the CRD's transition rule), so no restart can read another one."""
    c = one_node(tmp_path)
    try:
        c.apply(lease("first", "1h"))
        c.until(lambda: c.lease("lab", "first").get("status", {}).get("phase") == "Running")
        r = c.kubectl("patch", "lhl", "-n", "lab", "first", "--type=merge", "-p",
                      json.dumps({"spec": {"vms": 1, "duration": "1s"}}), check=False)
        assert r.returncode != 0 and "spec is immutable once the Lease is created" in r.stderr
        assert c.lease("lab", "first")["spec"]["duration"] == "1h"
    finally:
        c.stop_all()


def test_a_status_forged_while_the_operator_runs_is_written_over(tmp_path: Path):
    """Level-triggered: the status says what happened, whenever someone else wrote it."""
    c = one_node(tmp_path)
    try:
        c.apply(lease("first", "1h"))
        c.until(lambda: c.lease("lab", "first").get("status", {}).get("phase") == "Running")
        before = decided(c, "first")
        patch(c, "first", {"status": FORGED_STATUS}, "status")
        until(lambda: decided(c, "first") == before, 30, 0.1,
              lambda: decided(c, "first"))
    finally:
        c.stop_all()


@pytest.mark.parametrize("forged", [
    pytest.param({"phase": "Completed"}, id="phase"),
    pytest.param({"submittedAt": "2057-01-01T00:00:00.000000Z"}, id="submittedAt"),
])
def test_a_lease_given_a_status_before_the_operator_saw_it_is_scheduled(
        tmp_path: Path, forged: dict[str, Any]):
    """A tenant who writes a status on a new Lease before the operator sees it (here,
    while no operator runs) does not hide it: a Lease is new by its uid, not by an
    empty status."""
    c = one_node(tmp_path)
    try:
        c.operator.send_signal(signal.SIGKILL)
        c.operator.wait(timeout=10)
        c.apply(lease("first", "1h"))
        patch(c, "first", {"status": forged}, "status")
        c.start_operator("moml")
        c.until(lambda: c.lease("lab", "first").get("status", {}).get("phase") == "Running")
        assert epoch(decided(c, "first")["submittedAt"]) < epoch("2057-01-01T00:00:00Z")
    finally:
        c.stop_all()


def test_a_lease_given_a_status_at_once_while_the_operator_runs_is_scheduled(
        tmp_path: Path):
    c = one_node(tmp_path)
    try:
        body = lease("first", "1h")
        body["status"] = {"phase": "Completed"}
        # created and its status written in one breath, as a script would
        c.apply(body)
        patch(c, "first", {"status": {"phase": "Completed"}}, "status")
        c.until(lambda: c.lease("lab", "first").get("status", {}).get("phase") == "Running")
    finally:
        c.stop_all()


def test_a_rejected_leases_forged_status_is_written_over(tmp_path: Path):
    """A Lease the core never holds (rejected for its spec): its status, kept as it
    was written, is written again when someone else overwrites it."""
    c = one_node(tmp_path)
    try:
        bad = lease("bad", "1h")
        bad["spec"]["duration"] = "99999999999d"
        c.apply(bad)
        c.until(lambda: c.lease("lab", "bad").get("status", {}).get("phase") == "Rejected")
        before = c.lease("lab", "bad")["status"]
        patch(c, "bad", {"status": {"phase": "Running", "message": "forged"}}, "status")
        until(lambda: c.lease("lab", "bad")["status"] == before, 30, 0.1,
              lambda: c.lease("lab", "bad")["status"])
    finally:
        c.stop_all()
