"""Emulated time, shared with the emulated nodes through the ConfigMap
``kube-system/leasehold-clock``: ``timeScale`` emulated seconds pass per real
second, counted from the wall-clock time ``origin``. On a real cluster there is no
such ConfigMap and time is real (scale 1, origin the epoch)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

CLOCK_PATH = "/api/v1/namespaces/kube-system/configmaps/leasehold-clock"


def rfc3339(seconds: float | None = None, micro: bool = False) -> str:
    """Epoch seconds (default: now) as Kubernetes writes times: UTC, whole seconds, or
    with ``micro`` to the microsecond (its MicroTime, as in an Event's eventTime)."""
    when = datetime.now(UTC) if seconds is None else datetime.fromtimestamp(seconds, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def epoch(stamp: str) -> float:
    """An RFC 3339 time (any offset, fractions allowed) as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC).timestamp()


@dataclass(frozen=True, slots=True)
class Clock:
    scale: float = 1.0
    #: the wall-clock time (epoch seconds) emulated time 0 corresponds to
    origin: float = 0.0
    wall: Callable[[], float] = field(default=time.time, compare=False)

    @classmethod
    def from_configmap(cls, data: dict[str, str] | None) -> Clock:
        data = data or {}
        return cls(float(data.get("timeScale", 1)), float(data.get("origin", 0)))

    def now(self) -> float:
        """Emulated seconds since the origin: the core's time."""
        return self.core(self.wall())

    def core(self, wall: float) -> float:
        return (wall - self.origin) * self.scale

    def wall_of(self, t: float) -> float:
        """When emulated time ``t`` comes, in wall-clock seconds."""
        return self.origin + t / self.scale

    def stamp(self, t: float) -> str:
        """Emulated time ``t`` as an RFC 3339 wall-clock time, as users read it."""
        return rfc3339(self.wall_of(t))

    def micro_stamp(self, t: float) -> str:
        """:meth:`stamp` to the microsecond: for the times a status keeps to be measured
        and ordered by (when a Lease was submitted, started, ended), which an emulated
        minute per second would otherwise round to a minute."""
        return rfc3339(self.wall_of(t), micro=True)
