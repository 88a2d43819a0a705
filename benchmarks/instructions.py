"""Instructions per simulation of the SDSC Blue trace, counted by valgrind's callgrind:
the noise-free cross-check of the CPU times (a shared machine moves those by up to 2x
between minutes; an instruction count moves by well under 0.1%).

Each count is net of starting Python, importing and loading the trace: the trace is
simulated once and three times in two processes, and half the difference is one
simulation. Give several source trees (e.g. two git worktrees) to compare commits;
each runs with its own packages (``PYTHONPATH`` set to its source roots).

    python benchmarks/instructions.py [--tree DIR ...] [--mode none easy conservative]

valgrind must be installed (``apt-get install valgrind``); under it a simulation runs
about 50 times slower: a few minutes per tree and mode.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "data" / "SDSC-BLUE-haizea-30days.swf.gz"
MODES = ("none", "easy", "conservative")

# as bench_sdsc_backfilling.py simulates it: one exclusive pool of 144 one-VM nodes,
# the garbage collector off (it would run at moments that depend on the allocations)
CHILD = """
import gc, sys
from leasehold.core.model import Backfilling, PoolSpec, SchedulerConfig
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.swf import swf_requests
jobs = swf_requests(sys.argv[1])
pool = PoolSpec("blue", 144, 1000, 1024, exclusive=True)
gc.disable()
for _ in range(int(sys.argv[3])):
    simulate([pool], SchedulerConfig(backfilling=Backfilling(sys.argv[2])), jobs,
             keep_actions=False)
"""


def collected(tree: Path, trace: Path, mode: str, times: int) -> int:
    """Instructions of a whole process simulating the trace ``times`` times."""
    env = {**os.environ, "PYTHONPATH": f"{tree / 'operator'}{os.pathsep}{tree / 'emulator'}",
           # a fixed hash seed, and no idle BLAS threads spinning into the count
           "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         "-c", CHILD, str(trace), mode, str(times)],
        capture_output=True, text=True, env=env, cwd=tree, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{tree}: the {mode} simulation failed under valgrind:\n"
                         f"{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, nargs="+", default=[ROOT],
                    help="source trees to count (default: this one)")
    ap.add_argument("--mode", choices=MODES, nargs="+", default=list(MODES))
    ap.add_argument("--trace", type=Path, default=TRACE)
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    if not args.trace.exists():
        raise SystemExit(f"{args.trace}: no such trace")
    print("| tree | mode | instructions per simulation |")
    print("|---|---|---:|")
    for mode in args.mode:
        for tree in args.tree:
            one = collected(tree.resolve(), args.trace, mode, 1)
            three = collected(tree.resolve(), args.trace, mode, 3)
            print(f"| {tree} | {mode} | {(three - one) / 2 / 1e6:,.1f} M |", flush=True)


if __name__ == "__main__":
    main()
