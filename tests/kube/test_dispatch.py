"""Dispatch across NodePools in the operator (issue 21 item 5, DESIGN §2.5): an
external Lease that names no NodePool is sent to one by the core's dispatch strategy
(its ``Dispatch`` action); the operator says where, by which strategy and why in the
Lease's status and a ``Dispatched`` event, keeps it over a restart, and counts the
dispatches per pool and strategy.

The shell's handling is driven through its seam, :meth:`Shell.dispatched` (what it
does with each ``Dispatch`` the core emits; this branch's core emits none yet),
against the emulated API server, which prunes a status field its schema does not
declare as a real one does. The end-to-end
test runs the operator on the emulated cluster with three NodePools and compares
where each Lease went with where `leasehold simulate` sends it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders import shared
from leasehold.api.clock import Clock, epoch
from leasehold.commands import DISPATCH
from leasehold.core.model import Dispatch, Origin, PoolSpec, SchedulerConfig
from leasehold.core.scheduler import Scheduler
from leasehold.kube.capacity import ClusterPool
from leasehold.kube.client import KubeClient, KubeError
from leasehold.kube.journal import Journal, Known
from leasehold.kube.metrics import Metrics
from leasehold.kube.pods import API_VERSION
from leasehold.kube.shell import Shell
from operated import operated

#: emulated seconds per wall second (the shell tests')
SCALE = 2000.0
POOLS = ("a", "b", "c")


def _pool(name: str) -> ClusterPool:
    return ClusterPool(PoolSpec(name, 1, 4000, 16384), (f"{name}-0",), frozenset())


async def _lease(client: KubeClient, name: str, namespace: str = "lab") -> dict[str, Any]:
    with contextlib.suppress(KubeError):  # there already
        await client.create("/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return await client.create(f"/apis/{API_VERSION}/namespaces/{namespace}/leases", {
        "apiVersion": API_VERSION, "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                 "resources": {"cpu": "1", "memory": "1Gi"}}})


async def _events(client: KubeClient, reason: str) -> list[str]:
    items = (await client.get("/api/v1/namespaces/lab/events"))["items"]
    return [e["message"] for e in items if e["reason"] == reason]


def _shell(client: KubeClient, clock: Clock, journal: Journal | None = None) -> Shell:
    return Shell(client, [_pool(p) for p in POOLS], SchedulerConfig(), clock, journal=journal)


def test_a_dispatched_lease_says_where_and_why_in_its_status_and_an_event_and_after_a_restart(
        api_server):
    """The status holds the pool, the strategy, the reason and the time, as the API
    server keeps it (a field its schema lacked would be pruned, and the operator
    would take its own write for another writer's); the event gives the reason. A
    restart rebuilds the shell from its journal's snapshot: the status written
    again still says where the Lease went."""
    why = "rr: round robin, external lease 1 without a pool goes to pool b (2 of 3)"
    sent = Dispatch(30.0, "lab/x", "b", "rr", why)
    clock = Clock(SCALE, time.time())
    want = {"pool": "b", "policy": "rr", "reason": why,
            "time": clock.stamp(30.0)}

    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            journal = Journal(client, "leasehold-system")
            shell = _shell(client, clock, journal)
            await journal.load()
            await shell.checkpoint()
            shell.submit(await _lease(client, "x"), Origin.EXTERNAL)
            await shell.step()
            await shell.outbox.flush()
            lease = await client.get(f"/apis/{API_VERSION}/namespaces/lab/leases/x")
            assert lease["status"]["dispatch"] is None  # the core sent it nowhere
            shell.dispatched(sent)
            await shell.step()  # statuses are written at the end of a step
            await shell.outbox.flush()
            lease = await client.get(f"/apis/{API_VERSION}/namespaces/lab/leases/x")
            assert lease["status"]["dispatch"] == want
            assert not shell.echoes.foreign(lease["metadata"]["uid"], lease["status"])
            assert await _events(client, "Dispatched") == [why]
            await shell.checkpoint()  # what the journal knows of x, with its dispatch

            # a new operator: its status written again from the journal
            await client.json_patch(f"/apis/{API_VERSION}/namespaces/lab/leases/x/status",
                                    [{"op": "remove", "path": "/status/dispatch"}])
            again = _shell(client, clock, Journal(client, "leasehold-system"))
            leases = (await client.get(f"/apis/{API_VERSION}/leases"))["items"]
            await again.recover(leases, {}, [])
            await again.outbox.flush()
            lease = await client.get(f"/apis/{API_VERSION}/namespaces/lab/leases/x")
            assert lease["status"]["dispatch"] == want
    asyncio.run(scenario())


def test_a_restart_replaying_the_journals_log_keeps_where_leases_were_dispatched(
        api_server):
    """The Leases dispatched since the journal's last snapshot: a new operator
    replays the log, and the core dispatches them again on the way: their statuses,
    written again, still say where they went and why (and no event is posted twice).
    Runs once the core has ``rr``."""
    if "rr" not in DISPATCH:
        pytest.skip("core has no dispatch strategy 'rr' yet")
    clock = Clock(SCALE, time.time())

    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            config = SchedulerConfig(dispatch="rr")
            shell = Shell(client, [_pool(p) for p in POOLS], config, clock,
                          journal=Journal(client, "leasehold-system"))
            await shell.journal.load()
            await shell.checkpoint()  # the snapshot before the Leases
            for name in ("x", "y"):
                shell.submit(await _lease(client, name), Origin.EXTERNAL)
            await shell.step()
            await shell.outbox.flush()
            path = f"/apis/{API_VERSION}/namespaces/lab/leases"
            before = {x["metadata"]["name"]: x["status"]["dispatch"]
                      for x in (await client.get(path))["items"]}
            assert [before[n]["pool"] for n in ("x", "y")] == ["a", "b"], before
            for name in before:
                await client.json_patch(f"{path}/{name}/status",
                                        [{"op": "remove", "path": "/status/dispatch"}])
            again = Shell(client, [_pool(p) for p in POOLS], config, clock,
                          journal=Journal(client, "leasehold-system"))
            await again.recover((await client.get(path))["items"], {}, [])
            await again.outbox.flush()
            after = {x["metadata"]["name"]: x["status"]["dispatch"]
                     for x in (await client.get(path))["items"]}
            assert after == before
            assert len(await _events(client, "Dispatched")) == 2
    asyncio.run(scenario())


def test_a_dispatch_the_shell_does_not_track_is_ignored(api_server):
    """A lease that is no Lease of the cluster's (never submitted here): nothing to
    write, and nothing fails."""
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            shell = _shell(client, Clock(SCALE, time.time()))
            shell.dispatched(Dispatch(0.0, "lab/nobody", "a", "rr", "why"))
            await shell.outbox.flush()
            assert await _events(client, "Dispatched") == []
    asyncio.run(scenario())


def _dispatched(metrics: Metrics) -> dict[tuple[str, str], float]:
    return {(s.labels["pool"], s.labels["policy"]): s.value
            for family in metrics.registry.collect()
            if family.name == "leasehold_dispatched_leases"
            for s in family.samples if s.name.endswith("_total")}


def test_dispatches_are_counted_per_pool_and_strategy_each_series_from_zero():
    """``leasehold_dispatched_leases_total{pool,policy}``: every pool's series of the
    configured strategy is there at 0 from the first step (a series born at 1 is an
    increase Prometheus cannot see), and each Dispatch counts once."""
    core = Scheduler([shared(1, name=p) for p in POOLS], SchedulerConfig())
    metrics = Metrics()
    metrics.observe(core, [], [], 0.0)
    assert _dispatched(metrics) == {(p, SchedulerConfig().dispatch): 0.0 for p in POOLS}
    metrics.observe(core, [Dispatch(1.0, "lab/x", "b", "rr", ""),
                           Dispatch(2.0, "lab/y", "c", "rr", ""),
                           Dispatch(3.0, "lab/z", "b", "rr", "")], [], 0.0)
    assert {k: v for k, v in _dispatched(metrics).items() if k[1] == "rr"} == {
        ("b", "rr"): 2.0, ("c", "rr"): 1.0}


@pytest.mark.parametrize("sent", [
    pytest.param(None, id="none"),
    pytest.param(Dispatch(12.5, "lab/x~2", "b", "pap-rtdp", "its type's billiard sequence"),
                 id="dispatched"),
])
def test_what_the_journal_knows_of_a_lease_keeps_its_dispatch(sent):
    known = Known("u-1", "lab", "x", None, Origin.EXTERNAL, dispatch=sent)
    assert Known.read(json.loads(json.dumps(known.data())), "known") == known


def test_a_journal_written_before_dispatch_existed_reads_as_no_dispatch():
    data = {k: v for k, v in Known("u-1", "lab", "x", None, Origin.EXTERNAL).data().items()
            if k != "dispatch"}
    assert Known.read(data, "known").dispatch is None


# ---- end to end: the operator on the emulated cluster against `leasehold simulate` ----

#: each pool: one emulated node of 2 cpu and 4 GiB
NODE = {"nodes": 1, "cpu": 2, "memory": "4Gi"}
#: external Leases that name no pool (one VM of 1 cpu for an hour), and one naming a
#: pool, which is never dispatched (and does not advance round robin)
UNNAMED = ("l1", "l2", "l3", "l4", "l5")
NAMED = {"named": "a"}


#: each pool's ``dispatch`` block (None: none, all estimated), by name, in order
Blocks = dict[str, dict[str, Any] | None]
ESTIMATED: Blocks = {p: None for p in POOLS}


def _nodepools(path: Path, blocks: Blocks = ESTIMATED) -> Path:
    path.write_text(yaml.safe_dump_all(
        {"apiVersion": API_VERSION, "kind": "NodePool", "metadata": {"name": p},
         "spec": {"emulated": NODE, **({"dispatch": b} if b is not None else {})}}
        for p, b in blocks.items()))
    return path


def _manifest(name: str, pool: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                            "resources": {"cpu": "1", "memory": "1Gi"}}
    if pool is not None:
        spec["pool"] = pool
    return {"apiVersion": API_VERSION, "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"}, "spec": spec}


def _simulated_pools(statuses: dict[str, dict[str, Any]], clock: Clock, strategy: str,
                     path: Path, blocks: Blocks = ESTIMATED) -> dict[str, str]:
    """Where `leasehold simulate` sends the same Leases, each arriving when the
    operator was told of it (its ``submittedAt``, in its ``sequence``): by Lease name,
    the pool (the ``pool`` of its ``-o json``, else that of the nodes it ran on).
    Arrivals are the operator core's own times, not shifted to start at 0: a strategy
    that estimates arrival rates from the history (003 eqs. 16-19) sees the same.
    ``blocks``: the pools, with the ``dispatch`` block of each (as the NodePools')."""
    order = sorted(statuses, key=lambda n: (statuses[n]["submittedAt"],
                                            statuses[n]["sequence"]))
    told = {n: clock.core(epoch(statuses[n]["submittedAt"])) for n in order}
    config: dict[str, Any] = {"policy": "moml"}
    if strategy != SchedulerConfig().dispatch:  # a scenario names it once it can
        config["dispatch"] = strategy
    path.write_text(yaml.safe_dump({
        "cluster": {"pools": [{"name": p, "nodes": 1, "cpu": 2, "memory": 4096,
                               **({"dispatch": b} if b is not None else {})}
                              for p, b in blocks.items()]},
        "config": config,
        "leases": [{"name": n, "origin": "external", "type": "BestEffortSuspendable",
                    "arrival": told[n], "vms": 1, "cpu": 1, "memory": 1024,
                    "duration": 3600, **({"pool": NAMED[n]} if n in NAMED else {})}
                   for n in order]}))
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate", str(path), "-o",
                        "json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return {x["name"]: x.get("pool") or x["nodes"][0].rsplit("-", 1)[0]
            for x in json.loads(r.stdout)["leases"]}


@pytest.mark.parametrize("strategy", ["earliest", "rr", "pap-rtdp"])
def test_leases_without_a_pool_are_dispatched_as_leasehold_simulate_dispatches(
        tmp_path: Path, strategy: str):
    """Issue 21, "Done means": on the emulated cluster with three NodePools, the
    operator (``--dispatch``) sends each external Lease that names no pool where
    `leasehold simulate` sends it given the same arrivals, and says so in its status
    (the strategy's name) and a ``Dispatched`` event; a Lease naming its pool is not
    dispatched. Runs for each strategy the core has registered."""
    if strategy not in DISPATCH:
        pytest.skip(f"core has no dispatch strategy {strategy!r} yet")
    c = operated(tmp_path / "cluster", "moml", _nodepools(tmp_path / "pools.yaml"), 60.0, 0,
                 "--dispatch", strategy)
    try:
        c.until(lambda: c.recoveries() == 1)
        c.apply(*(_manifest(n, None) for n in UNNAMED),
                *(_manifest(n, p) for n, p in NAMED.items()))

        def placed() -> dict[str, dict[str, Any]] | None:
            """Every Lease's status, once each has a booking."""
            statuses = {x["metadata"]["name"]: x.get("status") or {}
                        for x in c.get("lhl", "-n", "lab")["items"]}
            done = len(statuses) == len(UNNAMED) + len(NAMED) and all(
                s.get("reservation") for s in statuses.values())
            return statuses if done else None
        statuses = c.until(placed, timeout=60)
        clock = Clock.from_configmap(c.get("cm", "-n", "kube-system",
                                           "leasehold-clock")["data"])
        dispatched = {n: s["dispatch"] for n, s in statuses.items() if s.get("dispatch")}
        ran = {n: (s.get("dispatch") or s["reservation"])["pool"]
               for n, s in statuses.items()}
        assert ran == _simulated_pools(statuses, clock, strategy, c.data / "as-run.yaml")
        assert not set(dispatched) & set(NAMED)
        for n, d in dispatched.items():
            assert d["policy"] == strategy and d["pool"] == statuses[n]["reservation"]["pool"]
        if strategy != SchedulerConfig().dispatch:  # today's rule may book without one
            assert set(dispatched) == set(UNNAMED)
            events = c.get("events", "-n", "lab")["items"]
            assert sorted(e["involvedObject"]["name"] for e in events
                          if e["reason"] == "Dispatched") == sorted(UNNAMED)
    finally:
        c.stop_all()


# ---- statistics given in the NodePools' spec.dispatch (issue 21 item 1) -------------

#: two pools; on ``a`` some local load and the gateway's rate, nothing local on ``b``:
#: PAP gives ``b`` the larger share (estimated, with no local Leases, they would be
#: equal); every other statistic is the same on both (given on ``a``, estimated from
#: the Leases on ``b``: 1 VM for an hour)
GIVEN: Blocks = {
    "a": {"localRate": 0.0005, "localVms": 1, "localDuration": "10m",
          "externalRate": 0.0005, "externalVms": 1, "externalDuration": "1h"},
    "b": {"localRate": 0}}
#: the NodePools edited while the operator runs: ``b``'s local Leases fill it (ρ = 3),
#: so PAP gives it nothing
EDITED: Blocks = {"a": {"localRate": 0}, "b": {"localRate": 0.01, "localVms": 1,
                                              "localDuration": "10m"}}


def _placed(c: Any, names: tuple[str, ...]) -> dict[str, dict[str, Any]] | None:
    """These Leases' statuses, once each has a booking and a dispatch."""
    statuses = {x["metadata"]["name"]: x.get("status") or {}
                for x in c.get("lhl", "-n", "lab")["items"]}
    ours = {n: statuses.get(n) or {} for n in names}
    return ours if all(s.get("reservation") and s.get("dispatch") for s in ours.values()) \
        else None


def test_statistics_given_in_the_nodepools_decide_where_leases_go_as_in_leasehold_simulate(
        tmp_path: Path):
    """``pap-rtdp`` on two NodePools whose ``spec.dispatch`` give their statistics:
    the operator sends each Lease where `leasehold simulate` sends it given the same
    pools' ``dispatch`` blocks and arrivals, and not where the estimates alone would
    (the same Leases on the same pools without the blocks). Then the NodePools are
    edited while the operator runs: the Leases after the edit go where the new
    statistics say, as after any NodePool change (a capacity input at the next step)."""
    if "pap-rtdp" not in DISPATCH:
        pytest.skip("core has no dispatch strategy 'pap-rtdp' yet")
    first = ("l1", "l2", "l3", "l4")
    c = operated(tmp_path / "cluster", "moml", _nodepools(tmp_path / "pools.yaml", GIVEN),
                 60.0, 0, "--dispatch", "pap-rtdp")
    try:
        c.until(lambda: c.recoveries() == 1)
        c.apply(*(_manifest(n, None) for n in first))
        statuses = c.until(lambda: _placed(c, first), timeout=60)
        clock = Clock.from_configmap(c.get("cm", "-n", "kube-system",
                                           "leasehold-clock")["data"])
        went = {n: s["dispatch"]["pool"] for n, s in statuses.items()}
        assert went == _simulated_pools(statuses, clock, "pap-rtdp", c.data / "given.yaml",
                                        GIVEN)
        estimated = _simulated_pools(statuses, clock, "pap-rtdp", c.data / "estimated.yaml",
                                     {p: None for p in GIVEN})
        assert went != estimated, (went, estimated)
        assert list(went.values()).count("b") > list(went.values()).count("a"), went

        def running_on_both() -> bool:
            """A Lease runs on each pool: their nodes are up, and a capacity change
            logged from now on is the edit's."""
            return {x["status"]["dispatch"]["pool"] for x in c.get("lhl", "-n", "lab")["items"]
                    if (x.get("status") or {}).get("phase") == "Running"} == set(GIVEN)
        c.until(running_on_both, timeout=60)
        log = c.data / "operator.log"
        changes = log.read_text().count("pool b: ")
        for pool, block in EDITED.items():
            c.kubectl("patch", "lhnp", pool, "--type", "json", "-p", json.dumps(
                [{"op": "replace", "path": "/spec/dispatch", "value": block}]))
        # the edit reached the core: a capacity change of b logged
        c.until(lambda: log.read_text().count("pool b: ") > changes)
        after = ("m1", "m2", "m3")
        c.apply(*(_manifest(n, None) for n in after))
        statuses = c.until(lambda: _placed(c, after), timeout=60)
        assert {n: s["dispatch"]["pool"] for n, s in statuses.items()} == dict.fromkeys(
            after, "a")
    finally:
        c.stop_all()


#: a NodePool whose spec.dispatch the API server stores but the operator cannot read
TYPO = {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "typo"},
        "spec": {"emulated": {"nodes": 1, "cpu": 2, "memory": "2Gi"},
                 "dispatch": {"localRate": 0.01, "localDuration": "soon"}}}


def test_a_nodepool_whose_dispatch_block_cannot_be_read_keeps_its_nodes_saying_why(small):
    """A typo in a pool's statistics is no reason to take its nodes away: the pool
    is scheduled, its statistics estimated as without the block, and the operator's
    log names the field (as for the NodePool's other fields)."""
    small.apply(TYPO, _manifest("there", "typo"))
    small.until(lambda: (small.lease("lab", "there").get("status") or {}).get("phase")
                == "Running", timeout=60)
    assert small.lease("lab", "there")["status"]["reservation"]["pool"] == "typo"
    log = (small.data / "operator.log").read_text()
    assert 'NodePool typo: spec.dispatch.localDuration: invalid duration "soon": expected' \
           in log, log
    # once, though the pools are read again at each NodePool's and node's change
    assert log.count("spec.dispatch not used: NodePool typo is scheduled with its dispatch"
                     " statistics estimated, as without the block") == 1, log
    assert "NodePool typo left out" not in log, log
