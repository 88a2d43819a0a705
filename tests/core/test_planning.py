"""Queue planning: conservative, EASY and FCFS; compression; admission."""

from __future__ import annotations

import pytest

from builders import AR, BEC, DM, DNP, config, exclusive, req, run, shared, spans
from leasehold.core.model import Origin, Reject, Reserve

# (backfilling, requests, expected {name: (start, end)})
CASES = [
    # a short lease backfills beside a running one without touching B's reservation
    ("conservative",
     [req("A", 3, 100), req("B", 4, 100), req("C", 1, 50, at=10)],
     {"A": (0, 100), "B": (100, 200), "C": (10, 60)}),
    # ... but not if it would run into B's reservation
    ("conservative",
     [req("A", 3, 100), req("B", 4, 100), req("C", 1, 95, at=10)],
     {"A": (0, 100), "B": (100, 200), "C": (200, 295)}),
    # FCFS never lets C pass B
    ("none",
     [req("A", 3, 100), req("B", 4, 100), req("C", 1, 50, at=10)],
     {"A": (0, 100), "B": (100, 200), "C": (200, 250)}),
    # EASY backfills C like conservative does
    ("easy",
     [req("A", 3, 100), req("B", 4, 100), req("C", 1, 50, at=10)],
     {"A": (0, 100), "B": (100, 200), "C": (10, 60)}),
    # early end: A really runs 40 s, so B's reservation is compressed from 100 to 40
    ("conservative",
     [req("A", 4, 100, runtime=40), req("B", 4, 100)],
     {"A": (0, 40), "B": (40, 140)}),
    ("easy",
     [req("A", 4, 100, runtime=40), req("B", 4, 100)],
     {"A": (0, 40), "B": (40, 140)}),
    # conservative protects D's reservation from E; EASY only protects the head (B)
    ("conservative",
     [req("A", 2, 100), req("B", 3, 50), req("D", 4, 100, at=1), req("E", 1, 200, at=2)],
     {"A": (0, 100), "B": (100, 150), "D": (150, 250), "E": (250, 450)}),
    ("easy",
     [req("A", 2, 100), req("B", 3, 50), req("D", 4, 100, at=1), req("E", 1, 200, at=2)],
     {"A": (0, 100), "B": (100, 150), "E": (2, 202), "D": (202, 302)}),
]


@pytest.mark.parametrize(("mode", "requests", "expected"), CASES)
def test_schedules(mode, requests, expected):
    sched = run([exclusive(4)], requests, config(mode))
    got = {n: (s, e) for n, (s, e, _) in spans(sched).items()}
    assert got == expected


def test_compression_never_moves_a_reservation_later():
    sched_reserves: dict[str, list[float]] = {}

    def check(sched, now, actions):
        for a in actions:
            if isinstance(a, Reserve):
                sched_reserves.setdefault(a.lease, []).append(a.start)

    run([exclusive(4)], [req("A", 4, 100, runtime=30), req("B", 2, 100), req("C", 3, 50, at=1),
                          req("D", 2, 10, at=2)], config(), check)
    for starts in sched_reserves.values():
        assert starts == sorted(starts, reverse=True)
    assert any(len(s) > 1 for s in sched_reserves.values())  # something did move


@pytest.mark.parametrize("mode", ["conservative", "easy", "none"])
def test_best_effort_that_can_never_fit_is_rejected_with_reason(mode):
    sched = run([exclusive(4)], [req("big", 5, 10)], config(mode))
    st = sched.lease("big")
    assert st.phase.value == "Rejected"
    assert "can never fit" in st.reason and "4" in st.reason


@pytest.mark.parametrize(
    ("deadline", "phase"), [(200, "Completed"), (199, "Rejected")],
)
def test_deadline_lease_admitted_only_if_it_can_end_in_time(deadline, phase):
    sched = run([exclusive(2)], [req("A", 2, 100), req("D", 2, 100, at=1, type=DM,
                                                          deadline=deadline)])
    st = sched.lease("D")
    assert st.phase.value == phase
    if phase == "Completed":
        assert st.end <= deadline
    else:
        assert "deadline t=199s" in st.reason


def test_deadline_lease_takes_the_hole_before_a_queued_reservation():
    # B is queued at 100; D (deadline 60) fits before it and is admitted
    sched = run([exclusive(2)], [req("A", 1, 100), req("B", 2, 100),
                                 req("D", 1, 50, at=5, type=DNP, deadline=60)])
    assert spans(sched)["D"][:2] == (5, 55)
    assert spans(sched)["B"][:2] == (100, 200)


@pytest.mark.parametrize("mode", ["conservative", "easy"])
def test_advance_reservation_starts_exactly_at_its_start(mode):
    sched = run([exclusive(4)],
                [req("X", 2, 500), req("R", 4, 100, type=AR, start=600, at=10)], config(mode))
    assert spans(sched)["R"] == (600, 700, "Completed")


def test_advance_reservation_blocks_best_effort_that_would_overlap():
    sched = run([exclusive(2)], [req("R", 2, 100, type=AR, start=50), req("B", 1, 60, at=1)])
    assert spans(sched)["B"][:2] == (150, 210)


def test_advance_reservation_without_room_under_nop_is_rejected_with_a_decision():
    sched = run([exclusive(2)], [req("X", 2, 500), req("R", 1, 100, type=AR, start=100, at=1)],
                config(policy="nop"))
    st = sched.lease("R")
    assert st.phase.value == "Rejected"
    assert "no room" in st.reason and "t=100s" in st.reason and "'nop' never" in st.reason
    [d] = sched.decisions
    assert (d.preemptor, d.chosen, d.time, d.candidate_sets) == ("R", (), 1, 0)


def test_preemptor_without_any_preemptable_lease_is_rejected_saying_so():
    sched = run([exclusive(1)], [req("X", 1, 500, type=DNP, deadline=600),
                                 req("R", 1, 100, type=AR, start=100, at=1)])
    assert "would not free enough room" in sched.lease("R").reason
    assert sched.decisions[0].candidate_sets == 0


def test_local_request_wants_its_resources_at_ready_time():
    local = req("L", 1, 100, at=10, type=DNP, origin=Origin.LOCAL, deadline=110)
    sched = run([exclusive(1)], [req("X", 1, 50), local], config(policy="nop"))
    assert sched.lease("L").phase.value == "Rejected"
    assert len(sched.decisions) == 1
    sched = run([exclusive(2)], [req("X", 1, 50), local])
    assert spans(sched)["L"] == (10, 110, "Completed")
    assert sched.decisions == []


def test_external_deadline_lease_does_not_trigger_preemption():
    sched = run([exclusive(1)], [req("X", 1, 50), req("D", 1, 10, at=1, type=DM, deadline=20)])
    assert sched.lease("D").phase.value == "Rejected"
    assert sched.decisions == []


def test_ar_in_the_past_is_rejected():
    sched = run([exclusive(1)], [req("R", 1, 10, type=AR, start=5, at=10)])
    assert "already past" in sched.lease("R").reason


def test_unknown_pool_is_rejected():
    sched = run([exclusive(1)], [req("X", 1, 10, pool="nope"), req("Y", 1, 10, type=DM,
                                                                    deadline=50, pool="nope")])
    assert all("pool 'nope' does not exist" in sched.lease(n).reason for n in "XY")


def test_leases_go_to_the_pool_where_they_start_first():
    a, b = exclusive(1, "a"), exclusive(2, "b")
    sched = run([a, b], [req("X", 1, 100), req("Y", 1, 100), req("Z", 2, 10, at=1)])
    assert sched.lease("X").pool == "a"  # tie: the pool listed first
    assert sched.lease("Y").pool == "b"
    assert spans(sched)["Z"][:2] == (100, 110)


def test_shared_pool_places_several_vms_per_node():
    sched = run([shared(2, cpu=4000, memory=8192)],
                [req("A", 6, 100, cpu=1000, memory=1024), req("B", 3, 10, cpu=1000, memory=1024)])
    assert sched.lease("A").nodes == ("p-0",) * 4 + ("p-1",) * 2
    assert spans(sched)["B"][:2] == (100, 110)  # only 2 cpus were left


def test_duplicate_name_is_rejected_once():
    sched_actions = []
    run([exclusive(1)], [req("A", 1, 10), req("A", 1, 10, at=1)], config(),
        lambda s, t, acts: sched_actions.extend(acts))
    rejects = [a for a in sched_actions if isinstance(a, Reject)]
    assert len(rejects) == 1 and "already exists" in rejects[0].reason


def test_cancellable_best_effort_runs_like_any_best_effort():
    sched = run([exclusive(1)], [req("A", 1, 10, type=BEC), req("B", 1, 10, type=BEC)])
    assert spans(sched) == {"A": (0, 10, "Completed"), "B": (10, 20, "Completed")}


def test_deadline_that_has_already_become_unreachable_is_rejected():
    # submitted when even an immediate start would end after the deadline
    sched = run([exclusive(1)], [req("D", 1, 100, at=100, type=DM, deadline=150)])
    assert sched.lease("D").phase.value == "Rejected"
    assert "deadline t=150s" in sched.lease("D").reason
