"""`leasehold simulate` runs a lease's work at its pool's ``speed`` (issue 21 item 4):
its duration and its actual runtime are work at speed 1.0."""

from __future__ import annotations

import json
import subprocess
import sys

from leasehold.api.scenario import load_scenario
from leasehold_emulator.sim.engine import simulate

SCENARIO = """
cluster:
  pools:
    - {name: slow, nodes: 1, cpu: 1, memory: 1024, exclusive: true}
    - {name: fast, nodes: 1, cpu: 1, memory: 1024, exclusive: true, speed: 2}
leases:
  - {name: a, type: BestEffortSuspendable, vms: 1, duration: 100, pool: fast}
  - {name: b, type: BestEffortSuspendable, vms: 1, duration: 100, runtime: 60, pool: slow}
  - {name: c, type: BestEffortSuspendable, vms: 1, duration: 100, runtime: 60, pool: fast}
  - {name: d, type: DeadlineNonPreemptable, vms: 1, duration: 100, deadline: 150}
"""
#: a: 100 of work in 50 s; b: 60 s; c: after a, 60 of work in 30 s; d: only the fast
#: pool ends it by 150 (after c, in 50 s)
WANT = {"a": (0, 50, "Completed"), "b": (0, 60, "Completed"), "c": (50, 80, "Completed"),
        "d": (80, 130, "Completed")}


def test_the_engine_runs_work_at_the_pools_speed(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    scenario = load_scenario(path)
    result = simulate(scenario.pool_specs(), scenario.scheduler_config(), scenario.requests())
    ends = {st.name: (st.first_start, st.end, st.phase.value)
            for st in result.scheduler.leases()}
    assert ends == WANT
    assert result.scheduler.lease("d").pool == "fast"


def test_the_command_line_does_too(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate", str(path), "-o",
                        "json"], capture_output=True, text=True, check=True)
    out = {x["name"]: (x["start"], x["end"], x["phase"]) for x in json.loads(r.stdout)["leases"]}
    assert out == WANT
