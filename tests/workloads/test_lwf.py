"""Haizea's LWF lease files: the 72 injected AR workloads, and malformed lines."""

from __future__ import annotations

import tarfile

import pytest

from leasehold.core.model import LeaseType
from leasehold_emulator.workloads.lwf import LWFError, lwf_requests, read_lwf

GOOD = "0 4005 13719 13719 22 1 1024 0 'NONE.img' 600\n"


@pytest.fixture(scope="module")
def injected(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("lwf")
    with tarfile.open(shared_data / "haizea-injected-leases-30days.tar.gz") as tar:
        tar.extractall(out, filter="data")
    return sorted(out.rglob("*.lwf"))


#: reservations that start before the trace does (startTime < 0 but not -1)
BEFORE_THE_TRACE = {"work_25-dur_1h-size_1small.lwf": 2, "work_30-dur_1h-size_1small.lwf": 2}


def test_every_injected_workload_reads_as_advance_reservations(injected):
    assert len(injected) == 72
    for path in injected:
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
        skipped: list[str] = []
        reqs = lwf_requests(path, skip_bad_lines=True, skipped=skipped)
        assert len(skipped) == BEFORE_THE_TRACE.get(path.name, 0), skipped
        assert all("is before reqTime" in s for s in skipped)
        if skipped:
            with pytest.raises(LWFError, match=f"{path.name}:[0-9]+: startTime -"):
                lwf_requests(path)
        assert len(reqs) == len(lines) - len(skipped), path.name
        assert all(r.type == LeaseType.ADVANCE_RESERVATION for r in reqs)
        assert all(r.start >= r.submitted and r.vms >= 1 for r in reqs)
        assert all(r.image_mb == 600 and r.shape.memory == 1024 for r in reqs)
        # the file name says the AR duration: work_NN-dur_Kh-...
        hours = int(path.name.split("dur_")[1][0])
        assert max(r.duration for r in reqs) <= hours * 3600 * 1.5, path.name


def test_a_lease_line_maps_to_a_request(tmp_path):
    path = tmp_path / "a.lwf"
    path.write_text("# header\n\n" + GOOD + "10 -1 600 300 2 0.5 512 0 img 1024\n")
    ar, be = lwf_requests(path, prefix="x")
    assert (ar.name, ar.type, ar.start, ar.duration, ar.vms) == (
        "x3", LeaseType.ADVANCE_RESERVATION, 4005, 13719, 22)
    assert (ar.shape.cpu, ar.shape.memory, ar.image_mb) == (1000, 1024, 600)
    assert (be.type, be.start, be.runtime, be.shape.cpu) == (
        LeaseType.BEST_EFFORT_SUSPENDABLE, None, 300, 500)


@pytest.mark.parametrize(("line", "message"), [
    ("0 4005 13719 22 1 1024 0 'NONE.img' 600", "expected 10 fields, found 9"),
    ("0 soon 13719 13719 22 1 1024 0 'NONE.img' 600", "could not convert string to float"),
    ("0 4005 13719 13719 0 1 1024 0 'NONE.img' 600", "numNodes must be >= 1, got 0"),
    ("9000 4005 13719 13719 2 1 1024 0 'NONE.img' 600", "startTime 4005 is before reqTime 9000"),
    ("0 4005 0 13719 2 1 1024 0 'NONE.img' 600", "durations must be > 0"),
])
def test_a_bad_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "b.lwf"
    path.write_text(GOOD + line + "\n" + GOOD)
    with pytest.raises(LWFError, match=f"b.lwf:2: .*{message}"):
        list(read_lwf(path))
    skipped: list[str] = []
    assert len(list(read_lwf(path, skip_bad_lines=True, skipped=skipped))) == 2
    assert (len(skipped) == 1 and skipped[0].endswith(message)) or message in skipped[0]
