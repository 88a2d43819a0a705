"""Every time a user reads about a Lease is an RFC 3339 time, and every duration is
written as users write them (issue 18, item 4): the testbed runs on the emulated
cluster under the operator, with a Lease preempted, one rejected by the core (its
deadline cannot be met, which names times), one that can never fit (which names its
duration) and one refused for its spec (a reservation starting before it was
submitted, before the emulated clock began); then every time in the statuses, their
conditions and the events is read, and every message."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold.api.clock import epoch
from operated import TESTBED, Operated, final_phases, operated

#: an emulated minute every 0.3 s: the testbed's two hours take about 40 s, and the
#: lab's leases run 12 s or more before any ends (lease-7 must find them running)
SCALE = 200.0
#: RFC 3339 (section 5.6): full date, "T", full time with optional fractions, offset
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


def parses(value: Any) -> bool:
    """Whether ``value`` is an RFC 3339 time that exists."""
    if not isinstance(value, str) or not RFC3339.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def in_seconds(message: str) -> list[str]:
    """What in ``message`` speaks the core's seconds: ``t=…`` times, numbers with
    fractions outside RFC 3339 times, and durations of a minute or more in bare
    seconds (``3600s``, ``3600 s``), where a user writes ``1h``."""
    text = RFC3339.sub("<time>", message)
    return [*re.findall(r"t=\S+", text), *re.findall(r"\d+\.\d+", text),
            *(m.group() for m in re.finditer(r"(?<![\w.])(\d+) ?s\b", text)
              if int(m.group(1)) >= 60)]


def times_in(message: str) -> list[str]:
    """The RFC 3339-looking times of a message (each must exist)."""
    return [m.group() for m in RFC3339.finditer(message)]


def the_testbeds(kind: str) -> Path:
    """The testbed's file of ``kind`` (``pool``, ``leases``), whatever the prefix that
    orders the directory for `kubectl apply -f`."""
    return next(TESTBED.glob(f"*{kind}.yaml"))


def lease(name: str, namespace: str = "lab", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"resources": {"cpu": 1, "memory": "128Mi"}, **spec}}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Operated]:
    c = operated(tmp_path, "moml", the_testbeds("pool"), SCALE)
    try:
        yield c
    finally:
        c.stop_all()


def test_statuses_conditions_and_events_speak_rfc3339_and_the_users_durations(cluster):
    c = cluster
    c.until(lambda: c.recoveries() == 1)
    docs = [d for d in yaml.safe_load_all(the_testbeds("leases").read_text()) if d]
    lab, owners = [d for d in docs if d["metadata"]["namespace"] == "lab"], \
        [d for d in docs if d["metadata"]["namespace"] == "owners"]
    # the lab's six leases fill the pool's 12 cores; the owners' local lease-7 then
    # preempts some of them (which, the policy decides)
    c.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(lab))
    c.until(lambda: {x.get("status", {}).get("phase") for x in c.get("lhl", "-n", "lab")
                     ["items"]} == {"Running"})
    extra = [
        # no slot ends by its deadline while the pool is full: the core's reason names
        # the earliest start and the deadline (times) and the duration
        lease("tight", type="DeadlineMigratable", vms=12, duration="30m", deadline="40m"),
        # more VMs than the pool holds: the core's reason names the duration
        lease("huge", type="BestEffortCancellable", vms=13, duration="1h"),
        # refused for its spec: a start before the Lease was submitted, and before the
        # emulated clock began (the core's seconds would be negative)
        lease("early", type="AdvanceReservation", vms=1, duration="1h",
              start="2000-01-01T00:00:00Z"),
    ]
    c.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([*owners, *extra]))
    phases = c.until(lambda: final_phases(c), timeout=180, step=0.5)
    assert phases["tight"] == phases["huge"] == phases["early"] == "Rejected", phases
    leases = c.get("lhl", "-A")["items"]
    assert any(x["status"].get("preemptions") for x in leases), "nothing was preempted"

    times: list[tuple[str, Any]] = []
    messages: list[tuple[str, str]] = []
    for x in leases:
        name, status = x["metadata"]["name"], x["status"]
        if name != "early":  # the core was given it: it has its place in the order
            assert isinstance(status["sequence"], int) and "submittedAt" in status, status
        times.extend((f"{name} status.{field}", status[field])
                     for field in ("submittedAt", "startedAt", "endedAt")
                     if status.get(field) is not None)
        times.extend((f"{name} status.reservation.{field}", status["reservation"][field])
                     for field in ("start", "end") if status.get("reservation"))
        messages.append((f"{name} status.message", status.get("message") or ""))
        for cond in status.get("conditions") or []:
            times.append((f"{name} condition {cond['type']}", cond["lastTransitionTime"]))
            messages.append((f"{name} condition {cond['type']}", cond.get("message") or ""))
    events = c.get("events", "-A")["items"]
    assert {"Preempted", "Rejected", "Completed", "Started"} <= {e["reason"] for e in events}
    for e in events:
        where = f"event {e['reason']} of {e['involvedObject'].get('name')}"
        for field in ("firstTimestamp", "lastTimestamp", "eventTime"):
            if e.get(field) is not None:
                times.append((f"{where} {field}", e[field]))
        messages.append((where, e.get("message") or ""))
    for where, text in messages:
        times.extend((f"{where}: in its message", t) for t in times_in(text))

    assert [(w, t) for w, t in times if not parses(t)] == []
    assert [(w, m, in_seconds(m)) for w, m in messages if in_seconds(m)] == []
    # what the rejected Leases were told, in their users' terms
    told = {x["metadata"]["name"]: x["status"]["message"] for x in leases}
    assert re.fullmatch(r"no slot for 12 VM\(s\) of 1 cpu and 128 MiB for 30m from \S+"
                        r" that ends by its deadline \S+", told["tight"]), told["tight"]
    assert told["huge"].startswith("can never fit: needs 13 VM(s) of 1 cpu and 128 MiB"
                                   " for 1h, but"), told["huge"]
    assert told["early"].startswith("spec.start: 2000-01-01T00:00:00Z is before"
                                    " submission "), told["early"]
    completed = [e["message"] for e in events if e["reason"] == "Completed"
                 and e["involvedObject"]["name"] == "lease-7"]
    assert completed == ["ran 1h of 1h"], completed
    # the times of a status order its run: submitted, first started, ended
    for x in leases:
        s = x["status"]
        if s.get("endedAt") and s.get("startedAt"):
            assert epoch(s["submittedAt"]) <= epoch(s["startedAt"]) <= epoch(s["endedAt"]), s
