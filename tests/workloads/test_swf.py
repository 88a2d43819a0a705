"""SWF loader: field mapping, filtering and clamping, and clear errors."""

from __future__ import annotations

import gzip

import pytest

from leasehold_emulator.workloads.swf import SWFError, read_swf, swf_requests

LINE = "{job} {submit} 5 {run} 32 0.03 -1 {nodes} {req} -1 {status} 96 -1 -1 3 -1 -1 -1\n"


def write(tmp_path, rows, gz=False):
    text = "; a comment line\n" + "".join(LINE.format(**r) for r in rows)
    path = tmp_path / ("t.swf.gz" if gz else "t.swf")
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_fields_filtering_and_clamping(tmp_path, gz):
    path = write(tmp_path, [
        dict(job=1, submit=0, run=100, nodes=4, req=3600, status=1),
        dict(job=2, submit=10, run=-1, nodes=2, req=600, status=5),  # cancelled in queue
        dict(job=3, submit=20, run=0, nodes=1, req=600, status=1),  # run time 0 -> 1
        dict(job=4, submit=30, run=900, nodes=8, req=600, status=1),  # clamped to 600
        dict(job=5, submit=40, run=50, nodes=2, req=600, status=5),  # ran, then cancelled
    ], gz)
    reqs = swf_requests(path)
    assert [r.name for r in reqs] == ["1", "3", "4", "5"]
    assert [(r.vms, r.duration, r.runtime, r.submitted) for r in reqs] == [
        (4, 3600, 100, 0), (1, 600, 1, 20), (8, 600, 600, 30), (2, 600, 50, 40)]


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.swf"
    path.write_text("1 2 3\n")
    with pytest.raises(SWFError, match=r"bad.swf:1: expected 18 fields, found 3"):
        list(read_swf(path))
    path.write_text(LINE.format(job=1, submit="x", run=1, nodes=1, req=1, status=1))
    with pytest.raises(SWFError, match=r"bad.swf:1: could not convert"):
        list(read_swf(path))


def test_sdsc_blue_trace_counts(shared_data):
    jobs = list(read_swf(shared_data / "SDSC-BLUE-haizea-30days.swf.gz"))
    assert len(jobs) == 5545
    cancelled = [j for j in jobs if j.status == 5 and j.runtime < 0]
    assert len(cancelled) == 437
    reqs = swf_requests(shared_data / "SDSC-BLUE-haizea-30days.swf.gz")
    assert len(reqs) == 5108
    assert max(r.vms for r in reqs) <= 144
    assert all(1 <= r.runtime <= r.duration for r in reqs)


def test_a_generated_trace_reads_back_job_for_job(tmp_path):
    # Lublin99 writes sizes in field 5 and leaves field 8 at -1: the reader falls back
    from leasehold_emulator.workloads.lublin99 import PAPERS, generate, to_swf

    jobs = generate(300, 5, PAPERS)
    path = tmp_path / "l.swf"
    path.write_text(to_swf(jobs, PAPERS))
    reqs = swf_requests(path)
    assert [(r.submitted, r.vms, r.duration) for r in reqs] == [
        (j.arrival, j.nodes, max(j.runtime, 1)) for j in jobs]
