"""leasehold's own trace format: the leases a cluster was asked for, to replay them
under another policy or on another cluster.

JSON Lines (optionally gzipped, ``.gz``). The first line is a header::

    {"format": "leasehold-trace", "version": 1, "epoch": "2026-11-22T06:00:00Z",
     "source": "cluster prod-a", "cluster": {"pools": [...]}}

``epoch`` (the wall-clock instant of time 0), ``source`` and ``cluster`` (the pools
it was recorded on, as in a scenario) are optional. Every other line is one lease,
with the keys and units of a scenario's ``leases`` items (``name``, ``type``,
``origin``, ``arrival`` in seconds from the epoch, ``vms``, ``cpu``, ``memory``,
``extended`` (extended resources per VM, as ``{"nvidia.com/gpu": 1}``), ``duration``,
``ready``, ``deadline``, ``start``, ``runtime``, ``pool``, ``image``, ``imageSizeMB``,
``replicas``). ``runtime`` is how long the lease actually ran when it ended
early: a replay ends it then too. Blank lines and lines starting with ``#`` are
skipped. What happened to a lease (its waits and preemptions) is not part of a
trace's input: that is what a replay computes.

A lease line may carry, under ``observed``, what a cluster really did with the lease
(:class:`Observed`: its phase, first start and end in seconds from the epoch, its
wait, its preemptions and by whom, its overhead, its pool and nodes): ``leasehold
trace export`` writes it, ``leasehold whatif`` shows it as the baseline beside its
replays, and a replay ignores it::

    {"name": "lab/lease-5", "type": "BestEffortSuspendable", "arrival": 530, ...,
     "observed": {"phase": "Completed", "start": 530, "end": 5812, "wait": 0,
                  "preemptions": 1, "preemptedBy": "owners/lease-7", "pool": "rp1"}}

``leasehold trace export`` writes one from a live cluster (the Leases the operator
scheduled and the NodePools' capacity); ``leasehold trace convert`` turns a scenario
into a trace and back, and experiments (``workload: {model: trace}``), ``leasehold
simulate`` and ``leasehold whatif`` replay one. A malformed line is reported with its
line number and every problem of the lease, in the scenario loader's words.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Literal

from pydantic import Field, ValidationError

from leasehold.api.fields import Spec
from leasehold.api.lease import LeaseSpec
from leasehold.api.scenario import (
    ClusterSpec,
    Scenario,
    ScenarioError,
    validate_scenario,
    validation_problems,
)
from leasehold.core.model import LeaseType, Request

from .lines import parsed_lines

FORMAT = "leasehold-trace"
VERSION = 1


class TraceError(ValueError):
    """A trace that cannot be read: says which file and line, and what is wrong."""


class TraceLineError(TraceError):
    """A malformed lease line: ``skip_bad_lines`` can leave it out."""


class TraceHeader(Spec):
    format: Literal["leasehold-trace"]
    version: Literal[1]
    epoch: datetime | None = Field(default=None, description="Wall-clock instant of time 0.")
    source: str | None = Field(default=None, description="Where the trace was recorded.")
    cluster: ClusterSpec | None = Field(default=None, description="The pools it ran on.")


class Observed(Spec):
    """What a cluster really did with a lease (a lease line's ``observed``): not an
    input, a replay ignores it. Times in seconds from the trace's epoch."""

    phase: str = Field(description="Its final phase (or the phase it was in when exported).")
    sequence: int | None = Field(default=None, description="Its place in the operator's"
                                 " order of submission (ties of arrival are in this order).")
    start: float | None = Field(default=None, description="When it first started.")
    end: float | None = Field(default=None, description="When it ended.")
    wait: float | None = Field(default=None, description="Seconds from its arrival to its"
                               " first start.")
    preemptions: int = Field(default=0, ge=0, description="How many times it was preempted.")
    preempted_by: str | None = Field(default=None, alias="preemptedBy",
                                     description="The lease that preempted it last, when the"
                                                 " cluster names it.")
    overhead_seconds: float = Field(default=0.0, ge=0, alias="overheadSeconds",
                                    description="Seconds its preemptions cost it.")
    ran_seconds: float | None = Field(default=None, alias="ranSeconds",
                                      description="Seconds it ran.")
    pool: str | None = Field(default=None, description="The pool it ran (or was booked) on.")
    nodes: list[str] | None = Field(default=None, description="The nodes its VMs ran on.")


@dataclass(frozen=True, slots=True)
class Trace:
    header: TraceHeader
    #: in file order
    leases: list[LeaseSpec]
    #: by lease name, what the cluster did with the leases whose lines say so
    observed: dict[str, Observed] = field(default_factory=dict)

    def requests(self) -> list[Request]:
        """In submission order; leases submitted together keep their file order."""
        return [lease.to_request() for lease in sorted(self.leases, key=lambda x: x.arrival)]


def _open(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")
    return path.open(mode, encoding="utf-8")


def read_trace(path: str | Path, skip_bad_lines: bool = False,
               skipped: list[str] | None = None) -> Trace:
    """Read a trace. A malformed header, a missing file or (unless
    ``skip_bad_lines``, which leaves it out and appends its message to
    ``skipped``) a malformed lease or a lease name used twice raises
    :class:`TraceError`."""
    path = Path(path)
    try:
        with _open(path, "r") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise TraceError(f"{path}: cannot read file: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise TraceError(f"{path}: cannot read file: {exc}") from None
    at, header = _header(path, lines)
    names: dict[str, int] = {}
    observed: dict[str, Observed] = {}

    def lease(text: str, lineno: int) -> LeaseSpec:
        spec = _lease(text, observed)
        first = names.setdefault(spec.name, lineno)
        if first != lineno:
            raise TraceLineError(f'duplicate lease name "{spec.name}" (first at line {first});'
                             f" lease names must be unique")
        return spec

    # the header and what precedes it read as blank: line numbers stay the file's
    body = [""] * (at + 1) + lines[at + 1:]
    leases = list(parsed_lines(body, str(path), lease, TraceLineError, "#", skip_bad_lines,
                               skipped))
    return Trace(header, leases, observed)


def _header(path: Path, lines: list[str]) -> tuple[int, TraceHeader]:
    """The header and its index: the first line that is not blank."""
    for at, text in enumerate(lines):
        if not text.strip():
            continue
        where = f"{path}:{at + 1}"
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{where}: header: not JSON ({exc.msg}, column {exc.colno})"
                             ) from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise TraceError(f"{where}: not a leasehold trace: the first line must be a header"
                             f' like {{"format": "{FORMAT}", "version": {VERSION}}}')
        try:
            return at, TraceHeader.model_validate(data)
        except ValidationError as exc:
            raise TraceError(f"{where}: header: {'; '.join(validation_problems(exc))}"
                             ) from None
    raise TraceError(f"{path}: empty file; expected a header line"
                     f' {{"format": "{FORMAT}", "version": {VERSION}}} and one lease per line')


def _lease(text: str, observed: dict[str, Observed] | None = None) -> LeaseSpec:
    """A lease line; its ``observed`` (a replay's input leaves it out) goes to
    ``observed``, by the lease's name."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceLineError(f"not JSON ({exc.msg}, column {exc.colno})") from None
    if not isinstance(data, dict):
        raise TraceLineError("expected one lease as a JSON object")
    seen = data.pop("observed", None)
    name = data.get("name")
    who = f'lease "{name}": ' if isinstance(name, str | int) else ""
    try:
        spec = LeaseSpec.model_validate(data)
    except ValidationError as exc:
        raise TraceLineError(who + "; ".join(validation_problems(exc, ("leases", 0)))) from None
    if seen is not None:
        try:
            outcome = Observed.model_validate(seen)
        except ValidationError as exc:
            problems = [f"observed.{p}" for p in _observed_problems(exc)]
            raise TraceLineError(who + "; ".join(problems)) from None
        if observed is not None:
            observed[spec.name] = outcome
    return spec


def _observed_problems(exc: ValidationError) -> list[str]:
    """``<field>: <what is wrong>`` for each problem of an ``observed``."""
    return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]


def trace_scenario(trace: Trace, source: str) -> Scenario:
    """The trace as a scenario on the cluster its header names (default
    configuration), with the scenario's checks: every lease fits some node."""
    if trace.header.cluster is None:
        raise ScenarioError([f"{source}: the header names no cluster; add one"
                             f' ("cluster": {{"pools": [...]}}, as in a scenario), or replay'
                             f" the trace in an experiment (workload model trace)"])
    # validated from plain data, so that a problem names the lease it is about
    leases = [lease.model_dump(mode="json", by_alias=True, exclude_none=True)
              for lease in trace.leases]
    return validate_scenario({"cluster": trace.header.cluster, "leases": leases}, source)


# ---- writing ------------------------------------------------------------------------
def lease_of(req: Request) -> LeaseSpec:
    """The lease a request was made from (the inverse of ``LeaseSpec.to_request``)."""
    writes_deadline = req.type in (LeaseType.DEADLINE_MIGRATABLE,
                                   LeaseType.DEADLINE_NON_PREEMPTABLE)
    return LeaseSpec.model_validate({
        "name": req.name, "origin": req.origin, "type": req.type, "arrival": req.submitted,
        "vms": req.originals, "cpu": f"{req.shape.cpu}m", "memory": req.shape.memory,
        # extended resources only when it has some: a trace without reads as before
        "extended": dict(req.shape.extended) or None, "duration": req.duration, "ready": req.ready,
        "deadline": req.deadline if writes_deadline else None, "start": req.start,
        "runtime": req.runtime, "pool": req.pool,
        "image": req.image, "imageSizeMB": req.image_mb or None,
        # copies of each VM only when it has them: a trace without reads as before
        **({"replicas": req.replicas} if req.replicas > 1 else {}),
    })


def trace_lines(leases: Iterable[LeaseSpec], header: TraceHeader | None = None,
                observed: Mapping[str, Observed] | None = None) -> Iterator[str]:
    """The lines of a trace (without line ends); a lease in ``observed`` with what
    the cluster did with it."""
    header = header or TraceHeader(format=FORMAT, version=VERSION)
    yield json.dumps(header.model_dump(mode="json", by_alias=True, exclude_none=True))
    for lease in leases:
        data = lease.model_dump(mode="json", by_alias=True, exclude_none=True)
        if observed is not None and lease.name in observed:
            data["observed"] = observed[lease.name].model_dump(mode="json", by_alias=True,
                                                               exclude_none=True)
        yield json.dumps(data)


def write_trace(path: str | Path, leases: Iterable[LeaseSpec],
                header: TraceHeader | None = None,
                observed: Mapping[str, Observed] | None = None) -> None:
    with _open(Path(path), "w") as fh:
        for line in trace_lines(leases, header, observed):
            fh.write(line + "\n")
