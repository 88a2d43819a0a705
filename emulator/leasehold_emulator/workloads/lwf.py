"""Haizea's old LWF lease files: the advance-reservation workloads its authors
injected into the SDSC Blue trace (seed 004 §4.2; ``shared/data/README.md``).

One lease per line, whitespace-separated::

    reqTime startTime duration realDuration numNodes CPU mem disk vmImage vmImageSize

Times in seconds from the trace start; ``startTime`` -1 means best-effort (all the
injected leases are advance reservations); ``CPU`` is a share of one processor
(1 = a whole one), ``mem`` and ``vmImageSize`` in MB. Lines starting with ``#`` and
blank lines are skipped. Four of the 28,198 injected leases (two each in
``work_25-dur_1h-size_1small`` and ``work_30-dur_1h-size_1small``) have a negative
start other than -1 — a reservation before the trace begins — and are reported as
malformed (``skip_bad_lines`` leaves them out).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from leasehold.core.model import LeaseType, Request, Shape

from .lines import parsed_lines

LWF_FIELDS = 10


class LWFError(ValueError):
    """A malformed lease line: says which file and line, and what is wrong."""


@dataclass(frozen=True, slots=True)
class LWFLease:
    line: int
    submit: float
    #: None: best-effort
    start: float | None
    duration: float
    real_duration: float
    nodes: int
    cpu: float
    memory: int
    image: str
    image_mb: float


def read_lwf(path: str | Path, skip_bad_lines: bool = False,
             skipped: list[str] | None = None) -> Iterator[LWFLease]:
    """Yield every lease of ``path``. A malformed line raises :class:`LWFError`;
    with ``skip_bad_lines`` it is left out and its message appended to ``skipped``."""
    path = Path(path)
    with path.open(encoding="ascii", errors="replace") as fh:
        yield from parsed_lines(fh, str(path), _lease, LWFError, "#", skip_bad_lines, skipped)


def read_lwf_lines(lines: Iterable[str], source: str, skip_bad_lines: bool = False,
                   skipped: list[str] | None = None) -> Iterator[LWFLease]:
    """:func:`read_lwf` of lines read elsewhere (an archive's member), ``source``
    naming them in messages."""
    yield from parsed_lines(lines, source, _lease, LWFError, "#", skip_bad_lines, skipped)


def _lease(text: str, lineno: int) -> LWFLease:
    parts = text.split()
    if len(parts) != LWF_FIELDS:
        raise LWFError(f"expected {LWF_FIELDS} fields, found {len(parts)}")
    try:
        submit, start, duration, real = (float(p) for p in parts[:4])
        nodes, cpu, memory = int(parts[4]), float(parts[5]), int(parts[6])
        image_mb = float(parts[9])
    except ValueError as exc:
        raise LWFError(str(exc)) from None
    problems = []
    if duration <= 0 or real <= 0:
        problems.append(f"durations must be > 0, got {duration:g} and {real:g}")
    if nodes < 1:
        problems.append(f"numNodes must be >= 1, got {nodes}")
    if cpu <= 0 or memory <= 0:
        problems.append(f"CPU and mem must be > 0, got {cpu:g} and {memory}")
    if start != -1 and start < submit:
        problems.append(f"startTime {start:g} is before reqTime {submit:g}")
    if problems:
        raise LWFError("; ".join(problems))
    return LWFLease(lineno, submit, None if start == -1 else start, duration, real, nodes, cpu,
                    memory, parts[8].strip("'\""), image_mb)


def lwf_requests(path: str | Path, *, prefix: str = "ar", skip_bad_lines: bool = False,
                 skipped: list[str] | None = None) -> list[Request]:
    """Leases from an LWF file: advance reservations at their ``startTime`` (others
    best-effort suspendable, as Haizea treats them), one VM per node with the file's
    CPU share (as millicores) and memory, running ``realDuration`` of their
    ``duration``; named ``<prefix><line>``."""
    return _requests(read_lwf(path, skip_bad_lines, skipped), prefix)


def lwf_requests_from(lines: Iterable[str], source: str, *, prefix: str = "ar",
                      skip_bad_lines: bool = False, skipped: list[str] | None = None
                      ) -> list[Request]:
    """:func:`lwf_requests` of lines read elsewhere (an archive's member)."""
    return _requests(read_lwf_lines(lines, source, skip_bad_lines, skipped), prefix)


def _requests(leases: Iterable[LWFLease], prefix: str) -> list[Request]:
    out = []
    for lease in leases:
        kind = (LeaseType.ADVANCE_RESERVATION if lease.start is not None
                else LeaseType.BEST_EFFORT_SUSPENDABLE)
        out.append(Request(
            name=f"{prefix}{lease.line}", type=kind, vms=lease.nodes,
            shape=Shape(round(lease.cpu * 1000), lease.memory), duration=lease.duration,
            submitted=lease.submit, start=lease.start, runtime=min(lease.real_duration,
                                                                   lease.duration),
            image_mb=lease.image_mb,
        ))
    return out
