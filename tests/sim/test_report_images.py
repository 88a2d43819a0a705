"""Image transfers in `leasehold simulate`'s output (DESIGN §2.6): the worked
example's schedule, each lease's `transfers`, and the timeline's `=`."""

from __future__ import annotations

from pathlib import Path

from leasehold.api.scenario import load_scenario
from leasehold.core.model import (
    ImagesSpec,
    LeaseType,
    PoolSpec,
    Request,
    SchedulerConfig,
    Shape,
)
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.report import result_document, to_table

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "images.yaml"
M = 60


def document() -> dict:
    sc = load_scenario(EXAMPLE)
    pools = sc.pool_specs()
    return result_document(simulate(pools, sc.scheduler_config(), sc.requests()), pools)


def test_the_images_example_matches_its_comments() -> None:
    leases = {r["name"]: r for r in document()["leases"]}
    got = {name: (r["start"], r.get("transfers")) for name, r in leases.items()}

    def sent(image: str, start: float, end: float) -> list[dict]:
        return [{"pool": "rp1", "image": image, "start": start, "end": end}]

    assert got == {
        "batch-1": (1 * M, sent("centos", 0, 1 * M)),
        "ar-1": (30 * M, sent("debian", 28 * M + 30, 29 * M + 30)),  # moved by ar-2's
        "batch-2": (2 * M, None),  # centos is cached on every node
        "ar-2": (30 * M + 30, sent("ubuntu", 29 * M + 30, 30 * M + 30)),
        "ar-3": (None, None),
    }
    assert leases["ar-3"]["reason"] == (
        "its image 'fedora' (600 MB) cannot reach its nodes on pool rp1 by its start"
        " t=630s: the transfer takes 60s at 10 MB/s, and only 30s are left before it")


def test_the_timeline_shows_transfers() -> None:
    table = to_table(document())
    assert "= image transfer" in table
    [row] = [line for line in table.splitlines() if line.strip().startswith("batch-1 |")]
    assert row.split("|")[1].startswith("=#")


def test_a_rider_lists_the_transfer_it_rides_on() -> None:
    """b's transfer of y is scheduled behind a's of x when c (image y) comes: c rides on
    it, and its record names whose transfer it is (the link's time counts it once)."""
    pool = PoolSpec("p", 4, 1000, 1024, exclusive=True,
                    images=ImagesSpec(bandwidth=10, disk=400, reuse=False))

    def leased(name: str, image: str, at: float) -> Request:
        return Request(name=name, type=LeaseType.BEST_EFFORT_CANCELLABLE, vms=1,
                       shape=Shape(1000, 512), duration=50, submitted=at, image=image,
                       image_mb=100)

    requests = [leased("a", "x", 0), leased("b", "y", 0), leased("c", "y", 5)]
    doc = result_document(simulate([pool], SchedulerConfig(), requests), [pool])
    got = {r["name"]: r["transfers"] for r in doc["leases"]}
    assert got["b"] == [{"pool": "p", "image": "y", "start": 10, "end": 20}]
    assert got["c"] == [{"pool": "p", "image": "y", "start": 10, "end": 20, "ridesOn": "b"}]
