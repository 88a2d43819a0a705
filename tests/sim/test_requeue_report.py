"""`leasehold simulate`'s document under ``config.suspension: none``: each lease's
re-queues and lost work, their totals in the metrics, and the stop in its timeline;
under ``all`` the document is as before (no such keys)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from builders import AR, config, exclusive, req
from leasehold.core.model import VmModel
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


def test_a_vm_pool_shows_boot_and_shutdown_as_overhead():
    # an advance reservation's start is its requested start, its boot before it and
    # its shutdown after its end; a best-effort lease's start is its run's
    pools = [replace(exclusive(1), vm=VmModel(slowdown=0.0, boot=10, shutdown=5))]
    reqs = [req("R", 1, 50, 0, type=AR, start=100), req("A", 1, 60)]
    doc = result_document(simulate(pools, config(), reqs), pools)
    by_name = {r["name"]: r for r in doc["leases"]}
    assert (by_name["R"]["start"], by_name["R"]["end"]) == (100, 150)
    assert by_name["R"]["timeline"] == [["overhead", 90, 100], ["run", 100, 150],
                                        ["overhead", 150, 155]]
    assert (by_name["A"]["start"], by_name["A"]["end"]) == (10, 70)
    assert by_name["A"]["timeline"] == [["overhead", 0, 10], ["run", 10, 70],
                                        ["overhead", 70, 75]]
