"""Lease objects in their Kubernetes form, read into scenario leases: quantities,
durations, times relative to creation, and what a user must change when they are
wrong."""

from __future__ import annotations

import pytest

from leasehold.api.clock import Clock, epoch
from leasehold.api.resources import (
    LeaseInputError,
    lease_spec,
    node_selector,
    pool_from_nodes,
    pool_spec,
)
from leasehold.core.model import LeaseType, Origin, Shape

CREATED = "2026-11-22T10:00:00Z"
#: emulated time 0 is an hour before the Lease is submitted, and runs at real speed
CLOCK = Clock(1.0, epoch("2026-11-22T09:00:00Z"))
ARRIVAL = CLOCK.core(epoch(CREATED))


def lease(spec: dict, name: str = "l1") -> dict:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "team", "creationTimestamp": CREATED},
            "spec": spec}


def read(spec: dict, origin: Origin = Origin.EXTERNAL):
    return lease_spec(lease(spec), origin, ARRIVAL, CLOCK).to_request()


@pytest.mark.parametrize(("spec", "want"), [
    ({"type": "BestEffortSuspendable", "vms": 2, "duration": "1h"},
     {"submitted": 3600, "duration": 3600, "vms": 2, "cpu": 1000, "memory": 1024}),
    ({"type": "BestEffortCancellable", "vms": 1, "duration": 90,
      "resources": {"cpu": "500m", "memory": "512Mi"}},
     {"duration": 90, "cpu": 500, "memory": 512}),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
      "resources": {"cpu": 2, "memory": 1073741824}},  # a bare number is bytes
     {"cpu": 2000, "memory": 1024}),
    ({"type": "DeadlineMigratable", "vms": 1, "duration": "1h", "ready": "10m",
      "deadline": "2026-11-22T12:00:00Z"},
     {"ready": 3600 + 600, "deadline": 3 * 3600}),
    ({"type": "AdvanceReservation", "vms": 4, "duration": "30m", "start": "2h"},
     {"start": 3600 + 7200, "deadline": 3600 + 7200 + 1800}),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "runtime": "40m",
      "pool": "rp"},
     {"runtime": 2400, "pool": "rp"}),
    ({"type": "BestEffortSuspendable", "vms": 2, "replicas": 3, "duration": "1h"},
     {"vms": 6, "replicas": 3}),  # every copy booked
])
def test_a_lease_reads_into_the_core_request(spec, want):
    request = read(spec)
    got = {"submitted": request.submitted, "duration": request.duration, "vms": request.vms,
           "replicas": request.replicas,
           "cpu": request.shape.cpu, "memory": request.shape.memory, "ready": request.ready,
           "deadline": request.deadline, "start": request.start, "runtime": request.runtime,
           "pool": request.pool}
    assert {k: got[k] for k in want} == want
    assert request.type == LeaseType(spec["type"]) and request.name == "l1"


def test_times_follow_the_time_scale():
    fast = Clock(60.0, epoch("2026-11-22T09:59:00Z"))  # a minute of real time before
    spec = {"type": "DeadlineMigratable", "vms": 1, "duration": "1h", "ready": "10m",
            "deadline": "2026-11-22T10:02:00Z"}
    request = lease_spec(lease(spec), Origin.EXTERNAL, 3600.0, fast).to_request()
    # ready: 10 emulated minutes after submission; the deadline's wall-clock time is
    # 3 real minutes after the origin, 3 emulated hours
    assert (request.submitted, request.ready, request.deadline) == (3600, 4200, 3 * 3600)


def test_a_local_namespace_makes_a_local_lease_that_wants_its_vms_now():
    request = read({"type": "DeadlineNonPreemptable", "vms": 1, "duration": "1h"}, Origin.LOCAL)
    assert request.origin is Origin.LOCAL and request.deadline == 3600 + 3600


@pytest.mark.parametrize(("spec", "origin", "problem"), [
    ({"type": "DeadlineMigratable", "vms": 1, "duration": "1h", "origin": "local",
      "deadline": "3h"}, Origin.EXTERNAL,
     "spec.origin: local, but namespace 'team' is not local; a Lease cannot make itself"
     " local"),
    ({"type": "DeadlineMigratable", "vms": 1, "duration": "1h", "deadline": "30m"},
     Origin.EXTERNAL,
     "spec.deadline: 2026-11-22T10:30:00Z is before the earliest end, 2026-11-22T11:00:00Z"
     " (creation + duration 1h); set a later deadline, an earlier ready, or a shorter"
     " duration"),
    ({"type": "DeadlineMigratable", "vms": 1, "duration": "1h", "ready": "1h",
      "deadline": "1h30m"}, Origin.EXTERNAL,
     "spec.deadline: 2026-11-22T11:30:00Z is before the earliest end, 2026-11-22T12:00:00Z"
     " (ready + duration 1h)"),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
      "template": {"containers": []}}, Origin.EXTERNAL,
     "spec.template: not a pod template; it needs spec.containers, a non-empty list"),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "soon"}, Origin.EXTERNAL,
     'spec.duration: invalid duration "soon"'),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "ready": "tomorrow"},
     Origin.EXTERNAL, 'spec.ready: invalid duration "tomorrow"'),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
      "resources": {"memory": "lots"}}, Origin.EXTERNAL, "spec.resources.memory:"),
    ({"type": "AdvanceReservation", "vms": 1, "duration": "1h"}, Origin.EXTERNAL,
     "spec.start: required for AdvanceReservation"),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "deadline": "3h"},
     Origin.EXTERNAL, "spec.deadline: BestEffortSuspendable leases have no deadline"),
    # durations as users write them, never the core's seconds (issue 18)
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "runtime": "2h"},
     Origin.EXTERNAL, "spec.runtime: 2h is longer than duration 1h"),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": 3600, "runtime": 5430},
     Origin.EXTERNAL, "spec.runtime: 1h30m30s is longer than duration 1h"),
    ({"type": "DeadlineMigratable", "vms": 1, "duration": "1h", "deadline": "3h"},
     Origin.LOCAL, "spec.type: a local lease must be DeadlineNonPreemptable or"
                   " AdvanceReservation"),
    ({"type": "Whenever", "vms": 1, "duration": "1h"}, Origin.EXTERNAL, "spec.type:"),
    ({"type": "BestEffortSuspendable", "vms": 0, "duration": "1h"}, Origin.EXTERNAL,
     "spec.vms: must be >= 1, got 0"),
    # a Lease's fields, not a scenario's (cluster, config, leases), as it once listed
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "duraton": "2h"},
     Origin.EXTERNAL, "spec.duraton: unknown field; expected one of type, vms, replicas, resources,"
                      " duration,"),
    # shaped like RFC 3339, but no such day: one message, not a ValueError from datetime
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
      "ready": "2026-02-30T10:00:00Z"}, Origin.EXTERNAL,
     'spec.ready: "2026-02-30T10:00:00Z" is not a time: day is out of range for month'),
    ({"type": "DeadlineMigratable", "vms": 1, "duration": "1h",
      "deadline": "2026-13-01T10:00:00Z"}, Origin.EXTERNAL,
     'spec.deadline: "2026-13-01T10:00:00Z" is not a time: month must be in 1..12'),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "99999999999d"},
     Origin.EXTERNAL, 'spec.duration: "99999999999d" is longer than the longest lease'
                      " leasehold plans, 100 years (36500d)"),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "runtime": 1e12},
     Origin.EXTERNAL, "spec.runtime: 1000000000000 is longer than the longest lease"),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "ready": "99999999999d"},
     Origin.EXTERNAL, 'spec.ready: "99999999999d" after creation is further than leasehold'
                      " plans"),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
      "ready": "9999-12-31T23:30:00Z"}, Origin.EXTERNAL,
     "spec.duration: ends after 9999-12-31T23:59:59Z, the latest time Kubernetes writes"),
])
def test_bad_leases_say_what_to_change(spec, origin, problem):
    with pytest.raises(LeaseInputError) as info:
        read(spec, origin)
    assert any(p.startswith(problem) for p in info.value.problems), info.value.problems


#: times in RFC 3339, durations as users write them: never the core's seconds (issue 18)
TIMES = [
    pytest.param({"type": "AdvanceReservation", "vms": 1, "duration": "1h",
                  "start": "2000-01-01T00:00:00Z"},
                 "spec.start: 2000-01-01T00:00:00Z is before submission 2026-11-22T10:00:00Z;"
                 " a reservation cannot start before it is submitted",
                 id="start-before-the-emulated-clock-began"),
    pytest.param({"type": "AdvanceReservation", "vms": 1, "duration": "1h",
                  "start": "2026-11-22T09:30:00Z"},
                 "spec.start: 2026-11-22T09:30:00Z is before submission 2026-11-22T10:00:00Z;"
                 " a reservation cannot start before it is submitted",
                 id="start-before-submission"),
    pytest.param({"type": "DeadlineMigratable", "vms": 1, "duration": 5400,
                  "deadline": "2026-11-22T11:00:00Z"},
                 "spec.deadline: 2026-11-22T11:00:00Z is before the earliest end,"
                 " 2026-11-22T11:30:00Z (creation + duration 1h30m); set a later deadline, an"
                 " earlier ready, or a shorter duration",
                 id="deadline-too-early-duration-in-seconds"),
    pytest.param({"type": "DeadlineMigratable", "vms": 1, "duration": "1h",
                  "deadline": "2000-01-01T00:00:00Z"},
                 "spec.deadline: 2000-01-01T00:00:00Z is before the earliest end,"
                 " 2026-11-22T11:00:00Z (creation + duration 1h)",
                 id="deadline-before-the-emulated-clock-began"),
    pytest.param({"type": "AdvanceReservation", "vms": 1, "duration": "1h", "start": "2h",
                  "ready": "3h"},
                 "spec.ready: 2026-11-22T13:00:00Z is after start 2026-11-22T12:00:00Z;"
                 " remove ready", id="ready-after-a-reservations-start"),
    pytest.param({"type": "AdvanceReservation", "vms": 1, "duration": "1h", "start": "2h",
                  "deadline": "4h"},
                 "spec.deadline: must equal start + duration (2026-11-22T12:00:00Z + 1h ="
                 " 2026-11-22T13:00:00Z) for an AdvanceReservation, got 2026-11-22T14:00:00Z",
                 id="a-reservations-deadline"),
]


@pytest.mark.parametrize(("spec", "problem"), TIMES)
def test_bad_times_are_told_in_rfc3339_and_durations_as_users_write_them(spec, problem):
    with pytest.raises(LeaseInputError) as info:
        read(spec)
    assert any(p.startswith(problem) for p in info.value.problems), info.value.problems


def test_a_ready_before_the_emulated_clock_began_means_at_once():
    request = read({"type": "DeadlineMigratable", "vms": 1, "duration": "1h",
                    "ready": "2000-01-01T00:00:00Z", "deadline": "3h"})
    assert request.ready == ARRIVAL and request.earliest == ARRIVAL


def node(name: str, cpu: str = "4", memory: str = "16Gi", ready: str = "True",
         unschedulable: bool = False) -> dict:
    return {"metadata": {"name": name},
            "spec": {"unschedulable": True} if unschedulable else {},
            "status": {"allocatable": {"cpu": cpu, "memory": memory},
                       "conditions": [{"type": "Ready", "status": ready}]}}


POOL = {"metadata": {"name": "batch"}, "spec": {"exclusive": False}}


@pytest.mark.parametrize(("nodes", "want_names", "cpu", "memory"), [
    # sorted by name; of one size
    ([node("w-b", "3500m", "16Gi"), node("w-a", "3500m", "16Gi")], ["w-a", "w-b"], 3500,
     16384),
    # memory rounds down (bare numbers are bytes); the next node is of its own size
    ([node("w-a", memory="16374356Ki"), node("w-b")], ["w-a", "w-b"], 4000, 15990),
    ([node("w-a", memory="1073741823"), node("w-b")], ["w-a", "w-b"], 4000, 1023),
    # not Ready, or cordoned: not in the pool
    ([node("w-a"), node("w-b", ready="False"), node("w-c", unschedulable=True)],
     ["w-a"], 4000, 16384),
    ([node("w-a", ready="Unknown")], [], None, None),
    ([], [], None, None),
])
def test_a_pool_of_real_nodes_is_their_ready_schedulable_ones(nodes, want_names, cpu,
                                                                    memory):
    spec, names = pool_from_nodes(POOL, nodes)
    assert names == want_names
    assert spec.nodes == len(want_names)
    if cpu is not None:  # the first node's size (w-a)
        assert spec.sizes()[0] == Shape(cpu, memory)
        assert spec.node_names() == [f"batch-{i}" for i in range(len(names))]


@pytest.mark.parametrize(("pool", "nodes", "sizes"), [
    pytest.param(POOL, [node("w-b", "8", "32Gi"), node("w-a", "3500m", "16Gi")],
                 [Shape(3500, 16384), Shape(8000, 32768)], id="each of its own size"),
    pytest.param(POOL, [node("w-a", "8", "32Gi"), node("w-b", "8", "32Gi"),
                        node("w-c", "32", "128Gi")],
                 [Shape(8000, 32768)] * 2 + [Shape(32000, 131072)], id="runs are groups"),
    pytest.param({"metadata": {"name": "batch"}, "spec": {"exclusive": True}},
                 [node("w-b", "8", "32Gi"), node("w-a", "3500m", "16Gi")],
                 [Shape(3500, 16384)] * 2, id="exclusive: as large as the smallest"),
])
def test_a_pool_of_real_nodes_of_mixed_sizes_has_each_nodes_size(pool, nodes, sizes):
    spec, _ = pool_from_nodes(pool, nodes)
    assert spec.sizes() == sizes
    assert spec.largest() == max(sizes, key=lambda s: s.cpu)


@pytest.mark.parametrize(("cpu", "memory", "problem"), [
    ("lots", "1Gi", "node w-a: allocatable cpu"),
    ("1", "1GB", "node w-a: allocatable memory"),
])
def test_a_node_with_a_bad_quantity_is_named(cpu, memory, problem):
    with pytest.raises(LeaseInputError, match=problem):
        pool_from_nodes(POOL, [node("w-a", cpu=cpu, memory=memory)])


def test_a_pools_nodes_are_its_selectors_or_its_label():
    assert node_selector({"metadata": {"name": "batch"}, "spec": {}}) == "leasehold.io/pool=batch"
    assert node_selector({"metadata": {"name": "batch"},
                          "spec": {"nodeSelector": {"tier": "b", "a": "1"}}}) == "a=1,tier=b"


#: a Lease's memory is a Kubernetes quantity: a bare number is bytes (a scenario's is
#: MiB); below 1Mi is refused, with the reading the user most likely meant
@pytest.mark.parametrize(("memory", "mib"), [
    pytest.param(1048576, 1, id="1Mi-in-bytes"),
    pytest.param("1048576", 1, id="1Mi-in-bytes-string"),
    pytest.param(1073741825, 1025, id="bytes-round-up"),
    pytest.param("1Mi", 1, id="1Mi"),
    pytest.param("1024Ki", 1, id="1024Ki"),
    pytest.param("1.5Mi", 2, id="fraction-rounds-up"),
    pytest.param("1100k", 2, id="decimal-k"),
    pytest.param("256Mi", 256, id="256Mi"),
])
def test_a_lease_memory_of_at_least_1mi_is_read_as_a_quantity(memory, mib):
    request = read({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                    "resources": {"memory": memory}})
    assert request.shape.memory == mib


BYTES = "(a bare number is bytes, as in Kubernetes)"


@pytest.mark.parametrize(("memory", "problem"), [
    pytest.param(256, f"256 bytes is below 1Mi, the least leasehold accepts {BYTES}; did you"
                      " mean 256Mi?", id="bare-number"),
    pytest.param("256", f"256 bytes is below 1Mi, the least leasehold accepts {BYTES}; did"
                        " you mean 256Mi?", id="bare-number-string"),
    pytest.param(1048575, f"1048575 bytes is below 1Mi, the least leasehold accepts {BYTES};"
                          " did you mean 1048575Mi?", id="1Mi-less-1"),
    pytest.param("512Ki", "512Ki is below 1Mi, the least leasehold accepts; did you mean"
                          " 512Mi?", id="Ki"),
    pytest.param("1000k", "1000k is below 1Mi, the least leasehold accepts; did you mean"
                          " 1000M?", id="decimal-k"),
    # no suggestion where no unit would do
    pytest.param(0, f"0 bytes is below 1Mi, the least leasehold accepts {BYTES}", id="zero"),
    pytest.param("0.5Mi", "0.5Mi is below 1Mi, the least leasehold accepts", id="half-Mi"),
    # what a Lease accepts: not "MiB (e.g. 512)", which it would refuse
    pytest.param("lots", 'invalid memory quantity "lots": expected a quantity (e.g. "512Mi",'
                         ' "1Gi", "1G"; a bare number is bytes)', id="not-a-quantity"),
])
def test_a_lease_memory_below_1mi_is_refused_with_a_suggestion(memory, problem):
    with pytest.raises(LeaseInputError) as info:
        read({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
              "resources": {"memory": memory}})
    assert info.value.problems == [f"spec.resources.memory: {problem}"]


@pytest.mark.parametrize(("spec", "problem"), [
    pytest.param({"emulated": {"nodes": 1, "cpu": "lots", "memory": "1Gi"}},
                 r"NodePool p: spec\.emulated\.cpu: invalid cpu quantity \"lots\"", id="cpu"),
    pytest.param({"emulated": {"nodes": 1, "cpu": 1, "memory": "lots"}},
                 r"NodePool p: spec\.emulated\.memory:", id="memory"),
    # a NodePool's memory is a quantity too: a bare number is bytes, below 1Mi refused
    pytest.param({"emulated": {"nodes": 1, "cpu": 1, "memory": 4096}},
                 r"NodePool p: spec\.emulated\.memory: 4096 bytes is below 1Mi, the least"
                 r" leasehold accepts \(a bare number is bytes, as in Kubernetes\); did you"
                 r" mean 4096Mi\?", id="memory-bytes"),
    pytest.param({"emulated": {"nodes": "many", "cpu": 1, "memory": "1Gi"}},
                 r"NodePool p: spec\.emulated\.nodes:", id="nodes"),
    pytest.param({"emulated": {}}, r"NodePool p: spec\.emulated\.nodes: required field is"
                 r" missing \(or give groups, for nodes of mixed sizes\)", id="no-nodes"),
    pytest.param({"emulated": {"nodes": 3, "groups": [{"nodes": 1, "cpu": 8,
                                                       "memory": "32Gi"}]}},
                 r"NodePool p: spec\.emulated\.nodes: is 3 but the groups have 1 nodes; drop"
                 r" nodes or make them agree", id="nodes-disagree"),
    pytest.param({"exclusive": True, "emulated": {"groups": [{"nodes": 1, "cpu": 8,
                                                              "memory": "32Gi"}]}},
                 r"NodePool p: spec\.emulated\.groups: an exclusive pool has nodes of one"
                 r" size; drop groups, or exclusive", id="exclusive-groups"),
    pytest.param({"emulated": {"groups": [{"nodes": 1, "cpu": "lots", "memory": "1Gi"}]}},
                 r"NodePool p: spec\.emulated\.groups\[0\]\.cpu: invalid cpu quantity",
                 id="group-cpu"),
    pytest.param({"emulated": {"groups": [{"nodes": 1, "cpu": 1, "memory": 4096}]}},
                 r"NodePool p: spec\.emulated\.groups\[0\]\.memory: 4096 bytes is below 1Mi",
                 id="group-memory-bytes"),
    pytest.param({"emulated": {"groups": [{"nodes": 1, "cpu": 1}]}},
                 r"NodePool p: spec\.emulated\.groups\.0\.memory", id="group-without-memory"),
    pytest.param({"overhead": {"suspendRate": "fast"}},
                 r"NodePool p: spec\.overhead\.suspendRate:", id="overhead"),
    pytest.param({"speed": 0}, r"NodePool p: spec\.speed: must be > 0, got 0", id="speed-zero"),
    pytest.param({"speed": "fast"}, r"NodePool p: spec\.speed: ", id="speed-not-a-number"),
    pytest.param({"speed": float("inf")}, r"NodePool p: spec\.speed: .*finite",
                 id="speed-infinite"),
    pytest.param({"exclusiv": True}, r"NodePool p: spec\.exclusiv: unknown field; expected"
                 r" one of nodeSelector, .*\(did you mean \"exclusive\"\?\)", id="unknown"),
])
def test_a_bad_nodepool_is_one_input_error_that_names_the_field(spec, problem):
    """The operator leaves a NodePool it cannot read out, and schedules on the others
    (build_shell catches LeaseInputError): any other exception would stop it."""
    with pytest.raises(LeaseInputError, match=problem):
        pool_spec({"metadata": {"name": "p"}, "spec": spec})


@pytest.mark.parametrize(("emulated", "sizes"), [
    pytest.param({"groups": [{"nodes": 2, "cpu": 8, "memory": "32Gi"},
                             {"nodes": 1, "cpu": "32", "memory": "128Gi"}]},
                 [Shape(8000, 32768)] * 2 + [Shape(32000, 131072)], id="groups"),
    pytest.param({"nodes": 3, "cpu": 4, "memory": "8Gi",  # beside groups: unused
                  "groups": [{"nodes": 2, "cpu": 8, "memory": "32Gi"},
                             {"nodes": 1, "cpu": "32", "memory": "128Gi"}]},
                 [Shape(8000, 32768)] * 2 + [Shape(32000, 131072)], id="nodes-agreeing"),
    pytest.param({"groups": [{"nodes": 2, "cpu": 8, "memory": "32Gi"}]},
                 [Shape(8000, 32768)] * 2, id="one-group-is-one-size"),
    pytest.param({"nodes": 2, "cpu": 8, "memory": "32Gi"}, [Shape(8000, 32768)] * 2,
                 id="no-groups"),
])
def test_an_emulated_pool_of_mixed_sizes_is_the_cores_pool_of_groups(emulated, sizes):
    spec = pool_spec({"metadata": {"name": "p"}, "spec": {"emulated": emulated}})
    assert spec.sizes() == sizes
    assert bool(spec.groups) == (len(set(sizes)) > 1)


@pytest.mark.parametrize(("replicas", "problem"), [
    (0, "spec.replicas: must be >= 1, got 0"),
    (101, "spec.replicas: must be <= 100, got 101"),
    ("two", 'spec.replicas: must be a whole number, got "two"'),
], ids=["zero", "too-many", "not-a-number"])
def test_bad_replicas_are_named(replicas, problem):
    spec = {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "replicas": replicas}
    with pytest.raises(LeaseInputError) as info:
        read(spec)
    assert any(p.startswith(problem) for p in info.value.problems), info.value.problems
