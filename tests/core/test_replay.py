"""The one driver (replay): the same timed inputs give the same core, whoever feeds
them and whenever it wakes up — the simulator's pace, a live shell's irregular
steps, or a recovery replaying its journal."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import DNP, config, exclusive, req
from leasehold.core.model import Origin
from leasehold.core.replay import Input, feed, replay, run, run_live, stops
from leasehold.core.scheduler import Scheduler
from strategies import workloads


def state(sched: Scheduler) -> list[tuple]:
    """Everything the shells can read of every lease."""
    return [(v.name, v.phase, v.pool, v.nodes, v.reservation, v.first_start, v.end, v.ran,
             v.remaining, v.preemptions, v.suspensions, v.migrations, v.overhead, v.reason)
            for v in sched.leases()]


def inputs_of(requests, reports) -> list[Input]:
    return [*map(Input.submit, requests),
            *(Input.cancel(n, t) if k == "cancel" else Input.finished(n, t)
              for t, k, n in reports)]


def live(pools, cfg, inputs: list[Input], wakes: list[float]) -> tuple[Scheduler, list]:
    """A live shell: it wakes at its own times (``wakes``) and for the core's timers,
    and tells the core at each wake-up what arrived since — at the time it wakes,
    which is when a live shell learns of it. Returns the core and every action."""
    sched = Scheduler(pools, cfg)
    actions: list = []
    pending = sorted(inputs, key=lambda x: x.time)
    moments = sorted({*wakes, *(x.time for x in pending)})
    i = 0
    for now in moments:
        while (due := sched.next_event_time()) is not None and due < now:
            actions += sched.advance(due)  # woken by a timer
        while i < len(pending) and pending[i].time <= now:
            x = pending[i]
            feed(sched, Input(now, x.kind, x.lease, x.request, x.reason))
            i += 1
        actions += sched.advance(now)
    while (due := sched.next_event_time()) is not None:
        actions += sched.advance(due)
    return sched, actions


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.lists(st.integers(0, 900_000).map(lambda x: x / 1000), max_size=12))
def test_a_live_shell_that_wakes_at_any_times_arrives_where_replay_does(workload, wakes):
    pools, requests, cfg, reports = workload
    inputs = inputs_of(requests, reports)
    shell, live_actions = live(pools, cfg, inputs, wakes)
    # what the live shell told the core is its journal: the inputs at the times it gave them
    replayed = Scheduler(pools, cfg)
    assert run(replayed, inputs) == live_actions
    assert state(replayed) == state(shell)
    assert replayed.decisions == shell.decisions


def test_replay_stops_at_until_with_the_core_there():
    sched = Scheduler([exclusive(1)], config())
    steps = list(replay(sched, [Input.submit(req("a", 1, 100)), Input.submit(req("b", 1, 100))],
                        until=150))
    assert [s.time for s in steps] == [0, 100, 150]
    assert sched.now == 150
    assert sched.lease("b").first_start == 100 and sched.lease("b").end is None
    # and goes on from there when asked
    assert [s.time for s in replay(sched, [])] == [200]
    assert sched.lease("b").phase.value == "Completed"


def _is_start(a) -> bool:
    return a.kind in ("Start", "Resume") or (a.kind == "Migrate" and bool(a.nodes))


def _starts(actions) -> list[str]:
    return [a.lease for a in actions if _is_start(a)]


def test_a_shell_far_behind_stops_the_core_before_a_run_it_began_ends():
    # a runs 0-10, b 10-20; the shell wakes only at 100: in one call b would start
    # and end, its pods never made
    sched = Scheduler([exclusive(1)], config())
    told = [Input.submit(req("a", 1, 10)), Input.submit(req("b", 1, 10)),
            Input.submit(req("c", 1, 10, at=50), time=50)]
    actions, rest = run_live(sched, told, 100)
    assert (_starts(actions), sched.now, rest) == (["a"], 0, told[2:])
    actions, rest = run_live(sched, rest, 100)
    assert ([a.kind for a in actions], _starts(actions), sched.now) == (
        ["Complete", "Start"], ["b"], 10)
    actions, rest = run_live(sched, rest, 100)  # b ends at 20, c starts at 50
    assert (_starts(actions), sched.now, rest) == (["c"], 50, [])
    actions, rest = run_live(sched, [], 100)  # c ends at 60; nothing starts after
    assert ([a.kind for a in actions], rest, sched.now) == (["Complete"], [], 100)


def test_runs_that_go_on_past_the_shells_time_do_not_stop_the_core():
    # a (0-50) and b (0-500) have their pods; c starts when a ends, and runs past
    # 100: the core goes through 50 to 100 in one call
    sched = Scheduler([exclusive(2)], config())
    told = [Input.submit(req("a", 1, 50)), Input.submit(req("b", 1, 500)),
            Input.submit(req("c", 1, 500))]
    assert _starts(run_live(sched, told, 0)[0]) == ["a", "b"]
    actions, rest = run_live(sched, [], 100)
    assert ([(a.kind, a.lease) for a in actions], sched.now, rest) == (
        [("Complete", "a"), ("Start", "c")], 100, [])


def test_a_run_whose_pods_are_not_made_holds_the_core_before_its_end():
    # a starts at 0 and ends at 10; its pods wait (unmade): later calls do not move
    # the core to 10, not even a step, and b (arriving at 5) is given
    sched = Scheduler([exclusive(2)], config())
    told = [Input.submit(req("a", 1, 10)), Input.submit(req("b", 1, 100, at=5), time=5)]
    assert _starts(run_live(sched, told[:1], 0)[0]) == ["a"]
    actions, rest = run_live(sched, told[1:], 100, unmade={"a"})
    assert (_starts(actions), sched.now, rest) == (["b"], 5, [])
    actions, rest = run_live(sched, [], 100, unmade={"a"})
    assert (actions, sched.now, rest) == ([], 5, [])
    assert stops(sched, [], {"a"}, 100) and not stops(sched, [], {"a"}, 9)
    # its pods made: on through its end
    actions, rest = run_live(sched, [], 100)
    assert ([(a.kind, a.lease) for a in actions], sched.now) == ([("Complete", "a")], 100)


@pytest.mark.parametrize(("arrives", "held"), [
    (Input.submit(req("d", 1, 500, at=10), time=10), False),
    (Input.cancel("a", 10), True),
    (Input.submit(req("d", 1, 500, at=10, origin=Origin.LOCAL, type=DNP, deadline=600),
                  time=10), True),
], ids=["external-submit-goes-on", "its-cancel-waits", "local-may-preempt-waits"])
def test_an_input_that_may_end_an_unmade_run_waits(arrives, held):
    sched = Scheduler([exclusive(2)], config())
    run_live(sched, [Input.submit(req("a", 1, 500))], 0)
    _, rest = run_live(sched, [arrives], 100, unmade={"a"})
    assert (sched.now, rest) == ((0, [arrives]) if held else (100, []))


@pytest.mark.parametrize(("arrives", "stops"), [
    (req("d", 1, 500, at=10), False),  # an external lease preempts nothing
    (req("d", 1, 500, at=10, origin=Origin.LOCAL, type=DNP, deadline=600), True),
], ids=["external-goes-on", "local-may-preempt-waits"])
def test_an_input_that_may_preempt_waits_for_the_pods_of_a_run_begun_before_it(arrives,
                                                                                stops):
    # a started at 0; d arrives at 10: if d may preempt a, the call stops before it,
    # and d is given at the next, once a's pods are made
    sched = Scheduler([exclusive(2)], config())
    told = [Input.submit(req("a", 1, 500)), Input.submit(arrives, time=10)]
    _, rest = run_live(sched, told, 100)
    assert (sched.now, rest) == ((0, told[1:]) if stops else (100, []))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads(), st.integers(1, 900))
def test_stopping_before_runs_end_arrives_where_one_run_does(workload, until):
    pools, requests, cfg, reports = workload
    inputs = inputs_of(requests, reports)
    once = Scheduler(pools, cfg)
    expected = run(once, [x for x in inputs if x.time <= until], until)
    stepped, actions, rest = Scheduler(pools, cfg), [], [x for x in inputs if x.time <= until]
    for _ in range(10_000):
        got, rest = run_live(stepped, rest, until)
        # a run begun in a call does not change later in that call (nothing reaches
        # it there: no timer of its own and no input)
        begun = {(a.lease, a.time) for a in got if _is_start(a)}
        assert not [b for b in got for lease, t in begun if b.lease == lease and b.time > t]
        actions += got
        if stepped.now == until and not rest:
            break
    assert actions == expected
    assert state(stepped) == state(once)


def test_inputs_of_one_instant_are_given_together_in_their_order():
    # a and b arrive together: one plan sees both, and a (given first) is queued first
    sched = Scheduler([exclusive(1)], config())
    steps = list(replay(sched, [Input.submit(req("b", 1, 10, at=5)),
                                Input.submit(req("a", 1, 10, at=5), time=5),
                                Input.cancel("b", 5)]))
    assert steps[0].time == 5 and steps[0].fed == 3
    assert sched.lease("a").first_start == 5
    assert sched.lease("b").phase.value == "Cancelled"


def test_a_lease_that_failed_gives_its_nodes_to_the_next_at_that_instant():
    """A failure reported by the shell is an input like a cancellation: the lease is
    Failed with the reason, and the lease waiting for its nodes starts then."""
    sched = Scheduler([exclusive(1)], config())
    steps = list(replay(sched, [Input.submit(req("A", 1, 100)), Input.submit(req("B", 1, 100)),
                                Input.fail("A", 5, "pods refused")]))
    a, b = sched.lease("A"), sched.lease("B")
    assert a is not None and b is not None
    assert (a.phase.value, a.reason, a.end) == ("Failed", "pods refused", 5)
    assert b.first_start == 5 and b.phase.value == "Completed"
    assert [(type(x).__name__, x.lease) for x in steps[1].actions] == [
        ("Fail", "A"), ("Start", "B")]
