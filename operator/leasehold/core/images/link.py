"""A pool's repository link: the image transfers booked on it (004 §3.1–3.2).

The link carries one transfer at a time at the pool's bandwidth; a transfer holds it
for ``[start, end)``. Best-effort transfers go first come, first served, each at the
earliest gap from now; advance reservations' transfers are laid out earliest
deadline first, each as late as it can (:meth:`Link.edf`)."""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass, field


@dataclass(slots=True, eq=False)
class Transfer:
    """Image ``image`` sent to the nodes of lease ``lease`` over ``[start, end)``.
    ``deadline``: the latest it may end — the start of the reservation it serves
    (advance reservations: the transfer may move, never past it), or its end when a
    lease rode on it (:attr:`riders`: it may then move earlier, never later);
    ``None``: fixed once booked."""

    lease: str
    image: str
    #: the image's size (MB): what it takes in a cache
    size: float
    start: float
    end: float
    deadline: float | None = None
    #: the other leases it serves (multicast piggybacking), in the order they joined
    riders: list[str] = field(default_factory=list)

    @property
    def length(self) -> float:
        return self.end - self.start


def _key(t: Transfer) -> tuple[float, float, str]:
    return (t.start, t.end, t.lease)


class Link:
    """The transfers booked on one link, by start (never two at once)."""

    __slots__ = ("_gaps", "transfers")

    def __init__(self) -> None:
        self.transfers: list[Transfer] = []
        #: :meth:`earliest`'s answers since the link last changed: a planning round
        #: asks it for every queued lease, from the same instant
        self._gaps: dict[tuple[float, float], float] = {}

    def book(self, transfer: Transfer) -> None:
        insort(self.transfers, transfer, key=_key)
        self._gaps.clear()

    def unbook(self, transfer: Transfer) -> None:
        self.transfers.remove(transfer)
        self._gaps.clear()

    def prune(self, now: float) -> None:
        """Forget the transfers over by ``now``: nothing can be booked before it."""
        i = 0
        transfers = self.transfers
        while i < len(transfers) and transfers[i].end <= now:
            i += 1
        if i:
            del transfers[:i]
            self._gaps.clear()

    def earliest(self, length: float, after: float) -> float:
        """The earliest start from ``after`` of a gap ``length`` long."""
        key = (length, after)
        found = self._gaps.get(key)
        if found is None:
            found = self._gaps[key] = self._earliest(length, after)
        return found

    def _earliest(self, length: float, after: float) -> float:
        t = after
        for tr in self.transfers:
            if tr.end <= t:
                continue
            if tr.start >= t + length:
                break
            t = tr.end
        return t

    def edf(self, new: Transfer | None, now: float) -> dict[Transfer, float] | None:
        """Lay the reservations' transfers that have not begun by ``now``, and
        ``new``, out again: latest deadline first, each ending as late as it can by
        its deadline without overlapping any other transfer, so that they run in
        deadline order, each as close to its deadline as the others let it
        (004 §3.2's EDF, as late as possible). Ties: by lease name, the greater
        placed first (so the lesser runs first). Returns the new start of each one,
        or ``None`` (nothing changed) if one of them would have to begin before
        ``now``."""
        movable = [t for t in self.transfers if t.deadline is not None and t.start > now]
        if new is not None:
            movable.append(new)
        ids = {id(t) for t in movable}
        fixed = [(t.start, t.end) for t in self.transfers if id(t) not in ids]
        placed: list[tuple[float, float]] = sorted(fixed)
        out: dict[Transfer, float] = {}
        for tr in sorted(movable, key=lambda t: (t.deadline, t.lease), reverse=True):
            assert tr.deadline is not None
            start = _latest(placed, tr.length, tr.deadline)
            if start < now:
                return None
            out[tr] = start
            insort(placed, (start, start + tr.length))
        return out

    def apply(self, layout: dict[Transfer, float]) -> None:
        """Move transfers to the starts :meth:`edf` gave (an empty layout: only keep
        the order, after a transfer changed hands)."""
        for tr, start in layout.items():
            length = tr.length
            tr.start, tr.end = start, start + length
        self.transfers.sort(key=_key)
        self._gaps.clear()

    def overlaps(self) -> list[str]:
        """Every pair of transfers that overlap (none when sound): for invariant checks."""
        out = []
        for a, b in zip(self.transfers, self.transfers[1:], strict=False):
            if b.start < a.end:
                out.append(f"transfers of {a.lease} [{a.start}, {a.end}) and {b.lease}"
                           f" [{b.start}, {b.end}) overlap")
        return out


def _latest(placed: list[tuple[float, float]], length: float, by: float) -> float:
    """The latest start of a gap ``length`` long ending by ``by`` among the sorted,
    disjoint busy intervals ``placed`` (the time before them all is free)."""
    end = by
    for s, e in reversed(placed):
        if s >= end:
            continue
        if e <= end - length:
            break
        end = s
    return end - length
