"""Reasons the core gives (why a lease was rejected, failed, was cancelled), with the
times and durations they name kept as numbers.

The core counts in its own seconds and knows no wall clock. A reason is a string in
the simulator's terms (``t=3600s`` for a time, ``90s`` for a duration: what
``leasehold simulate`` has always printed), and keeps its parts, so that a shell
with a clock writes the same reason in a user's terms (RFC 3339 times, durations
such as ``1h30m``) through :meth:`Reason.render`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class At:
    """A time, in the core's seconds."""

    t: float


@dataclass(frozen=True, slots=True)
class Lasting:
    """A duration, in seconds."""

    seconds: float


Part = str | At | Lasting


def _simulated(part: Part) -> str:
    if isinstance(part, At):
        return f"t={part.t:g}s"
    if isinstance(part, Lasting):
        return f"{part.seconds:g}s"
    return part


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class Reason(str):
    """A reason as the simulator words it; :attr:`parts` keep its times and durations.

    A str, so that everything that stores, compares or prints a reason goes on doing
    so; joining it to other text (``+``, f-strings) gives a plain str without the
    parts: build longer reasons with ``Reason(...)`` of the pieces instead."""

    parts: tuple[Part, ...]

    def __new__(cls, *pieces: Part) -> Reason:
        parts: list[Part] = []
        for piece in pieces:
            if isinstance(piece, Reason):
                parts.extend(piece.parts)
            elif piece != "":
                parts.append(piece)
        self = super().__new__(cls, "".join(map(_simulated, parts)))
        self.parts = tuple(parts)
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its parts (str's own would rebuild it from its text alone)
        return Reason, self.parts

    def render(self, time: Callable[[float], str], duration: Callable[[float], str]) -> str:
        """The reason with its times written by ``time`` and its durations by
        ``duration``."""
        return "".join(time(p.t) if isinstance(p, At) else duration(p.seconds)
                       if isinstance(p, Lasting) else p for p in self.parts)

    def data(self) -> list[Any]:
        """As plain data (JSON): text, and ``{"t": …}`` / ``{"seconds": …}`` parts."""
        return [{"t": p.t} if isinstance(p, At) else {"seconds": p.seconds}
                if isinstance(p, Lasting) else p for p in self.parts]

    @classmethod
    def from_data(cls, data: list[Any]) -> Reason:
        """The reason :meth:`data` gave; raises ValueError for anything else."""
        if not isinstance(data, list):
            raise ValueError(f"a reason's parts are a list, got {data!r}")
        parts: list[Part] = []
        for item in data:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict) and set(item) == {"t"} and _number(item["t"]):
                parts.append(At(float(item["t"])))
            elif (isinstance(item, dict) and set(item) == {"seconds"}
                  and _number(item["seconds"])):
                parts.append(Lasting(float(item["seconds"])))
            else:
                raise ValueError(f"not a part of a reason: {item!r}")
        return cls(*parts)
