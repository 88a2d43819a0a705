"""What the shell reports — Lease statuses and events — written behind its steps.

A step's own API calls are the ones the cluster waits for: a victim's pods deleted,
a started lease's pods created. Its reports are not: thousands of leases decided at
once, or moved by a compression, each want a status and an event, and a step that
wrote them all before the next one began kept the pods of the leases it started
then waiting behind them (the scale benchmark's lag). So the step hands them here
and goes on, and they are written meanwhile, a bounded number at a time.

- Per Lease (its uid), in the order given: an event is never overtaken by a later
  one of the same Lease, and the status written last is the one given last.
- A status superseded before it was written is not written: only the latest of a
  Lease's pending statuses goes out (a lease decided, then moved, then started
  within a few steps is one write, not three). So is an event given with a
  ``kind`` when the Lease's next event is of the same kind (a reservation moved
  again before the event of its last move was written): one event says where it
  is now, as Kubernetes' event recorder folds a series of similar events into one.
  Under a burst, thousands of queued leases moved at every step were three events
  in four, and the statuses waited behind them.
- Each write is its own: one that fails is logged and the others go on.
- A status given as ``background`` (a Lease held back at the edge, not planned)
  is written only when nothing else is pending: one tenant's thousands of held
  Leases never delay another's decided ones. A later ordinary report of the Lease
  supersedes it.
- While the step makes pods (:meth:`held`), no report is begun: the API server
  serves the pods first (a burst of starts waits on the pods, not on the reports
  of thousands of leases decided with them), and a status given meanwhile still
  supersedes the one before it.

What is pending when the shell stops (its replica loses the lead, a step fails, it
is killed) is lost with it. The next shell writes the status of every Lease it
knows again from its state, and posts the event of each end its journal replays
that the Lease's status does not show yet (:meth:`Shell.recover`). A Lease it will
not know, one a snapshot forgets, has its reports written first (:meth:`settle`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field

log = logging.getLogger("leasehold.operator")

#: a report, written when its turn comes
Write = Callable[[], Awaitable[None]]

#: writes in flight at once: fewer than a step's own (32), so that pod deletes and
#: the step's other calls are served first when both queue at the API server
IN_FLIGHT = 8


@dataclass
class _Pending:
    #: the Lease, as the log names it (``namespace/name``)
    about: str
    #: (kind or None, write), in order
    events: list[tuple[str | None, Write]] = field(default_factory=list)
    status: Write | None = None


class Outbox:
    def __init__(self, in_flight: int = IN_FLIGHT) -> None:
        self.in_flight = in_flight
        #: by Lease uid, in the order each was first given
        self._pending: dict[str, _Pending] = {}
        #: background statuses, by Lease uid, written when ``_pending`` has none free
        self._later: dict[str, _Pending] = {}
        #: the Leases whose reports are being written (one writer per Lease)
        self._busy: set[str] = set()
        self._more = asyncio.Event()
        #: set when a writer lets go of a Lease (:meth:`settle` waits for it)
        self._freed = asyncio.Event()
        self._holds = 0
        self._open = asyncio.Event()
        self._open.set()
        #: writes done (the benchmark and the tests read it)
        self.written = 0

    def __len__(self) -> int:
        """Leases with writes pending."""
        return len(self._pending) + len(self._later)

    def event(self, key: str, about: str, write: Write, kind: str | None = None) -> None:
        """An event of the Lease; with a ``kind``, it replaces the Lease's last
        event not yet written if that one is of the same kind."""
        events = self._pending.setdefault(key, _Pending(about)).events
        if kind is not None and events and events[-1][0] == kind:
            events[-1] = (kind, write)
        else:
            events.append((kind, write))
        self._more.set()

    def status(self, key: str, about: str, write: Write, background: bool = False) -> None:
        """The Lease's status, replacing any of its statuses not yet written; in the
        background lane if ``background`` (and no ordinary report of it is pending)."""
        if background and key not in self._pending:
            self._later.setdefault(key, _Pending(about)).status = write
        else:
            self._later.pop(key, None)
            self._pending.setdefault(key, _Pending(about)).status = write
        self._more.set()

    def drop(self, key: str) -> None:
        """Forget what is pending for a Lease (deleted: its name may soon be
        another Lease's, which must not get this one's status)."""
        self._pending.pop(key, None)
        self._later.pop(key, None)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """No report is begun meanwhile (those being written finish)."""
        self._holds += 1
        self._open.clear()
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds:
                self._open.set()

    async def run(self) -> None:
        """Forever: ``in_flight`` writers, each taking the oldest Lease with reports
        pending that no other writer has (so a Lease's reports stay in order)."""
        await asyncio.gather(*(self._writer(forever=True) for _ in range(self.in_flight)))

    async def flush(self) -> None:
        """Write everything pending, and what is given meanwhile, until none is."""
        await asyncio.gather(*(self._writer(forever=False) for _ in range(self.in_flight)))

    async def settle(self, keys: Iterable[str]) -> None:
        """Write now what is pending for these Leases, in order, a Lease's writer
        having finished first; ``in_flight`` Leases at a time."""
        todo = [k for k in keys if k in self._pending or k in self._later or k in self._busy]
        lanes = asyncio.Semaphore(self.in_flight)

        async def one(key: str) -> None:
            async with lanes:
                while key in self._busy:
                    self._freed.clear()
                    await self._freed.wait()
                for lane in (self._pending, self._later):  # the events, then the status
                    pending = lane.pop(key, None)
                    if pending is not None:
                        await self._write(key, pending)
        await asyncio.gather(*(one(k) for k in todo))

    async def _writer(self, forever: bool) -> None:
        while True:
            await self._open.wait()
            # the busy ones are at most ``in_flight``: this looks at a few keys
            lane = self._pending
            key = next((k for k in lane if k not in self._busy), None)
            if key is None:
                lane = self._later
                key = next((k for k in lane if k not in self._busy), None)
            if key is None:
                if not forever:
                    return
                self._more.clear()  # nothing is given between the look and here
                await self._more.wait()
                continue
            await self._write(key, lane.pop(key))

    async def _write(self, key: str, pending: _Pending) -> None:
        self._busy.add(key)
        try:
            for _, write in pending.events:
                await self._one(write, "an event", pending.about)
            later = self._pending.get(key)
            if pending.status is not None and (later is None or later.status is None):
                await self._one(pending.status, "the status", pending.about)
        finally:
            self._busy.discard(key)
            self._freed.set()

    async def _one(self, write: Write, what: str, about: str) -> None:
        try:
            await write()
        except Exception:  # one report of one Lease: the others, and the step, go on
            log.exception("writing %s of Lease %s failed; the other reports go on", what, about)
        self.written += 1
