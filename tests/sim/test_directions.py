"""The directions the reproductions carry (docs/reproduction.md), asserted on small,
fast versions of each experiment of examples/experiments/: a regression guard, so
that a change that flips a reproduced result fails here rather than silently in the
next `make reproduce`.

Each small version keeps the experiment's setting and grid but runs 1,000 requests
(a third of the papers'), 3 seeds and the four policies the papers compare. Only
directions that hold at every grid point were kept, checked on the means of seeds
1–3 and, separately, of seeds 4–6 (two seeds are too few: mlip vs mov flips at a
point). What does NOT hold at every point is left out on purpose: mlip preempting
no more than moml (the committed 001 sweep has moml 840 vs mlip 841 at 6 VMs), and
any order of overheads between mov and moml (moml's mean is below mov's at 5 of the
19 points of the full sweeps)."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import yaml

from leasehold_emulator.sim.experiment import read_results, run, validate_experiment

EXAMPLES = Path(__file__).resolve().parents[2] / "examples/experiments"
JOBS, SEEDS = 1000, 3
PREEMPTING = ("mlip", "mov", "moml")
EXPERIMENTS = ("000-best-effort", "000-deadline", "000-local", "001-vms", "local-share")

#: point (its JSON key) -> policy -> metric -> mean over the seeds
Means = dict[str, dict[str, dict[str, float]]]


def small_version(name: str, out: Path) -> Means:
    """Run the small version of ``name`` into ``out``; the means by point."""
    data = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    data["workload"]["jobs"] = JOBS
    data["replications"] = SEEDS
    data["policies"] = ["nop", *PREEMPTING]
    run(validate_experiment(data, name), out, processes=1)
    values: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for row in read_results(out):
        for metric in ("localRejectionRate", "preemptions"):
            values[row["point"]][row["policy"]][metric].append(row[metric])
    return {point: {policy: {m: statistics.mean(v) for m, v in by_metric.items()}
                    for policy, by_metric in by_policy.items()}
            for point, by_policy in values.items()}


@pytest.fixture(scope="module")
def means(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Means]:
    """Each experiment's small version, run once for the whole module."""
    root = tmp_path_factory.mktemp("directions")
    return cache(lambda name: small_version(name, root / name))


def ends(got: Means, key: str) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """The means at the grid's first and last value of ``key``."""
    by_value = sorted(got, key=lambda p: json.loads(p)[key])
    return got[by_value[0]], got[by_value[-1]]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_preemption_lowers_local_rejection_at_every_point(means, name):
    for point, by_policy in means(name).items():
        nop = by_policy["nop"]["localRejectionRate"]
        for policy in PREEMPTING:
            assert by_policy[policy]["localRejectionRate"] < nop, (point, policy)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_mlip_preempts_no_more_leases_than_mov_at_every_point(means, name):
    for point, by_policy in means(name).items():
        assert by_policy["mlip"]["preemptions"] <= by_policy["mov"]["preemptions"], point
        assert by_policy["nop"]["preemptions"] == 0, point


@pytest.mark.parametrize(("name", "key", "rises"), [
    # 000 Fig. 7(a): preemptions rise with the best-effort share
    ("000-best-effort", "mix.best_effort", True),
    # 000 Fig. 7(b) here: they fall as the deadline share grows (fewer to preempt)
    ("000-deadline", "mix.deadline", False),
], ids=["best-effort-share", "deadline-share"])
def test_preemptions_follow_the_share_of_preemptable_leases(means, name, key, rises):
    first, last = ends(means(name), key)
    for policy in PREEMPTING:
        assert (last[policy]["preemptions"] > first[policy]["preemptions"]) == rises, policy


def test_more_local_requests_mean_more_rejected_under_preemption_fewer_without(means):
    first, last = ends(means("000-local"), "mix.local")
    for policy in PREEMPTING:
        assert last[policy]["localRejectionRate"] > first[policy]["localRejectionRate"], policy
    assert last["nop"]["localRejectionRate"] < first["nop"]["localRejectionRate"]
