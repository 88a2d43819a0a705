"""`leasehold simulate` given what a careless user writes into issue 23's inputs
(volatile pools, the utility mode): one clear line and a non-zero exit, or a run
that ends and says only what happened — never a traceback, a warning from numpy or
a run that does not end. Real subprocesses, real files."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

SPOT = {"failureRate": 0.05, "recoverySeconds": 60, "epoch": 10}
PUBLIC = {"failureRate": 0.3, "recoverySeconds": 120, "epoch": 10}


def spot_scenario(**volatile: Any) -> dict[str, Any]:
    """A dedicated node beside a volatile pool of four, two leases on it."""
    return {
        "cluster": {"pools": [
            {"name": "dedicated", "nodes": 1, "exclusive": True},
            {"name": "spot", "nodes": 4, "exclusive": True, "volatile": {**SPOT, **volatile}},
        ]},
        "config": {"seed": 5},
        "leases": [
            {"name": "batch", "type": "BestEffortSuspendable", "vms": 2, "cpu": 1,
             "memory": 64, "duration": "10m", "pool": "spot"},
            {"name": "steady", "type": "BestEffortSuspendable", "vms": 1, "cpu": 1,
             "memory": 64, "duration": "20m", "pool": "dedicated"},
        ],
    }


def utility_scenario(public: dict[str, Any] | None = None, **utility: Any) -> dict[str, Any]:
    """Two private nodes, a public pool, two jobs of 1000 s."""
    return {
        "cluster": {"pools": [
            {"name": "dedicated", "nodes": 2, "cpu": 1},
            {"name": "public", "nodes": 1, "cpu": 1, "volatile": {**PUBLIC, **(public or {})}},
        ]},
        "config": {"seed": 1, "utility": {"private": "dedicated", "replicas": 2, **utility}},
        "leases": [{"name": f"j{i}", "type": "BestEffortSuspendable", "arrival": 15 * i,
                    "vms": 1, "cpu": 1, "duration": 1000} for i in range(2)],
    }


def changed(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``data`` with ``value`` at the dotted ``path`` (``None``: the key removed)."""
    out = copy.deepcopy(data)
    *keys, last = path.split(".")
    node: Any = out
    for key in keys:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is None:
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return out


def simulate(tmp_path: Path, data: dict[str, Any], output: str = "table"
             ) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    return subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate", str(path),
                           "-o", output], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=60)


@pytest.mark.parametrize(("data", "said"), [
    pytest.param(changed(spot_scenario(), "leases", []), "leases 0", id="no-leases-volatile"),
    pytest.param(changed(changed(spot_scenario(), "leases", []), "cluster.pools.1.volatile",
                         None), "leases 0", id="no-leases"),
    pytest.param(spot_scenario(recoverySeconds=1e308), "pool spot:", id="recovery-1e308"),
    pytest.param(spot_scenario(epoch=1e300, failureRate=1e-300), "pool spot: 0 node failures",
                 id="mean-up-overflows"),
    # nodes up 2 s at a time: the lease never gets an epoch done, and the time guard is
    # billions of failures away (it did not end in 60 s)
    pytest.param(changed(spot_scenario(failureRate=5, recoverySeconds=1), "leases.0.duration",
                         "1000d"),
                 "(20000 node failures came and no lease ended)", id="no-headway"),
], )
def test_a_run_ends_and_says_what_happened(tmp_path, data, said):
    r = simulate(tmp_path, data)
    assert (r.returncode, r.stderr) == (0, "")
    assert said in r.stdout


@pytest.mark.parametrize("data", [
    pytest.param(spot_scenario(epoch=1e9), id="nodes-that-hardly-fail"),
    pytest.param(changed(spot_scenario(), "cluster.capacity",
                         [{"at": 0, "pool": "spot", "nodes": 0}]), id="every-node-down"),
    pytest.param(changed(spot_scenario(), "leases", []), id="no-leases"),
])
def test_the_guard_is_said_only_when_the_run_reached_it(tmp_path, data):
    """Failures stop at the guard only in a run that lasts until it: a run whose
    leases all ended (or wait for a pool that is gone) long before says nothing of
    it."""
    r = simulate(tmp_path, data, output="json")
    assert r.returncode == 0, r.stderr
    assert '"failuresStopped"' not in r.stdout
    assert "failures stopped" not in simulate(tmp_path, data).stdout


@pytest.mark.parametrize(("data", "said"), [
    pytest.param(utility_scenario({"failureRate": 1e308}, replicas=None),
                 "config.utility: replicas: the default (002 §IV's formula) is more than 1000:"
                 " the public pool's nodes are down 100.000% of the time",
                 id="default-k-unbounded"),
    pytest.param(utility_scenario({"recoverySeconds": 1e300}, replicas=None),
                 "config.utility: replicas: the default (002 §IV's formula) is more than 1000",
                 id="default-k-unbounded-recovery"),
    pytest.param(utility_scenario({"failureRate": 50}, replicas=None, alpha=0.99),
                 "the public pool's nodes are down 99.834% of the time, and 1000 replicas"
                 " keep one up with confidence alpha (0.99) only below 99.541%",
                 id="default-k-too-many"),
    pytest.param(utility_scenario(replicas=10**9),
                 "config.utility: replicas: must be <= 1000, got 1000000000", id="replicas-1e9"),
    pytest.param(utility_scenario({"epoch": 1e-9}, window=1e-7, migrationSeconds=0),
                 "leases[0] (name \"j0\"): duration: is 1000 s of work, 1e+12 epochs of the"
                 " public pool's 1e-09 s", id="epoch-tiny"),
    pytest.param(changed(utility_scenario(), "leases.1.duration", "99999999999d"),
                 "leases[1] (name \"j1\"): duration: is 8.64e+15 s of work", id="work-huge"),
    pytest.param(changed(utility_scenario(), "cluster.capacity",
                         [{"at": 100, "pool": "dedicated", "nodes": 1}]),
                 "cluster: capacity: not read in the utility mode", id="capacity-changes"),
])
def test_a_utility_scenario_it_cannot_run_is_one_line(tmp_path, data, said):
    r = simulate(tmp_path, data)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    # one line per problem (a job too long is one per job), each naming its field
    assert all(line.startswith("error: ") for line in r.stderr.splitlines()), r.stderr
    assert said in r.stderr
