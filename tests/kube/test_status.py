"""Telling the operator's own status writes, shown back by the API server, from
another writer's (issue 17): the API server shows a Lease's writes in order, may
give 300.0 back as 300 and drop null fields."""

from __future__ import annotations

import pytest

from leasehold.kube.status import Echoes, redacted

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
