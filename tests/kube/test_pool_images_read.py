"""The operator reads a NodePool's ``images`` and ``vm`` blocks into the core's pool
(issue 22 item 6), against the emulated API server: a block it cannot read keeps the
pool, scheduled without the block, and is logged once, naming the field and what the
pool does without it; a block changed on a live NodePool reaches the core at the next
step, as any change of a pool does."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from leasehold.api.clock import Clock
from leasehold.core.model import ImagesSpec, SchedulerConfig, VmModel
from leasehold.kube.capacity import read_pools
from leasehold.kube.client import KubeClient
from leasehold.kube.pods import API_VERSION
from leasehold.kube.shell import Shell

NODEPOOLS = f"/apis/{API_VERSION}/nodepools"


def nodepool(name: str, **blocks: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "NodePool", "metadata": {"name": name},
            "spec": {"emulated": {"nodes": 2, "cpu": 2, "memory": "4Gi"}, **blocks}}


def test_an_unreadable_images_block_keeps_the_pool_without_images_logged_once(
        api_server, caplog: pytest.LogCaptureFixture):
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            # a cache past the disk: a rule the CRD's schema cannot say
            await client.create(NODEPOOLS, nodepool(
                "p", images={"bandwidth": 10, "disk": 100, "cache": 200}, vm={"boot": 5}))
            await client.create(NODEPOOLS, nodepool("q", images={"bandwidth": 10,
                                                                 "disk": 100}))
            with caplog.at_level(logging.WARNING, logger="leasehold.operator"):
                pools = await read_pools(client, {})
                again = await read_pools(client, {p.spec.name: p for p in pools})
            by = {p.spec.name: p for p in again}
            assert (by["p"].spec.nodes, by["p"].spec.images, by["p"].spec.vm) == (
                2, None, VmModel(boot=5))
            assert by["q"].spec.images == ImagesSpec(10, 100)
            # the operator's own: another test of the same worker may have turned on
            # asyncio's debug records, which caplog sees too
            warnings = [r.getMessage() for r in caplog.records
                        if r.name == "leasehold.operator"]
            assert warnings == [
                "NodePool p: spec.images.cache: is 200 MB, more than the disk (100 MB);"
                " spec.images not used: NodePool p is scheduled without images (its"
                " Leases' images are not deployed ahead: their pods pull them at their"
                " start), as without the block"]
    asyncio.run(scenario())


def test_an_images_block_changed_on_a_live_nodepool_reaches_the_core(api_server):
    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            await client.create(NODEPOOLS, nodepool("p"))
            shell = Shell(client, await read_pools(client, {}), SchedulerConfig(),
                          Clock(2000.0, time.time()))
            assert shell.core.pools["p"].images is None
            for images, want in [
                    ({"bandwidth": 10, "disk": 100}, ImagesSpec(10, 100)),
                    ({"bandwidth": 20, "disk": 100, "reuse": False},
                     ImagesSpec(20, 100, reuse=False)),
                    (None, None)]:
                await client.merge_patch(f"{NODEPOOLS}/p", {"spec": {"images": images}})
                shell.cluster_changed()
                await shell.step()
                assert shell.core.pools["p"].images == want
    asyncio.run(scenario())
