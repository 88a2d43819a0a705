"""Which replica is active (DESIGN §5, HA): two or more operators share one
``ClusterKopfPeering`` and one of them schedules.

Kopf's peering decides whether its handlers run: each operator writes a keep-alive
(priority, lifetime, last seen) into the peering object's status, and pauses its
watches while a live peer has a higher priority, or the same one (then every replica
pauses, as Kopf warns). Kopf does not tell the handlers, and leasehold's scheduling
loop is not a handler, so the loop watches the same object and applies the same rule
(:func:`blockers`): it runs exactly when Kopf runs the handlers that feed it.

The default priority is the negated start time in milliseconds, so the replica that
started first stays active and a new replica (a rolling update, a restarted pod)
waits until the active one exits or its keep-alive lapses."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from .client import KubeClient, KubeError

log = logging.getLogger("leasehold.operator")

PEERINGS = "/apis/kopf.dev/v1/clusterkopfpeerings"


def default_priority() -> int:
    return -int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class Peer:
    identity: str
    priority: int
    #: seconds since the epoch after which the peer counts as gone
    deadline: float


def peers(status: dict[str, Any] | None) -> list[Peer]:
    """The keep-alives in a peering object's status, as Kopf writes them."""
    out = []
    for identity, info in (status or {}).items():
        if not isinstance(info, dict):
            continue
        try:
            seen = datetime.datetime.fromisoformat(str(info["lastseen"])).timestamp()
            out.append(Peer(identity, int(info.get("priority", 0)),
                            seen + int(info.get("lifetime", 60))))
        except (KeyError, ValueError, TypeError):
            continue  # not a keep-alive: Kopf skips it too
    return out


def blockers(status: dict[str, Any] | None, identity: str, priority: int, now: float
             ) -> list[Peer]:
    """The live peers that keep ``identity`` paused: a higher priority, or the same."""
    return [p for p in peers(status)
            if p.identity != identity and p.deadline > now and p.priority >= priority]


def is_active(status: dict[str, Any] | None, identity: str, priority: int, now: float
              ) -> bool:
    """Kopf's rule, and one more: the replica's own keep-alive must be in the object.
    Kopf resumes on reading the object, before its first keep-alive is written; the
    loop waits for it, so that the replica it displaces learns of it from the same
    event and two loops never run for longer than that event takes to reach both."""
    if not any(p.identity == identity and p.deadline > now for p in peers(status)):
        return False
    return not blockers(status, identity, priority, now)


class Peering:
    """Watches the peering object and calls ``on_change(active)`` when this replica
    becomes active or stops being so (it must return at once: it is called from the
    watch). It starts paused, as Kopf does, until it has read the object."""

    def __init__(self, client: KubeClient, name: str, identity: str, priority: int,
                 on_change: Callable[[bool], None]) -> None:
        self.client = client
        self.name = name
        self.identity = identity
        self.priority = priority
        self.on_change = on_change
        self.active = False
        self._first = True
        self._status: dict[str, Any] | None = None

    async def ensure(self) -> None:
        """Create the peering object if it is missing: Kopf only writes into one."""
        body = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering",
                "metadata": {"name": self.name}}
        try:
            await self.client.create(PEERINGS, body)
        except KubeError as exc:
            if exc.code == 404:
                raise KubeError(404, "the ClusterKopfPeering CRD is not installed: kubectl"
                                " apply -f crds/clusterkopfpeerings.kopf.dev.yaml") from None
            if exc.code != 409:
                raise

    def _evaluate(self) -> float | None:
        """Decide, tell on a change, and return when to look again (a keep-alive
        lapsing changes the answer without any event)."""
        now = time.time()
        active = is_active(self._status, self.identity, self.priority, now)
        if active != self.active or self._first:
            if active:
                log.info("peering %s: active (priority %d)", self.name, self.priority)
            else:
                blocking = blockers(self._status, self.identity, self.priority, now)
                log.info("peering %s: standing by for %s", self.name,
                         ", ".join(p.identity for p in blocking) or "its own keep-alive")
            if active != self.active:
                self.active = active
                self.on_change(active)
            self._first = False
        return min((p.deadline for p in peers(self._status) if p.deadline > now),
                   default=None)

    async def run(self) -> None:
        while True:
            try:
                await self._watch()
            except (KubeError, aiohttp.ClientError, OSError) as exc:
                log.warning("peering %s: %s; watching again", self.name, exc)
                await asyncio.sleep(1)

    async def _watch(self) -> None:
        """One read and one watch, until the server ends it or a blocker lapses."""
        obj = await self.client.get(f"{PEERINGS}/{self.name}")
        self._status = obj.get("status")
        loop = asyncio.get_running_loop()

        def when(recheck: float | None) -> float | None:
            return None if recheck is None else loop.time() + recheck - time.time() + 0.05
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(when(self._evaluate())) as deadline:
                async for event in self.client.watch(
                        PEERINGS, obj["metadata"]["resourceVersion"], timeout=300,
                        fieldSelector=f"metadata.name={self.name}"):
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._status = event["object"].get("status")
                        deadline.reschedule(when(self._evaluate()))
        # on a lapse, the next read decides afresh
