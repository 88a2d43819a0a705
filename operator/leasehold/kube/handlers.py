"""The Kopf side of the operator: who is told what. Leases created, deleted and (on
a restart) found go to the :class:`~.shell.Shell` as inputs; a lease whose pods have
all succeeded is finished. Kopf keeps its own progress in annotations, so the status
is leasehold's alone."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

import kopf
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from leasehold.api.clock import CLOCK_PATH, Clock
from leasehold.api.resources import GROUP, ORIGIN_LABEL, VERSION, LeaseInputError, pool_spec
from leasehold.core.model import Origin, SchedulerConfig

from .client import KubeClient, KubeError
from .metrics import Metrics
from .shell import LEASE_LABEL, Shell

log = logging.getLogger("leasehold.operator")
registry = kopf.OperatorRegistry()


@kopf.on.login(registry=registry)
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    # Kopf's own kubeconfig reader reads $KUBECONFIG when called
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup(registry=registry)
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix="kopf.leasehold.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="kopf.leasehold.io", key="last-handled")
    settings.posting.enabled = False  # the shell posts leasehold's own events
    settings.watching.server_timeout = 300
    client = KubeClient.from_kubeconfig()
    try:
        clock = Clock.from_configmap((await client.get(CLOCK_PATH)).get("data"))
    except KubeError:
        clock = Clock()
    pools = await client.get(f"/apis/{GROUP}/{VERSION}/nodepools")
    specs = []
    for item in pools.get("items", []):
        try:
            specs.append(pool_spec(item))
        except LeaseInputError as exc:
            log.warning("NodePool %s left out: %s", item["metadata"]["name"], exc)
    specs = [s for s in specs if s.nodes > 0]
    if not specs:
        raise kopf.PermanentError("no NodePool with nodes: create one (docs/resources.md)")
    metrics = Metrics()
    shell = Shell(client, specs, memo.config, clock, metrics)
    leases = (await client.get(f"/apis/{GROUP}/{VERSION}/leases")).get("items", [])
    pods = (await client.get("/api/v1/pods", labelSelector=LEASE_LABEL)).get("items", [])
    namespaces = (await client.get("/api/v1/namespaces")).get("items", [])
    origins = {ns["metadata"]["name"]: _origin_of(ns) for ns in namespaces}
    await shell.recover(leases, origins, pods)
    metrics.observe(shell.core, [], [], 0.0)
    memo.shell = shell
    memo.task = asyncio.create_task(shell.run())
    if memo.metrics_port is not None:
        memo.metrics_runner = await serve_metrics(metrics, memo.metrics_port)
    log.info("leasehold operator: policy %s, pools %s, time scale %g", memo.config.policy,
             ", ".join(f"{s.name} ({s.nodes} nodes)" for s in specs), clock.scale)


@kopf.on.cleanup(registry=registry)
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    task = getattr(memo, "task", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    shell = getattr(memo, "shell", None)
    if shell is not None:
        await shell.client.close()
    runner = getattr(memo, "metrics_runner", None)
    if runner is not None:
        await runner.cleanup()


async def serve_metrics(metrics: Metrics, port: int) -> web.AppRunner:
    """``/metrics`` (Prometheus text format) and ``/healthz`` on ``port``."""
    async def scrape(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(metrics.registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")
    app = web.Application()
    app.router.add_get("/metrics", scrape)
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    log.info("metrics at http://127.0.0.1:%d/metrics", port)
    return runner


def _origin_of(namespace: dict[str, Any]) -> Origin:
    """A namespace's origin label (DESIGN §2.1): external unless it says local."""
    label = (namespace["metadata"].get("labels") or {}).get(ORIGIN_LABEL, "external")
    return Origin.LOCAL if label == "local" else Origin.EXTERNAL


async def _origin(client: KubeClient, namespace: str) -> Origin:
    try:
        return _origin_of(await client.get(f"/api/v1/namespaces/{namespace}"))
    except KubeError:
        return Origin.EXTERNAL


@kopf.on.create(GROUP, VERSION, "leases", registry=registry)
async def created(body: kopf.Body, namespace: str, memo: kopf.Memo, **_: Any) -> None:
    shell: Shell = memo.shell
    shell.submit(_plain(body), await _origin(shell.client, namespace))


@kopf.on.event(GROUP, VERSION, "leases", registry=registry)
async def lease_event(type: str, name: str, namespace: str, memo: kopf.Memo, **_: Any
                      ) -> None:
    """A deleted Lease is cancelled at once: no finalizer holds a user's deletion up
    (Kopf's delete handlers run only for objects a finalizer keeps)."""
    if type == "DELETED":
        memo.shell.cancel(namespace, name)


@kopf.on.event("", "v1", "pods", registry=registry, labels={LEASE_LABEL: kopf.PRESENT})
async def pod_event(type: str, body: kopf.Body, namespace: str, memo: kopf.Memo,
                    **_: Any) -> None:
    """A lease's work is done when every one of its pods has succeeded."""
    if type == "DELETED" or (body.get("status") or {}).get("phase") != "Succeeded":
        return
    shell: Shell = memo.shell
    lease = body["metadata"]["labels"][LEASE_LABEL]
    pods = await shell.client.get(f"/api/v1/namespaces/{namespace}/pods",
                                  labelSelector=f"{LEASE_LABEL}={lease}")
    items = pods.get("items", [])
    if items and all((p.get("status") or {}).get("phase") == "Succeeded" for p in items):
        shell.finished(namespace, lease)


def _plain(body: kopf.Body) -> dict[str, Any]:
    return {"metadata": dict(body["metadata"]), "spec": dict(body.get("spec") or {})}


def run(config: SchedulerConfig, kubeconfig: str | None = None,
        metrics_port: int | None = None) -> None:
    """``leasehold operator``: run until interrupted (one replica, no peering yet)."""
    if kubeconfig:
        os.environ["KUBECONFIG"] = kubeconfig
    kopf.configure(verbose=False)
    kopf.run(registry=registry, standalone=True, clusterwide=True,
             memo=kopf.Memo(config=config, metrics_port=metrics_port))
