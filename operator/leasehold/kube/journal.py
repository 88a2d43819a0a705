"""The operator's journal: what the core was told, kept where only the operator
writes (DESIGN §5, recovery; issue 16).

A Lease's status is the tenant's to read and, with ``leases/status`` rights, to
write: nothing in it is ever read back. The journal is ConfigMaps in the operator's
own namespace (``--journal-namespace``), which the chart lets no tenant touch:

- ``leasehold-journal`` — the index: the generation of the latest snapshot, how many
  parts it has, how many sealed parts of the log there are, and the log's tail
  (``data.log``, JSON lines, at most :data:`TAIL` bytes): with the sealed parts,
  every input given to the core since that snapshot;
- ``leasehold-journal-<generation>-log-<k>`` — a sealed part of the log (at most
  :data:`LOG_PART` bytes of JSON lines, under a request's and a ConfigMap's limits):
  when the tail would outgrow :data:`TAIL`, it is written out with the step's new
  lines and the index starts an empty tail (a burst of thousands of Leases in one
  step is written as several parts). The index is rewritten at every step, so its
  tail is kept small: a write's cost is then that of the step's own lines, not of
  every line since the snapshot;
- ``leasehold-journal-<generation>-<part>`` — the snapshot (gzipped JSON, in parts of
  at most 700 KiB, under a ConfigMap's 1 MiB): the core's state
  (:mod:`leasehold.core.snapshot`) and what the shell knows of each lease (its
  Lease's uid, namespace and name, its run time, origin, generation).

An input is appended before the core is told of it. A snapshot is taken every
:data:`SNAPSHOT_EVERY` inputs: its parts are written first, then the index points
to them (one write: the switch is atomic), then the old parts (of the snapshot and
of the log) are deleted. Every
write of the index carries the resourceVersion read last: a second writer (a replica
that wrongly thinks itself active) gets 409 and stops.

A restarted operator restores the snapshot and replays the log: the core it gets is
the one that was killed, whatever the cluster became meanwhile (what had happened is
in the snapshot and the log as facts). Everything read back is checked
(:class:`JournalError` says what and where)."""

from __future__ import annotations

import base64
import gzip
import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any

from leasehold.core.model import Absence, Capacity, Dispatch, Origin
from leasehold.core.replay import Input
from leasehold.core.snapshot import (
    SnapshotError,
    pool_data,
    pool_from,
    request_data,
    request_from,
)

from .client import KubeClient, KubeError

log = logging.getLogger("leasehold.operator")

INDEX = "leasehold-journal"
#: inputs logged between two snapshots
SNAPSHOT_EVERY = 500
#: the largest snapshot part (a ConfigMap holds 1 MiB in all)
PART = 700 * 1024
#: the largest part of the log, in bytes
LOG_PART = 512 * 1024
#: the largest tail of the log kept in the index, in bytes: each step rewrites the
#: index, and with the tail as large as a part the soak benchmark's operator sent
#: ~80 KB at every step (2.7 MB/s of the same lines again and again, to and from the
#: API server)
TAIL = 16 * 1024
#: the journal format; another is refused
VERSION = 1


class JournalError(ValueError):
    """A journal that cannot be read: what is wrong, and where."""


def core_name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(slots=True)
class Known:
    """What the shell keeps of a lease it submitted (the rest is in its Lease)."""

    uid: str
    namespace: str
    name: str
    runtime: float | None
    origin: Origin
    deadline_given: bool = False
    generation: int = 1
    #: when its latest start's pods were all made (:attr:`.status.Tracked.made`)
    made: float | None = None
    #: where the core's dispatch strategy sent it (:attr:`.status.Tracked.dispatch`):
    #: its status says so after a restart too, though the snapshot's core has no
    #: action left to tell it (absent in journals written before issue 21)
    dispatch: Dispatch | None = None

    def data(self) -> dict[str, Any]:
        sent = self.dispatch
        return {"uid": self.uid, "namespace": self.namespace, "name": self.name,
                "runtime": self.runtime, "origin": self.origin.value,
                "deadlineGiven": self.deadline_given, "generation": self.generation,
                "made": self.made,
                "dispatch": None if sent is None else {
                    "t": sent.time, "lease": sent.lease, "pool": sent.pool,
                    "policy": sent.policy, "reason": sent.reason}}

    @classmethod
    def read(cls, d: Any, where: str) -> Known:
        try:
            runtime, made, sent = d["runtime"], d.get("made"), d.get("dispatch")
            dispatch = None
            if sent is not None:
                at = _number(sent["t"], "dispatch.t")
                if at is None:
                    raise ValueError("dispatch.t is missing")
                dispatch = Dispatch(at, str(sent["lease"]), str(sent["pool"]),
                                    str(sent["policy"]), str(sent["reason"]))
            return cls(str(d["uid"]), str(d["namespace"]), str(d["name"]),
                       _number(runtime, "runtime"), Origin(d["origin"]),
                       bool(d["deadlineGiven"]), int(d["generation"]), _number(made, "made"),
                       dispatch)
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(f"{where}: {type(exc).__name__}: {exc}") from None


def _number(x: Any, what: str) -> float | None:
    if x is not None and (isinstance(x, bool) or not isinstance(x, int | float)):
        raise ValueError(f"{what} {x!r} is not a number")
    return None if x is None else float(x)


def made(names: list[str], t: float) -> dict[str, Any]:
    """A fact, as a log line: the pods of these leases' latest starts were all made
    at ``t`` (not an input: the core is not told; recovery reads it)."""
    return {"t": t, "kind": "made", "lease": "", "leases": names}


def entry(item: Input, known: Known | None = None) -> dict[str, Any]:
    """An input as a log line."""
    out: dict[str, Any] = {"t": item.time, "kind": item.kind, "lease": item.lease}
    if item.request is not None:
        out["request"] = request_data(item.request)
    if item.kind in ("cancel", "fail"):
        out["reason"] = item.reason
    if item.capacity is not None:
        out["pool"] = pool_data(item.capacity.pool)
        out["down"] = sorted(item.capacity.down)
        out["removed"] = item.capacity.removed
    if item.absence is not None:
        out["until"] = item.absence.until
        out["idle"] = list(item.absence.idle)
    if known is not None:
        out["known"] = known.data()
    return out


def read_entry(d: Any, where: str) -> tuple[Input, Known | None]:
    """A log line as the input it was, and what the shell knew of the lease."""
    try:
        t = _number(d["t"], "t")
        if t is None:
            raise ValueError("t is missing")
        kind, lease = str(d["kind"]), str(d["lease"])
        known = Known.read(d["known"], f"{where}.known") if "known" in d else None
        if kind == "submit":
            return Input.submit(request_from(d["request"], f"{where}.request"), t), known
        if kind == "finished":
            return Input.finished(lease, t), known
        if kind == "cancel":
            return Input.cancel(lease, t, str(d["reason"])), known
        if kind == "fail":
            return Input.fail(lease, t, str(d["reason"])), known
        if kind == "capacity":
            change = Capacity(pool_from(d["pool"], f"{where}.pool"),
                              frozenset(int(i) for i in d["down"]), bool(d.get("removed")))
            return Input.capacity_change(change, t), known
        if kind == "absent":
            until = _number(d["until"], "until")
            if until is None or not math.isfinite(until) or not isinstance(d["idle"], list):
                raise ValueError("an absence needs until (a finite time) and idle (a list)")
            return Input.absent(Absence(until, tuple(str(n) for n in d["idle"])), t), known
        raise ValueError(f"unknown kind {kind!r}")
    except JournalError:
        raise
    except (KeyError, TypeError, ValueError, SnapshotError) as exc:
        raise JournalError(f"{where}: {type(exc).__name__}: {exc}") from None


@dataclass(slots=True)
class Log:
    """The log, read back: the inputs in order; what the shell knew of each lease
    submitted; the uids of the Leases rejected; the nodes' names of each pool whose
    capacity changed; when each lease's latest start had all its pods made; and the
    last instant logged (an input or a fact)."""

    inputs: list[Input] = field(default_factory=list)
    known: dict[str, Known] = field(default_factory=dict)
    rejected: set[str] = field(default_factory=set)
    names: dict[str, list[str]] = field(default_factory=dict)
    made: dict[str, float] = field(default_factory=dict)
    last: float = -math.inf


def read_log(lines: list[Any], where: str) -> Log:
    """The log's lines, each checked (:class:`JournalError` says which and why)."""
    out = Log()
    for i, line in enumerate(lines):
        at = f"{where}[{i}]"
        kind = line.get("kind") if isinstance(line, dict) else None
        if kind == "rejected":
            out.rejected.add(str(line.get("uid", "")))
            continue
        if kind == "made":
            leases = line.get("leases")
            try:
                t = _number(line.get("t"), "t")
            except ValueError:
                t = None
            if t is None or not math.isfinite(t) or not isinstance(leases, list):
                raise JournalError(f"{at}: a fact needs t (a finite time) and leases"
                                   " (a list)")
            out.made.update(dict.fromkeys(map(str, leases), t))
            out.last = max(out.last, t)
            continue
        item, k = read_entry(line, at)
        out.inputs.append(item)
        out.last = max(out.last, item.time)
        if k is not None:
            out.known[item.lease] = k
        if item.capacity is not None and isinstance(line.get("names"), list):
            out.names[item.lease] = [str(n) for n in line["names"]]
    return out


@dataclass(slots=True)
class Loaded:
    """The journal as read: the snapshot (None: there is none yet) and the log."""

    snapshot: dict[str, Any] | None = None
    log: list[dict[str, Any]] = field(default_factory=list)


class Journal:
    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self._path = f"/api/v1/namespaces/{namespace}/configmaps"
        #: the index as last written (its resourceVersion is the write's precondition)
        self._version: str | None = None
        self.generation = 0
        self.parts = 0
        #: every line logged since the snapshot: the sealed parts', then the tail's
        self.log: list[dict[str, Any]] = []
        #: the sealed parts of the log, and the tail (in the index) as written
        self.sealed = 0
        self._tail: list[str] = []
        self._tail_bytes = 0
        #: inputs logged between two snapshots
        self.snapshot_every = SNAPSHOT_EVERY
        #: the largest part of the log
        self.log_part = LOG_PART
        #: the largest tail of the log in the index
        self.tail_limit = TAIL

    @property
    def due(self) -> bool:
        """Time for a snapshot."""
        return len(self.log) >= self.snapshot_every

    async def load(self) -> Loaded:
        """The journal, checked; an empty one if there is none (the namespace is made
        if it is missing)."""
        try:
            index = await self.client.get(f"{self._path}/{INDEX}")
        except KubeError as exc:
            if exc.code != 404:
                raise
            await self._namespace()
            return Loaded()
        self._version = index["metadata"].get("resourceVersion")
        data = index.get("data") or {}
        where = f"ConfigMap {self.namespace}/{INDEX}"
        try:
            if int(data.get("version", VERSION)) != VERSION:
                raise JournalError(f"{where}: version {data.get('version')}, expected {VERSION}")
            self.generation = int(data.get("generation", 0))
            self.parts = int(data.get("parts", 0))
            self.sealed = int(data.get("sealed", 0))
            self._tail = [line for line in str(data.get("log", "")).splitlines() if line]
            self._tail_bytes = sum(len(line) + 1 for line in self._tail)
            tail = [json.loads(line) for line in self._tail]
        except (ValueError, TypeError) as exc:
            raise JournalError(f"{where}: {exc}") from None
        self.log = []
        for k in range(self.sealed):
            name = self._log_part(self.generation, k)
            try:
                part = await self.client.get(f"{self._path}/{name}")
                self.log += [json.loads(line) for line in
                             str((part.get("data") or {})["log"]).splitlines() if line]
            except KubeError as exc:
                raise JournalError(f"ConfigMap {self.namespace}/{name}: {exc}") from None
            except (KeyError, ValueError, TypeError) as exc:
                raise JournalError(f"ConfigMap {self.namespace}/{name}: {exc}") from None
        self.log += tail
        snapshot = None
        if self.parts:
            blob = b""
            for i in range(self.parts):
                name = f"{INDEX}-{self.generation}-{i}"
                try:
                    part = await self.client.get(f"{self._path}/{name}")
                    blob += base64.b64decode((part.get("binaryData") or {})["part"])
                except KubeError as exc:
                    raise JournalError(f"ConfigMap {self.namespace}/{name}: {exc}") from None
                except (KeyError, ValueError) as exc:
                    raise JournalError(f"ConfigMap {self.namespace}/{name}: no part: {exc}"
                                       ) from None
            try:
                snapshot = json.loads(gzip.decompress(blob))
            except (OSError, ValueError) as exc:
                raise JournalError(f"the snapshot of generation {self.generation}: {exc}"
                                   ) from None
        return Loaded(snapshot, list(self.log))

    async def _namespace(self) -> None:
        try:
            await self.client.get(f"/api/v1/namespaces/{self.namespace}")
            return  # there (the chart's release namespace): nothing to make
        except KubeError as exc:
            if exc.code != 404:
                raise
        try:
            await self.client.create("/api/v1/namespaces", {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": self.namespace}})
        except KubeError as exc:
            if exc.code not in (409, 403):  # there already, or not ours to make
                raise

    async def append(self, entries: list[dict[str, Any]]) -> None:
        """Log the entries, before the core is told of them. Raises on any failure:
        nothing may be done that the journal does not hold."""
        if not entries:
            return
        lines = [json.dumps(x, separators=(",", ":")) for x in entries]
        tail, sealed = [*self._tail, *lines], self.sealed
        size = self._tail_bytes + sum(len(line) + 1 for line in lines)
        if size > self.tail_limit:
            # the tail and the new lines sealed, in parts of at most log_part bytes
            # (the index points to them only from its write below); the tail empty
            part: list[str] = []
            part_size = 0
            for line in tail:
                if part and part_size + len(line) + 1 > self.log_part:
                    await self._seal(sealed, part)
                    part, part_size, sealed = [], 0, sealed + 1
                part.append(line)
                part_size += len(line) + 1
            await self._seal(sealed, part)
            tail, size, sealed = [], 0, sealed + 1
        await self._write_index(self.generation, self.parts, tail, sealed)
        self.log.extend(entries)
        self._tail, self._tail_bytes, self.sealed = tail, size, sealed

    async def _seal(self, k: int, lines: list[str]) -> None:
        await self._put(self._log_part(self.generation, k),
                        {"data": {"log": "".join(x + "\n" for x in lines)}},
                        str(self.generation))

    @staticmethod
    def _log_part(generation: int, k: int) -> str:
        return f"{INDEX}-{generation}-log-{k}"

    async def _put(self, name: str, content: dict[str, Any], generation: str) -> None:
        """A part (of a snapshot or of the log), written anew: one left by a write
        that never became current is ours to replace."""
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": self.namespace,
                             "labels": {"app.kubernetes.io/name": "leasehold",
                                        "leasehold.io/journal": generation}},
                **content}
        try:
            await self.client.create(self._path, body)
        except KubeError as exc:
            if exc.code != 409:
                raise
            # ours only if the index is still as we last wrote it: else another
            # replica has written since (and may point to this very part)
            if self._version is not None:
                index = await self.client.get(f"{self._path}/{INDEX}")
                if index["metadata"].get("resourceVersion") != self._version:
                    raise KubeError(409, "the journal was written by another replica",
                                    "Conflict") from None
            await self.client.delete(f"{self._path}/{name}")
            await self.client.create(self._path, body)

    async def checkpoint(self, state: dict[str, Any]) -> None:
        """A new snapshot; the log starts empty."""
        blob = gzip.compress(json.dumps(state, separators=(",", ":")).encode(), 6)
        parts = [blob[i:i + PART] for i in range(0, len(blob), PART)] or [b""]
        generation = self.generation + 1
        for i, part in enumerate(parts):
            await self._put(f"{INDEX}-{generation}-{i}",
                            {"binaryData": {"part": base64.b64encode(part).decode()}},
                            str(generation))
        old = [f"{INDEX}-{self.generation}-{i}" for i in range(self.parts)]
        old += [self._log_part(self.generation, k) for k in range(self.sealed)]
        await self._write_index(generation, len(parts), [], 0)
        self.generation, self.parts, self.log = generation, len(parts), []
        self.sealed, self._tail, self._tail_bytes = 0, [], 0
        for name in old:
            try:
                await self.client.delete(f"{self._path}/{name}")
            except KubeError as exc:
                log.warning("journal: could not delete an old part: %s", exc)

    async def _write_index(self, generation: int, parts: int, tail: list[str], sealed: int
                           ) -> None:
        data = {"version": str(VERSION), "generation": str(generation), "parts": str(parts),
                "sealed": str(sealed), "log": "".join(line + "\n" for line in tail)}
        if self._version is None:
            try:
                made = await self.client.create(self._path, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": INDEX, "namespace": self.namespace,
                                 "labels": {"app.kubernetes.io/name": "leasehold"}},
                    "data": data})
            except KubeError as exc:
                if exc.code == 409:
                    raise KubeError(409, "the journal was written by another replica",
                                    "Conflict") from None
                raise
        else:
            made = await self.client.merge_patch(
                f"{self._path}/{INDEX}",
                {"metadata": {"resourceVersion": self._version}, "data": data})
        self._version = made["metadata"].get("resourceVersion")


@dataclass(slots=True)
class State:
    """What a snapshot holds besides the core's state: what the shell knows of each
    lease still in the core, the uids of Leases that ended (forgotten by the core,
    not to be submitted again while their objects exist), each Lease's core name,
    and each pool's nodes, by index, as the cluster names them."""

    core: dict[str, Any]
    known: dict[str, Known] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    current: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, list[str]] = field(default_factory=dict)

    def data(self) -> dict[str, Any]:
        return {"version": VERSION, "core": self.core,
                "known": {name: k.data() for name, k in self.known.items()},
                "ended": sorted(self.ended), "current": self.current, "nodes": self.nodes}

    @classmethod
    def read(cls, data: Any) -> State:
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise JournalError(f"snapshot: version, expected {VERSION}")
        try:
            known = {str(n): Known.read(k, f"snapshot.known[{n!r}]")
                     for n, k in data["known"].items()}
            return cls(data["core"], known, {str(u) for u in data["ended"]},
                       {str(k): str(v) for k, v in data["current"].items()},
                       {str(k): [str(n) for n in v] for k, v in data["nodes"].items()})
        except (KeyError, AttributeError, TypeError) as exc:
            raise JournalError(f"snapshot: {type(exc).__name__}: {exc}") from None

