"""No suspension on a cluster (issue 22 item 6, 004 NOVM-NOSR): the operator run with
``--suspension none``; a local Lease preempts an external best-effort one, which is
cancelled and re-queued: its pods go, its status and events say so with the work
lost, it is counted, and it runs again from the start with new pods — also when the
operator is killed and restarted in between (the journal replayed)."""

from __future__ import annotations

import re
import signal
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from leasehold.api.durations import parse_duration
from operated import Operated, one_node_pool, operated

NONE = ("--suspension", "none")
#: the victim's and the preemptor's specs: each fills the one node (2 cpus)
VICTIM = {"type": "BestEffortSuspendable", "vms": 2, "duration": "4m",
          "resources": {"cpu": 1, "memory": "256Mi"}}
PREEMPTOR = {"type": "DeadlineNonPreemptable", "vms": 2, "duration": "2m",
             "resources": {"cpu": 1, "memory": "256Mi"}}
LOST = re.compile(r"; (\S+) of work lost")


def _lease(name: str, namespace: str, spec: dict) -> dict:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def port() -> int:
    return _free_port()


@pytest.fixture
def no_suspension(tmp_path: Path, port: int) -> Iterator[Operated]:
    """One emulated node (an emulated minute per second), the operator up with
    ``--suspension none`` and metrics on ``port``."""
    c = operated(tmp_path / "cluster", "moml", one_node_pool(tmp_path), 60.0, port, *NONE)
    try:
        c.until(lambda: c.recoveries() == 1)
        yield c
    finally:
        c.stop_all()


def _live(c: Operated, namespace: str) -> dict[str, str]:
    """The pods of a namespace not being deleted: name -> uid."""
    return {p["metadata"]["name"]: p["metadata"]["uid"]
            for p in c.get("pods", "-n", namespace)["items"]
            if not p["metadata"].get("deletionTimestamp")}


def _phase(c: Operated, namespace: str, name: str) -> str | None:
    return c.lease(namespace, name).get("status", {}).get("phase")


def _events(c: Operated, namespace: str, name: str) -> dict[str, str]:
    """The latest message of each reason of the events about a Lease."""
    items = sorted((e for e in c.get("events", "-n", namespace)["items"]
                    if e["involvedObject"]["name"] == name),
                   key=lambda e: int(e["metadata"]["resourceVersion"]))
    return {e["reason"]: e["message"] for e in items}


def _requeued(c: Operated) -> dict:
    """The victim's status once it has given way: its pods gone, the preemptor's
    there, and it waiting to start again."""
    def given_way() -> dict | bool:
        status = c.lease("lab", "a").get("status", {})
        return _live(c, "lab") == {} and sorted(_live(c, "owners")) == ["b-vm-0", "b-vm-1"] \
            and status.get("phase") in ("Queued", "Scheduled") and status
    status: dict = c.until(given_way, 20)
    return status


def _lost_seconds(message: str) -> float:
    found = LOST.search(message)
    assert found, message
    return parse_duration(found.group(1))


def _preempt(c: Operated, preemptor: str = "2m") -> dict[str, str]:
    """a runs, then b (of that duration) preempts it: a's first pods (name -> uid)."""
    c.apply(_lease("a", "lab", VICTIM))
    c.until(lambda: _phase(c, "lab", "a") == "Running"
            and sorted(_live(c, "lab")) == ["a-vm-0", "a-vm-1"])
    first = _live(c, "lab")
    c.apply(_lease("b", "owners", {**PREEMPTOR, "duration": preemptor}))
    return first


def _runs_again(c: Operated, first: dict[str, str]) -> dict:
    """b completes, then a runs again from the start with new pods, to completion."""
    c.until(lambda: _phase(c, "owners", "b") == "Completed", 30, 0.5)
    again = c.until(lambda: (pods := _live(c, "lab")) and sorted(pods) == ["a-vm-0", "a-vm-1"]
                    and pods, 20)
    assert not set(again.values()) & set(first.values()), "the old pods were kept"
    status: dict = c.until(lambda: (s := c.lease("lab", "a").get("status", {})).get("phase")
                           == "Completed" and s, 30, 0.5)
    return status


def test_a_requeued_lease_loses_its_pods_says_so_and_runs_again_with_new_pods(
        no_suspension: Operated, port: int):
    c = no_suspension
    first = _preempt(c)
    status = _requeued(c)
    requeued = next(x for x in status["conditions"] if x["type"] == "Requeued")
    assert requeued["status"] == "True", requeued
    assert requeued["message"].startswith("gave way to a Lease of another namespace"), requeued
    lost = _lost_seconds(requeued["message"])
    assert 0 < lost < parse_duration("4m"), requeued
    # it starts again from the start: all its duration remains
    assert status["progress"]["remainingSeconds"] == parse_duration("4m"), status
    events = _events(c, "lab", "a")
    assert events["Requeued"].startswith("gave way to a Lease of another namespace"), events
    assert _lost_seconds(events["Requeued"]) > 0
    assert "re-queued" in _events(c, "owners", "b")["PreemptedOthers"]
    # counted as a preemption whose action is a requeue, and the work lost
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    samples = {line.split(" ")[0]: float(line.split(" ")[1])
               for line in text.splitlines() if line and not line.startswith("#")}
    assert samples['leasehold_preemptions_total{action="requeue",policy="moml",'
                   'type="BestEffortSuspendable"}'] == 1, text
    assert samples["leasehold_requeue_lost_work_seconds_total"] == pytest.approx(lost, abs=1)
    done = _runs_again(c, first)
    # it ran its whole duration after the requeue, and the lost work before: the
    # event says both, and the status counts every run (nothing that did not happen)
    said = _events(c, "lab", "a")["Completed"]
    found = re.fullmatch(r"ran (\S+) of 4m; (\S+) of work lost to 1 requeue", said)
    assert found, said
    assert parse_duration(found.group(1)) == pytest.approx(parse_duration("4m") + lost, abs=1)
    assert parse_duration(found.group(2)) == pytest.approx(lost)
    assert done["progress"]["ranSeconds"] == pytest.approx(parse_duration("4m") + lost, abs=1)
    assert any(x["type"] == "Requeued" for x in done["conditions"])


def test_a_requeued_lease_stays_queued_without_its_pods_across_a_restart(
        no_suspension: Operated):
    c = no_suspension
    first = _preempt(c, "15m")  # b runs on through the restart (15 s)
    _requeued(c)
    c.operator.send_signal(signal.SIGKILL)
    c.operator.wait(timeout=10)
    c.start_operator("moml", 0, *NONE)
    c.until(lambda: c.recoveries() == 2)
    # the journal replayed: a still waits, its old pods are not made again
    status = c.lease("lab", "a")["status"]
    assert status["phase"] in ("Queued", "Scheduled"), status
    assert _phase(c, "owners", "b") == "Running"
    assert _live(c, "lab") == {}
    assert any(x["type"] == "Requeued" for x in status["conditions"]), status
    _runs_again(c, first)
