"""One node's image cache (004 §3.1–3.2: D_p, reference counts, LRU eviction)."""

from __future__ import annotations

from dataclasses import dataclass
from math import fsum


@dataclass(slots=True)
class Entry:
    """A cached image: its size (MB), how many VMs on the node use it, and when it
    was last delivered or used (the LRU key)."""

    size: float
    refs: int
    used: float


class NodeCache:
    """The images a node keeps in its ``capacity`` MB of cache space.

    An image is evicted only when another one must make room, least recently used
    first (ties: by name), and never while a VM on the node uses it (``refs > 0``)
    or while ``pinned`` says a planned lease relies on it. What cannot be made room
    for is not cached: the cache never holds more than its capacity."""

    __slots__ = ("capacity", "entries", "used")

    def __init__(self, capacity: float) -> None:
        self.capacity = capacity
        self.entries: dict[str, Entry] = {}
        #: the MB its images take (kept: a multicast asks every node of the pool)
        self.used = 0.0

    def has(self, image: str) -> bool:
        return image in self.entries

    def add(self, image: str, size: float, now: float,
            pinned: frozenset[str] | set[str] = frozenset()) -> list[str]:
        """Cache ``image`` (or touch it if it is there), evicting unreferenced images
        not in ``pinned``, least recently used first, until it fits. Returns the
        images evicted; nothing is evicted (and the image not cached) if even then
        it would not fit."""
        entry = self.entries.get(image)
        if entry is not None:
            entry.used = max(entry.used, now)
            return []
        if size > self.capacity:
            return []
        free = self.capacity - self.used
        victims: list[str] = []
        if free < size:
            order = sorted((e.used, name) for name, e in self.entries.items()
                           if e.refs == 0 and name not in pinned)
            for _, name in order:
                if free >= size:
                    break
                victims.append(name)
                free += self.entries[name].size
            if free < size:
                return []
        entries = self.entries
        for name in victims:
            del entries[name]
        entries[image] = Entry(size, 0, now)
        # summed afresh, not kept by += and -=: sizes that are not whole MB would
        # drift by rounding, and the cache must never seem to hold less than it does
        self.used = fsum(e.size for e in entries.values())
        return victims

    def acquire(self, image: str, now: float) -> None:
        """A VM on the node starts from the cached image: it is in use."""
        entry = self.entries.get(image)
        if entry is not None:
            entry.refs += 1
            entry.used = max(entry.used, now)

    def release(self, image: str, now: float) -> None:
        """A VM that used the cached image has left the node."""
        entry = self.entries.get(image)
        if entry is not None and entry.refs > 0:
            entry.refs -= 1
            entry.used = max(entry.used, now)
