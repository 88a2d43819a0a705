"""LeaseSpec: field parsing, the contract rules of DESIGN §2.1, conversion to Request."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from leasehold.api.fields import RuleViolations
from leasehold.api.lease import LeaseSpec
from leasehold.core.model import LeaseType, Origin, Request, Shape

BE_C = "BestEffortCancellable"
BE_S = "BestEffortSuspendable"
DM = "DeadlineMigratable"
DNP = "DeadlineNonPreemptable"
AR = "AdvanceReservation"


def lease(type_: str = BE_C, **fields: Any) -> dict[str, Any]:
    """A valid raw lease of ``type_`` (the smallest one), overridden by ``fields``.

    A field given as ``None`` is removed, so a builder call can take a required one away.
    """
    data: dict[str, Any] = {"name": "a", "type": type_, "vms": 1, "duration": 3600}
    if type_ in (DM, DNP):
        data["deadline"] = 7200
    if type_ == AR:
        data["start"] = 100
    data.update(fields)
    return {key: value for key, value in data.items() if value is not None}


def violations(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, message) of every problem, with cross-field rules split per field."""
    with pytest.raises(ValidationError) as excinfo:
        LeaseSpec.model_validate(data)
    found: list[tuple[str, str]] = []
    for error in excinfo.value.errors():
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, RuleViolations):
            found.extend((".".join(map(str, loc)), message) for loc, message in cause.violations)
        else:
            found.append((".".join(map(str, error["loc"])), error["msg"]))
    return found


# ---- valid leases ----------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(lease(BE_C), id="best-effort-cancellable"),
        pytest.param(lease(BE_S, ready="10m"), id="best-effort-suspendable-ready"),
        pytest.param(lease(DM, ready=0, deadline=3600), id="migratable-tight-deadline"),
        pytest.param(lease(DNP), id="non-preemptable-external"),
        pytest.param(lease(DNP, origin="local", deadline=None), id="local-np-no-deadline"),
        pytest.param(lease(AR), id="reservation"),
        pytest.param(lease(AR, deadline=3700), id="reservation-derived-deadline-spelled-out"),
        pytest.param(lease(AR, origin="local", arrival=100, start=100), id="reservation-now"),
        pytest.param(lease(AR, ready=50), id="reservation-ready-before-start"),
        pytest.param(lease(BE_C, arrival=100, ready=50), id="ready-before-arrival"),
        pytest.param(lease(BE_C, runtime=3600), id="runtime-equals-duration"),
        pytest.param(lease(BE_C, image="ubuntu", imageSizeMB=0), id="image"),
        pytest.param(lease(BE_C, name=7), id="numeric-name"),
    ],
)
def test_valid_leases(data: dict[str, Any]) -> None:
    spec = LeaseSpec.model_validate(data)
    assert spec.name == str(data["name"])
    assert spec.type is LeaseType(data["type"])


# ---- rule violations -------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "field", "fragment"),
    [
        pytest.param(
            lease(AR, start=None), "start", "required for AdvanceReservation", id="ar-no-start"
        ),
        pytest.param(
            lease(BE_C, start=10), "start", "only AdvanceReservation leases", id="be-start"
        ),
        pytest.param(lease(DM, start=10), "start", "use ready for the earliest", id="dm-start"),
        pytest.param(
            lease(AR, arrival=200, start=100),
            "start",
            "100s is before arrival 200s",
            id="ar-start-before-arrival",
        ),
        pytest.param(
            lease(AR, ready=500, start=100), "ready", "500s is after start 100s", id="ar-ready"
        ),
        pytest.param(
            lease(AR, start=100, deadline=4000),
            "deadline",
            "must equal start + duration (100s + 3600s = 3700s) for an AdvanceReservation, "
            "got 4000s; remove deadline",
            id="ar-wrong-deadline",
        ),
        pytest.param(
            lease(DM, deadline=None), "deadline", "required for DeadlineMigratable", id="dm"
        ),
        pytest.param(
            lease(DNP, deadline=None),
            "deadline",
            "only a local DeadlineNonPreemptable may omit it",
            id="external-dnp-no-deadline",
        ),
        pytest.param(
            lease(DNP, deadline=None, ready=60),
            "deadline",
            "add a deadline no earlier than ready + duration (60s + 3600s = 3660s)",
            id="missing-deadline-says-minimum",
        ),
        pytest.param(lease(BE_C, deadline=7200), "deadline", "have no deadline", id="bec"),
        pytest.param(lease(BE_S, deadline=7200), "deadline", "have no deadline", id="bes"),
        pytest.param(
            lease(DM, ready=0, deadline=3000),
            "deadline",
            "3000s is before ready + duration (0s + 3600s = 3600s); set deadline >= 3600s",
            id="deadline-before-ready-plus-duration",
        ),
        pytest.param(
            lease(DNP, arrival="1h", deadline="1h30m"),
            "deadline",
            "5400s is before arrival + duration (3600s + 3600s = 7200s)",
            id="deadline-before-arrival-plus-duration",
        ),
        pytest.param(
            lease(DNP, arrival=1000, ready=0, deadline=4000),
            "deadline",
            "4000s is before arrival + duration (1000s + 3600s = 4600s)",
            id="ready-before-arrival-counts-from-arrival",
        ),
        pytest.param(
            lease(BE_S, runtime=4000),
            "runtime",
            "4000s is longer than duration 3600s",
            id="runtime-longer",
        ),
        pytest.param(lease(BE_S, runtime=0), "runtime", "greater than 0", id="runtime-zero"),
        pytest.param(lease(BE_C, origin="local"), "type", "a local lease must be", id="local-bec"),
        pytest.param(lease(BE_S, origin="local"), "type", "set origin: external", id="local-bes"),
        pytest.param(lease(DM, origin="local"), "type", "got DeadlineMigratable", id="local-dm"),
        pytest.param(
            lease(BE_C, imageSizeMB=100), "imageSizeMB", "given without image", id="size-no-image"
        ),
    ],
)
def test_rule_violation_names_field(data: dict[str, Any], field: str, fragment: str) -> None:
    found = violations(data)
    assert len(found) == 1, found
    assert found[0][0] == field
    assert fragment in found[0][1]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        pytest.param(lease(vms=0), "vms", id="vms-zero"),
        pytest.param(lease(vms=-3), "vms", id="vms-negative"),
        pytest.param(lease(vms=1.5), "vms", id="vms-fraction"),
        pytest.param(lease(vms=True), "vms", id="vms-bool"),
        pytest.param(lease(vms="2"), "vms", id="vms-string"),
        pytest.param(lease(vms=None), "vms", id="vms-missing"),
        pytest.param(lease(duration=0), "duration", id="duration-zero"),
        pytest.param(lease(duration="-1h"), "duration", id="duration-negative"),
        pytest.param(lease(duration="soon"), "duration", id="duration-malformed"),
        pytest.param(lease(duration=None), "duration", id="duration-missing"),
        pytest.param(lease(arrival=-1), "arrival", id="arrival-negative"),
        pytest.param(lease(ready="x"), "ready", id="ready-malformed"),
        pytest.param(lease(cpu=0), "cpu", id="cpu-zero"),
        pytest.param(lease(cpu="2 cores"), "cpu", id="cpu-malformed"),
        pytest.param(lease(memory="1GB"), "memory", id="memory-malformed"),
        pytest.param(lease(memory=0), "memory", id="memory-zero"),
        pytest.param(lease(type="Foo"), "type", id="type-unknown"),
        pytest.param(lease(type=None), "type", id="type-missing"),
        pytest.param(lease(origin="remote"), "origin", id="origin-unknown"),
        pytest.param(lease(name=None), "name", id="name-missing"),
        pytest.param(lease(name=""), "name", id="name-empty"),
        pytest.param(lease(pool=""), "pool", id="pool-empty"),
        pytest.param(lease(image="x", imageSizeMB=-1), "imageSizeMB", id="size-negative"),
        pytest.param(lease(image="x", imageSizeMB=True), "imageSizeMB", id="size-bool"),
        pytest.param(lease(vm=2), "vm", id="unknown-key"),
        pytest.param(lease(replicas=0), "replicas", id="replicas-zero"),
        pytest.param(lease(replicas=1.5), "replicas", id="replicas-fraction"),
        pytest.param(lease(replicas="two"), "replicas", id="replicas-string"),
        pytest.param(lease(replicas=101), "replicas", id="replicas-too-many"),
    ],
)
def test_field_error_names_field(data: dict[str, Any], field: str) -> None:
    assert [name for name, _ in violations(data)] == [field]


def test_all_rule_violations_are_reported_together() -> None:
    found = violations(lease(BE_C, origin="local", start=5, runtime=5000))
    assert sorted(name for name, _ in found) == ["runtime", "start", "type"]


# ---- conversion ------------------------------------------------------------------


def request(data: dict[str, Any]) -> Request:
    return LeaseSpec.model_validate(data).to_request()


def test_to_request_converts_units_and_names() -> None:
    got = request(
        lease(
            BE_S,
            name="x",
            arrival="5m",
            vms=3,
            cpu="500m",
            memory="1Gi",
            duration="1h",
            ready="10m",
            runtime=1800,
            pool="rp1",
        )
    )
    assert got == Request(
        name="x",
        type=LeaseType.BEST_EFFORT_SUSPENDABLE,
        vms=3,
        shape=Shape(cpu=500, memory=1024),
        duration=3600.0,
        submitted=300.0,
        origin=Origin.EXTERNAL,
        ready=600.0,
        deadline=None,
        start=None,
        runtime=1800.0,
        pool="rp1",
    )


def test_replicas_book_every_copy() -> None:
    """A lease of 3 VMs with 2 replicas books 6 VMs: copy c of VM v is booked VM
    ``c × 3 + v`` (leasehold.core.model.copy_of)."""
    got = request(lease(BE_S, vms=3, replicas=2))
    assert (got.vms, got.replicas, got.originals) == (6, 2, 3)
    assert request(lease(BE_S, vms=3)).replicas == 1


def test_defaults_are_one_core_and_1024_mib_external() -> None:
    got = request(lease(BE_C))
    assert got.shape == Shape(cpu=1000, memory=1024)
    assert got.origin is Origin.EXTERNAL
    assert got.submitted == 0.0


@pytest.mark.parametrize(
    ("data", "deadline", "start"),
    [
        pytest.param(lease(BE_C), None, None, id="best-effort-none"),
        pytest.param(lease(DM, deadline="3h"), 10800.0, None, id="migratable-as-written"),
        pytest.param(lease(AR, start=100), 3700.0, 100.0, id="reservation-derived"),
        pytest.param(lease(AR, start=100, deadline=3700), 3700.0, 100.0, id="reservation-given"),
        pytest.param(
            lease(DNP, origin="local", deadline=None, ready=600),
            4200.0,
            None,
            id="local-np-ready-plus-duration",
        ),
        pytest.param(
            lease(DNP, origin="local", deadline=None, arrival=60),
            3660.0,
            None,
            id="local-np-arrival-plus-duration",
        ),
        pytest.param(
            lease(DNP, origin="local", deadline=None, arrival=60, ready=0),
            3660.0,
            None,
            id="local-np-ready-clamped-to-arrival",
        ),
    ],
)
def test_to_request_deadline_and_start(
    data: dict[str, Any], deadline: float | None, start: float | None
) -> None:
    got = request(data)
    assert got.deadline == deadline
    assert got.start == start


def test_ready_before_arrival_is_kept_and_core_starts_at_arrival() -> None:
    got = request(lease(BE_C, arrival=100, ready=50))
    assert got.ready == 50.0
    assert got.earliest == 100.0


def test_written_deadline_is_kept_on_the_spec() -> None:
    spec = LeaseSpec.model_validate(lease(AR, start=100))
    assert spec.deadline is None
    assert spec.effective_deadline == 3700.0


def test_dump_round_trips_through_validation() -> None:
    spec = LeaseSpec.model_validate(
        lease(DM, cpu=0.5, memory="2Gi", image="img", imageSizeMB=300, ready="1m")
    )
    dumped = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    # cpu is written as millicores so that it is not re-read as 500 cores
    assert dumped["cpu"] == "500m"
    assert dumped["imageSizeMB"] == 300
    assert LeaseSpec.model_validate(dumped) == spec


def test_python_callers_may_use_field_names() -> None:
    spec = LeaseSpec(
        name="a",
        type=LeaseType.BEST_EFFORT_CANCELLABLE,
        vms=1,
        duration=10,
        image="i",
        image_size_mb=5,
    )
    assert spec.image_size_mb == 5.0
