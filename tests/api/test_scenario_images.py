"""A pool's `images` and `vm`, a lease's `image` and `config.suspension` in scenario
files (issue 22's vocabulary; DESIGN §2.6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leasehold.core.model import ImagesSpec, VmModel
from scenario_files import load, problems


def scenario(config: dict[str, Any] | None = None, lease: dict[str, Any] | None = None,
             **pool: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "cluster": {"pools": [{"name": "rp1", "nodes": 2, **pool}]},
        "leases": [{"name": "a", "type": "BestEffortSuspendable", "vms": 1, "duration": 60,
                    **(lease or {})}],
    }
    if config is not None:
        data["config"] = config
    return data


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(scenario(images={"bandwidth": 0, "disk": 100}),
                 'cluster.pools[0] (name "rp1"): images.bandwidth: must be > 0, got 0 (line 6)',
                 id="no-bandwidth"),
    pytest.param(scenario(images={"bandwidth": 10}),
                 'cluster.pools[0] (name "rp1"): images.disk: required field is missing'
                 " (line 5)", id="no-disk"),
    pytest.param(scenario(images={"bandwidth": 10, "disk": 100, "cache": 200}),
                 'cluster.pools[0] (name "rp1"): images.cache: is 200 MB, more than the disk'
                 " (100 MB) (line 8)", id="cache-past-disk"),
    pytest.param(scenario(vm={"boot": "-5s"}),
                 'cluster.pools[0] (name "rp1"): vm.boot: must not be negative, got "-5s" (line 6)',
                 id="negative-boot"),
    pytest.param(scenario({"suspension": "some"}),
                 'config: suspension: unknown suspension "some"; expected one of all, none'
                 " (line 11)",
                 id="unknown-suspension"),
])
def test_one_clear_problem(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    assert problems(tmp_path, data) == [expected]


def test_images_vm_image_and_suspension_reach_the_core(tmp_path: Path) -> None:
    loaded = load(tmp_path, scenario(
        {"suspension": "none"}, {"image": "centos", "imageSizeMB": 4096},
        images={"bandwidth": 10, "disk": 40960, "predeployed": ["centos"]},
        vm={"slowdown": 0.05, "boot": "10s", "shutdown": 10}))
    pool = loaded.pool_specs()[0]
    assert pool.images == ImagesSpec(bandwidth=10, disk=40960, predeployed=("centos",))
    assert pool.images.cache_mb == 20480
    assert pool.vm == VmModel(slowdown=0.05, boot=10, shutdown=10)
    request = loaded.requests()[0]
    assert (request.image, request.image_mb) == ("centos", 4096)
    assert loaded.scheduler_config().suspension == "none"


def test_predeployed_true_means_every_image(tmp_path: Path) -> None:
    loaded = load(tmp_path, scenario(images={"bandwidth": 10, "disk": 100, "predeployed": True}))
    images = loaded.pool_specs()[0].images
    assert images is not None and images.predeployed_all and images.predeployed == ()


def test_without_images_a_pool_is_as_before(tmp_path: Path) -> None:
    loaded = load(tmp_path, scenario())
    assert (loaded.pool_specs()[0].images, loaded.pool_specs()[0].vm) == (None, None)
    assert loaded.scheduler_config().suspension == "all"


@pytest.mark.parametrize(("given", "expected"), [
    pytest.param({}, True, id="default-on"),
    pytest.param({"piggyback": False}, False, id="off"),
])
def test_piggyback_reaches_the_core(tmp_path: Path, given: dict[str, Any],
                                    expected: bool) -> None:
    loaded = load(tmp_path, scenario(images={"bandwidth": 10, "disk": 100, **given}))
    images = loaded.pool_specs()[0].images
    assert images is not None and images.piggyback is expected
