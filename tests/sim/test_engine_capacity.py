"""`leasehold simulate` replays what a cluster went through: a scenario's
``cluster.capacity`` (issue 16) reaches the core at its times."""

from __future__ import annotations

import json
import subprocess
import sys

from leasehold.api.scenario import load_scenario
from leasehold_emulator.sim.engine import simulate

SCENARIO = """
cluster:
  pools:
    - {name: p, nodes: 2, cpu: 1, memory: 1024, exclusive: true}
  capacity:
    - {at: 50, pool: p, nodes: 1}
    - {at: 400, pool: p, nodes: 2}
leases:
  - {name: a, type: BestEffortCancellable, vms: 1, duration: 100}
  - {name: b, type: BestEffortSuspendable, vms: 1, duration: 100}
  - {name: c, type: BestEffortSuspendable, vms: 2, duration: 100, arrival: 10}
"""
#: b's node (p-1) goes at 50: it starts over on p-0 after a; c waits for p-1
WANT = {"a": (0, 100, "Completed"), "b": (0, 200, "Completed"), "c": (400, 500, "Completed")}


def test_the_engine_feeds_the_capacity_changes(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    scenario = load_scenario(path)
    result = simulate(scenario.pool_specs(), scenario.scheduler_config(), scenario.requests(),
                      capacity=scenario.cluster.capacity_changes())
    ends = {st.name: (st.first_start, st.end, st.phase.value)
            for st in result.scheduler.leases()}
    assert ends == WANT
    assert [a.kind for a in result.actions if a.lease == "b"].count("Lost") == 1


def test_the_command_line_does_too_and_refuses_an_unknown_pool(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate", str(path), "-o",
                        "json"], capture_output=True, text=True, check=True)
    out = {x["name"]: (x["start"], x["end"], x["phase"]) for x in json.loads(r.stdout)["leases"]}
    assert out == WANT
    path.write_text(SCENARIO.replace("{at: 400, pool: p,", "{at: 400, pool: q,"))
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate", str(path)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert 'cluster.capacity[1]: pool: unknown pool "q"; expected one of p (line 7)' \
        in r.stderr, r.stderr
