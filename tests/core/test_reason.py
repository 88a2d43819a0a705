"""The core's reasons keep the times and durations they name apart (issue 18): the
simulator prints them in its own seconds, as it always has; a shell with a clock
writes them in its user's terms."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from builders import AR, DM, DNP, exclusive, req, run
from leasehold.core.reason import At, Lasting, Reason


def terms(reason: Reason) -> str:
    """The reason with times and durations marked, as a shell would write them."""
    return reason.render(lambda t: f"<time {t:g}>", lambda s: f"<for {s:g}>")


@pytest.mark.parametrize(("requests", "name", "said", "rendered"), [
    pytest.param([req("A", 4, 100), req("D", 2, 100, at=1, type=DM, deadline=199)], "D",
                 "no slot for 2 VM(s) of 1 cpu and 512 MiB for 100s from t=1s that ends by"
                 " its deadline t=199s",
                 "no slot for 2 VM(s) of 1 cpu and 512 MiB for <for 100> from <time 1> that"
                 " ends by its deadline <time 199>", id="no-slot-by-the-deadline"),
    pytest.param([req("big", 5, 90.5)], "big",
                 "can never fit: needs 5 VM(s) of 1 cpu and 512 MiB for 90.5s, but the"
                 " largest pool holds 4 such VMs",
                 "can never fit: needs 5 VM(s) of 1 cpu and 512 MiB for <for 90.5>, but the"
                 " largest pool holds 4 such VMs", id="never-fits"),
    pytest.param([req("X", 4, 500, type=DNP, deadline=500),
                  req("R", 4, 100, type=AR, start=200, at=10)], "R",
                 "no room for 4 VM(s) of 1 cpu and 512 MiB for 100s at its start t=200s;"
                 " preempting every preemptable lease would not free enough room either",
                 "no room for 4 VM(s) of 1 cpu and 512 MiB for <for 100> at its start"
                 " <time 200>; preempting every preemptable lease would not free enough"
                 " room either", id="no-room-for-a-reservation"),
])
def test_a_rejection_says_its_times_in_either_terms(requests, name, said, rendered):
    reason = run([exclusive(4)], requests).lease(name).reason
    assert isinstance(reason, Reason)
    assert reason == said  # the simulator's words, unchanged
    assert terms(reason) == rendered


def test_a_reason_keeps_its_parts_when_built_from_reasons_and_copied():
    inner = Reason("from ", At(1.5), " for ", Lasting(60))
    reason = Reason("lost, and ", inner, "")
    assert reason == "lost, and from t=1.5s for 60s"
    assert reason.parts == ("lost, and ", "from ", At(1.5), " for ", Lasting(60))
    for again in (copy.deepcopy(reason), pickle.loads(pickle.dumps(reason)),
                  Reason.from_data(json.loads(json.dumps(reason.data())))):
        assert type(again) is Reason and again == reason and again.parts == reason.parts
    assert json.dumps({"reason": reason}) == '{"reason": "lost, and from t=1.5s for 60s"}'


@pytest.mark.parametrize("data", [
    pytest.param("text", id="not-a-list"),
    pytest.param([{"t": 1, "seconds": 2}], id="two-keys"),
    pytest.param([7], id="a-number"),
    pytest.param([{"t": None}], id="a-null-time"),
    pytest.param([{"seconds": "90"}], id="a-duration-as-text"),
    pytest.param([{"t": True}], id="a-boolean-time"),
])
def test_a_reason_from_data_it_did_not_give_is_refused(data):
    with pytest.raises(ValueError):
        Reason.from_data(data)
