"""000 Fig. 10 (issue 19): the testbed's utilization over time, NOP against MOML,
holds the directions the paper's text reads off its figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders import req
from leasehold.core.model import NodeGroup, PoolSpec, SchedulerConfig
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.testbed_figure import curves, main, utilization_curve

TESTBED = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "testbed.yaml"


@pytest.fixture(scope="module")
def runs():
    nop, moml = curves(TESTBED)
    return nop, moml


def test_both_fill_the_testbed_as_requests_one_to_six_arrive(runs):
    for c in runs:
        assert c.first_full() == 580  # request 6 arrives at 0:09:40
        assert max(c.utilization) == pytest.approx(1.0)  # never more than the cores
        assert c.utilization[-1] == 0  # and back to 0% once all have completed


def test_nop_rejects_the_local_request_and_moml_preempts_five_and_six(runs):
    nop, moml = runs
    assert (nop.local, nop.preempted) == ("Rejected", ())
    assert (moml.local, moml.preempted) == ("Completed", ("5", "6"))


@pytest.mark.parametrize("measure", [
    pytest.param(lambda c, common: c.seconds_at_least(1.0), id="longer at 100%"),
    pytest.param(lambda c, common: c.seconds_at_least(0.75), id="longer at 75% or more"),
    pytest.param(lambda c, common: c.mean(common), id="higher mean while both run"),
    pytest.param(lambda c, common: c.mean(), id="higher mean over its own makespan"),
    pytest.param(lambda c, common: c.makespan, id="longer makespan"),
])
def test_moml_keeps_utilization_higher_for_longer_and_ends_later(runs, measure):
    nop, moml = runs
    common = min(nop.makespan, moml.makespan)
    assert measure(moml, common) > measure(nop, common)


def test_the_command_writes_the_plot_and_the_table(tmp_path):
    assert main([str(TESTBED), str(tmp_path)]) == 0
    assert (tmp_path / "000-fig10.png").stat().st_size > 0
    table = (tmp_path / "000-fig10.md").read_text()
    assert "| MOML | Completed | {5, 6} | 580 |" in table
    assert main(["a", "b", "c"]) == 2


def test_the_committed_table_is_what_the_command_writes(tmp_path):
    # docs/reproduction/000-fig10.md is `make fig10`'s: regenerate it, do not edit it
    main([str(TESTBED), str(tmp_path)])
    committed = TESTBED.parents[2] / "docs" / "reproduction" / "000-fig10.md"
    assert committed.read_text() == (tmp_path / "000-fig10.md").read_text()


def test_the_share_of_cores_held_counts_every_nodes_own_cores():
    """A pool of mixed sizes: two 8-core nodes and a 32-core one, 48 cores."""
    pool = PoolSpec("p", 3, 32000, 131072, groups=(NodeGroup(2, 8000, 32768),
                                                   NodeGroup(1, 32000, 131072)))
    result = simulate([pool], SchedulerConfig(), [req("A", 2, 100, cpu=16000, memory=1024)])
    curve = utilization_curve(result, [pool], "moml")
    assert max(curve.utilization) == pytest.approx(32 / 48)
