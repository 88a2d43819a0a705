"""Standard Workload Format traces (the 18 fields of the Parallel Workloads Archive).

Only what leasehold needs is interpreted: submit time (field 2), run time (4),
allocated/requested size (5 or 8), requested time (9) and status (11). Fields are
1-based as in the SWF definition; comment lines start with ``;``.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from leasehold.core.model import LeaseType, Request, Shape

from .lines import parsed_lines

SWF_FIELDS = 18


class SWFError(ValueError):
    """A malformed trace line: says which file and line, and what is wrong."""


@dataclass(frozen=True, slots=True)
class SWFJob:
    job: int
    submit: float
    wait: float
    runtime: float
    procs: int
    requested_procs: int
    requested_time: float
    status: int


def read_swf(path: str | Path, skip_bad_lines: bool = False,
             skipped: list[str] | None = None) -> Iterator[SWFJob]:
    """Yield every record of a (possibly gzipped) SWF file. A malformed line raises
    :class:`SWFError`; with ``skip_bad_lines`` it is left out and its message
    appended to ``skipped``."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="ascii", errors="replace") as fh:
        yield from parsed_lines(fh, str(path), _record, SWFError, ";", skip_bad_lines, skipped)


def _record(line: str, _lineno: int) -> SWFJob:
    parts = line.split()
    if len(parts) != SWF_FIELDS:
        raise SWFError(f"expected {SWF_FIELDS} fields, found {len(parts)}")
    try:
        f = [float(p) for p in parts]
    except ValueError as exc:
        raise SWFError(str(exc)) from None
    return SWFJob(int(f[0]), f[1], f[2], f[3], int(f[4]), int(f[7]), f[8], int(f[10]))


def swf_requests(
    path: str | Path,
    *,
    size_field: int = 8,
    drop_cancelled: bool = True,
    lease_type: LeaseType = LeaseType.BEST_EFFORT_SUSPENDABLE,
    cpu: int = 1000,
    memory: int = 1024,
    skip_bad_lines: bool = False,
    skipped: list[str] | None = None,
) -> list[Request]:
    """Leases from a trace, one VM per node (the papers' model).

    Sizes come from field ``size_field`` (8, requested processors, which Haizea's
    SDSC Blue trace has already turned into nodes; 5 for allocated processors); a
    trace without requested processors (-1, as the Lublin99 program writes) falls
    back to field 5.
    Records cancelled while queued (status 5 with run time -1) are dropped. As
    Haizea does, run time 0 becomes 1 and run time is clamped to the requested time.
    """
    out: list[Request] = []
    for job in read_swf(path, skip_bad_lines, skipped):
        if drop_cancelled and job.status == 5 and job.runtime < 0:
            continue
        size = job.requested_procs if size_field == 8 and job.requested_procs > 0 else job.procs
        requested = job.requested_time if job.requested_time > 0 else max(job.runtime, 1.0)
        runtime = min(max(job.runtime, 1.0), requested)
        out.append(
            Request(
                name=str(job.job), type=lease_type, vms=max(size, 1), shape=Shape(cpu, memory),
                duration=requested, submitted=job.submit, runtime=runtime,
            )
        )
    return out
