"""`config.utility` (seed 002's utility mode) and `config.seed` in scenario files:
what they become, and one clear message per mistake, naming the field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from scenario_files import load, problems

VOLATILE = {"failureRate": 0.3, "recoverySeconds": 120}


def scenario(utility: dict[str, Any] | None = None, *, public: dict[str, Any] | None = None,
             private: dict[str, Any] | None = None, lease: dict[str, Any] | None = None,
             **config: Any) -> dict[str, Any]:
    u = {"scheme": "rrr-k", "private": "dedicated", **(utility or {})}
    return {
        "cluster": {"pools": [
            {k: v for k, v in {"name": "dedicated", "nodes": 2, "cpu": 2,
                               **(private or {})}.items() if v is not None},
            {"name": "public", "nodes": 1, "cpu": 2,
             **({"volatile": VOLATILE} if public is None else public)},
        ]},
        "config": {"utility": u, **config},
        "leases": [{"name": "a", "type": "BestEffortSuspendable", "vms": 1, "cpu": 1,
                    "duration": 600, **(lease or {})}],
    }


def without_line(text: str) -> str:
    return re.sub(r" \(line \d+\)$", "", text)


@pytest.mark.parametrize(("data", "expected"), [
    pytest.param(scenario({"scheme": "RRR-K"}),
                 "config.utility: scheme: unknown scheme \"RRR-K\"; expected one of rr, rrr,"
                 " rrr-k (did you mean \"rrr-k\"?)", id="unknown-scheme"),
    pytest.param(scenario({"private": "nowhere"}),
                 'config.utility: private: unknown pool "nowhere"; expected one of'
                 " dedicated, public", id="private-names-no-pool"),
    pytest.param(scenario({"private": "public"}),
                 'config.utility: private: pool "public" is volatile, and the private pool'
                 " never fails; name a pool without a volatile block", id="private-volatile"),
    pytest.param(scenario(public={}),
                 "config: utility: no public pool: give one pool of cluster.pools (not the"
                 " private one) a volatile block (failureRate, recoverySeconds)",
                 id="no-volatile-pool"),
    pytest.param(scenario({"window": 25}),
                 "config.utility: window: is 25 s, not a whole number of the public pool's"
                 " epochs (10 s)", id="window-not-whole-epochs"),
    pytest.param(scenario({"migrationSeconds": 12}),
                 "config.utility: migrationSeconds: is 12 s, longer than an epoch (10 s)",
                 id="migration-longer-than-epoch"),
    pytest.param(scenario({"priority": 2.5}),
                 "config.utility: priority: must be <= 2, got 2.5", id="priority-above-2"),
    pytest.param(scenario({"priority": 1}),
                 "config.utility: priority: must be > 1, got 1", id="priority-1"),
    pytest.param(scenario({"alpha": 1}),
                 "config.utility: alpha: must be < 1, got 1", id="alpha-1"),
    pytest.param(scenario({"serviceRatio": 0}),
                 "config.utility: serviceRatio: must be > 0, got 0", id="rho-0"),
    pytest.param(scenario({"replicas": 0}),
                 "config.utility: replicas: must be >= 1, got 0", id="no-replicas"),
    pytest.param(scenario({"windw": 100}),
                 "config.utility: windw: unknown field; expected one of scheme, window,"
                 " threshold, serviceRatio, replicas, alpha, migrationSeconds, priority,"
                 " private (did you mean \"window\"?)", id="unknown-key"),
    pytest.param(scenario(lease={"vms": 3}),
                 'leases[0] (name "a"): vms: is 3; the utility mode runs one VM per job:'
                 " split the lease into leases of 1 VM", id="more-than-one-vm"),
    pytest.param(scenario(lease={"replicas": 2}),
                 'leases[0] (name "a"): replicas: is 2; the utility mode places replicas'
                 " by its scheme: set config.utility.replicas (rrr-k) instead",
                 id="lease-replicas"),
    pytest.param(scenario(lease={"cpu": 2}, private={"cpu": 1}),
                 'leases[0] (name "a"): cpu: one VM needs 2 cores but a node of the private'
                 ' pool "dedicated" has 1 core; in the utility mode a job\'s cpu is its share'
                 " of a private node: lower cpu", id="cpu-above-private-node"),
    pytest.param(scenario(private={"nodes": None, "cpu": None, "groups": [
        {"nodes": 1, "cpu": 2, "memory": 1024}, {"nodes": 1, "cpu": 4, "memory": 1024}]}),
        'config.utility: private: pool "dedicated" has nodes of mixed sizes; the private'
        " nodes are all alike (002 §III-A): give it one cpu and memory", id="private-mixed"),
    pytest.param(scenario(seed=-1), "config: seed: must be >= 0, got -1", id="negative-seed"),
])
def test_one_clear_problem(tmp_path: Path, data: dict[str, Any], expected: str) -> None:
    assert [without_line(p) for p in problems(tmp_path, data)] == [expected]


def test_two_volatile_pools_are_refused(tmp_path: Path) -> None:
    data = scenario()
    data["cluster"]["pools"].append({"name": "spot", "nodes": 1, "cpu": 2,
                                     "volatile": VOLATILE})
    assert [without_line(p) for p in problems(tmp_path, data)] == [
        "config: utility: more than one volatile pool (public, spot); the utility mode has"
        " one public pool: drop the volatile block of all but one"]


def test_defaults(tmp_path: Path) -> None:
    loaded = load(tmp_path, scenario({"scheme": "rr"}))
    u = loaded.config.utility
    assert u is not None
    assert (u.scheme, u.window, u.threshold, u.service_ratio, u.replicas, u.alpha,
            u.migration_seconds, u.priority, u.private) == (
        "rr", 100.0, 500, 0.8, None, 0.95, 1.0, 2.0, "dedicated")
    assert loaded.config.seed == 0


def test_without_utility_nothing_changes(tmp_path: Path) -> None:
    data = scenario()
    del data["config"]["utility"]
    loaded = load(tmp_path, data)
    assert loaded.config.utility is None


def test_the_docs_give_every_key_and_scheme() -> None:
    from leasehold.api.scenario import UtilitySpec
    from leasehold.core.model import UTILITY_SCHEME_NAMES

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs/volatile.md").read_text().split("## The utility mode", 1)[1]
    text = text.split("\n## ", 1)[0]
    for name, info in UtilitySpec.model_fields.items():
        assert f"    {info.alias or name}:" in text, name
    for scheme in UTILITY_SCHEME_NAMES:
        assert f"`{scheme}`" in text, scheme
