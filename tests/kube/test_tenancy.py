"""Tenants against each other (issue 17), end to end on the emulated cluster: one
tenant's flood of Leases does not delay another's decisions (the admins' caps per
namespace), and Leases beyond a cap enter in order as room comes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import yaml

from leasehold.kube.client import KubeClient
from operated import Operated, one_node_pool, operated

LEASES = "/apis/leasehold.io/v1alpha1/namespaces/{ns}/leases"


def lease(name: str, ns: str, cpu: int = 1) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                     "resources": {"cpu": cpu, "memory": "256Mi"}}}


def started(tmp_path: Path, tenancy: dict[str, Any], pools: Path | None = None) -> Operated:
    """The emulated cluster and the operator with ``tenancy`` as its admins' say, its
    first recovery done, and the namespaces ``quiet`` and ``flood``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "operator.yaml"
    config.write_text(yaml.safe_dump({"tenancy": tenancy}))
    c = operated(tmp_path / "cluster", "moml", pools or one_node_pool(tmp_path), 60.0, 0,
                 "--config", str(config))
    try:
        c.until(lambda: c.recoveries() == 1)
        c.kubectl("create", "namespace", "quiet")
        c.kubectl("create", "namespace", "flood")
    except BaseException:
        c.stop_all()
        raise
    return c


DECIDED = ("Scheduled", "Running", "Rejected")


async def time_to_decision(c: Operated, flood: int) -> tuple[float, float]:
    """``flood`` Leases created in ``flood`` (32 at a time), then one in ``quiet``:
    the seconds the flood took to create, and from the quiet Lease's creation until
    its status shows the core's decision."""
    async with KubeClient.from_kubeconfig(c.kubeconfig) as client:
        gate = asyncio.Semaphore(32)

        async def one(i: int) -> None:
            async with gate:
                await client.create(LEASES.format(ns="flood"), lease(f"f{i:05d}", "flood"))
        began = time.monotonic()
        await asyncio.gather(*(one(i) for i in range(flood)))
        created = time.monotonic() - began
        began = time.monotonic()
        await client.create(LEASES.format(ns="quiet"), lease("probe", "quiet"))
        while time.monotonic() - began < 120:
            got = await client.get(LEASES.format(ns="quiet") + "/probe")
            if (got.get("status") or {}).get("phase") in DECIDED:
                return created, time.monotonic() - began
            await asyncio.sleep(0.02)
    raise AssertionError("the quiet namespace's Lease was not decided within 120 s")


def all_told(c: Operated, ns: str) -> list[dict[str, Any]] | None:
    """The Leases of ``ns`` once every one has a status."""
    leases = c.get("lhl", "-n", ns)["items"]
    return leases if leases and all(x.get("status") for x in leases) else None


#: the flood: one tenant's Leases, all at once, with its namespace capped at CAP
FLOOD, CAP = 10_000, 20


def test_one_tenants_flood_does_not_delay_another_namespaces_decision(tmp_path):
    """The quiet namespace's Lease is decided about as fast with the flood as
    without: the flood's Leases beyond the cap wait at the edge, unplanned, with a
    condition saying which cap holds them."""
    tenancy = {"maxPendingLeases": CAP}
    figures = {}
    held: list[dict[str, Any]] = []
    for flood in (0, FLOOD):
        c = started(tmp_path / f"flood-{flood}", tenancy)
        try:
            figures[flood] = asyncio.run(time_to_decision(c, flood))
            if flood:  # every Lease of the flood told where it stands
                leases = c.until(lambda c=c: all_told(c, "flood"), 60)
                held = [x for x in leases
                        if x["status"]["conditions"][0].get("reason") == "NamespaceCap"]
        finally:
            c.stop_all()
    (_, alone), (created, flooded) = figures[0], figures[FLOOD]
    print(f"\ntime to decision in another namespace: {alone:.3f} s alone, {flooded:.3f} s"
          f" after a flood of {FLOOD} Leases (created in {created:.1f} s; cap {CAP});"
          f" {len(held)} of the flood held back")
    assert flooded <= max(3 * alone, alone + 1.0), (alone, flooded)
    assert len(held) >= FLOOD - CAP - 2  # two running on the node
    condition = held[0]["status"]["conditions"][0]
    assert condition["type"] == "Admitted" and condition["status"] == "False"
    assert f"(maxPendingLeases: {CAP})" in condition["message"]
    assert held[0]["status"]["phase"] == "Pending"


def test_leases_beyond_the_cap_enter_in_order_as_room_comes(tmp_path):
    """One node, each Lease the whole of it; at most two pending per namespace:
    a runs, b and c are scheduled after it, d and e wait at the edge. b deleted,
    d enters (not e); a Lease held back can be deleted."""
    c = started(tmp_path, {"maxPendingLeases": 2})
    try:
        def phases() -> dict[str, str]:
            return {x["metadata"]["name"]: x.get("status", {}).get("phase", "")
                    for x in c.get("lhl", "-n", "flood")["items"]}

        def reason(name: str) -> str | None:
            conditions = c.lease("flood", name).get("status", {}).get("conditions") or [{}]
            return conditions[0].get("reason")
        for name in "abcde":
            c.apply(lease(name, "flood", cpu=2))
        c.until(lambda: phases() == {"a": "Running", "b": "Scheduled", "c": "Scheduled",
                                     "d": "Pending", "e": "Pending"}
                and reason("d") == reason("e") == "NamespaceCap")
        # another namespace is not held by this one's cap
        c.apply(lease("other", "quiet", cpu=2))
        c.until(lambda: c.lease("quiet", "other").get("status", {}).get("phase")
                == "Scheduled")
        c.kubectl("delete", "lhl", "-n", "flood", "b")
        c.until(lambda: phases() == {"a": "Running", "c": "Scheduled", "d": "Scheduled",
                                     "e": "Pending"})
        c.kubectl("delete", "lhl", "-n", "flood", "e")
        c.kubectl("delete", "lhl", "-n", "flood", "a")
        c.until(lambda: phases() == {"c": "Running", "d": "Scheduled"})
    finally:
        c.stop_all()
