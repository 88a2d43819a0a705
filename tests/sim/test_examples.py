"""The example scenarios do what their comments say."""

from __future__ import annotations

from pathlib import Path

import pytest

from leasehold.api.scenario import load_scenario
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.report import result_document

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
H, M = 3600, 60


def run(name: str, **overrides):
    sc = load_scenario(SCENARIOS / name)
    pools = sc.pool_specs()
    result = simulate(pools, sc.scheduler_config(**overrides), sc.requests())
    doc = result_document(result, pools)
    return {r["name"]: r for r in doc["leases"]}, doc


def test_backfilling_example_matches_the_hand_worked_schedule():
    leases, doc = run("backfilling.yaml")
    got = {n: (r["start"], r["end"], r["nodes"]) for n, r in leases.items()}
    assert got == {
        "A": (0, 40 * M, ["rp1-0", "rp1-1", "rp1-2"]),
        "B": (40 * M, H + 40 * M, ["rp1-0", "rp1-1", "rp1-2", "rp1-3"]),
        "C": (10 * M, 40 * M, ["rp1-3"]),
        "D": (H + 40 * M, 3 * H + 40 * M, ["rp1-0", "rp1-1"]),
        "E": (H + 40 * M, 2 * H + 10 * M, ["rp1-2"]),
    }
    assert doc["metrics"]["meanWaitSeconds"] == 42 * M


def test_advance_reservation_example():
    leases, doc = run("advance-reservation.yaml")
    phases = {n: r["phase"] for n, r in leases.items()}
    assert phases == {"batch-1": "Completed", "ar-1": "Completed", "ar-2": "Completed",
                      "batch-2": "Completed", "deadline-1": "Completed",
                      "deadline-2": "Rejected"}
    assert (leases["ar-1"]["start"], leases["ar-1"]["end"]) == (H, 2 * H)
    assert (leases["ar-2"]["start"], leases["ar-2"]["end"]) == (90 * M, 2 * H)
    assert leases["batch-2"]["start"] == 2 * H
    assert leases["deadline-1"]["start"] == 30 * M
    assert "deadline t=7200s" in leases["deadline-2"]["reason"]
    [d] = doc["decisions"]
    assert (d["preemptor"], d["chosen"], d["candidateSets"], d["vacateSeconds"]) == (
        "ar-2", ["batch-1"], 1, 0)
    # batch-1 is suspended just in time for ar-2 and resumes after it (see the YAML)
    suspend, resume = 4 * (1024 / 6.36 + 0.005), 4 * (1024 / 8.12 + 0.005)
    batch = leases["batch-1"]
    assert batch["suspensions"] == 1 and batch["preemptions"] == 1
    assert batch["timeline"][0] == ["run", 0, round(90 * M - suspend, 3)]
    assert batch["end"] == round(2 * H + resume + (2 * H - (90 * M - suspend)), 3)


def test_suspend_before_blocking_example():
    leases, _ = run("suspend-before-blocking.yaml")
    sweep = leases["sweep"]
    suspend = 2 * (0.005 + 1024 / 6.36)
    resume = 2 * (1024 / 8.12 + 0.005)
    assert sweep["suspensions"] == 1
    assert sweep["timeline"][0] == ["run", 0, round(2 * H - suspend, 3)]
    assert sweep["timeline"][1] == ["overhead", round(2 * H - suspend, 3), 2 * H]
    assert sweep["end"] == round(3 * H + resume + 3 * H - (2 * H - suspend), 3)
    assert sweep["overheadSeconds"] == round(suspend + resume + 2.3, 3)
    assert (leases["maintenance"]["start"], leases["maintenance"]["end"]) == (2 * H, 3 * H)
    # without the option, sweep waits for the reservation to end
    sc = load_scenario(SCENARIOS / "suspend-before-blocking.yaml")
    cfg = sc.scheduler_config()
    plain = simulate(sc.pool_specs(), type(cfg)(backfilling=cfg.backfilling), sc.requests())
    assert plain.scheduler.lease("sweep").first_start == 3 * H


def test_suspend_before_blocking_example_under_easy_gives_the_same_schedule():
    conservative, _ = run("suspend-before-blocking.yaml")
    easy, _ = run("suspend-before-blocking.yaml", backfilling="easy")
    assert easy == conservative


# 000 Table III: who each policy preempts, and the overhead (the YAML's comments
# explain the fitted rates that make the paper's three figures come out exactly)
TABLE_III = {
    "mlip": (["1", "6"], 59.9),
    "mov": (["5", "6"], 27.8),  # the paper's MOV chose {5, 2, 3}: same 27.8 s, one more lease
    "moml": (["5", "6"], 27.8),
}


@pytest.mark.parametrize("policy", sorted(TABLE_III))
def test_testbed_reproduces_table_iii(policy):
    leases, doc = run("testbed.yaml", policy=policy)
    [d] = doc["decisions"]
    chosen, seconds = TABLE_III[policy]
    assert (d["preemptor"], d["chosen"], d["candidateSets"], d["exact"]) == ("7", chosen, 9, True)
    assert round(d["overheadSeconds"], 1) == seconds
    local = leases["7"]
    assert local["phase"] == "Completed"
    # the local request waits only for its victims to be written out
    assert local["start"] == round(12 * M + d["vacateSeconds"], 3)
    for name in chosen:
        assert leases[name]["suspensions"] == 1 and leases[name]["phase"] == "Completed"
    assert all(r["phase"] == "Completed" for r in leases.values())


def test_testbed_without_preemption_rejects_the_local_request():
    leases, doc = run("testbed.yaml", policy="nop")
    assert leases["7"]["phase"] == "Rejected"
    assert "'nop' never preempts" in leases["7"]["reason"]
    assert doc["metrics"]["localRejectionRate"] == 1.0
    assert [d["chosen"] for d in doc["decisions"]] == [[]]


def test_testbed_moml_makespan_matches_the_paper():
    leases, _ = run("testbed.yaml", policy="moml")
    # Table III: 7800 s. Lease 6 resumes when 7 ends and runs its last 3460 s.
    assert round(max(r["end"] for r in leases.values())) == 7800


def test_mixed_sizes_example_packs_each_node_to_its_own_size():
    leases, doc = run("mixed-sizes.yaml")
    got = {n: (r["start"], r["end"], r["nodes"]) for n, r in leases.items()}
    assert got == {
        "big": (0, H, ["mixed-2"] * 2),
        "small": (0, 30 * M, ["mixed-0"] * 8),
        "wide": (H, 2 * H, ["mixed-2"] * 4),
        "after": (2 * H, 2 * H + 30 * M, ["mixed-2"]),
    }
    assert doc["metrics"]["meanWaitSeconds"] == 42.5 * M


@pytest.mark.parametrize("policy", ["mov", "mlip", "moml"])
def test_gpu_example_preempts_the_gpu_lease_not_the_cheaper_cpu_one(policy):
    # batch costs less to suspend and frees more VMs (what mov and mlip prefer), but
    # holds no GPU: freeing its cores would not let infer run
    leases, doc = run("gpu.yaml", policy=policy)
    [d] = doc["decisions"]
    assert (d["preemptor"], d["chosen"], d["candidateSets"]) == ("infer", ["train"], 1)
    suspend = 2048 / 6.36 + 0.005
    assert leases["infer"]["nodes"] == ["gpu-0"]
    assert leases["infer"]["start"] == round(10 * M + suspend, 3)
    assert leases["render"]["nodes"] == ["gpu-1"]
    assert sorted(leases["batch"]["nodes"]) == ["gpu-0", "gpu-1"]
    assert (leases["batch"]["preemptions"], leases["train"]["suspensions"]) == (0, 1)
    assert {r["phase"] for r in leases.values()} == {"Completed"}
