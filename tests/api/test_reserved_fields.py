"""docs/resources.md presents as features only the Lease and NodePool fields the code
reads: the fields it marks reserved are exactly those that do not reach the core,
and each of them is shown not to (when an issue builds one, its test here fails and
the docs' row must change with it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from leasehold.api.clock import Clock, epoch
from leasehold.api.resources import lease_spec, pool_spec
from leasehold.core.model import Origin, PoolSpec, Request
from leasehold.core.overhead import migrate_seconds

DOC = Path(__file__).resolve().parents[2] / "docs" / "resources.md"
CREATED = "2026-11-22T10:00:00Z"
CLOCK = Clock(1.0, epoch("2026-11-22T09:00:00Z"))
ARRIVAL = CLOCK.core(epoch(CREATED))
LEASE = {"type": "BestEffortSuspendable", "vms": 2, "duration": "1h"}
POOL = {"emulated": {"nodes": 4, "cpu": 2, "memory": "4Gi"},
        "overhead": {"model": "haizea", "bandwidth": 100}}

#: (kind, field) of every field the docs may call reserved, and the issue building it
#: (none today: issue 23 replaced the last one, NodePool `volatility`, by `volatile`)
RESERVED: dict[tuple[str, str], int] = {}


def documented_fields() -> dict[tuple[str, str], str]:
    """(kind, field) -> the meaning column, for each row of the Lease and NodePool
    field tables (a row may name several fields: `a`, `b`)."""
    rows: dict[tuple[str, str], str] = {}
    kind = ""
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            kind = line[3:].strip()
        m = re.match(r"\| (`[^|]*`) \| (.*) \|$", line)
        if kind in ("Lease", "NodePool") and m:
            for field in re.findall(r"`([^`]+)`", m.group(1)):
                rows[(kind, field)] = m.group(2)
    return rows


def core_request(extra: dict) -> Request:
    obj = {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
           "metadata": {"name": "l1", "namespace": "team", "creationTimestamp": CREATED},
           "spec": {**LEASE, **extra}}
    return lease_spec(obj, Origin.EXTERNAL, ARRIVAL, CLOCK).to_request()


def core_pool(extra: dict) -> PoolSpec:
    return pool_spec({"metadata": {"name": "p"}, "spec": {**POOL, **extra}})


def test_the_docs_call_reserved_exactly_the_unbuilt_fields_and_name_their_issue():
    rows = documented_fields()
    reserved = {key for key, meaning in rows.items() if "reserved, not yet used" in meaning}
    assert reserved == set(RESERVED)
    for key, issue in RESERVED.items():
        assert f"issue {issue}" in rows[key], key


def test_a_nodepools_volatile_block_reaches_the_core():
    """Issue 23: a volatile pool's failure law reaches the core."""
    law = core_pool({"volatile": {"failureRate": 0.3, "recoverySeconds": "2m",
                                  "capacity": {"mean": 0.8, "sigma": 0.1, "min": 0.5}}}).volatile
    assert law is not None
    assert (law.failure_rate, law.recovery, law.epoch) == (0.3, 120.0, 10.0)
    assert (law.capacity_mean, law.capacity_sigma, law.capacity_min, law.capacity_max) \
        == (0.8, 0.1, 0.5, 1.0)
    assert law.mean_up == pytest.approx(10 / 0.3)
    assert core_pool({}).volatile is None


def test_the_old_volatility_block_is_refused():
    """`volatility` (reserved, never read) was replaced by `volatile`: a NodePool still
    giving it is told so rather than silently ignored."""
    with pytest.raises(ValueError, match="volatility"):
        core_pool({"volatility": {"meanUpSeconds": 3600, "meanDownSeconds": 60}})


def test_a_leases_image_reaches_the_core():
    """Issue 22: a pool with images deploys a lease's image before its VMs start."""
    assert core_request({"image": "ubuntu-22", "imageSizeMB": 600}).image == "ubuntu-22"
    assert core_request({}).image is None


@pytest.mark.parametrize(("extra", "speed"), [
    pytest.param({}, 1.0, id="default"),
    pytest.param({"speed": 2.5}, 2.5, id="given"),
])
def test_a_nodepools_speed_reaches_the_core(extra, speed):
    """Built by issue 21: run times on the pool are work / speed."""
    assert core_pool(extra).speed == speed


def test_image_size_is_read_by_the_haizea_migration_cost():
    pool = core_pool({})
    big = core_request({"image": "ubuntu-22", "imageSizeMB": 600})
    none = core_request({})
    assert migrate_seconds(big, pool.overhead) - migrate_seconds(none, pool.overhead) \
        == pytest.approx(600 / 100)
