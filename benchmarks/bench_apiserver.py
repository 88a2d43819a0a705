"""The emulated API server under load (the emulated-cluster issue's benchmark).

Starts `leasehold emulator up` in a subprocess and drives it over HTTPS with the
bearer token, as clients do:

- creates/s and updates/s with 32 concurrent clients (ConfigMaps; target >= 1,000
  writes/s);
- watch latency with 50 watchers: from just before a write is sent to each watcher
  receiving its event (target p99 < 50 ms);
- memory with 10,000 pods (the server's resident set; target < 300 MB).

Prints wall-clock rates (the target is a rate) and the server's CPU seconds, which
the shared machine's noise moves less.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from procstat import cpu_seconds, memory_mb


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Target:
    def __init__(self, data: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "leasehold.cli", "emulator", "up",
                                      "--port", "0", "--data", str(data)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not (data / "server.json").exists():
            if self.proc.poll() is not None:
                raise SystemExit("the emulator did not start")
            time.sleep(0.05)
        self.url = json.loads((data / "server.json").read_text())["url"]
        self.headers = {"Authorization": f"Bearer {(data / 'token').read_text().strip()}",
                        "Content-Type": "application/json"}
        self.ssl = ssl.create_default_context(cafile=str(data / "pki" / "ca.crt"))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


async def writes(t: Target, session: aiohttp.ClientSession, clients: int, per_client: int
                 ) -> tuple[float, float, float, float]:
    base = f"{t.url}/api/v1/namespaces/default/configmaps"

    async def create(c: int) -> None:
        for i in range(per_client):
            body = {"metadata": {"name": f"w{c}-{i}"}, "data": {"v": "0"}}
            async with session.post(base, json=body) as r:
                assert r.status == 201, await r.text()

    async def update(c: int) -> None:
        for i in range(per_client):
            patch = json.dumps({"data": {"v": "1"}})
            async with session.patch(f"{base}/w{c}-{i}", data=patch, headers={
                    "Content-Type": "application/merge-patch+json"}) as r:
                assert r.status == 200, await r.text()

    out = []
    for job in (create, update):
        cpu, start = cpu_seconds(t.proc.pid), time.perf_counter()
        await asyncio.gather(*(job(c) for c in range(clients)))
        out += [clients * per_client / (time.perf_counter() - start),
                cpu_seconds(t.proc.pid) - cpu]
    return out[0], out[1], out[2], out[3]


async def watch_latency(t: Target, session: aiohttp.ClientSession, watchers: int,
                        events: int) -> list[float]:
    base = f"{t.url}/api/v1/namespaces/default/configmaps"
    async with session.get(base) as r:
        rv = (await r.json())["metadata"]["resourceVersion"]
    sent: dict[str, float] = {}
    latencies: list[float] = []
    ready = asyncio.Barrier(watchers + 1)

    async def watcher() -> None:
        url = f"{base}?watch=true&resourceVersion={rv}&labelSelector=bench%3Dwatch"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
            await ready.wait()
            seen = 0
            async for line in r.content:
                now = time.perf_counter()
                name = json.loads(line)["object"]["metadata"]["name"]
                latencies.append(now - sent[name])
                seen += 1
                if seen == events:
                    return

    tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
    await ready.wait()
    await asyncio.sleep(0.5)  # every stream is open on the server's side
    for i in range(events):
        name = f"lat-{i}"
        sent[name] = time.perf_counter()
        async with session.post(base, json={"metadata": {"name": name,
                                                         "labels": {"bench": "watch"}}}) as r:
            assert r.status == 201
        await asyncio.sleep(0.01)
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    return latencies


async def pods(t: Target, session: aiohttp.ClientSession, count: int, clients: int
               ) -> tuple[float, float]:
    """Resident MB with ``count`` pods, 8 per owner (as the VMs of a lease); then the
    seconds to delete the owners and have every pod garbage-collected."""
    base = f"{t.url}/api/v1/namespaces/default"
    owners: dict[int, str] = {}
    for o in range(0, count, 8):
        async with session.post(f"{base}/configmaps",
                                json={"metadata": {"name": f"lease-{o // 8}"}}) as r:
            owners[o // 8] = (await r.json())["metadata"]["uid"]
    template = {"spec": {"containers": [{"name": "vm", "image": "leasehold/vm:1",
                                         "resources": {"requests": {"cpu": "1",
                                                                    "memory": "1Gi"}}}]}}

    async def create(c: int) -> None:
        for i in range(c, count, clients):
            ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"lease-{i // 8}",
                   "uid": owners[i // 8]}
            body = {**template, "metadata": {"name": f"lease-{i // 8}-vm-{i % 8}",
                                             "labels": {"leasehold.io/lease": f"l{i // 8}"},
                                             "ownerReferences": [ref]}}
            async with session.post(f"{base}/pods", json=body) as r:
                assert r.status == 201, await r.text()
    await asyncio.gather(*(create(c) for c in range(clients)))
    async with session.get(f"{base}/pods") as r:
        assert len((await r.json())["items"]) == count
    rss = memory_mb(t.proc.pid)

    async def delete(c: int) -> None:
        for o in range(c, len(owners), clients):
            async with session.delete(f"{base}/configmaps/lease-{o}") as r:
                assert r.status == 200, await r.text()
    start = time.perf_counter()
    await asyncio.gather(*(delete(c) for c in range(clients)))
    async with session.get(f"{base}/pods") as r:
        assert (await r.json())["items"] == []
    return rss, time.perf_counter() - start


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = Target(Path(tmp))
        try:
            conn = aiohttp.TCPConnector(ssl=t.ssl, limit=0)
            async with aiohttp.ClientSession(headers=t.headers, connector=conn) as session:
                idle = memory_mb(t.proc.pid)
                c_rate, c_cpu, u_rate, u_cpu = await writes(t, session, 32, args.per_client)
                n = 32 * args.per_client
                print(f"creates: {c_rate:,.0f}/s with 32 clients ({n:,} writes; server"
                      f" {c_cpu * 1e3 / n:.2f} CPU-ms each)")
                print(f"updates: {u_rate:,.0f}/s with 32 clients ({n:,} merge patches; server"
                      f" {u_cpu * 1e3 / n:.2f} CPU-ms each)")
                lat = await watch_latency(t, session, 50, args.events)
                print(f"watch latency, 50 watchers x {args.events} events: p50"
                      f" {percentile(lat, 0.5) * 1e3:.1f} ms, p99"
                      f" {percentile(lat, 0.99) * 1e3:.1f} ms, max {max(lat) * 1e3:.1f} ms")
                rss, gc = await pods(t, session, args.pods, 32)
                print(f"memory: {rss:.0f} MB resident with {args.pods:,} pods"
                      f" (idle: {idle:.0f} MB; also {n + args.events + args.pods // 8:,}"
                      f" ConfigMaps)")
                print(f"garbage collection: {args.pods // 8:,} owners deleted and their"
                      f" {args.pods:,} pods collected in {gc:.1f} s")
        finally:
            t.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-client", type=int, default=100, help="writes per client (100)")
    ap.add_argument("--events", type=int, default=200, help="watched writes (200)")
    ap.add_argument("--pods", type=int, default=10_000, help="pods for the memory probe")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
