"""The operator's wiring: who is told what. Leases created, deleted and (on a
restart) found go to the :class:`~.shell.Shell` as inputs; a lease whose pods have
all succeeded is finished.

Kopf runs the operator (login, start-up, clean-up, peering) and watches the few
objects (NodePools, nodes), with event handlers only. The many — Leases, their pods,
namespaces — are listed when the shell is built and then followed by the active
replica's own watches (:mod:`.informer`): Kopf's processing of every event, most of
them the echoes of the operator's own status writes, was 40% of its CPU at 5,000
Leases, and its memory of each object grew with the Leases in the cluster.

Kopf gives each object it handles a shallow copy of the operator's memo, made the
first time it sees the object. The operator's state is therefore one
:class:`OperatorMemo` whose copy is itself (Kopf's documented pattern for one memo
shared by all objects): an object first seen before the shell existed — at start,
or on a standby replica before it took over — reads the current shell when its
later events come, rather than the ``None`` of its first sight."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import prometheus_client
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from leasehold.api.clock import CLOCK_PATH, Clock
from leasehold.api.resources import GROUP, VERSION
from leasehold.api.tenancy import Tenancy
from leasehold.core.model import Origin, SchedulerConfig

from .capacity import read_pools
from .client import KubeClient, Kubeconfig, KubeError, Obj, kubeconfig_path, read_kubeconfig
from .heap import trimmed, tune_collector
from .informer import follow, listing
from .journal import Journal
from .metrics import Metrics
from .peering import Peering, default_priority
from .pods import LEASE_LABEL
from .shell import BATCH_WINDOW, Shell

log = logging.getLogger("leasehold.operator")
registry = kopf.OperatorRegistry()

LEASES = f"/apis/{GROUP}/{VERSION}/leases"
PODS = "/api/v1/pods"
NAMESPACES = "/api/v1/namespaces"


@dataclass(frozen=True)
class PeeringOptions:
    """Run as one of several replicas sharing the ClusterKopfPeering ``name``."""

    name: str = "leasehold"
    priority: int = field(default_factory=default_priority)
    lifetime: int = 60  # seconds without a keep-alive before a replica counts as gone
    identity: str = field(
        default_factory=lambda: f"{socket.gethostname()}@{os.getpid()}")


#: where a pod finds its own namespace
POD_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
JOURNAL_NAMESPACE = "leasehold-system"


@dataclass(frozen=True)
class MetricsOptions:
    """Where ``/metrics`` and ``/healthz`` are served: ``address`` (this machine only
    by default: the chart gives the pod's IP), ``port``, and HTTPS with ``cert`` and
    ``key`` (PEM files) when given."""

    address: str = "127.0.0.1"
    port: int = 8080
    cert: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class JournalOptions:
    """Where the journal lives (None: the pod's namespace, else leasehold-system),
    and how often it takes a snapshot (None: :data:`journal.SNAPSHOT_EVERY`)."""

    namespace: str | None = None
    snapshot_every: int | None = None

    def where(self) -> str:
        if self.namespace:
            return self.namespace
        try:
            return POD_NAMESPACE.read_text().strip() or JOURNAL_NAMESPACE
        except OSError:
            return JOURNAL_NAMESPACE


@dataclass(eq=False)
class OperatorMemo:
    """The operator's state, shared by its activities (startup, login, cleanup) and
    the handlers of every object: Kopf's memo, whose copies are itself."""

    config: SchedulerConfig
    #: the client of the cluster the operator schedules (its kubeconfig, else the
    #: pod's service account)
    client: KubeClient
    #: ``--kubeconfig``, for Kopf's login (None: $KUBECONFIG, ~/.kube/config or the
    #: service account, as for the client)
    kubeconfig: str | None = None
    #: the socket ``/metrics`` and ``/healthz`` are served on, bound before Kopf starts
    #: (a port in use is a one-line error and a non-zero exit, not a silent operator)
    metrics_socket: socket.socket | None = None
    #: HTTPS for them (None: HTTP)
    metrics_tls: ssl.SSLContext | None = None
    peering: PeeringOptions | None = None
    journal: JournalOptions = field(default_factory=JournalOptions)
    #: the least wall time between the starts of steps while inputs keep coming
    batch_window: float = BATCH_WINDOW
    #: the scheduling shell while this replica is active and has rebuilt it
    shell: Shell | None = None
    #: the task that builds the shell, then runs it
    task: asyncio.Task[None] | None = None
    metrics: Metrics = field(default_factory=Metrics)
    metrics_runner: web.AppRunner | None = None
    peering_task: asyncio.Task[None] | None = None
    #: each node's state as last seen (readiness, cordon, labels, size)
    nodes: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: why this active replica is not scheduling, while it waits to try again (None
    #: while it schedules, rebuilds, or stands by): ``/healthz`` fails meanwhile
    failure: str | None = None
    #: each namespace's origin, as last seen
    origins: dict[str, Origin] = field(default_factory=dict)
    #: what the admins say about tenants: which namespaces are local, the caps
    tenancy: Tenancy = field(default_factory=Tenancy)
    #: the versions of the listings the shell was built from (Leases, pods,
    #: namespaces): its watches go on from there
    versions: dict[str, str] = field(default_factory=dict)

    def __copy__(self) -> OperatorMemo:
        # what Kopf calls to give an object its memo: every object shares this one
        return self


def connection_info(config: Kubeconfig, trust_env: bool = False) -> kopf.ConnectionInfo:
    """Kopf's credentials from the kubeconfig the operator's client reads, with its
    relative paths resolved as kubectl resolves them (Kopf's own reader only reads
    $KUBECONFIG, which the operator leaves alone)."""
    cluster, user = config.cluster, config.user
    ca = config.file(cluster, "certificate-authority")
    cert = config.file(user, "client-certificate")
    key = config.file(user, "client-key")
    return kopf.ConnectionInfo(
        server=config.server,
        ca_path=ca, ca_data=None if ca else cluster.get("certificate-authority-data"),
        insecure=cluster.get("insecure-skip-tls-verify"),
        certificate_path=cert,
        certificate_data=None if cert else user.get("client-certificate-data"),
        private_key_path=key, private_key_data=None if key else user.get("client-key-data"),
        username=user.get("username"), password=user.get("password"),
        token=config.token(), default_namespace=config.namespace,
        proxy_url=cluster.get("proxy-url"), trust_env=trust_env)


@kopf.on.login(registry=registry)
def login(memo: OperatorMemo, settings: kopf.OperatorSettings, **kwargs: Any
          ) -> kopf.ConnectionInfo | None:
    """The same choice as :meth:`KubeClient.from_environment`: the kubeconfig given,
    set or found, else the pod's service account."""
    path = kubeconfig_path(memo.kubeconfig)
    if path is None:
        return kopf.login_with_service_account(settings=settings, **kwargs)
    try:
        return connection_info(read_kubeconfig(path), settings.networking.trust_env)
    except ValueError as exc:
        raise kopf.LoginError(str(exc)) from None


@kopf.on.startup(registry=registry)
async def startup(settings: kopf.OperatorSettings, memo: OperatorMemo, **_: Any) -> None:
    settings.posting.enabled = False  # the shell posts leasehold's own events
    settings.watching.server_timeout = 300
    if memo.metrics_socket is not None:
        memo.metrics_runner = await serve_metrics(memo, memo.metrics_socket,
                                                  memo.metrics_tls)
    if memo.peering is None:
        switch(memo, True)  # alone: active from the start
        return
    settings.peering.lifetime = memo.peering.lifetime
    peering = Peering(memo.client, memo.peering.name, memo.peering.identity,
                      memo.peering.priority, lambda active: switch(memo, active))
    try:
        await peering.ensure()
    except KubeError as exc:
        raise kopf.PermanentError(f"peering {memo.peering.name}: {exc}") from None
    memo.peering_task = asyncio.create_task(peering.run())


class NoPools(Exception):
    pass


async def build_shell(memo: OperatorMemo) -> Shell:
    """Read the cluster (clock, pools, leases, pods, namespaces) and rebuild the core
    from it: at the start of a lone operator, or when a replica becomes active. The
    shell is ``memo.shell`` from before the recovery."""
    client = memo.client
    try:
        clock = Clock.from_configmap((await client.get(CLOCK_PATH)).get("data"))
    except KubeError:
        clock = Clock()
    pools = await read_pools(client, {})
    if not any(p.up for p in pools):
        raise NoPools("no NodePool with nodes: create one, with an emulated block or"
                      " nodes its nodeSelector picks (docs/resources.md)")
    metrics = memo.metrics
    journal = Journal(client, memo.journal.where())
    if memo.journal.snapshot_every:
        journal.snapshot_every = memo.journal.snapshot_every
    shell = Shell(client, pools, memo.config, clock, metrics, journal, memo.tenancy)
    shell.batch_window = memo.batch_window
    memo.shell = shell
    # what changes after these listings, the watches begun from their versions tell
    # (a lease told twice is one lease)
    namespaces, memo.versions[NAMESPACES] = await listing(client, NAMESPACES)
    leases, memo.versions[LEASES] = await listing(client, LEASES)
    pods, memo.versions[PODS] = await listing(client, PODS, labelSelector=LEASE_LABEL)
    memo.origins = {ns["metadata"]["name"]: origin_of(memo.tenancy, ns) for ns in namespaces}
    await shell.recover(leases, memo.origins, pods)
    metrics.observe(shell.core, [], [], 0.0)
    metrics.active.set(1)
    log.info("leasehold operator: policy %s, pools %s, time scale %g", memo.config.policy,
             ", ".join(f"{p.spec.name} ({p.up} nodes)" for p in pools), clock.scale)
    return shell


def switch(memo: OperatorMemo, active: bool) -> None:
    """This replica is (no longer) the active one: start the shell from what the
    cluster holds, or stop it and forget its state (the next activation rebuilds it,
    since another replica may have moved things on meanwhile)."""
    if memo.task is not None:
        memo.task.cancel()
    memo.shell = memo.task = None
    memo.failure = None
    memo.metrics = Metrics()  # a standby exports no stale figures
    if active:
        memo.task = asyncio.create_task(_active(memo))


#: after an error, scheduling is rebuilt from the cluster after this many seconds,
#: doubling up to RETRY_MAX; back to the first once it has run for RETRY_MAX
RETRY_FIRST = 1.0
RETRY_MAX = 60.0
NO_POOLS_WAIT = 5.0


async def _active(memo: OperatorMemo) -> None:
    """Build the shell from the cluster and schedule, for as long as this replica is
    active: whatever stops it (the API server gone, an error in recovery or in a
    step) is logged, and the shell rebuilt with back-off, ``/healthz`` failing
    meanwhile. Without a NodePool with nodes, it looks again every 5 s (healthy:
    there is nothing to schedule on yet)."""
    loop = asyncio.get_running_loop()
    wait = RETRY_FIRST
    while True:
        began = loop.time()
        try:
            shell = await build_shell(memo)
            memo.failure = None
            await _schedule(memo, shell)
        except asyncio.CancelledError:
            raise
        except NoPools as exc:
            memo.shell = None
            log.error("cannot start scheduling: %s; looking again in %g s", exc, NO_POOLS_WAIT)
            await asyncio.sleep(NO_POOLS_WAIT)
            continue
        except Exception as exc:  # any error: rebuild, never die silently
            memo.shell = None
            if loop.time() - began > RETRY_MAX:
                wait = RETRY_FIRST  # it had been running: a new trouble
            memo.failure = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, KubeError | aiohttp.ClientError | OSError):
                log.error("scheduling stopped: %s; rebuilding from the cluster in %g s",
                          memo.failure, wait)
            else:
                log.exception("scheduling stopped: %s; rebuilding from the cluster in %g s",
                              memo.failure, wait)
            memo.metrics.active.set(0)
            await asyncio.sleep(wait)
            wait = min(wait * 2, RETRY_MAX)


async def _schedule(memo: OperatorMemo, shell: Shell) -> None:
    """The shell's loop and its watches, until one of them fails (its error raised)."""
    client, versions = memo.client, memo.versions
    try:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(shell.run())
            tasks.create_task(trimmed())
            tasks.create_task(follow(client, NAMESPACES, versions[NAMESPACES],
                                     lambda kind, ns: _namespace_seen(memo, kind, ns)))
            tasks.create_task(follow(client, LEASES, versions[LEASES],
                                     lambda kind, lease: _lease_seen(memo, shell, kind, lease)))
            tasks.create_task(follow(client, PODS, versions[PODS],
                                     lambda kind, pod: _pod_seen(shell, kind, pod),
                                     labelSelector=LEASE_LABEL))
    except ExceptionGroup as group:
        raise group.exceptions[0] from None  # the first failure: the others followed it


def _namespace_seen(memo: OperatorMemo, kind: str, namespace: Obj) -> None:
    name = namespace["metadata"]["name"]
    if kind == "DELETED":
        memo.origins.pop(name, None)
    else:
        memo.origins[name] = origin_of(memo.tenancy, namespace)


async def _lease_seen(memo: OperatorMemo, shell: Shell, kind: str, lease: Obj) -> None:
    """A Lease whose uid the shell does not know is new, whatever its status says
    (someone may have written one first): it is submitted (the shell keeps one lease
    per uid, so the events before its first step tell it once). The events of a known
    Lease are mostly the echoes of the shell's own status writes; a status someone
    else wrote is written over. A deleted Lease is cancelled at once: no finalizer
    holds a user's deletion up."""
    meta = lease["metadata"]
    namespace, name = meta["namespace"], meta["name"]
    if kind == "DELETED":
        shell.cancel(namespace, name, meta.get("uid"))
    elif shell.knows(meta.get("uid", "")):
        shell.status_seen(meta.get("uid", ""), lease.get("status") or {})
    else:
        origin = memo.origins.get(namespace)
        if origin is None:  # its namespace not seen yet: asked for
            origin = memo.origins[namespace] = await _origin(memo.tenancy, shell.client,
                                                             namespace)
        shell.submit({"metadata": meta, "spec": lease.get("spec") or {}}, origin)


def _pod_seen(shell: Shell, kind: str, pod: Obj) -> None:
    """The shell keeps the pods of its Leases as last seen: a pod gone from a running
    lease is mended, and a lease's work is done when every one of its pods has
    succeeded."""
    if kind in ("ADDED", "MODIFIED", "DELETED"):
        shell.pod_seen(kind, pod)


@kopf.on.cleanup(registry=registry)
async def cleanup(memo: OperatorMemo, **_: Any) -> None:
    for task in (memo.peering_task, memo.task):
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    await memo.client.close()
    if memo.metrics_runner is not None:
        await memo.metrics_runner.cleanup()


def listen(port: int, host: str = "127.0.0.1") -> socket.socket:
    """The metrics port on ``host``, bound now; ValueError (one line) when it cannot
    be."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ValueError(f"--metrics-port {port}: cannot listen on {host}:{port}:"
                         f" {exc.strerror or exc}; choose another port (0: no metrics)"
                         ) from None


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    """The server side of HTTPS for ``/metrics``; ValueError (one line) for files it
    cannot use."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"--metrics-cert {cert}, --metrics-key {key}: cannot use them:"
                         f" {getattr(exc, 'strerror', None) or exc}") from None
    return context


async def serve_metrics(memo: OperatorMemo, sock: socket.socket,
                        tls: ssl.SSLContext | None = None) -> web.AppRunner:
    """``/metrics`` (Prometheus text format) and ``/healthz`` on ``sock`` (over HTTPS
    with ``tls``); the metrics are the current ones (a replica that stands by has
    fresh, empty ones). ``/healthz`` fails (503, with why) while this replica is
    active and its scheduling is stopped by an error; a standby is healthy."""
    async def scrape(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(memo.metrics.registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(request: web.Request) -> web.Response:
        if memo.failure is not None:
            return web.Response(status=503, text=f"scheduling stopped: {memo.failure}\n")
        return web.Response(text="ok")
    app = web.Application()
    app.router.add_get("/metrics", scrape)
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock, ssl_context=tls).start()
    host, port = sock.getsockname()[:2]  # where it is bound, as the kernel says
    log.info("metrics at %s://%s:%d/metrics", "https" if tls else "http",
             f"[{host}]" if ":" in host else host, port)
    return runner


def origin_of(tenancy: Tenancy, namespace: dict[str, Any]) -> Origin:
    """A namespace's origin (DESIGN §2.1): local if the admins' configuration says
    so (by name, or by its labels where they turned that on), else external."""
    meta = namespace["metadata"]
    return Origin.LOCAL if tenancy.local(meta["name"], meta.get("labels")) \
        else Origin.EXTERNAL


async def _origin(tenancy: Tenancy, client: KubeClient, namespace: str) -> Origin:
    try:
        return origin_of(tenancy, await client.get(f"/api/v1/namespaces/{namespace}"))
    except KubeError:
        return Origin.EXTERNAL


@kopf.on.event(GROUP, VERSION, "nodepools", registry=registry)
async def nodepool_event(memo: OperatorMemo, **_: Any) -> None:
    """A NodePool created, changed or deleted: capacity is read again."""
    if memo.shell is not None:
        memo.shell.cluster_changed()


@kopf.on.event("", "v1", "nodes", registry=registry)
async def node_event(type: str, body: kopf.Body, name: str, memo: OperatorMemo,
                     **_: Any) -> None:
    """A node added, deleted, cordoned, Ready or not: capacity is read again (not
    for the status updates that change none of it)."""
    state = () if type == "DELETED" else _node_state(body)
    if memo.nodes.get(name) == state:
        return
    memo.nodes[name] = state
    if memo.shell is not None:
        memo.shell.cluster_changed()


def _node_state(node: Any) -> tuple[Any, ...]:
    if not node:
        return ()
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
    return (ready, (node.get("spec") or {}).get("unschedulable"),
            dict((node.get("metadata") or {}).get("labels") or {}),
            dict((node.get("status") or {}).get("allocatable") or {}))


def run(config: SchedulerConfig, kubeconfig: str | None = None,
        metrics: MetricsOptions | None = None, peering: PeeringOptions | None = None,
        journal: JournalOptions | None = None, tenancy: Tenancy | None = None,
        batch_window: float = BATCH_WINDOW) -> None:
    """``leasehold operator``: run until interrupted; alone, or with ``peering`` as
    one of several replicas of which one is active. ``kubeconfig`` (else $KUBECONFIG,
    ~/.kube/config, the pod's service account) goes to the operator's client and to
    Kopf's login alike; ``tenancy``, what the admins say about tenants;
    ``batch_window``, the least wall time between steps while inputs keep coming. Raises
    ValueError (one line) for a kubeconfig it cannot use, a metrics port it cannot
    listen on, or a certificate it cannot serve with."""
    # the library's own switch (process-wide): a ``_created`` series per counter and
    # histogram says when the operator started, over and over
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
    tune_collector()
    client = KubeClient.from_environment(kubeconfig)
    tls = None if metrics is None or metrics.cert is None or metrics.key is None \
        else tls_context(metrics.cert, metrics.key)
    sock = None if metrics is None else listen(metrics.port, metrics.address)
    memo = OperatorMemo(config, client,
                        str(Path(kubeconfig).expanduser()) if kubeconfig else None,
                        sock, tls, peering, journal or JournalOptions(),
                        tenancy=tenancy or Tenancy(), batch_window=batch_window)
    kopf.configure(verbose=False)
    # a line per handled event costs more than the handling, at a thousand Leases
    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    extra: dict[str, Any] = {"standalone": True} if peering is None else {
        "peering_name": peering.name, "priority": peering.priority,
        "identity": peering.identity}
    kopf.run(registry=registry, clusterwide=True, **extra, memo=memo)
