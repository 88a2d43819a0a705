"""Images end to end (issue 22 item 6): the real operator on the emulated cluster, a
NodePool with an image repository (examples/emulator/images.yaml: 10 MB/s, 4
nodes), an advance reservation with an image. Its pull pods appear before its
start, on every node of the pool, and go once their image is there; its VM pods
carry the image and run at the start without pulling (the emulated kubelet's pull
model: the image is on their nodes by then); the Lease is Running from its
requested start. It needs the emulated kubelet's pull model (branch i39-pulls,
merged here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leasehold.api.clock import epoch
from leasehold.kube.pods import API_VERSION, IMAGE, ROLE_LABEL
from operated import ROOT, operated

POOLS = ROOT / "examples" / "emulator" / "images.yaml"
IMAGE_NAME = "registry.example.com/vms/centos:7"
#: emulated seconds per wall second: the reservation's 5 min are 5 s
SCALE = 60.0


def _pods(c: Any, role: str | None) -> dict[str, Any]:
    return {p["metadata"]["name"]: p for p in c.get("pods", "-n", "lab")["items"]
            if (p["metadata"].get("labels") or {}).get(ROLE_LABEL) == role}


def test_a_reservations_image_is_pulled_before_its_start_and_its_vms_run_at_it(
        tmp_path: Path):
    c = operated(tmp_path / "cluster", "moml", POOLS, scale=SCALE)
    try:
        c.until(lambda: c.recoveries() == 1)
        # 600 MB at 10 MB/s: a 60-s transfer, planned to end at the start
        c.apply({"apiVersion": API_VERSION, "kind": "Lease",
                 "metadata": {"name": "demo", "namespace": "lab"},
                 "spec": {"type": "AdvanceReservation", "pool": "rp1", "vms": 2,
                          "duration": "10m", "start": "5m", "image": IMAGE_NAME,
                          "imageSizeMB": 600, "resources": {"cpu": "1", "memory": "1Gi"}}})

        def running() -> dict[str, Any] | None:
            status = c.lease("lab", "demo").get("status") or {}
            return status if status.get("phase") == "Running" else None
        status = c.until(running, timeout=30)
        # from its requested start: 5 min (5 wall s) after it was submitted
        assert epoch(status["startedAt"]) - epoch(status["submittedAt"]) == pytest.approx(
            300 / SCALE, abs=1e-3)

        def vms_running() -> dict[str, Any] | None:
            vms = _pods(c, None)
            return vms if len(vms) == 2 and all(
                (p.get("status") or {}).get("phase") == "Running" for p in vms.values()) \
                else None
        vms = c.until(vms_running, timeout=30)
        for pod in vms.values():
            assert pod["metadata"]["annotations"][IMAGE] == IMAGE_NAME
            assert [x["image"] for x in pod["spec"]["containers"]] == [IMAGE_NAME]
            # running as their run began: no pull held them (whole seconds, rounded
            # down; a pull would hold them 60 emulated s, 1 wall s)
            assert epoch(pod["status"]["startTime"]) <= epoch(status["startedAt"])
        # the pulls were the pull pods': each node pulled the image once, before the
        # start; the VMs found it there (as a kubelet says: already present)
        events = c.get("events", "-n", "lab")["items"]
        [made] = [e["message"] for e in events if e["reason"] == "PullingImage"]
        assert made.startswith(f"pre-pulling image {IMAGE_NAME} on rp1-0, rp1-1, rp1-2,"
                               " rp1-3 (pool rp1)")
        pulling = {e["involvedObject"]["name"]: e for e in events
                   if e["reason"] == "Pulling"}
        assert sorted(pulling) == [f"demo-pull-{k}" for k in range(4)]
        # before the start (times in whole seconds, rounded down)
        started = epoch(status["startedAt"])
        assert all(epoch(e["firstTimestamp"]) < started for e in pulling.values())
        present = sorted(e["involvedObject"]["name"] for e in events
                         if e["reason"] == "Pulled" and "already present" in e["message"])
        assert present == sorted(vms)
        for node in c.get("nodes", "-l", "leasehold.io/pool=rp1")["items"]:
            assert [IMAGE_NAME] in [i["names"] for i in node["status"]["images"]]
        # the pull pods succeeded and the operator deleted them
        c.until(lambda: not _pods(c, "image-pull"), timeout=30)
        ready = [x for x in c.lease("lab", "demo")["status"]["conditions"]
                 if x["type"] == "ImageReady"]
        assert [(x["status"], x["reason"]) for x in ready] == [("True", "Started")]
    finally:
        c.stop_all()
