"""CPU time of reading a large scenario file: the SDSC Blue 30-day trace (5,108 leases,
144 exclusive one-core nodes) written as a scenario YAML by ``leasehold trace convert``.

Prints, best of ``--repeat`` runs each:

- the loader alone, in this process: ``parse_scenario`` (YAML, duplicate-key check,
  validation) with each loader of ``leasehold.api.scenario.YAML_LOADERS``, and PyYAML's
  plain ``SafeLoader`` / ``CSafeLoader`` on the same text for reference;
- the whole ``leasehold simulate`` process (user + system CPU of the child), and, with
  ``--before DIR``, the same command on the code in DIR (a checkout of an earlier
  commit: its ``operator/`` and ``emulator/`` are put first on ``PYTHONPATH``), the two
  alternating so that the machine's drift hits both alike.

    python benchmarks/bench_scenario_load.py [--repeat N] [--before DIR] [--keep FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from leasehold.api.scenario import YAML_LOADERS, ClusterSpec, parse_scenario
from leasehold_emulator.workloads.swf import swf_requests
from leasehold_emulator.workloads.trace import (
    FORMAT,
    VERSION,
    TraceHeader,
    lease_of,
    write_trace,
)

TRACE = Path(__file__).resolve().parents[2] / "shared/data/SDSC-BLUE-haizea-30days.swf.gz"


def write_scenario(trace: Path, out: Path) -> int:
    """The SWF trace as a scenario YAML at ``out`` (through a leasehold trace and
    ``leasehold trace convert``, as a user would make it); returns the lease count."""
    requests = swf_requests(trace)
    cluster = ClusterSpec.model_validate(
        {"pools": [{"name": "sdsc", "nodes": 144, "cpu": 1, "memory": 1024,
                    "exclusive": True}]})
    jsonl = out.with_suffix(".jsonl")
    write_trace(jsonl, [lease_of(r) for r in requests],
                TraceHeader(format=FORMAT, version=VERSION, cluster=cluster))
    subprocess.run([sys.executable, "-m", "leasehold.cli", "trace", "convert", str(jsonl),
                    "--out", str(out)], check=True)
    jsonl.unlink()
    return len(requests)


def best_cpu(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def child_cpu(argv: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one child process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--before", type=Path, metavar="DIR",
                    help="a checkout of an earlier commit to time beside this one")
    ap.add_argument("--keep", type=Path, metavar="FILE", help="also write the scenario here")
    args = ap.parse_args()

    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, load average {os.getloadavg()[0]:.1f}, "
          f"libyaml {yaml.__with_libyaml__}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sdsc.yaml"
        leases = write_scenario(args.trace, path)
        if args.keep:
            args.keep.write_text(path.read_text())
        text = path.read_text()
        print(f"# scenario: {leases} leases, {len(text.splitlines())} lines, "
              f"{len(text) / 1e6:.1f} MB")

        print("\nloader alone (in this process), CPU s best of", args.repeat)
        rows: list[tuple[str, Callable[[], object]]] = [
            (f"parse_scenario, {loader.__name__}",
             lambda loader=loader: parse_scenario(text, "sdsc.yaml", loader=loader))
            for loader in YAML_LOADERS
        ]
        rows += [(f"yaml.load, plain {cls.__name__}", lambda cls=cls: yaml.load(text, cls))
                 for cls in (yaml.SafeLoader, yaml.CSafeLoader)]
        for name, fn in rows:
            print(f"  {name:40} {best_cpu(fn, args.repeat):7.3f}")

        argv = [sys.executable, "-m", "leasehold.cli", "simulate", str(path)]
        versions = {"this commit": dict(os.environ)}
        if args.before:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(args.before / "operator"), str(args.before / "emulator")])
            versions[f"before ({args.before})"] = env
        cpu: dict[str, list[float]] = {name: [] for name in versions}
        for _ in range(args.repeat):
            for name, env in versions.items():
                cpu[name].append(child_cpu(argv, env))
        print(f"\nwhole `leasehold simulate` process, CPU s (user + sys), {args.repeat} runs")
        for name, runs in cpu.items():
            print(f"  {name:40} best {min(runs):6.2f}  runs "
                  + ", ".join(f"{x:.2f}" for x in runs))
        if args.before:
            this, before = (min(runs) for runs in cpu.values())
            print(f"  this ÷ before (best): {this / before:.2f}")


if __name__ == "__main__":
    main()
