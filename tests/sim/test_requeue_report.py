"""`leasehold simulate`'s document under ``config.suspension: none``: each lease's
re-queues and lost work, their totals in the metrics, and the stop in its timeline;
under ``all`` the document is as before (no such keys)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import AR, config, exclusive, req
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.report import result_document

REQS = [req("A", 1, 100), req("B", 1, 100, 1), req("R", 1, 20, 10, type=AR, start=50)]


def document(suspension):
    pools = [exclusive(1)]
    cfg = replace(config(), suspension=suspension)
    return result_document(simulate(pools, cfg, REQS), pools)


def test_requeues_and_lost_work_are_reported():
    doc = document("none")
    by_name = {r["name"]: r for r in doc["leases"]}
    assert (by_name["A"]["requeues"], by_name["A"]["lostWorkSeconds"]) == (1, 50)
    assert (by_name["B"]["requeues"], by_name["B"]["lostWorkSeconds"]) == (0, 0)
    assert (doc["metrics"]["requeues"], doc["metrics"]["lostWorkSeconds"]) == (1, 50)
    # A ran [0, 50) and stopped at once; B's reservation moved up to R's end (70), and
    # A ran again after it, from the start
    assert by_name["A"]["timeline"] == [["run", 0, 50], ["run", 170, 270]]
    assert by_name["B"]["timeline"] == [["run", 70, 170]]


@pytest.mark.parametrize("key", ["requeues", "lostWorkSeconds"])
def test_suspension_all_adds_no_keys(key):
    doc = document("all")
    assert key not in doc["metrics"]
    assert all(key not in r for r in doc["leases"])
