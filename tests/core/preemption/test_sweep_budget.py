"""The sweep's memory is bounded by its budget of summary entries, not only of states.

A pool whose candidates have overheads of many distinct values gives each state a
histogram bin per distinct total: few states, each with a bin per subset. In
003-duration at 900 s (a queue of thousands of leases) 20,000 states of tens of
thousands of bins each took over 20 GB and the kernel killed the run. Past its budget
the sweep gives up (``None``: the caller samples), as it does past its states.
"""

from __future__ import annotations

import tracemalloc
from math import comb

import pytest

from leasehold.core.model import preemption_policy
from leasehold.core.preemption import sweep
from leasehold.core.preemption.instance import Bin, Candidate, Instance, Part, Victim


def distinct_totals(n: int, need: int) -> Instance:
    """``n`` one-node leases over the whole window, overheads 1, 2, 4, ... µs (every
    set has its own total), no node free, ``need`` nodes wanted: the minimal sets
    are the C(n, need) sets of ``need`` leases, each total one histogram bin, while
    the states are only the covers 0..need."""
    cands = tuple(
        Candidate(Victim(name=f"l{i:02d}", action="suspend", vms=1, overhead=(1 << i) / 1e6,
                         vacate=0.0, since=0.0, submitted=0.0, seq=i),
                  1 << i, (Part(0, 0, 1, (1,)),))
        for i in range(n))
    return Instance("p", need, 0, (Bin(((0,),), (1,)),), cands, now=0.0)


KEEPS = {"all": sweep.ALL, "moml": sweep.summary(preemption_policy("moml"))}


@pytest.mark.parametrize("mode", list(KEEPS), ids=list(KEEPS))
def test_within_its_budget_the_sweep_counts_every_set(mode: str) -> None:
    best, hist = sweep.frontier(distinct_totals(12, 6), keep=KEEPS[mode])
    assert sum(hist.values()) == len(hist) == comb(12, 6)
    assert best[(6, 6)][:2] == (63, tuple(f"l{i:02d}" for i in range(6)))  # the cheapest


@pytest.mark.parametrize("mode", list(KEEPS), ids=list(KEEPS))
def test_past_its_budget_of_entries_the_sweep_gives_up_before_taking_the_memory(
        mode: str) -> None:
    inst = distinct_totals(20, 10)  # 184,756 bins in the end; a few states throughout
    tracemalloc.start()
    try:
        out = sweep.frontier(inst, keep=KEEPS[mode], max_entries=10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out is None
    # 10,000 entries are about 1 MB; the whole frontier took over 50 MB
    assert peak < 8_000_000, f"peak {peak / 1e6:.1f} MB"
