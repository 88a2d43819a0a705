"""Where leasehold and Haizea 1.0 part on SDSC Blue (docs/haizea.md): a lease that
fits for its whole length beside the EASY head's reservation runs through, whatever
nodes the head will take; Haizea pins the head to nodes when it plans it, and the
lease then runs in a hole and is suspended."""

from __future__ import annotations

import pytest

from builders import config, exclusive, req, run, spans


@pytest.mark.parametrize("sbb", [True, False], ids=["suspend-before-blocking", "plain"])
def test_a_lease_that_fits_beside_the_heads_reservation_is_not_suspended(sbb):
    # 6 nodes. A (2 nodes) ends early at 100; B (4) ends at 500. The head H (4) is
    # reserved at 500. At 100, C (2 nodes, 2000 s) fits for its whole length: 2 nodes
    # free now, and from 500 the 4 of B for H. Haizea had put H on A's freed nodes
    # and run C in the hole until 500 (job 2354 at 513,731 s in the 30-day trace).
    r = [req("A", 2, 1000, at=0, runtime=100), req("B", 4, 500, at=0),
         req("H", 4, 1000, at=1), req("C", 2, 2000, at=2)]
    sched = run([exclusive(6)], r, config("easy", sbb=sbb))
    got = spans(sched)
    assert got["H"][:2] == (500, 1500)
    assert got["C"][:2] == (100, 2100)
    assert sched.lease("C").suspensions == 0
