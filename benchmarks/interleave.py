"""Two versions of leasehold, measured side by side in one sitting.

A change meant to keep speed (a refactoring) is compared with the commit before it:
each benchmark runs alternately on the two source trees (``--old`` and ``--new``,
e.g. two git worktrees), ``--runs`` times each, old first in odd runs and new first in
even ones, so that the machine's drift falls on both alike. Each tree runs its own
benchmark scripts with its own packages (``PYTHONPATH`` set to its source roots).
Prints every run's figures, then per figure the medians and new/old.

Figures: the SDSC Blue trace's CPU seconds per backfilling mode
(``bench_sdsc_backfilling.py --repeat 5``: the best of 5 within a run), and the p99
(and p50) of a preemption decision per set policy on 32 one-core nodes (``bench_preemption.py
--setting simulated``: every decision of a simulation) and on 1,000 shared nodes
(``--setting scale``: 20 probes).

    python benchmarks/interleave.py --old ../old-worktree [--new .] [--runs 5]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

Figures = dict[str, float]


def run(tree: Path, script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'operator'}{os.pathsep}{tree / 'emulator'}"}
    done = subprocess.run([sys.executable, str(tree / "benchmarks" / script), *args],
                          capture_output=True, text=True, env=env, cwd=tree, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {script} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def sdsc(tree: Path) -> Figures:
    out = run(tree, "bench_sdsc_backfilling.py", "--repeat", "5")
    return {f"SDSC {mode} CPU s": float(cpu)
            for mode, cpu in re.findall(r"^leasehold (\w+)\s+([\d.]+)", out, re.M)}


def simulated(tree: Path) -> Figures:
    out = run(tree, "bench_preemption.py", "--setting", "simulated")
    # | policy | decisions | p50 ms | p99 ms | max ms | exact % | chose % |
    found = re.findall(r"^\| (\w+) \| \d+ \| ([\d.,]+) \| ([\d.,]+) \|", out, re.M)
    return percentiles("32 nodes", found)


def scale(tree: Path) -> Figures:
    out = run(tree, "bench_preemption.py", "--setting", "scale")
    # | policy | decisions | decision p50 ms | decision p99 ms | ...
    found = re.findall(r"^\| ([\w-]+) \| \d+ \| ([\d.,]+) \| ([\d.,]+) \|", out, re.M)
    return percentiles("1,000 nodes", found)


def percentiles(setting: str, found: list[tuple[str, str, str]]) -> Figures:
    """Each policy's p99 (the figure the targets name) and p50: over a few decisions
    the p99 is nearly the slowest one, and one slow moment of a shared machine moves
    it; the p50 says whether the typical decision moved."""
    out: Figures = {}
    for policy, p50, p99 in found:
        out[f"{setting} {policy} p99 ms"] = float(p99.replace(",", ""))
        out[f"{setting} {policy} p50 ms"] = float(p50.replace(",", ""))
    return out


BENCHES: dict[str, Callable[[Path], Figures]] = {
    "sdsc": sdsc, "simulated": simulated, "scale": scale}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True, help="the tree to compare with")
    ap.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bench", choices=tuple(BENCHES), nargs="+", default=list(BENCHES))
    args = ap.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    print(f"{datetime.date.today().isoformat()}; {platform.platform()};"
          f" {platform.python_implementation()} {platform.python_version()};"
          f" os.cpu_count()={os.cpu_count()}; old {trees['old']}, new {trees['new']}")
    seen: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    for i in range(1, args.runs + 1):
        order = ("old", "new") if i % 2 else ("new", "old")
        for bench in args.bench:
            for which in order:
                figures = BENCHES[bench](trees[which])
                for key, value in figures.items():
                    seen[which].setdefault(key, []).append(value)
                print(f"run {i} {which}: " + ", ".join(f"{k} {v:g}" for k, v in figures.items()),
                      flush=True)
    print("\n| figure | old runs | new runs | old median | new median | new/old |")
    print("|---|---|---|---:|---:|---:|")
    for key, old in seen["old"].items():
        new = seen["new"].get(key, [])
        if not new:
            continue
        a, b = statistics.median(old), statistics.median(new)
        print(f"| {key} | {', '.join(f'{x:g}' for x in old)} | {', '.join(f'{x:g}' for x in new)}"
              f" | {a:g} | {b:g} | {b / a:.3f} |")


if __name__ == "__main__":
    main()
