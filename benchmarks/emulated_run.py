"""What the operator benchmarks share: an emulated cluster and the operator as
subprocesses, and a watch that times every Lease from its creation to its pods
Running, in wall-clock seconds, from outside the operator.

- :class:`Cluster` starts `leasehold emulator up` with the given NodePools and
  `leasehold operator` against it, counts the API server's writes by client, reads
  CPU and memory of both from /proc, and removes its temporary directory at the end
  (unless asked to keep it).
- :class:`Timeline` watches Leases and pods: when each Lease was created (as the
  benchmark's create returned), first had a decided phase, was started by the core
  (``status.startedAt``, the core's time as an RFC 3339 wall-clock time on the
  cluster's clock, to the microsecond), and had all its first pods Running (as the
  watch saw them).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from leasehold.api.clock import epoch
from leasehold.kube.client import KubeClient, KubeError
from leasehold_emulator.up import stop
from procstat import cpu_seconds, memory_mb

API = "/apis/leasehold.io/v1alpha1"
DECIDED = {"Queued", "Scheduled", "Running", "Suspending", "Suspended", "Resuming",
           "Migrating", "Completed", "Cancelled", "Rejected", "Failed"}
#: the phases of a lease whose pods are wanted
RUNNING = {"Running", "Resuming", "Migrating"}
FINAL = {"Completed", "Cancelled", "Rejected", "Failed"}
OPERATOR_CLIENTS = {"kopf", "leasehold-operator"}
WRITES = {"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}


def pool(name: str, nodes: int, cpu: int, memory: str = "16Gi") -> dict[str, Any]:
    """An emulated NodePool's manifest."""
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {"emulated": {"nodes": nodes, "cpu": cpu, "memory": memory}}}


class Cluster:
    """The emulated cluster (API server and nodes, one process) and the operator."""

    def __init__(self, pools: list[dict[str, Any]], time_scale: float,
                 keep: bool = False, options: tuple[str, ...] = (),
                 profiles: Path | None = None, counts: bool = False) -> None:
        self.data = Path(tempfile.mkdtemp(prefix="leasehold-bench-"))
        self.keep = keep
        #: where the operator writes a profile (``counts``: its counters instead) at
        #: each :meth:`profile_mark` (``minute_profile.py``), or None
        self.profiles = profiles
        self.counts = counts
        self.operator: subprocess.Popen[bytes] | None = None
        #: the namespaces the operator takes for local (:meth:`namespaces`)
        self.local: list[str] = []
        (self.data / "pools.yaml").write_text(yaml.safe_dump_all(pools))
        cluster = self.data / "cluster"
        self.log = self.data / "emulator.log"
        self.emulator = subprocess.Popen(
            [sys.executable, "-m", "leasehold.cli", "emulator", "up", "--port", "0",
             "--data", str(cluster), "--time-scale", f"{time_scale:g}",
             "--pools", str(self.data / "pools.yaml"), *options],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not (cluster / "server.json").exists():
            if self.emulator.poll() is not None or time.monotonic() > deadline:
                stop(self.emulator)
                log = self.log.read_text()[-2000:]
                self._remove()
                raise SystemExit(f"the emulated cluster did not start:\n{log}")
            time.sleep(0.05)
        self.kubeconfig = cluster / "kubeconfig"
        self.client = KubeClient.from_kubeconfig(self.kubeconfig, agent="leasehold-bench")

    async def namespaces(self, origins: dict[str, str]) -> None:
        """The namespaces; those whose origin is local, the operator is told of
        (its admins' configuration: a label would not do, issue 17)."""
        self.local = [name for name, origin in origins.items() if origin == "local"]
        for name in origins:
            await self.client.create("/api/v1/namespaces", {
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def start_operator(self, *options: str, profile: str | None = None) -> None:
        """Start the operator and wait until it has recovered (it schedules from then)."""
        self.operator_log = self.data / "operator.log"
        python = ([sys.executable, "-m", "cProfile", "-o", profile] if profile
                  else self._python("operator"))
        self.operator = subprocess.Popen(
            [*python, "-m", "leasehold.cli", "operator", "--kubeconfig",
             str(self.kubeconfig), "--metrics-port", "0",
             *(a for ns in self.local for a in ("--local-namespace", ns)),
             *options],
            stdout=self.operator_log.open("ab"), stderr=subprocess.STDOUT)
        while "] recovered " not in self.operator_log.read_text():
            if self.operator.poll() is not None:
                raise SystemExit("the operator stopped:\n"
                                 + self.operator_log.read_text()[-2000:])
            await asyncio.sleep(0.1)

    def _python(self, who: str) -> list[str]:
        """The interpreter's command line, under ``minute_profile.py`` if profiled."""
        if self.profiles is None:
            return [sys.executable]
        self.profiles.mkdir(parents=True, exist_ok=True)
        return [sys.executable, str(Path(__file__).with_name("minute_profile.py")),
                *(["--counts"] if self.counts else []), str(self.profiles / who)]

    def profile_mark(self) -> None:
        """The operator writes what it counted since the last mark (if profiled)."""
        if self.profiles is not None:
            assert self.operator is not None
            self.operator.send_signal(signal.SIGUSR1)

    def usage(self) -> dict[str, float]:
        """CPU seconds so far and resident MB now of the operator and the cluster."""
        assert self.operator is not None
        return {"operator_cpu": cpu_seconds(self.operator.pid),
                "operator_rss": memory_mb(self.operator.pid),
                "operator_peak_rss": memory_mb(self.operator.pid, "VmHWM"),
                "cluster_cpu": cpu_seconds(self.emulator.pid),
                "cluster_rss": memory_mb(self.emulator.pid),
                "cluster_peak_rss": memory_mb(self.emulator.pid, "VmHWM")}

    async def writes(self) -> Counter[tuple[str, str, str]]:
        """The API server's write requests so far: (client, verb, resource) -> count."""
        out: Counter[tuple[str, str, str]] = Counter()
        for family in text_string_to_metric_families(await self.client.text("/metrics")):
            for sample in family.samples:
                labels = sample.labels
                if sample.name == "apiserver_request_total" and labels["verb"] in WRITES:
                    resource = labels["resource"] + (f"/{labels['subresource']}"
                                                     if labels["subresource"] else "")
                    out[labels["client"], labels["verb"], resource] += int(sample.value)
        return out

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.close()
        stop(self.operator)
        stop(self.emulator)
        self._remove()

    def _remove(self) -> None:
        if self.keep:
            print(f"  kept {self.data}")
        else:
            shutil.rmtree(self.data, ignore_errors=True)


def ours(after: Counter[tuple[str, str, str]], before: Counter[tuple[str, str, str]]
         ) -> Counter[tuple[str, str, str]]:
    """The operator's writes between two counts."""
    return Counter({k: v - before.get(k, 0) for k, v in after.items()
                    if k[0] in OPERATOR_CLIENTS and v > before.get(k, 0)})


async def create_all(client: KubeClient, manifests: Iterable[dict[str, Any]],
                     timeline: Timeline, concurrency: int = 32) -> None:
    """Create the Leases, ``concurrency`` at a time, noting when each create returned."""
    queue = list(reversed(list(manifests)))

    async def worker() -> None:
        while queue:
            m = queue.pop()
            await create(client, m, timeline)
    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def create(client: KubeClient, m: dict[str, Any], timeline: Timeline) -> None:
    meta = m["metadata"]
    await client.create(f"{API}/namespaces/{meta['namespace']}/leases", m)
    timeline.created[f"{meta['namespace']}/{meta['name']}"] = time.time()


@dataclass
class Timeline:
    """Wall-clock times of each Lease (``namespace/name``), seen from outside."""

    vms: dict[str, int] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    decided: dict[str, float] = field(default_factory=dict)
    phase: dict[str, str] = field(default_factory=dict)
    #: the core's first start of the lease, as wall-clock time
    started: dict[str, float] = field(default_factory=dict)
    #: when the last of its first pods was seen Running
    running: dict[str, float] = field(default_factory=dict)
    #: started, then stopped (preempted, ended) before all its pods were seen Running
    interrupted: set[str] = field(default_factory=set)
    _pods: dict[str, set[str]] = field(default_factory=dict)

    def lease_event(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        self.vms.setdefault(key, int((obj.get("spec") or {}).get("vms", 1)))
        status = obj.get("status") or {}
        phase = status.get("phase") or ""
        self.phase[key] = phase
        if phase in DECIDED and key not in self.decided:
            self.decided[key] = time.time()
        if status.get("startedAt") is not None and key not in self.started:
            self.started[key] = epoch(status["startedAt"])
        if key in self.started and key not in self.running and phase not in RUNNING:
            self.interrupted.add(key)

    def pod_event(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        owner = next((o["name"] for o in meta.get("ownerReferences") or []
                      if o.get("kind") == "Lease"), None)
        if owner is None or (obj.get("status") or {}).get("phase") != "Running":
            return
        key = f"{meta['namespace']}/{owner}"
        if key in self.running or key in self.interrupted:
            return
        seen = self._pods.setdefault(key, set())
        seen.add(meta["name"])
        if len(seen) >= self.vms.get(key, 1):
            self.running[key] = time.time()
            del self._pods[key]

    def lags(self) -> list[float]:
        """Seconds from the core's start of each lease to its first pods all Running
        (those interrupted before are left out)."""
        return [lag for _, lag in self.lagged()]

    def lagged(self) -> list[tuple[float, float]]:
        """(wall-clock start, lag) of each lease :meth:`lags` measures, by start."""
        return sorted((self.started[k], self.running[k] - self.started[k])
                      for k in self.running if k in self.started)

    async def watch(self, client: KubeClient) -> None:
        """Follow Leases and pods until cancelled."""
        await asyncio.gather(_follow(client, f"{API}/leases", self.lease_event),
                             _follow(client, "/api/v1/pods", self.pod_event))


async def _follow(client: KubeClient, path: str, seen: Callable[[dict[str, Any]], None]
                  ) -> None:
    """List, then watch from there; again from the last version the stream gave when
    it ends, or listing afresh when that version is too old."""
    version = ""
    while True:
        if not version:
            listing = await client.get(path)
            for obj in listing.get("items", []):
                seen(obj)
            version = listing["metadata"]["resourceVersion"]
        try:
            async for event in client.watch(path, version, timeout=120):
                obj = event["object"]
                version = obj["metadata"].get("resourceVersion", version)
                if event["type"] in ("ADDED", "MODIFIED"):
                    seen(obj)
        except KubeError as exc:
            if exc.code != 410:
                raise
            version = ""


async def until(check: Callable[[], Awaitable[tuple[int, int]]], deadline: float,
                what: str) -> float:
    """Seconds until ``await check()`` gives (n, n), showing progress: on a terminal
    in place, into a log a line every 10 s. Past ``deadline`` (time.monotonic())
    the run stops with what was reached."""
    start = shown = time.monotonic()
    tty = sys.stdout.isatty()
    while True:
        done, total = await check()
        now = time.monotonic()
        line = f"  {what}: {done}/{total}  {now - start:5.1f} s"
        if tty:
            print("\r" + line, end="", flush=True)
        elif now - shown >= 10:
            print(line, flush=True)
            shown = now
        if done == total:
            if tty:
                print()
            return now - start
        if now > deadline:
            raise SystemExit(f"\n{what}: {done}/{total} when the time limit (--timeout)"
                             " ran out")
        await asyncio.sleep(0.2)


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``; nan if there are none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]
