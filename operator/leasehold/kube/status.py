"""A Lease's status, from the core's view of it (DESIGN §5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leasehold.api.clock import Clock
from leasehold.core.model import Origin, Phase
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


#: what a tenant is told of a Lease in another namespace, unless the admins allow more
OTHER_TENANT = "a Lease of another namespace"


def redacted(text: str, namespace: str, disclose: bool, who: str | None) -> str:
    """``text`` (about a Lease of ``namespace``) with the core's name ``who`` of
    another namespace's Lease (``namespace/name``, or ``namespace/name~2``) replaced,
    unless ``disclose``."""
    if disclose or not who or who.split("/", 1)[0] == namespace:
        return text
    return text.replace(who, OTHER_TENANT)


def condition(kind: str, status: str, reason: str, message: str, stamp: str
              ) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": stamp}


def status_of(st: LeaseView, t: Tracked, clock: Clock, now: float,
              nodes: dict[str, str] | None = None, disclose: bool = False
              ) -> dict[str, Any]:
    """A Lease's status from the core's state at ``now`` (the core's time); ``nodes``
    renames the core's nodes to the cluster's. Its preemptor is named only if in its
    own namespace, or ``disclose`` (the admins allow it)."""
    nodes = nodes or {}
    stamp = clock.stamp(now)
    ran = st.ran_by(now)
    status: dict[str, Any] = {
        "phase": st.phase.value, "origin": t.origin.value, "observedGeneration": t.generation,
        "preemptions": st.preemptions,
        "overheadSeconds": round(st.overhead, 3),
        "progress": {"ranSeconds": round(ran, 3),
                     "remainingSeconds": round(max(st.remaining - (ran - st.ran), 0.0), 3)},
        # emulated seconds: submission (and its order), first start and final end
        "submittedAt": st.request.submitted, "sequence": st.sequence,
        "startedAt": st.first_start, "endedAt": st.end,
        "message": redacted(st.reason, t.namespace, disclose, st.preempted_by)
        if st.reason else st.reason,
    }
    booking = st.reservation
    if booking is not None and st.pool is not None:
        status["reservation"] = {"pool": st.pool, "start": clock.stamp(booking.start),
                                 "end": clock.stamp(booking.end),
                                 "nodes": sorted({nodes.get(n, n) for n in st.nodes}) or None}
    else:
        status["reservation"] = None
    rejected = st.phase == Phase.REJECTED
    conditions = [condition("Admitted", "False" if rejected else "True",
                            "Rejected" if rejected else "Admitted",
                            st.reason or "" if rejected else "", stamp)]
    if st.preempted_by:
        conditions.append(condition("Preempted", "True", "PreemptedBy",
                                    "preempted by " + redacted(
                                        st.preempted_by, t.namespace, disclose,
                                        st.preempted_by), stamp))
    if st.phase.terminal:
        conditions.append(condition("Finished", "True", st.phase.value, st.reason or "",
                                    stamp))
    status["conditions"] = conditions
    return status
