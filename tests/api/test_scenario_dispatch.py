"""`config.dispatch` and a pool's `dispatch` statistics in scenario files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leasehold.core.model import PoolStatistics
from scenario_files import load, problems


def scenario(config: dict[str, Any] | None = None, **pool: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "cluster": {"pools": [{"name": "rp1", "nodes": 2, **pool}]},
        "leases": [{"name": "a", "type": "BestEffortSuspendable", "vms": 1, "duration": 60}],
    }
    if config is not None:
        data["config"] = config
    return data


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(scenario({"dispatch": "pap"}),
                 'config: dispatch: unknown dispatch "pap"; expected one of earliest, rr, lrf,'
                 ' bcf, pap-rnd, pap-rtdp (did you mean "pap-rnd"?) (line 11)', id="unknown-name"),
    pytest.param(scenario({"dispatch": 3}),
                 "config: dispatch: must be one of earliest, rr, lrf, bcf, pap-rnd, pap-rtdp,"
                 " got 3 (line 11)", id="not-a-name"),
    pytest.param(scenario({"dispatchSeed": 1.5}),
                 "config: dispatchSeed: must be a whole number, got 1.5 (line 11)",
                 id="seed-not-whole"),
    pytest.param(scenario(dispatch={"localRate": -1}),
                 'cluster.pools[0] (name "rp1"): dispatch.localRate: must be >= 0,'
                 " got -1 (line 6)", id="negative-rate"),
    pytest.param(scenario(dispatch={"localrate": 1}),
                 'cluster.pools[0] (name "rp1"): dispatch.localrate: unknown field; expected'
                 " one of localRate, localVms, localDuration, externalRate, externalVms,"
                 " externalDuration, externalCv, localCv (did you mean \"localRate\"?)"
                 " (line 6)", id="unknown-field"),
])
def test_one_clear_problem(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    assert problems(tmp_path, data) == [expected]


def test_dispatch_and_statistics_reach_the_core(tmp_path: Path) -> None:
    loaded = load(tmp_path, scenario(
        {"dispatch": "pap-rtdp", "dispatchSeed": 4},
        dispatch={"localRate": 0.12, "externalDuration": "7m", "externalCv": 0.4}))
    config = loaded.scheduler_config()
    assert (config.dispatch, config.dispatch_seed) == ("pap-rtdp", 4)
    (spec,) = loaded.pool_specs()
    assert spec.statistics == PoolStatistics(local_rate=0.12, external_duration=420,
                                             external_cv=0.4)


def test_by_default_nothing_is_dispatched(tmp_path: Path) -> None:
    loaded = load(tmp_path, scenario())
    assert loaded.scheduler_config().dispatch == "earliest"
    assert loaded.pool_specs()[0].statistics is None
