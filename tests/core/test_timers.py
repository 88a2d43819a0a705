"""The core's timers (leasehold.core.timers): what is due at an instant, found
without popping, agrees with a scan of every live timer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import req
from leasehold.core.lease import LeaseState
from leasehold.core.timers import ENDS, Timer, Timers


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6), st.sampled_from(list(Timer)),
                          st.booleans()), max_size=40))
def test_the_leases_due_at_the_earliest_instant_are_those_a_scan_finds(ops):
    leases = {f"l{i}": LeaseState(req(f"l{i}", 1, 10), i, name=f"l{i}") for i in range(6)}
    timers = Timers(leases)
    for lease, t, kind, bump in ops:
        st_ = leases[f"l{lease}"]
        if bump:
            timers.bump(st_)  # its earlier timers go stale
        timers.push(float(t), kind, st_)
    first = timers.next_time()
    if first is None:
        return
    live = [(t, k, name) for t, k, _, version, name in timers.heap
            if leases[name].version == version]
    assert timers.due_at(first, ENDS) == {n for t, k, n in live if t == first and k in ENDS}
    assert timers.due_at(first, frozenset(Timer)) == {n for t, _, n in live if t == first}
