"""000 Fig. 10: the testbed's utilization over time, NOP against MOML.

The paper's testbed (its Table II, ``examples/scenarios/testbed.yaml``) simulated
under each policy; at each instant the share of the pools' cores that leases hold —
running, or being suspended or resumed, as the slot table books them — until the
last lease ends. The paper draws the same curves from its physical testbed (Fig. 10)
and prints no values, so the comparison is with what its text says of them (docs/
reproduction.md): both rise to 100% as requests 1–6 arrive; without preemption the
local request is rejected and utilization falls sooner and more sharply; MOML keeps
it high for longer and ends later.

    python -m leasehold_emulator.sim.testbed_figure [SCENARIO] [OUT]    # make fig10

writes ``OUT/000-fig10.png`` (the plot) and ``OUT/000-fig10.md`` (the table).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: files only
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from leasehold.api.scenario import load_scenario
from leasehold.core.model import Origin, PoolSpec

from .engine import SimResult, simulate
from .timeline import lease_timelines

#: the paper's two curves
POLICIES = ("nop", "moml")
SCENARIO = Path("examples/scenarios/testbed.yaml")


@dataclass(frozen=True)
class Curve:
    """One policy's run: utilization as a step series (each value holds until the
    next time; 0 from the last time on) and what the text of 000 reads off it."""

    policy: str
    times: list[float]
    utilization: list[float]  # share of the cores held, 0..1
    #: last end − first submission (s)
    makespan: float
    #: the local request's phase, and the leases preempted for it
    local: str
    preempted: tuple[str, ...]

    def seconds_at_least(self, level: float) -> float:
        """How long utilization is at ``level`` or above."""
        return sum(b - a for a, b, u in self._steps() if u >= level - 1e-9)

    def mean(self, until: float | None = None) -> float:
        """Time-weighted mean utilization over [0, ``until``] (default: its makespan)."""
        end = self.makespan if until is None else until
        held = sum((min(b, end) - a) * u for a, b, u in self._steps() if a < end)
        return held / end if end > 0 else 0.0

    def first_full(self) -> float | None:
        """When utilization first reaches 100%."""
        full = (t for t, u in zip(self.times, self.utilization, strict=True) if u >= 1 - 1e-9)
        return next(full, None)

    def _steps(self) -> list[tuple[float, float, float]]:
        ends = [*self.times[1:], self.times[-1]] if self.times else []
        return list(zip(self.times, ends, self.utilization, strict=True))


def utilization_curve(result: SimResult, pools: Sequence[PoolSpec], policy: str) -> Curve:
    """The cores the leases hold over time, as a share of the pools' cores: a VM
    holds its shape's cores on a shared pool, a whole node on an exclusive one."""
    specs = {p.name: p for p in pools}
    total = sum(p.total().cpu for p in pools)  # every node's own cores, mixed sizes too
    leases = result.scheduler.leases()
    change: dict[float, float] = defaultdict(float)
    for st, segments in ((st, lease_timelines(result.actions).get(st.name, []))
                         for st in leases):
        pool = specs[st.pool] if st.pool is not None else None
        if pool is None:
            continue
        cores = st.request.vms * (pool.cpu if pool.exclusive else st.request.shape.cpu)
        for _, a, b in segments:
            change[a] += cores
            change[b] -= cores
    times, shares, held = sorted(change), [], 0.0
    for t in times:
        held += change[t]
        shares.append(max(0.0, held) / total)
    submitted = min((st.request.submitted for st in leases), default=0.0)
    ended = max((st.end for st in leases if st.end is not None), default=submitted)
    local = [st for st in leases if st.request.origin == Origin.LOCAL]
    preempted = tuple(sorted(st.name for st in leases
                             if st.preemptions and st.request.origin == Origin.EXTERNAL))
    return Curve(policy, times, shares, ended - submitted,
                 local[0].phase.value if local else "-", preempted)


def curves(scenario: Path = SCENARIO, policies: Sequence[str] = POLICIES) -> list[Curve]:
    """The scenario simulated under each policy."""
    sc = load_scenario(scenario)
    pools = sc.pool_specs()
    return [utilization_curve(simulate(pools, sc.scheduler_config(policy), sc.requests()),
                              pools, policy) for policy in policies]


def figure(runs: Sequence[Curve]) -> Figure:
    """The curves as 000 draws them: utilization (%) against time (s)."""
    fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="constrained")
    for c in runs:
        ax.step([*c.times, c.times[-1]], [100 * u for u in [*c.utilization, 0.0]],
                where="post", linewidth=1.2, label=c.policy.upper())
    ax.set_xlabel("time (s)")
    ax.set_ylabel("utilization (% of cores held)")
    ax.set_ylim(0, 105)
    ax.set_xlim(0, None)
    ax.set_title("000 Fig. 10: the testbed (Table II) simulated, NOP against MOML",
                 fontsize="small")
    ax.legend(loc="upper right", fontsize="small", title="policy")
    return fig


def table(runs: Sequence[Curve]) -> str:
    """What each run shows, one row per policy (markdown)."""
    common = min(c.makespan for c in runs)
    rows = [
        "| policy | local request | preempted | 100% from (s) | at 100% (s) | at ≥ 75% (s)"
        f" | mean, first {common:.0f} s | mean, own makespan | makespan (s) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in runs:
        full = c.first_full()
        rows.append(
            f"| {c.policy.upper()} | {c.local} | {{{', '.join(c.preempted)}}} "
            f"| {'-' if full is None else f'{full:.0f}'} | {c.seconds_at_least(1.0):.0f} "
            f"| {c.seconds_at_least(0.75):.0f} | {100 * c.mean(common):.1f}% "
            f"| {100 * c.mean():.1f}% | {c.makespan:.0f} |")
    return "\n".join(rows) + "\n"


def write(out: Path, scenario: Path = SCENARIO) -> list[Path]:
    """The plot and the table into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    runs = curves(scenario)
    png, md = out / "000-fig10.png", out / "000-fig10.md"
    fig = figure(runs)
    fig.savefig(png)
    plt.close(fig)
    md.write_text(
        "# 000 Fig. 10: the testbed's utilization over time\n\n"
        "`python -m leasehold_emulator.sim.testbed_figure` (`make fig10`) on the scenario"
        f" `{scenario.name}`; utilization is the share of the pools' cores that leases"
        " hold (running, suspending or resuming). Compared with the paper in"
        " [reproduction.md](../reproduction.md).\n\n"
        + table(runs), encoding="utf-8")
    return [png, md]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 2:
        print("usage: python -m leasehold_emulator.sim.testbed_figure [SCENARIO] [OUT]",
              file=sys.stderr)
        return 2
    scenario = Path(args[0]) if args else SCENARIO
    out = Path(args[1]) if len(args) > 1 else Path("docs/reproduction")
    for path in write(out, scenario):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
