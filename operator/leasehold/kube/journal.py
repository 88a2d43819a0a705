"""What the core was told, read back after a restart (DESIGN §5, recovery).

The live loop writes every input into the Lease it is about, before the core acts on
it: ``submittedAt`` and ``sequence`` (its order among the submissions of an instant),
``finishedAt`` (its pods all succeeded), ``failedAt`` with ``failure`` (the cluster
refused its pods). Read back in order, they are the inputs a restarted operator
replays to arrive where the one that stopped had been."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from leasehold.api.clock import Clock
from leasehold.api.resources import LeaseInputError, lease_spec
from leasehold.core.model import Origin
from leasehold.core.replay import Input

from .client import Obj


def core_name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(slots=True)
class Journal:
    """What the Leases' statuses say the core was told."""

    #: the inputs, as the live loop gave them (submission time and order)
    inputs: list[Input] = field(default_factory=list)
    #: per lease submitted: the core's name for it, the Lease, its run time, its origin
    tracked: list[tuple[str, Obj, float | None, Origin]] = field(default_factory=list)
    #: a Lease's ``namespace/name`` -> the core's name for its latest incarnation
    current: dict[str, str] = field(default_factory=dict)
    #: the uids of the Leases submitted
    uids: set[str] = field(default_factory=set)
    #: the highest submission sequence written
    sequence: int = 0
    #: Leases never submitted (no journal, not rejected): new ones
    unseen: list[Obj] = field(default_factory=list)


def read_journal(leases: list[Obj], origins: dict[str, Origin], clock: Clock) -> Journal:
    """The inputs journaled in the Leases' statuses, in the order the live loop gave
    them, with the names the core knew the leases by: a Lease deleted and created
    again is ``namespace/name~2`` to the core, and so on, in submission order."""
    out = Journal()
    entries: list[tuple[float, float, str, Obj]] = []
    for obj in leases:
        status = obj.get("status") or {}
        if "submittedAt" in status:
            entries.append((float(status["submittedAt"]), float(status.get("sequence", 0)),
                            "submit", obj))
            if "finishedAt" in status:
                entries.append((float(status["finishedAt"]), math.inf, "finished", obj))
            if "failedAt" in status:
                entries.append((float(status["failedAt"]), math.inf, "failed", obj))
        elif status.get("phase") != "Rejected":
            out.unseen.append(obj)
    entries.sort(key=lambda x: (x[0], x[1]))
    taken: set[str] = set()
    for t, seq, kind, obj in entries:
        meta = obj["metadata"]
        key = core_name(meta["namespace"], meta["name"])
        if kind == "finished":
            out.inputs.append(Input.finished(out.current.get(key, key), t))
            continue
        if kind == "failed":
            out.inputs.append(Input.fail(out.current.get(key, key), t,
                                         str(obj["status"].get("failure", "failed"))))
            continue
        out.uids.add(meta.get("uid", ""))
        name, n = key, 1
        while name in taken:
            n += 1
            name = f"{key}~{n}"
        out.current[key] = name
        origin = origins.get(meta["namespace"], Origin.EXTERNAL)
        try:
            request = lease_spec(obj, origin, t, clock).to_request()
        except LeaseInputError:
            continue
        taken.add(name)
        out.tracked.append((name, obj, request.runtime, origin))
        out.inputs.append(Input.submit(replace(request, name=name, runtime=None), t))
        out.sequence = max(out.sequence, int(seq))
    return out
