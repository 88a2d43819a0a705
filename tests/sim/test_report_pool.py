"""`leasehold simulate -o json` gives each lease its pool: where it ran, or where
dispatch sent it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from leasehold.cli import main


def simulate(tmp_path: Path, dispatch: str) -> dict[str, Any]:
    leases: list[dict[str, Any]] = [
        {"name": f"e{i}", "type": "BestEffortSuspendable", "vms": 1, "duration": 60,
         "arrival": i} for i in range(4)]
    leases.append({"name": "l1", "type": "DeadlineNonPreemptable", "origin": "local",
                   "pool": "b", "vms": 1, "duration": 60, "arrival": 1, "deadline": 600})
    # needs more nodes than any pool has: rejected, never on a pool
    leases.append({"name": "huge", "type": "BestEffortSuspendable", "vms": 9,
                   "duration": 60, "arrival": 5})
    data = {"cluster": {"pools": [{"name": n, "nodes": 2, "exclusive": True}
                                  for n in ("a", "b", "c")]},
            "config": {"dispatch": dispatch}, "leases": leases}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    out = tmp_path / "out.json"
    assert main(["simulate", str(path), "-o", "json", "--out", str(out)]) == 0
    doc: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return doc


def test_each_lease_has_its_pool(tmp_path: Path) -> None:
    pools = {r["name"]: r["pool"] for r in simulate(tmp_path, "rr")["leases"]}
    assert pools == {"e0": "a", "e1": "b", "l1": "b", "e2": "c", "e3": "a", "huge": None}


def test_under_earliest_the_pool_is_where_it_ran(tmp_path: Path) -> None:
    records = simulate(tmp_path, "earliest")["leases"]
    assert all((r["pool"] is None) == (r["start"] is None) for r in records)
    assert all(r["pool"] == r["nodes"][0].rsplit("-", 1)[0] for r in records if r["nodes"])
