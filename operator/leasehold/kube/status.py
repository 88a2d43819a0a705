"""A Lease's status, from the core's view of it (DESIGN §5); and the statuses the
operator gave to be written, to tell its own writes, shown back by the API server,
from another writer's (a tenant's role may grant ``leases/status``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from leasehold.api.clock import Clock
from leasehold.api.durations import format_duration
from leasehold.core.model import Deploy, Dispatch, Origin, Phase
from leasehold.core.reason import Reason
from leasehold.core.view import LeaseView


@dataclass(slots=True)
class Tracked:
    """A Lease the core knows: where it lives and what the core was told."""

    namespace: str
    name: str
    uid: str
    runtime: float | None  # the spec's run time (emulated), for the pods' annotation
    template: dict[str, Any] | None
    origin: Origin
    #: the user gave it a deadline (or a reservation's start): missing it is a miss
    deadline_given: bool = False
    #: the ``metadata.generation`` of the spec the core was given
    generation: int = 1
    #: when (the core's time) the pods of its latest start were all made: a start
    #: after it never happened in the cluster (recovery holds it back)
    made: float | None = None
    #: its object is gone: once the core forgets it, nothing of it is kept (no
    #: Lease can be submitted again under its uid)
    deleted: bool = False
    #: where the core's dispatch strategy sent it, and why (the latest, if the
    #: core sent it more than once): an external lease that named no pool
    dispatch: Dispatch | None = None
    #: the latest transfer of its image the core planned (a NodePool with images)
    deploy: Deploy | None = None
    #: why its pull pods were refused, if they were
    pull_refused: str | None = None


#: what a tenant is told of a Lease in another namespace, unless the admins allow more
OTHER_TENANT = "a Lease of another namespace"


def redacted(text: str, namespace: str, disclose: bool, who: str | None) -> str:
    """``text`` (about a Lease of ``namespace``) with the core's name ``who`` of
    another namespace's Lease (``namespace/name``, or ``namespace/name~2``) replaced,
    unless ``disclose``."""
    if disclose or not who or who.split("/", 1)[0] == namespace:
        return text
    # the name whole, not inside a longer one (lab/a in lab/ab, lab/a~2)
    return re.sub(rf"(?<![\w./~-]){re.escape(who)}(?![\w/~-]|\.\w)", OTHER_TENANT, text)


def in_user_terms(reason: str | None, clock: Clock) -> str | None:
    """A reason of the core's as a user reads it: its times RFC 3339 wall-clock
    times, its durations such as ``1h30m`` (the core counts in its own seconds)."""
    if isinstance(reason, Reason):
        return reason.render(clock.stamp, format_duration)
    return reason


#: a word of a message: what may be a node's name
_WORD = re.compile(r"[^\s,;:()]+")


def renamed(text: str, nodes: dict[str, str]) -> str:
    """A message of the core's with its nodes named as the cluster names them
    (``nodes``: the core's name -> the cluster's, for pools of real nodes; a lost
    node of a spot pool is ``ip-10-0-3-7``, not ``spot-2``)."""
    if not nodes:
        return text
    return _WORD.sub(lambda m: nodes.get(m.group(0), m.group(0)), text)


def condition(kind: str, status: str, reason: str, message: str, stamp: str
              ) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": stamp}


def status_of(st: LeaseView, t: Tracked, clock: Clock, now: float,
              nodes: dict[str, str] | None = None, disclose: bool = False,
              booted_at: float | None = None) -> dict[str, Any]:
    """A Lease's status from the core's state at ``now`` (the core's time); ``nodes``
    renames the core's nodes to the cluster's. Its preemptor is named only if in its
    own namespace, or ``disclose`` (the admins allow it). ``booted_at``: on a pool
    with a VM model, when the VMs it holds have booted and its run begins (None: no
    VMs to boot)."""
    nodes = nodes or {}
    stamp = clock.stamp(now)
    ran = st.ran_by(now)
    reason = in_user_terms(st.reason, clock)
    if reason:
        reason = renamed(reason, nodes)
    status: dict[str, Any] = {
        "phase": st.phase.value, "origin": t.origin.value, "observedGeneration": t.generation,
        "preemptions": st.preemptions,
        "overheadSeconds": round(st.overhead, 3),
        "progress": {"ranSeconds": round(ran, 3),
                     "remainingSeconds": round(st.remaining_by(now), 3)},
        # submission (and its order: the time may tie), first start and final end, to
        # the microsecond: benchmarks measure from them
        "submittedAt": clock.micro_stamp(st.request.submitted), "sequence": st.sequence,
        "startedAt": None if st.first_start is None else clock.micro_stamp(st.first_start),
        "endedAt": None if st.end is None else clock.micro_stamp(st.end),
        "message": redacted(reason, t.namespace, disclose, st.preempted_by)
        if reason else reason,
    }
    booking = st.reservation
    if booking is not None and st.pool is not None:
        status["reservation"] = {"pool": st.pool, "start": clock.stamp(booking.start),
                                 "end": clock.stamp(booking.end),
                                 "nodes": sorted({nodes.get(n, n) for n in st.nodes}) or None}
    else:
        status["reservation"] = None
    sent = t.dispatch
    status["dispatch"] = None if sent is None else {
        "pool": sent.pool, "policy": sent.policy,
        "reason": in_user_terms(sent.reason, clock) or "", "time": clock.stamp(sent.time)}
    rejected = st.phase == Phase.REJECTED
    conditions = [condition("Admitted", "False" if rejected else "True",
                            "Rejected" if rejected else "Admitted",
                            reason or "" if rejected else "", stamp)]
    if st.preempted_by:
        conditions.append(condition("Preempted", "True", "PreemptedBy",
                                    "preempted by " + redacted(
                                        st.preempted_by, t.namespace, disclose,
                                        st.preempted_by), stamp))
    if st.requeues:
        conditions.append(condition("Requeued", "True", "GaveWay",
                                    requeued(st, t.namespace, disclose), stamp))
    if st.replicas_lost:
        # copies of its VMs lost with their nodes while it ran on the others
        conditions.append(condition(
            "ReplicasLost", "True", "NodeLost",
            f"{st.replicas_lost} cop{'ies' if st.replicas_lost > 1 else 'y'} of its VMs"
            " lost with their nodes (not replaced); it ran on, on the copies left", stamp))
    if booted_at is not None:
        conditions.append(
            condition("Booted", "False", "Booting", "its VMs are booting; its run begins"
                      f" at {clock.stamp(booted_at)}", stamp) if now < booted_at else
            condition("Booted", "True", "Booted", f"its VMs booted at"
                      f" {clock.stamp(booted_at)}", stamp))
    if st.phase.terminal:
        conditions.append(condition("Finished", "True", st.phase.value, reason or "",
                                    stamp))
    if t.deploy is not None:
        conditions.append(_image_ready(st, t, t.deploy, clock, stamp))
    status["conditions"] = conditions
    return status


def _image_ready(st: LeaseView, t: Tracked, deploy: Deploy, clock: Clock, stamp: str
                 ) -> dict[str, str]:
    """Where its image is: planned to be sent (when, as RFC 3339 times), its pull
    pods refused, or there (its VMs started)."""
    if st.first_start is not None:
        return condition("ImageReady", "True", "Started",
                         f"its VMs started from image {deploy.image}", stamp)
    if t.pull_refused is not None:
        return condition("ImageReady", "False", "PrePullFailed", t.pull_refused, stamp)
    return condition("ImageReady", "False", "TransferPlanned",
                     f"image {deploy.image} is planned to be sent to the nodes of pool"
                     f" {deploy.pool} from {clock.stamp(deploy.start)} until"
                     f" {clock.stamp(deploy.until)}", stamp)


def preemptor(st: LeaseView, namespace: str, disclose: bool) -> str:
    """The Lease that preempted ``st`` last, as a tenant of ``namespace`` may read it."""
    who = st.preempted_by
    return redacted(who, namespace, disclose, who) if who else "another lease"


def requeued(st: LeaseView, namespace: str, disclose: bool) -> str:
    """What a re-queued lease lost (no suspension): the Requeued condition's message.
    The work is the core's (seconds at speed 1.0), in a user's durations."""
    lost = format_duration(st.lost_work)
    who = preemptor(st, namespace, disclose)
    # said so that it holds after the lease has run again too
    if st.requeues == 1:
        return f"gave way to {who} and started over; {lost} of work lost"
    return (f"gave way {st.requeues} times, last to {who}, and started over; {lost} of"
            " work lost in all")


def _canonical(value: Any) -> Any:
    # the API server gives back 300.0 as 300 (JSON has one kind of number), and may
    # drop a null field (kube-apiserver prunes those its schema does not make nullable)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):  # a null field is no field
        return {k: _canonical(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def fingerprint(status: dict[str, Any]) -> int:
    """What a status says, as a number: equal for a status and the API server's copy
    of it."""
    return hash(json.dumps(_canonical(status), sort_keys=True, default=str))


class Echoes:
    """By Lease uid, the statuses given to be written and not yet shown back. The API
    server shows a Lease's writes in the order they were made, so a status that is
    none of them was written by someone else, and those before the one shown are
    past. A status superseded before it was written is never shown: at most
    :data:`LIMIT` are kept."""

    LIMIT = 8

    def __init__(self) -> None:
        self._given: dict[str, list[int]] = {}

    def given(self, uid: str, status: dict[str, Any]) -> None:
        pending = self._given.setdefault(uid, [])
        pending.append(fingerprint(status))
        del pending[:-self.LIMIT]

    def foreign(self, uid: str, status: dict[str, Any]) -> bool:
        """Whether ``status``, the API server's, is another writer's (never, for a
        Lease whose status the operator has not written yet)."""
        pending = self._given.get(uid)
        if not pending:
            return False
        mark = fingerprint(status)
        if mark not in pending:
            return True
        del pending[:pending.index(mark)]
        return False

    def forget(self, uid: str) -> None:
        self._given.pop(uid, None)
