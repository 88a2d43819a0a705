"""The operator under load (the operator issue's benchmark): 1,000 Leases applied at
once on an emulated 100-node pool, then a wave of local Leases that preempts, and the
whole run to its end.

Starts `leasehold emulator up` and `leasehold operator` as subprocesses and creates
the Leases over HTTPS with 32 concurrent clients. It prints:

- the time from the first create to every Lease having a decided phase (anything
  but Pending; target < 30 s), and the operator's CPU seconds over it;
- the operator's CPU seconds against the core deciding the same submissions in this
  process (the baseline: what the shell, Kopf and the API add, as a ratio);
- the operator's peak resident set (VmHWM; target < 300 MB);
- the API writes the operator made, counted by the API server by client (Kopf's and
  leasehold's own), per lease and per VM per lifecycle step (target < 5). A step is
  a lease's VMs started, suspended, resumed, migrated, cancelled or completed,
  counted from the events the operator posts, times the lease's VMs; a rejection is
  one step of one VM, since it too is written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from leasehold.api.clock import Clock
from leasehold.api.resources import lease_spec
from leasehold.core.model import Origin, PoolSpec, SchedulerConfig
from leasehold.core.scheduler import Scheduler
from leasehold.kube.client import KubeClient
from leasehold_emulator.up import stop
from procstat import cpu_seconds, memory_mb

API = "/apis/leasehold.io/v1alpha1"
DECIDED = {"Queued", "Scheduled", "Running", "Suspending", "Suspended", "Resuming",
           "Migrating", "Completed", "Cancelled", "Rejected", "Failed"}
FINAL = {"Completed", "Cancelled", "Rejected", "Failed"}
#: events that move a lease's VMs (the lifecycle steps)
STEPS = {"Started", "Preempted", "Resumed", "Migrated", "Cancelled", "Completed", "Rejected"}
OPERATOR_CLIENTS = {"kopf", "leasehold-operator"}
WRITES = {"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}


def leases(n: int, local: int, seed: int) -> list[dict[str, Any]]:
    """``n`` external Leases (a mix of types, 1-4 VMs of 1 cpu, 10-60 min) and
    ``local`` local ones (deadline-bound, 4-8 VMs), as manifests."""
    rng = random.Random(seed)
    out = []
    for i in range(n + local):
        is_local = i >= n
        vms = rng.randint(4, 8) if is_local else rng.randint(1, 4)
        minutes = rng.randint(10, 60)
        kind = "DeadlineNonPreemptable" if is_local else rng.choice(
            ["BestEffortSuspendable"] * 4 + ["BestEffortCancellable"] * 2
            + ["DeadlineMigratable"] * 2 + ["DeadlineNonPreemptable"])
        spec: dict[str, Any] = {"type": kind, "vms": vms, "duration": f"{minutes}m",
                                "resources": {"cpu": "1", "memory": "1Gi"}}
        if kind.startswith("Deadline"):
            spec["deadline"] = f"{minutes + rng.choice([30, 120, 600])}m"
        out.append({"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
                    "metadata": {"name": f"{'local' if is_local else 'ext'}-{i:04d}",
                                 "namespace": "owners" if is_local else "lab"},
                    "spec": spec})
    return out


def baseline_cpu(manifests: list[dict[str, Any]], nodes: int, policy: str) -> float:
    """CPU seconds for the core alone to read and decide the same submissions at one
    instant, as the operator's shell reads them."""
    core = Scheduler([PoolSpec("bench", nodes, 4000, 16384)], SchedulerConfig(policy=policy))
    clock = Clock()
    start = time.process_time()
    for m in manifests:
        origin = Origin.LOCAL if m["metadata"]["namespace"] == "owners" else Origin.EXTERNAL
        core.submit(lease_spec(m, origin, 0.0, clock).to_request(), 0.0)
    core.advance(0.0)
    return time.process_time() - start


class Run:
    def __init__(self, data: Path, nodes: int, scale: float, policy: str) -> None:
        self.data = data
        pools = data / "pool.yaml"
        pools.write_text(yaml.safe_dump({
            "apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "bench"},
            "spec": {"emulated": {"nodes": nodes, "cpu": 4, "memory": "16Gi"}}}))
        cluster = data / "cluster"
        self.log = (data / "bench.log").open("ab")
        self.emulator = subprocess.Popen(
            [sys.executable, "-m", "leasehold.cli", "emulator", "up", "--port", "0",
             "--data", str(cluster), "--time-scale", f"{scale:g}", "--pools", str(pools)],
            stdout=self.log, stderr=subprocess.STDOUT)
        while not (cluster / "server.json").exists():
            if self.emulator.poll() is not None:
                raise SystemExit(f"the emulator did not start (see {data / 'bench.log'})")
            time.sleep(0.05)
        self.kubeconfig = cluster / "kubeconfig"
        self.client = KubeClient.from_kubeconfig(self.kubeconfig, agent="leasehold-bench")
        self.policy = policy

    def start_operator(self, profile: str | None = None) -> None:
        self.operator_log = self.data / "operator.log"
        python = [sys.executable, *(["-m", "cProfile", "-o", profile] if profile else [])]
        self.operator = subprocess.Popen(
            [*python, "-m", "leasehold.cli", "operator", "--kubeconfig",
             str(self.kubeconfig), "--policy", self.policy, "--metrics-port", "0"],
            stdout=self.operator_log.open("ab"), stderr=subprocess.STDOUT)

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

    async def phases(self) -> dict[str, str]:
        items = (await self.client.get(f"{API}/leases")).get("items", [])
        return {x["metadata"]["name"]: (x.get("status") or {}).get("phase", "")
                for x in items}

    def stop(self) -> None:
        stop(getattr(self, "operator", None))
        stop(self.emulator)


async def create_all(client: KubeClient, manifests: list[dict[str, Any]],
                     concurrency: int = 32) -> None:
    queue = list(reversed(manifests))

    async def worker() -> None:
        while queue:
            m = queue.pop()
            await client.create(f"{API}/namespaces/{m['metadata']['namespace']}/leases", m)
    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def until(check: Any, timeout: float, what: str) -> float:
    """Seconds until ``await check()`` gives (n, n), showing progress: on a terminal
    in place, into a log a line every 10 s."""
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
        if now - start > timeout:
            raise SystemExit(f"\n{what}: {done}/{total}, not within {timeout:.0f} s")
        await asyncio.sleep(0.2)


async def main(args: argparse.Namespace) -> None:
    external = leases(args.leases, 0, args.seed)
    local = leases(args.leases, args.local, args.seed)[args.leases:]
    base = baseline_cpu(external, args.nodes, args.policy)
    data = Path(tempfile.mkdtemp(prefix="leasehold-bench-operator-"))
    run = Run(data, args.nodes, args.time_scale, args.policy)
    try:
        for ns, origin in (("lab", "external"), ("owners", "local")):
            await run.client.create("/api/v1/namespaces", {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "labels": {"leasehold.io/origin": origin}}})
        run.start_operator(args.profile)
        while "] recovered " not in run.operator_log.read_text():
            if run.operator.poll() is not None:
                raise SystemExit(f"the operator stopped (see {run.operator_log})")
            await asyncio.sleep(0.1)
        pid = run.operator.pid
        cpu0 = cpu_seconds(pid)
        writes0 = await run.writes()
        print(f"{args.leases} Leases, {args.nodes} nodes x 4 cpu, policy {args.policy},"
              f" time scale {args.time_scale:g}")
        t0 = time.monotonic()
        await create_all(run.client, external)
        created = time.monotonic() - t0

        async def decided() -> tuple[int, int]:
            phases = await run.phases()
            return sum(p in DECIDED for p in phases.values()), len(external)
        waited = await until(decided, 120, "decided")
        decide_cpu = cpu_seconds(pid) - cpu0
        decide_wall = created + waited
        print(f"  created in {created:.1f} s; all decided {decide_wall:.1f} s after the"
              f" first create (target < 30 s)")
        print(f"  operator CPU {decide_cpu:.1f} s; the core alone {base:.2f} s"
              f" (x{decide_cpu / base:.1f})")

        if args.decide_only:
            return
        await create_all(run.client, local)
        print(f"  {len(local)} local Leases applied")

        async def final() -> tuple[int, int]:
            phases = await run.phases()
            return sum(p in FINAL for p in phases.values()), len(phases)
        ended = await until(final, args.timeout, "final")
        print(f"  all {len(external) + len(local)} final {ended:.1f} s after the local wave")
        total_cpu = cpu_seconds(pid) - cpu0
        rss = memory_mb(pid, "VmHWM")
        writes = await run.writes()
        ours = Counter({k: v - writes0.get(k, 0) for k, v in writes.items()
                        if k[0] in OPERATOR_CLIENTS and v > writes0.get(k, 0)})
        vms = {m["metadata"]["name"]: m["spec"]["vms"] for m in external + local}
        events = (await run.client.get("/api/v1/events")).get("items", [])
        steps = Counter(e["reason"] for e in events if e["reason"] in STEPS)
        vm_steps = sum(1 if e["reason"] == "Rejected" else vms[e["involvedObject"]["name"]]
                       for e in events if e["reason"] in STEPS)
        phases = Counter((await run.phases()).values())
        total = sum(ours.values())
        print(f"  phases: {dict(sorted(phases.items()))}")
        print(f"  lifecycle steps: {dict(sorted(steps.items()))}; {vm_steps} VM-steps")
        print(f"  operator API writes: {total} ({total / len(vms):.2f} per lease,"
              f" {total / vm_steps:.2f} per VM per step; target < 5)")
        for (client, verb, resource), n in sorted(ours.items(), key=lambda x: -x[1]):
            print(f"    {n:6d}  {client:18s} {verb:7s} {resource}")
        print(f"  operator CPU over the whole run {total_cpu:.1f} s;"
              f" peak RSS {rss:.0f} MB (target < 300 MB)")
        print(f"  machine: {platform.node()}, {os.cpu_count()} cores, Python"
              f" {platform.python_version()}")
        if args.json:
            Path(args.json).write_text(json.dumps({
                "decided_seconds": decide_wall, "decide_cpu": decide_cpu,
                "baseline_cpu": base, "total_cpu": total_cpu, "peak_rss_mb": rss,
                "final_seconds": ended, "writes": total, "vm_steps": vm_steps, "steps": steps,
                "phases": phases}, indent=1))
    finally:
        await run.client.close()
        run.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leases", type=int, default=1000)
    parser.add_argument("--local", type=int, default=40, help="local Leases after (default: 40)")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--time-scale", type=float, default=120.0)
    parser.add_argument("--policy", default="moml")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds for the whole run to end (default: 900)")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--profile", metavar="FILE",
                        help="run the operator under cProfile, its statistics into FILE")
    parser.add_argument("--decide-only", action="store_true",
                        help="stop once every Lease is decided")
    asyncio.run(main(parser.parse_args()))
