"""Telling the operator's own status writes, shown back by the API server, from
another writer's (issue 17): the API server shows a Lease's writes in order, may
give 300.0 back as 300 and drop null fields."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import DM, exclusive, req, run
from leasehold.api.clock import Clock, epoch
from leasehold.core.model import Origin
from leasehold.core.scheduler import Scheduler
from leasehold.kube.status import Echoes, Tracked, redacted, renamed, status_of

A = {"phase": "Scheduled", "progress": {"ranSeconds": 0.0}, "reservation": {"nodes": None}}
B = {"phase": "Running", "progress": {"ranSeconds": 12.5}, "endedAt": None}
C = {"phase": "Running", "progress": {"ranSeconds": 300.0}}


@pytest.mark.parametrize(("given", "shown", "foreign"), [
    pytest.param([A], [A], [False], id="its-own-write"),
    pytest.param([A, B], [A, B], [False, False], id="its-writes-in-order"),
    pytest.param([A, B, C], [A, C], [False, False], id="one-superseded-never-shown"),
    pytest.param([A], [{"phase": "Scheduled", "progress": {"ranSeconds": 0},
                        "reservation": {}}], [False],
                 id="whole-floats-and-nulls-as-the-server-gives-them"),
    pytest.param([A], [{**A, "phase": "Completed"}], [True], id="a-field-changed"),
    pytest.param([A], [{**A, "finishedAt": 1.0}], [True], id="a-field-added"),
    pytest.param([A], [{}], [True], id="the-status-removed"),
    pytest.param([A, B], [B, A], [False, True], id="an-older-write-shown-again"),
    pytest.param([], [{"phase": "Completed"}], [False], id="nothing-written-yet"),
])
def test_a_status_shown_is_its_own_or_foreign(given, shown, foreign):
    echoes = Echoes()
    for status in given:
        echoes.given("u", status)
    assert [echoes.foreign("u", s) for s in shown] == foreign


def test_a_lease_forgotten_has_no_writes_to_compare():
    echoes = Echoes()
    echoes.given("u", A)
    echoes.forget("u")
    assert not echoes.foreign("u", {"phase": "Completed"})


def test_at_most_the_last_writes_are_kept():
    echoes = Echoes()
    statuses = [{"phase": "Running", "progress": {"ranSeconds": float(i)}}
                for i in range(Echoes.LIMIT + 2)]
    for status in statuses:
        echoes.given("u", status)
    assert echoes.foreign("u", statuses[0])  # too old: taken for another writer's
    assert not echoes.foreign("u", statuses[-1])


@pytest.mark.parametrize(("text", "disclose", "want"), [
    pytest.param("preempted by owners/a.", False, "preempted by a Lease of another namespace.",
                 id="named-at-the-end-of-a-sentence"),
    pytest.param("owners/a~2 and owners/ab, owners/a.b", False,
                 "owners/a~2 and owners/ab, owners/a.b", id="only-the-name-whole"),
    pytest.param("preempted by owners/a", True, "preempted by owners/a", id="disclosed"),
])
def test_another_namespaces_lease_is_named_only_where_allowed(text, disclose, want):
    assert redacted(text, "lab", disclose, "owners/a") == want


def test_a_lease_of_the_same_namespace_is_named():
    assert redacted("preempted by lab/b", "lab", False, "lab/b") == "preempted by lab/b"


#: emulated time 0 at 10:00, an emulated minute per second
CLOCK = Clock(60.0, epoch("2026-11-22T10:00:00Z"))


def test_a_status_says_its_times_in_rfc3339_and_its_reasons_in_the_users_terms():
    """Issue 18: ``submittedAt: 729.77`` and ``t=19981.32s`` were the core's seconds.
    The times a status keeps to be measured and ordered by are to the microsecond
    (an emulated minute per second would round them to a minute)."""
    core = run([exclusive(2)], [req("A", 2, 5400), req("D", 2, 3600, at=90.5, type=DM,
                                                        deadline=7200)])
    t = Tracked("lab", "d", "uid-d", None, None, Origin.EXTERNAL)
    status = status_of(core.lease("D"), t, CLOCK, 7200.0)
    assert (status["submittedAt"], status["sequence"], status["startedAt"],
            status["endedAt"]) == ("2026-11-22T10:00:01.508333Z", 1, None,
                                   "2026-11-22T10:00:01.508333Z")
    said = ("no slot for 2 VM(s) of 1 cpu and 512 MiB for 1h from 2026-11-22T10:00:01Z"
            " that ends by its deadline 2026-11-22T10:02:00Z")
    assert status["message"] == said
    assert [c["message"] for c in status["conditions"]] == [said, said]
    done = status_of(core.lease("A"), Tracked("lab", "a", "uid-a", None, None,
                                              Origin.EXTERNAL), CLOCK, 7200.0)
    assert (done["startedAt"], done["endedAt"]) == ("2026-11-22T10:00:00.000000Z",
                                                    "2026-11-22T10:01:30.000000Z")


def test_a_status_on_a_fast_pool_counts_remaining_work_not_wall_seconds():
    """Issue 21 (pool speed): 1 h of work on a pool of speed 2 runs 30 min; after
    10 min of it, 40 min of work are left (not 50: the 10 min did 20 min of work)."""
    core = Scheduler([replace(exclusive(2), speed=2.0)])
    core.submit(req("A", 2, 3600), 0.0)
    core.advance(0.0)
    t = Tracked("lab", "a", "uid-a", None, None, Origin.EXTERNAL)
    status = status_of(core.lease("A"), t, CLOCK, 600.0)
    assert status["progress"] == {"ranSeconds": 600.0, "remainingSeconds": 2400.0}


@pytest.mark.parametrize(("text", "nodes", "said"), [
    pytest.param("cancelled: its node spot-1 was lost", {}, "cancelled: its node spot-1 was"
                 " lost", id="emulated-names-kept"),
    pytest.param("cancelled: its node spot-1 was lost", {"spot-1": "ip-10-0-0-7"},
                 "cancelled: its node ip-10-0-0-7 was lost", id="real-name"),
    pytest.param("its node spot-1, spot-10 was lost: queued again",
                 {"spot-1": "a", "spot-10": "b"}, "its node a, b was lost: queued again",
                 id="several"),
    pytest.param("its node spot-10 was lost", {"spot-1": "a"}, "its node spot-10 was lost",
                 id="a-prefix-is-not-a-name"),
])
def test_a_core_message_names_nodes_as_the_cluster_does(text, nodes, said):
    assert renamed(text, nodes) == said
