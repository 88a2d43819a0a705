"""Injected reservations (004 §4.2) read by name from Haizea's archive in place, or from
a directory: listing, globs, the all-best-effort variant, bad names."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from leasehold.core.model import LeaseType
from leasehold_emulator.workloads import injections as inj
from leasehold_emulator.workloads.lwf import lwf_requests

TABLE_1 = ["work_10-dur_3h-size_2medium.lwf", "work_20-dur_3h-size_2medium.lwf",
           "work_30-dur_3h-size_2medium.lwf"]
AR = "0 4005 13719 13719 22 1 1024 0 'NONE.img' 600\n"


@pytest.fixture(scope="module")
def archive(shared_data: Path) -> Path:
    return shared_data / "haizea-injected-leases-30days.tar.gz"


def small_archive(tmp: Path, files: dict[str, str]) -> Path:
    """A .tar.gz of ``files`` (name -> text) under a folder, as the authors' is."""
    folder = tmp / "src" / "leases"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    out = tmp / "leases.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        tar.add(folder, arcname="leases")
    return out


def test_the_archive_holds_the_72_workloads_by_base_name(archive):
    names = inj.names(archive)
    assert len(names) == 72
    assert set(TABLE_1) <= set(names)
    assert "HAIZEA-LICENSE.txt" not in names


def test_an_archive_member_reads_as_the_extracted_file(archive, tmp_path):
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    extracted = next(tmp_path.rglob(TABLE_1[0]))
    from_archive = inj.injected_requests(archive, TABLE_1[0])
    assert from_archive == lwf_requests(extracted)
    assert inj.injected_requests(extracted.parent, TABLE_1[0]) == from_archive
    assert len(from_archive) == 94  # docs/workloads.md: 0/94 rejected
    assert all(r.type == LeaseType.ADVANCE_RESERVATION for r in from_archive)


def test_reservations_before_the_trace_are_left_out_and_listed(archive):
    skipped: list[str] = []
    reqs = inj.injected_requests(archive, "work_25-dur_1h-size_1small.lwf", skipped=skipped)
    assert len(skipped) == 2 and all("is before reqTime" in s for s in skipped)
    assert skipped[0].startswith(f"{archive}:work_25-dur_1h-size_1small.lwf:")
    assert all(r.start is not None and r.start >= 0 for r in reqs)


def test_as_best_effort_keeps_each_lease_but_its_reservation(archive):
    ars = inj.injected_requests(archive, TABLE_1[0])
    bes = inj.injected_requests(archive, TABLE_1[0], as_best_effort=True)
    assert [(r.name, r.vms, r.submitted, r.duration, r.runtime) for r in bes] == [
        (r.name, r.vms, r.submitted, r.duration, r.runtime) for r in ars]
    assert all(r.type == LeaseType.BEST_EFFORT_SUSPENDABLE and r.start is None for r in bes)


def test_none_injects_nothing(archive):
    assert inj.injected_requests(archive, inj.NONE) == []


@pytest.mark.parametrize(("patterns", "expected"), [
    (["b.lwf"], ["b.lwf"]),
    (["*.lwf"], ["a.lwf", "b.lwf", "c2.lwf"]),
    (["none", "c?.lwf", "*.lwf"], ["none", "c2.lwf", "a.lwf", "b.lwf"]),
], ids=["name", "glob-sorted", "in-pattern-order-each-once"])
def test_expand(tmp_path, patterns, expected):
    source = small_archive(tmp_path, {n: AR for n in ("b.lwf", "a.lwf", "c2.lwf")})
    assert inj.expand(source, patterns) == expected


@pytest.mark.parametrize(("source", "call", "message"), [
    ("missing.tar.gz", lambda s: inj.names(s), "missing.tar.gz: cannot read"),
    ("file.txt", lambda s: inj.names(s), "file.txt: neither a directory nor a .tar.gz"),
    ("ok", lambda s: inj.expand(s, ["x*.lwf"]), "'x*.lwf' matches no injection file of"),
    ("ok", lambda s: inj.injected_requests(s, "x.lwf"), "'x.lwf' is no injection file of"),
], ids=["no-archive", "not-an-archive", "glob-matches-nothing", "unknown-name"])
def test_a_bad_source_or_name_is_one_clear_message(tmp_path, source, call, message):
    (tmp_path / "file.txt").write_text("")
    path = small_archive(tmp_path, {"a.lwf": AR}) if source == "ok" else tmp_path / source
    with pytest.raises(inj.InjectionError, match=message.replace("*", r"\*")):
        call(path)


@pytest.mark.parametrize(("name", "label"), [
    ("work_10-dur_3h-size_2medium.lwf", "[10%/3H/medium]"),
    ("work_05-dur_1h-size_1small.lwf", "[5%/1H/small]"),
    ("none", "no reservations"),
    ("mine.lwf", "mine.lwf"),
], ids=["table-1", "leading-zero", "none", "other"])
def test_label_as_004_writes_workloads(name, label):
    assert inj.label(name) == label
