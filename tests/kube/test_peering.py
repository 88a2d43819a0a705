"""Two replicas with Kopf peering: one schedules, the other stands by and takes over
when the active one is killed or a replica of higher priority arrives."""

from __future__ import annotations

import datetime
import re
import signal
import time
from pathlib import Path

import pytest

from emulated import until
from leasehold.kube.peering import blockers, is_active
from operated import (
    TESTBED,
    Sampler,
    apply_testbed,
    final_phases,
    operated,
    preemptions,
    simulated_as_run,
)

NOW = 1_800_000_000.0


def seen(ago: float, priority: int = 0, lifetime: int = 60) -> dict:
    when = datetime.datetime.fromtimestamp(NOW - ago, datetime.UTC).isoformat()
    return {"priority": priority, "lifetime": lifetime, "lastseen": when}


@pytest.mark.parametrize("status, active, blocking", [
    # alone, once its own keep-alive is in
    ({"me": seen(1, 5)}, True, []),
    # its own keep-alive not yet written (Kopf resumes here; the loop waits)
    ({}, False, []),
    ({"other": seen(1, 1)}, False, []),
    # a live peer with a lower priority does not block; a higher or equal one does
    ({"me": seen(1, 5), "low": seen(1, 4)}, True, []),
    ({"me": seen(1, 5), "high": seen(1, 6)}, False, ["high"]),
    ({"me": seen(1, 5), "same": seen(1, 5)}, False, ["same"]),
    # a peer whose keep-alive lapsed counts for nothing, as does our own
    ({"me": seen(1, 5), "gone": seen(61, 9)}, True, []),
    ({"me": seen(61, 5)}, False, []),
    ({"me": seen(1, 5), "gone": seen(4, 9, lifetime=3)}, True, []),
    # what is not a keep-alive is skipped, as Kopf skips it
    ({"me": seen(1, 5), "junk": {"priority": 9}, "text": "x"}, True, []),
])
def test_the_active_replica_follows_kopfs_rule(status, active, blocking):
    assert is_active(status, "me", 5, NOW) is active
    assert [p.identity for p in blockers(status, "me", 5, NOW)] == blocking


SCALE = 140.0
LIFETIME = 3  # seconds: the test waits about this long for a take-over


def text(c, log: str) -> str:
    return (c.data / log).read_text()


def stood_by(c, log: str) -> int:
    """How many times the replica writing ``log`` gave way to another."""
    return len(re.findall(r"standing by for (?!its own)", text(c, log)))


def test_one_replica_schedules_and_another_takes_over(tmp_path: Path):
    """A (priority 2) is active and B (1) stands by; A is killed mid-run and B takes
    over; A comes back and, higher, takes over again. The run ends as simulate ends
    it, fed each lease when the operator was told of it (a lease created while no
    replica was active is submitted at the take-over, however long that took: the
    test waits on conditions, not on a take-over within so many seconds), with no
    node over-committed at any moment."""
    peering = ("--peering", "--peering-lifetime", str(LIFETIME))
    c = operated(tmp_path, "moml", TESTBED / "2-pool.yaml", SCALE, 0, *peering,
                 "--priority", "2")
    sampler = Sampler(c)
    try:
        c.until(lambda: "peering leasehold: active" in text(c, "operator.log"))
        a = c.operator
        c.start_operator("moml", 0, *peering, "--priority", "1", log="b.log")
        until(lambda: stood_by(c, "b.log") == 1, 30)
        arrivals, start = apply_testbed(c, SCALE)
        sampler.start()
        # into the run, as the leases that will be preempted arrive
        until(lambda: "lease-5" in c.kubectl("get", "lhl", "-A", "-o", "name").stdout, 90)
        assert c.recoveries("b.log") == 0 and ": active" not in text(c, "b.log")
        a.send_signal(signal.SIGKILL)
        a.wait(timeout=10)
        killed = time.monotonic()
        until(lambda: c.recoveries("b.log") == 1, LIFETIME + 20,
              explain=lambda: text(c, "b.log")[-2000:])
        took_over = time.monotonic() - killed
        print(f"B took over {took_over:.1f} s after A was killed")
        # A again, with the higher priority: B stands by, A rebuilds and schedules
        c.start_operator("moml", 0, *peering, "--priority", "2")
        until(lambda: c.recoveries() == 2, 30, explain=lambda: text(c, "operator.log")[-2000:])
        until(lambda: stood_by(c, "b.log") == 2, 30)
        arrivals.join()
        assert time.monotonic() - start < 7800 / SCALE, "the run ended before the take-overs"
        phases = until(lambda: final_phases(c), timeout=120, step=0.5,
                       explain=lambda: c.kubectl("get", "lhl", "-A").stdout)
        want, preempted = simulated_as_run(c)
        assert phases == want
        assert preempted and preemptions(c) == preempted  # lease 7 preempts, whenever it came
        assert sampler.problems == [], sampler.problems[:5]
        # B did not get active again: one recovery, at the take-over
        assert c.recoveries("b.log") == 1
        peers = c.get("clusterkopfpeerings", "leasehold")["status"]
        assert sorted(v["priority"] for v in peers.values()) == [1, 2]
    finally:
        sampler.done.set()
        c.stop_all()
