"""What the operator writes in a Lease's status (``leasehold.kube.status``), as pydantic
models: :mod:`.crds` makes the CRD's status schema from them, so that ``kubectl
explain lhl.status`` describes every field.

The schema must hold every field the operator writes: a real API server prunes a
field its schema does not declare (and refuses a null where it is not ``nullable``),
so a field left out here would be lost on a real cluster. A field is optional
(statuses written before the core holds a Lease carry a few of them) but nullable
only where the operator writes a null; tests/kube/test_status_schema.py writes the
operator's statuses through the emulated API server, which prunes as a real one."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from leasehold.core.model import Origin, Phase


class _Status(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Condition(_Status):
    """One of the Lease's conditions, as Kubernetes conditions are written."""

    type: Literal["Admitted", "Preempted", "Requeued", "Booted", "Finished", "ImageReady",
                  "ReplicasLost"] = Field(
        description="Admitted: the operator took the Lease in (False while it is held back"
                    " or when it is rejected). Preempted: another Lease preempted it."
                    " Requeued: it gave way to another Lease and was cancelled and"
                    " re-queued, to run again from the start (the operator's suspension:"
                    " none); the message says the work lost. Booted: on a NodePool with a"
                    " VM model, whether its VMs have booted (False while they boot: its run"
                    " begins once they have). Finished: it reached a final phase."
                    " ImageReady: its image's transfer to its pool's nodes (a NodePool with"
                    " images): False while planned, True once its VMs started."
                    " ReplicasLost: a Lease with replicas lost copies of its VMs with their"
                    " nodes and ran on, on the copies left (the message says how many).")
    status: Literal["True", "False", "Unknown"] = Field(
        description="Whether the condition holds.")
    reason: str = Field(
        description="Why, in one CamelCase word: Admitted, Rejected, InvalidSpec,"
                    " NamespaceCap (its namespace has too many Leases pending),"
                    " PoolMissing (its spec.pool does not exist yet), PreemptedBy, GaveWay"
                    " (Requeued), Booting or Booted, the final phase, TransferPlanned (the"
                    " message says when), PrePullFailed (its pull pods were refused: its VMs"
                    " pull the image when they start), Started or NodeLost (ReplicasLost).")
    message: str = Field(description="Why, in words (empty when there is nothing to add).")
    last_transition_time: str = Field(
        alias="lastTransitionTime", json_schema_extra={"format": "date-time"},
        description="When the status holding this condition was written (RFC 3339).")


class Reservation(_Status):
    """Where and when the Lease's VMs run (or will run): its current booking."""

    pool: str = Field(description="The NodePool it is booked in.")
    start: str = Field(json_schema_extra={"format": "date-time"},
                       description="When the booking starts (RFC 3339); in the future while"
                                   " it waits for it.")
    end: str = Field(json_schema_extra={"format": "date-time"},
                     description="When the booking ends (RFC 3339): the planned end of the"
                                 " current run.")
    nodes: list[str] | None = Field(
        default=None, description="The nodes its VMs (pods) are on; null until they are"
                                  " placed.")


class Progress(_Status):
    """How much of its duration the Lease has run."""

    ran_seconds: float = Field(alias="ranSeconds",
                               description="Seconds it has run, counting the current run up"
                                           " to when the status was written (a re-queued"
                                           " Lease's lost runs included: their work is lost,"
                                           " and remainingSeconds starts again from its"
                                           " whole duration).")
    remaining_seconds: float = Field(alias="remainingSeconds",
                                     description="Seconds of its duration (work, at speed"
                                                 " 1.0) still to run; on a NodePool of"
                                                 " speed s they take remainingSeconds / s.")


class DispatchStatus(_Status):
    """How an external Lease that named no NodePool got one (DESIGN §2.5, issue 21):
    the operator's dispatch strategy chose it."""

    pool: str = Field(description="The NodePool the strategy sent it to.")
    policy: str = Field(description="The dispatch strategy that chose it: the operator's"
                                    " `dispatch` setting (the chart's scheduler.dispatch).")
    reason: str = Field(description="Why that pool, in words.")
    time: str = Field(json_schema_extra={"format": "date-time"},
                      description="When it was dispatched (RFC 3339).")


def _optional(description: str, **extra: Any) -> Any:
    """A field a status may leave out, but never null (default None only for the model;
    the schema has no null)."""
    return Field(default=None, description=description, **extra)


class LeaseResourceStatus(_Status):
    """What the operator says of the Lease (another writer's status is written over)."""

    phase: Phase = _optional(
        "Where the Lease is: Pending (not planned yet), Queued, Scheduled (booked, not"
        " started), Running, Suspending, Suspended, Resuming, Migrating; finally"
        " Completed, Cancelled, Rejected (message says why) or Failed.")
    origin: Origin = _optional(
        "local or external: the tenancy class of the Lease's namespace, which the"
        " cluster's admins configure.")
    observed_generation: int = _optional(
        "The metadata.generation of the spec the operator schedules.",
        alias="observedGeneration")
    preemptions: int = _optional("How many times other Leases preempted it.")
    overhead_seconds: float = _optional(
        "Seconds its preemptions cost it (suspending, resuming, migrating, restarting).",
        alias="overheadSeconds")
    progress: Progress = _optional("How much of its duration it has run.")
    submitted_at: str = _optional(
        "When it was submitted to the scheduler (RFC 3339, to the microsecond).",
        alias="submittedAt", json_schema_extra={"format": "date-time"})
    sequence: int = _optional(
        "Its place in the order of submission (Leases submitted at the same time are"
        " planned in this order).")
    started_at: str | None = Field(
        default=None, alias="startedAt", json_schema_extra={"format": "date-time"},
        description="When it first started (RFC 3339, to the microsecond); null until then.")
    ended_at: str | None = Field(
        default=None, alias="endedAt", json_schema_extra={"format": "date-time"},
        description="When it ended (completed, cancelled, rejected or failed; RFC 3339, to"
                    " the microsecond); null until then.")
    message: str | None = Field(
        default=None,
        description="Why it is where it is, when there is a reason to give: why it is"
                    " Pending, Rejected, Cancelled or Failed (what to change, for a spec"
                    " that cannot be scheduled); null otherwise.")
    reservation: Reservation | None = Field(
        default=None, description="Its current booking; null while it has none.")
    dispatch: DispatchStatus | None = Field(
        default=None, description="Where the dispatch strategy sent it and why: an"
                                  " external Lease that names no NodePool; null for one"
                                  " that names its pool, a local one, or one not"
                                  " dispatched yet.")
    conditions: list[Condition] = _optional(
        "Admitted, and when they apply Preempted, Requeued, Booted, Finished,"
        " ImageReady and ReplicasLost.",
        json_schema_extra={"x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["type"]})
