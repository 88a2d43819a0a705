"""What `make reproduce-003` costs: one replication (``--seed``) of every grid point of
the 003 experiment files (examples/experiments/003-*.yaml), each dispatch strategy
run as the experiment runner runs it (``run_unit`` of the file with that one
strategy: making the point's workload, about 0.3 s, included in each), CPU seconds by
``process_time``. A full run is ``replications`` times these, plus the reports.

Printed per point: each strategy's CPU seconds and the VMs it preempted; at the end,
per file and in all, the CPU seconds of one replication and that times the files'
replications.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import yaml

from leasehold_emulator.sim.experiment import Unit, run_unit, validate_experiment

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "experiments"
FILES = ["003-vms", "003-duration", "003-external-rate", "003-local-rate"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", default=FILES, help="experiment names (default: all four)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}")
    grand = grand_full = 0.0
    for name in args.files:
        path = EXAMPLES / f"{name}.yaml"
        data = yaml.safe_load(path.read_text())
        spec = validate_experiment(data, str(path))
        one = {d: validate_experiment({**data, "dispatches": [d], "baseline": d}, str(path))
               for d in spec.dispatches or []}
        total = 0.0
        for point in spec.points():
            cells = []
            for d, alone in one.items():
                t = time.process_time()
                (row,) = run_unit(alone, Unit(point, args.seed))
                cpu = time.process_time() - t
                total += cpu
                cells.append(f"{d} {cpu:.1f} s ({row['preemptedVMs']} VMs)")
            print(f"{name} {point}: " + "; ".join(cells), flush=True)
        full = total * spec.replications
        print(f"{name}: one replication {total:.0f} CPU s; x{spec.replications} = "
              f"{full / 3600:.2f} CPU h", flush=True)
        grand += total
        grand_full += full
    print(f"all: one replication {grand:.0f} CPU s; as written {grand_full / 3600:.2f} CPU h")


if __name__ == "__main__":
    main()
