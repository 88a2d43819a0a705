"""Golden outputs: what the scheduling core decided, recorded once, so that a change
meant to keep behaviour (a refactoring, a faster data structure) is proven to.

Each case is a `leasehold simulate -o json` run (or an experiment's results.csv):
every example scenario, the MOML testbed under every policy, the SDSC Blue trace
under every backfilling mode on an exclusive and on a shared pool, and Lublin99
workloads that preempt (one exclusive pool, two pools, shared multi-core nodes).
The outputs live gzipped in ``tests/golden/``; ``tests/test_golden.py`` runs every
case again and wants them byte for byte.

    python tools/golden.py write [CASE ...]   # record (only when a change is intended)
    python tools/golden.py check [CASE ...]   # compare, print what differs
    python tools/golden.py list

A case that needs ``../shared/data`` is skipped (with a message) where it is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
SCENARIOS = ROOT / "examples" / "scenarios"
SDSC = ROOT.parent / "shared" / "data" / "SDSC-BLUE-haizea-30days.swf.gz"
POLICIES = ("nop", "mlip", "mov", "moml", "kueue", "kube-scheduler", "haizea")
BACKFILLING = ("conservative", "easy", "none")


class Missing(Exception):
    """An input the case needs is not on this machine."""


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Path], bytes]  # given a scratch directory, the output

    @property
    def path(self) -> Path:
        suffix = ".csv.gz" if self.name.startswith("experiment") else ".json.gz"
        return GOLDEN / f"{self.name}{suffix}"


def simulate_cli(*args: str) -> bytes:
    """`leasehold simulate ARGS -o json`, in this process."""
    from leasehold.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["simulate", *args, "-o", "json"])
    if status != 0:
        raise RuntimeError(f"leasehold simulate {' '.join(args)} exited {status}")
    return out.getvalue().encode()


def write_trace(path: Path, requests: list, pools: list[dict]) -> None:
    from leasehold.api.scenario import ClusterSpec
    from leasehold_emulator.workloads.trace import FORMAT, VERSION, TraceHeader, lease_of
    from leasehold_emulator.workloads.trace import write_trace as write

    header = TraceHeader(format=FORMAT, version=VERSION, source="golden",
                         cluster=ClusterSpec.model_validate({"pools": pools}))
    write(path, [lease_of(r) for r in requests], header)


def sdsc_trace(scratch: Path, exclusive: bool) -> Path:
    if not SDSC.exists():
        raise Missing(f"{SDSC} is missing")
    from leasehold_emulator.workloads.swf import swf_requests

    path = scratch / f"sdsc-{'exclusive' if exclusive else 'shared'}.jsonl.gz"
    if not path.exists():
        pool = {"name": "blue", "nodes": 144, "cpu": 1000, "memory": 1024,
                "exclusive": exclusive}
        write_trace(path, swf_requests(SDSC), [pool])
    return path


def papers_trace(scratch: Path, kind: str) -> Path:
    """Lublin99's ``papers`` preset typed by the default mix (a third local) — the
    workload of benchmarks/compare_policies.py, seed 1 — on one exclusive pool of 32
    nodes, on two exclusive pools of 16, or (fewer requests) on 8 shared nodes of 4
    cores, whose VMs of 1 cpu and 1024 MiB pack four to a node."""
    from leasehold_emulator.workloads.lublin99 import PAPERS, generate
    from leasehold_emulator.workloads.mix import TypeMix, requests

    path = scratch / f"papers-{kind}.jsonl.gz"
    if path.exists():
        return path
    one = {"cpu": 1000, "memory": 1024, "exclusive": True}
    if kind == "exclusive":
        pools, jobs = [{"name": "rp", "nodes": 32, **one}], 3000
    elif kind == "two-pools":
        pools, jobs = [{"name": "a", "nodes": 16, **one}, {"name": "b", "nodes": 16, **one}], 2000
    else:
        pools = [{"name": "rp", "nodes": 8, "cpu": 4000, "memory": 4096}]
        jobs = 800
    reqs = requests(generate(jobs, 1, PAPERS), TypeMix(), 1)
    if kind == "two-pools":  # the papers' jobs fit 32 nodes; here a pool has 16
        reqs = [r for r in reqs if r.vms <= 16]
    write_trace(path, reqs, pools)
    return path


def experiment(scratch: Path) -> bytes:
    """A small experiment (two grid points, two seeds, every policy) run in one
    process: its results.csv."""
    from leasehold_emulator.sim.experiment import load_experiment, run

    spec_path = GOLDEN / "experiment.yaml"
    out = scratch / "experiment"
    run(load_experiment(spec_path), out, processes=1)
    return (out / "results.csv").read_bytes()


def cases() -> list[Case]:
    out: list[Case] = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        out.append(Case(f"scenario-{path.stem}", lambda s, p=path: simulate_cli(str(p))))
        for mode in BACKFILLING:
            out.append(Case(f"scenario-{path.stem}-{mode}", lambda s, p=path, m=mode:
                            simulate_cli(str(p), "--backfilling", m)))
    for policy in POLICIES:
        out.append(Case(f"testbed-{policy}", lambda s, p=policy: simulate_cli(
            str(SCENARIOS / "testbed.yaml"), "--policy", p)))
    for exclusive in (True, False):
        for mode in BACKFILLING:
            kind = "exclusive" if exclusive else "shared"
            out.append(Case(f"sdsc-{kind}-{mode}", lambda s, e=exclusive, m=mode: simulate_cli(
                str(sdsc_trace(s, e)), "--backfilling", m)))
    for policy in POLICIES:
        out.append(Case(f"papers-exclusive-{policy}", lambda s, p=policy: simulate_cli(
            str(papers_trace(s, "exclusive")), "--policy", p)))
    for policy in ("mlip", "mov", "moml", "kueue"):
        out.append(Case(f"papers-two-pools-{policy}", lambda s, p=policy: simulate_cli(
            str(papers_trace(s, "two-pools")), "--policy", p)))
    for policy in ("mlip", "mov", "moml", "kube-scheduler"):
        for mode in ("conservative", "easy"):
            out.append(Case(f"papers-shared-{policy}-{mode}", lambda s, p=policy, m=mode:
                            simulate_cli(str(papers_trace(s, "shared")), "--policy", p,
                                         "--backfilling", m)))
    out.append(Case("experiment", experiment))
    return out


def read(case: Case) -> bytes:
    return gzip.decompress(case.path.read_bytes())


def write(case: Case, data: bytes) -> None:
    case.path.parent.mkdir(parents=True, exist_ok=True)
    # mtime 0: the same output gives the same file
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as fh:
        fh.write(data)
    case.path.write_bytes(buf.getvalue())


def first_difference(want: bytes, got: bytes) -> str:
    a, b = want.decode().splitlines(), got.decode().splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"line {i + 1}: recorded {x.strip()!r}, now {y.strip()!r}"
    return f"recorded {len(a)} lines, now {len(b)}"


@contextlib.contextmanager
def scratch_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="leasehold-golden-") as d:
        yield Path(d)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("write", "check", "list"))
    ap.add_argument("cases", nargs="*", help="case names (default: all)")
    args = ap.parse_args(argv)
    chosen = [c for c in cases() if not args.cases or c.name in args.cases]
    if args.action == "list":
        for c in chosen:
            print(c.name)
        return 0
    bad = 0
    with scratch_dir() as scratch:
        for c in chosen:
            try:
                data = c.run(scratch)
            except Missing as exc:
                print(f"{c.name}: skipped, {exc}")
                continue
            if args.action == "write":
                write(c, data)
                print(f"{c.name}: {len(data):,} bytes -> {c.path.relative_to(ROOT)}")
            elif data != read(c):
                bad += 1
                print(f"{c.name}: DIFFERS, {first_difference(read(c), data)}")
            else:
                print(f"{c.name}: identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
