"""``leasehold demo``: the testbed of 000 §8.3 on the embedded emulated cluster.

For each policy: an emulated cluster with the testbed's pool, the operator, and the
7 Leases of the testbed (``examples/testbed/``, shipped in this package as
``data/testbed/``) applied at their arrival times, in scaled time.
A live table shows the leases while they run; at the end, a table like 000's Table
III: who was preempted, the overhead, and the makespan."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path
from typing import IO, Any

import yaml

from leasehold.api.clock import epoch
from leasehold.api.durations import parse_duration
from leasehold.kube.client import KubeClient, KubeError

from .up import UpError, start, stop, wait_for

#: the testbed's manifests and the operator's configuration for it (copies of
#: examples/testbed/ and examples/operator/testbed.yaml): package data, so that an
#: installed wheel has them too
TESTBED = files("leasehold_emulator") / "data" / "testbed"
OPERATOR_CONFIG = files("leasehold_emulator") / "data" / "operator" / "testbed.yaml"
LEASES = "/apis/leasehold.io/v1alpha1/leases"
FINAL = ("Completed", "Rejected", "Cancelled", "Failed")


#: emulated seconds from the first Lease's arrival until every Lease has ended, under
#: the slowest policy (mov and moml, live: 7,831 and 7,842 s; nop ends at 5,946 s)
SPAN = 7850
#: real seconds each policy's run adds to SPAN / scale: the emulated cluster and the
#: operator starting, 3 s for the operator to be up, stopping both. `make demo` on this
#: project's 2 cores (shared, load 5), 2026-11-26: `leasehold demo` 119.4 s, which
#: 4 x (7850 / 300 + 4) = 120.7 s matches (its Leases' live ends: 96.1 s of the 119.4)
SETUP = 4.0


class DemoError(Exception):
    """Why the demo could not run: one line."""


def testbed(name: str) -> str:
    """A testbed manifest's text: ``1-namespaces.yaml``, ``2-pool.yaml`` or
    ``3-leases.yaml`` (numbered: ``kubectl apply -f`` a directory goes by name)."""
    return (TESTBED / name).read_text(encoding="utf-8")


def expected_seconds(scale: float, policies: tuple[str, ...]) -> float:
    """How long the demo runs, in real seconds (about: the machine's speed varies)."""
    return len(policies) * (SPAN / scale + SETUP)


def _about(seconds: float) -> str:
    """``131`` -> ``"2 min 10 s"``, to the nearest 10 s."""
    rounded = max(10, round(seconds / 10) * 10)
    minutes, rest = divmod(rounded, 60)
    if not minutes:
        return f"{rest} s"
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def _listed(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def announcement(scale: float, policies: tuple[str, ...]) -> str:
    """What the demo is about to run and for how long: its first line."""
    span = f"{SPAN // 3600} h {round(SPAN % 3600 / 60)} min"
    return (f"leasehold demo: the MOML paper's testbed (000 §8.3, 7 Leases) under"
            f" {_listed(policies)}, each on a new emulated cluster with the operator, at"
            f" {scale:g}x ({span} of emulated time each): about"
            f" {_about(expected_seconds(scale, policies))} in all. Ctrl-C stops it.")


def _table(leases: list[dict[str, Any]]) -> str:
    rows = [("LEASE", "TYPE", "VMS", "PHASE", "PREEMPTED", "NODES")]
    for lease in sorted(leases, key=lambda x: x["metadata"]["name"]):
        status = lease.get("status") or {}
        nodes = ",".join((status.get("reservation") or {}).get("nodes") or []) or "-"
        rows.append((f"{lease['metadata']['namespace']}/{lease['metadata']['name']}",
                     lease["spec"]["type"], str(lease["spec"]["vms"]),
                     status.get("phase", "-"), str(status.get("preemptions", 0)), nodes))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


async def _run_policy(policy: str, scale: float, data: Path, out: IO[str], which: str,
                      announced: str) -> dict[str, Any]:
    """One policy's run (``which``: ``"2 of 4"``), a live table of its Leases on ``out``
    under the demo's ``announced`` line."""
    pools = data / "testbed-pool.yaml"  # a file for `emulator up`, wherever the package is
    pools.write_text(testbed("2-pool.yaml"), encoding="utf-8")
    config = data / "testbed-operator.yaml"  # the admins make `owners` local
    config.write_text(OPERATOR_CONFIG.read_text(encoding="utf-8"), encoding="utf-8")
    emulator = start(["emulator", "up", "--port", "0", "--data", str(data), "--time-scale",
                      f"{scale:g}", "--pools", str(pools)], data / "log")
    operator: subprocess.Popen[bytes] | None = None
    try:
        try:
            await asyncio.to_thread(wait_for, data / "server.json", emulator,
                                    "the emulated cluster", data / "log")
        except UpError as exc:
            raise DemoError(str(exc)) from None
        async with KubeClient.from_kubeconfig(data / "kubeconfig") as client:
            for doc in yaml.safe_load_all(testbed("1-namespaces.yaml")):
                await client.create("/api/v1/namespaces", doc)
            operator = start(["operator", "--kubeconfig", str(data / "kubeconfig"),
                              "--config", str(config), "--policy", policy,
                              "--metrics-port", "0"], data / "log")
            docs = [d for d in yaml.safe_load_all(testbed("3-leases.yaml")) if d]
            await asyncio.sleep(3)  # the operator is up
            began = time.monotonic()
            pending = list(docs)
            shown = ""
            tty = out.isatty()
            while True:
                now = time.monotonic() - began
                while pending and parse_duration(
                        pending[0]["metadata"]["annotations"]["leasehold.io/arrival"]) \
                        / scale <= now:
                    doc = pending.pop(0)
                    ns = doc["metadata"]["namespace"]
                    await client.create(f"/apis/leasehold.io/v1alpha1/namespaces/{ns}/leases",
                                        doc)
                leases = (await client.get(LEASES)).get("items", [])
                table = _table(leases)
                if table != shown:
                    minutes = now * scale / 60
                    head = (f"[{policy}, {which}] emulated time {minutes:5.1f} of about"
                            f" {SPAN / 60:.0f} min")
                    # a terminal's screen is redrawn: the announcement stays on top
                    out.write((f"\033[2J\033[H{announced}\n\n" if tty else "\n") + head + "\n"
                              + table + "\n")
                    out.flush()
                    shown = table
                if not pending and leases and all(
                        (x.get("status") or {}).get("phase") in FINAL for x in leases):
                    return _summary(policy, leases, scale)
                if now > 4 * 7800 / scale + 60:
                    raise DemoError(f"{policy}: the run did not finish (see {data / 'log'})")
                await asyncio.sleep(0.25)
    except (KubeError, OSError) as exc:
        raise DemoError(f"{policy}: {exc} (see {data / 'log'})") from None
    finally:
        stop(operator)
        stop(emulator)


def _summary(policy: str, leases: list[dict[str, Any]], scale: float) -> dict[str, Any]:
    statuses = [x.get("status") or {} for x in leases]
    names = {id(s): x["metadata"]["name"].removeprefix("lease-") for x, s in zip(
        leases, statuses, strict=True)}
    # wall-clock times (RFC 3339) of a clock running ``scale`` times faster
    submitted = [epoch(s["submittedAt"]) * scale for s in statuses if "submittedAt" in s]
    ended = [epoch(s["endedAt"]) * scale for s in statuses if s.get("endedAt") is not None]
    return {
        "policy": policy,
        "preempted": sorted(names[id(s)] for s in statuses if s.get("preemptions")),
        "rejected": sorted(names[id(s)] for s in statuses if s.get("phase") == "Rejected"),
        "overheadSeconds": round(sum(s.get("overheadSeconds", 0) for s in statuses), 1),
        "makespanSeconds": round(max(ended) - min(submitted), 1) if ended else None,
    }


def run_demo(scale: float = 300.0, policies: tuple[str, ...] = ("nop", "mlip", "mov", "moml"),
             out: IO[str] = sys.stdout) -> list[dict[str, Any]]:
    announced = announcement(scale, policies)
    out.write(announced + "\n")
    out.flush()
    results = []
    for i, policy in enumerate(policies, 1):
        with tempfile.TemporaryDirectory(prefix=f"leasehold-demo-{policy}-") as tmp:
            results.append(asyncio.run(_run_policy(policy, scale, Path(tmp), out,
                                                   f"{i} of {len(policies)}", announced)))
    out.write("\nThe testbed of 000 §8.3 (Table III) on the emulated cluster:\n\n")
    rows = [("POLICY", "PREEMPTED", "REJECTED", "OVERHEAD (s)", "MAKESPAN (s)")]
    for r in results:
        rows.append((r["policy"], "{" + ", ".join(r["preempted"]) + "}",
                     "{" + ", ".join(r["rejected"]) + "}", f"{r['overheadSeconds']:.1f}",
                     "-" if r["makespanSeconds"] is None else f"{r['makespanSeconds']:.0f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                  + "\n")
    out.write("\n000 reports: MLIP {1, 6} 59.9 s, 7800 s; MOV {5, 2, 3} 27.8 s, 8479 s;"
              " MOML {5, 6} 27.8 s, 7800 s (docs/preemption.md compares).\n")
    out.flush()
    return results
