"""The lease of a scenario file (DESIGN §8) and its contract rules (DESIGN §2.1)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, ValidationInfo, model_validator

from leasehold.core.model import LeaseType, Origin, Request, Shape, extended_of

from .durations import format_seconds
from .fields import (
    Count,
    ExtendedCounts,
    Loc,
    MiB,
    Millicores,
    Name,
    Number,
    RuleViolations,
    Seconds,
    Spec,
)

__all__ = ["LOCAL_TYPES", "TERMS", "LeaseSpec", "Terms", "start_before_arrival"]

#: Types a local user may send (DESIGN §2.1, "who may send it"): local requests are
#: never preempted, so they must be deadline-constrained and non-preemptable.
LOCAL_TYPES: frozenset[LeaseType] = frozenset(
    {LeaseType.DEADLINE_NON_PREEMPTABLE, LeaseType.ADVANCE_RESERVATION}
)

_DEADLINE_TYPES = (LeaseType.DEADLINE_MIGRATABLE, LeaseType.DEADLINE_NON_PREEMPTABLE)


def _at(field: str, message: str) -> tuple[Loc, str]:
    return (field,), message


@dataclass(frozen=True, slots=True)
class Terms:
    """How a lease's messages write its times and durations. A scenario's (the
    default) are seconds, as its file writes them (``3600s``: a time is seconds since
    the scenario's start); a Lease object's are RFC 3339 times and durations such as
    ``1h30m`` (:func:`leasehold.api.resources.lease_spec` gives them, with its clock)."""

    time: Callable[[float], str] = format_seconds
    duration: Callable[[float], str] = format_seconds
    #: what the lease's submission is called
    arrival: str = "arrival"


#: the validation context key of a :class:`Terms` (``LeaseSpec.model_validate(data,
#: context={TERMS: terms})``); none given: a scenario's
TERMS = "terms"


def start_before_arrival(start: float, arrival: float, terms: Terms) -> str:
    """What is wrong with a reservation's start before its arrival."""
    return (f"{terms.time(start)} is before {terms.arrival} {terms.time(arrival)}; "
            f"a reservation cannot start before it is submitted")


class LeaseSpec(Spec):
    """One lease of a scenario: ``vms`` identical VMs for ``duration`` under ``type``.

    After validation ``cpu`` is in millicores, ``memory`` in MiB and all times in
    seconds, as the core expects. Rules beyond single fields:

    - ``AdvanceReservation`` needs ``start`` (>= ``arrival``) and only it may have one;
      its deadline is always ``start + duration`` (a written ``deadline`` must say so).
    - ``DeadlineMigratable`` and ``DeadlineNonPreemptable`` need a ``deadline``, except
      a *local* ``DeadlineNonPreemptable``: without one it wants its VMs at its ready
      time (DESIGN §2.1), so its deadline is ``ready + duration`` (``arrival`` when
      ``ready`` is absent). Best-effort types have no deadline.
    - A deadline is never earlier than the earliest start plus ``duration``.
    - ``runtime`` (the actual run time, for early completion) is at most ``duration``.
    - Local leases are ``DeadlineNonPreemptable`` or ``AdvanceReservation``.

    ``ready`` earlier than ``arrival`` is accepted and means "as soon as submitted":
    a request cannot start before it exists, and the core already starts from
    ``max(ready, arrival)`` (:attr:`Request.earliest`), so refusing it would only make
    traces with clock skew unloadable.
    """

    name: Name = Field(description="Unique name of the lease.")
    origin: Origin = Field(
        default=Origin.EXTERNAL,
        description="local (the cluster's owners, never preempted) or external.",
    )
    type: LeaseType = Field(description="Contract type (DESIGN §2.1).")
    arrival: Seconds = Field(default=0.0, description="Submission time.")
    vms: Annotated[Count, Field(ge=1)] = Field(description="Number of identical VMs.")
    replicas: Annotated[Count, Field(ge=1, le=100)] = Field(
        default=1, description="Copies of each VM, on distinct nodes where the pool allows"
        " (seed 002's RRR-k): it books vms × replicas VMs and runs on while every VM keeps"
        " a copy on a node that is up (docs/volatile.md, \"Replicas\").")
    cpu: Millicores = Field(default=1000, gt=0, description="Cpu per VM.")
    memory: MiB = Field(default=1024, gt=0, description="Memory per VM.")
    extended: ExtendedCounts | None = Field(
        default=None, description="Extended resources per VM, by Kubernetes name"
        " (nvidia.com/gpu: 1): a node must have them free (docs/resources.md).")
    duration: Seconds = Field(gt=0, description="How long the VMs are needed.")
    ready: Seconds | None = Field(default=None, description="Earliest start.")
    deadline: Seconds | None = Field(default=None, description="Latest end.")
    start: Seconds | None = Field(default=None, description="Exact start of an AdvanceReservation.")
    runtime: Annotated[Seconds, Field(gt=0)] | None = Field(
        default=None, description="Actual run time (<= duration); simulations only."
    )
    pool: Name | None = Field(default=None, description="Node pool to run in.")
    image: Name | None = Field(default=None, description="The image its VMs boot from: on a"
                               " pool with images, deployed to each node before its VM"
                               " starts (DESIGN §2.6).")
    image_size_mb: Number | None = Field(
        default=None, ge=0, alias="imageSizeMB", description="Size of the image in MB."
    )

    @property
    def earliest(self) -> float:
        """When the lease may start at the earliest (its exact start for a reservation)."""
        if self.start is not None:
            return self.start
        return self.arrival if self.ready is None else max(self.ready, self.arrival)

    @property
    def effective_deadline(self) -> float | None:
        """The deadline the core plans with: written, derived (see class doc) or None."""
        if self.type is LeaseType.ADVANCE_RESERVATION:
            return None if self.start is None else self.start + self.duration
        if self.type.best_effort:
            return None
        if self.deadline is None and self.origin is Origin.LOCAL:
            return self.earliest + self.duration
        return self.deadline

    def to_request(self) -> Request:
        """The core's view of this lease."""
        return Request(
            name=self.name,
            type=self.type,
            vms=self.vms * self.replicas,  # every copy is booked
            shape=Shape(cpu=self.cpu, memory=self.memory,
                        extended=extended_of(self.extended or {})),
            duration=self.duration,
            submitted=self.arrival,
            origin=self.origin,
            ready=self.ready,
            deadline=self.effective_deadline,
            start=self.start,
            runtime=self.runtime,
            pool=self.pool,
            image_mb=float(self.image_size_mb or 0.0),
            image=self.image,
            replicas=self.replicas,
        )

    @model_validator(mode="after")
    def _check_rules(self, info: ValidationInfo) -> LeaseSpec:
        terms = (info.context or {}).get(TERMS) or Terms()
        violations = list(self._violations(terms))
        if violations:
            raise RuleViolations(violations)
        return self

    def _violations(self, terms: Terms) -> Iterator[tuple[Loc, str]]:
        kind = self.type.value
        if self.origin is Origin.LOCAL and self.type not in LOCAL_TYPES:
            yield _at(
                "type",
                f"a local lease must be DeadlineNonPreemptable or AdvanceReservation "
                f"(local requests are never preempted), got {kind}; "
                f"change type or set origin: external",
            )
        if self.type is LeaseType.ADVANCE_RESERVATION:
            yield from self._reservation_violations(terms)
        else:
            if self.start is not None:
                yield _at(
                    "start",
                    f"only AdvanceReservation leases have a start; remove start, "
                    f"or use ready for the earliest start of a {kind}",
                )
            yield from self._deadline_violations(terms)
        if self.runtime is not None and self.runtime > self.duration:
            yield _at(
                "runtime",
                f"{terms.duration(self.runtime)} is longer than duration "
                f"{terms.duration(self.duration)}; runtime (the actual run time) must be "
                f"<= duration",
            )
        if self.image_size_mb is not None and self.image is None:
            yield _at("imageSizeMB", "given without image; add image or remove imageSizeMB")

    def _reservation_violations(self, terms: Terms) -> Iterator[tuple[Loc, str]]:
        if self.start is None:
            yield _at(
                "start",
                "required for AdvanceReservation (the exact start time); add start, or use "
                "DeadlineNonPreemptable with ready and deadline for a flexible start",
            )
            return
        start = terms.time(self.start)
        if self.start < self.arrival:
            yield _at("start", start_before_arrival(self.start, self.arrival, terms))
        if self.ready is not None and self.ready > self.start:
            yield _at(
                "ready",
                f"{terms.time(self.ready)} is after start {start}; remove ready "
                f"(an AdvanceReservation starts exactly at start)",
            )
        end = self.start + self.duration
        if self.deadline is not None and not math.isclose(self.deadline, end, abs_tol=1e-9):
            yield _at(
                "deadline",
                f"must equal start + duration ({start} + {terms.duration(self.duration)} "
                f"= {terms.time(end)}) for an AdvanceReservation, got "
                f"{terms.time(self.deadline)}; remove deadline (it is derived)",
            )

    def _deadline_violations(self, terms: Terms) -> Iterator[tuple[Loc, str]]:
        kind = self.type.value
        if self.type.best_effort:
            if self.deadline is not None:
                yield _at(
                    "deadline",
                    f"{kind} leases have no deadline; remove deadline, or use "
                    f"DeadlineMigratable or DeadlineNonPreemptable",
                )
            return
        since = "ready" if self.ready is not None and self.ready >= self.arrival \
            else terms.arrival
        earliest, duration = terms.time(self.earliest), terms.duration(self.duration)
        earliest_end = terms.time(self.earliest + self.duration)
        arithmetic = f"{since} + duration ({earliest} + {duration} = {earliest_end})"
        if self.deadline is None:
            if self.origin is Origin.LOCAL and self.type is LeaseType.DEADLINE_NON_PREEMPTABLE:
                return
            exception = (
                " (only a local DeadlineNonPreemptable may omit it)"
                if self.type is LeaseType.DEADLINE_NON_PREEMPTABLE
                else ""
            )
            yield _at(
                "deadline",
                f"required for {kind}{exception}; add a deadline no earlier than {arithmetic}",
            )
        elif self.deadline < self.earliest + self.duration:
            yield _at(
                "deadline",
                f"{terms.time(self.deadline)} is before {arithmetic}; "
                f"set deadline >= {earliest_end} or shorten duration",
            )
