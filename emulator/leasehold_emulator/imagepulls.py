"""The arithmetic of the emulated kubelet's image pulls: one pool's repository link
and its nodes' image caches, in emulated seconds, with no I/O (the kubelet in
:mod:`leasehold_emulator.nodes` drives it and writes what it decides).

- **The link** carries one transfer at a time, first come, first served: a
  transfer of ``size`` MB holds it ``size / bandwidth`` seconds from the later of
  its request and the end of the transfer before it. With ``multicast`` a node
  that needs an image already on its way over the link (queued or under way) joins
  that transfer and has the image when it ends; without, each node's pull is its
  own transfer. A node never pulls an image twice at once: a second pod that needs
  it waits for the same pull.
- **A node's disk** holds its cached images and the ones on their way to it (their
  room is taken when the pull is asked for, so that a landing never overfills it),
  never more than ``disk`` MB. Room is made by evicting the least recently used
  images (used: landed, needed by a pod, or left by one; ties by name) that no
  pod on the node uses; an image cannot be evicted while a pod that needs it is
  there, nor while it is on its way. When even that leaves too little room the
  pod waits for it (:attr:`Need.room`), and gets it when a pod leaves the node.
- **Predeployed** images (named, or every image with ``predeployed: true``) are on
  every node from the start, take no disk, and are never evicted (as in the core).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from leasehold.api.scenario import ImagesSpecModel, validation_problems


@dataclass(frozen=True, slots=True)
class Repository:
    """What the kubelet reads of a pool's ``images`` block. ``cache``, ``reuse`` and
    ``piggyback`` are the core's planning choices (which leases get a transfer,
    told to the operator as a ``Deploy``): a node keeps what it pulled on the whole
    of its disk and uses it again, as a real kubelet does."""

    bandwidth: float
    disk: float
    multicast: bool = True
    predeployed: frozenset[str] = frozenset()
    predeployed_all: bool = False


def repository(images: Any) -> Repository:
    """A NodePool's ``spec.images`` as a :class:`Repository`. Raises ValueError
    saying what is wrong and where, in the block's own units."""
    try:
        spec = ImagesSpecModel.model_validate(images)
    except ValidationError as exc:
        raise ValueError("; ".join(f"spec.images.{p}" for p in validation_problems(
            exc, ("pools", 0, "images")))) from None
    names = frozenset() if isinstance(spec.predeployed, bool) else frozenset(spec.predeployed)
    return Repository(bandwidth=float(spec.bandwidth), disk=float(spec.disk),
                      multicast=spec.multicast, predeployed=names,
                      predeployed_all=spec.predeployed is True)


@dataclass(slots=True)
class Transfer:
    """One send of ``image`` over the link, to ``nodes`` (more join it with
    multicast): asked for at ``requested``, on the link over ``[start, end)``."""

    image: str
    size: float
    requested: float
    start: float
    end: float
    nodes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Copy:
    """An image on a node's disk, or on its way there (``landed`` in the future)."""

    size: float
    landed: float
    used: float


@dataclass(frozen=True, slots=True)
class Need:
    """Where a pod's image stands: on its node from ``ready`` (emulated seconds;
    when it was asked for, if it was there), brought by ``transfer`` (None: it was
    there, or is predeployed), after ``evicted`` made room for it; or, with ``room``
    set, waiting for that many MB more room on the disk (``ready`` None)."""

    ready: float | None
    transfer: Transfer | None = None
    room: float | None = None
    evicted: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Use:
    node: str
    image: str
    size: float


class Pulls:
    """One pool's link and caches. Times are emulated seconds and never go back."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        #: the transfers on the link or waiting for it, in the order asked (its FIFO);
        #: those that have ended leave it
        self.link: list[Transfer] = []
        self._free = 0.0
        self._disks: dict[str, dict[str, Copy]] = {}
        self._users: dict[str, _Use] = {}
        self._needs: dict[str, Need] = {}
        #: node -> the pods waiting for room on it, in the order they came
        self._waiting: dict[str, list[str]] = {}

    # ---- queries --------------------------------------------------------------
    def present(self, image: str) -> bool:
        """On every node without a pull (predeployed)."""
        return self.repo.predeployed_all or image in self.repo.predeployed

    def on_node(self, node: str, image: str, now: float) -> bool:
        copy = self._disks.get(node, {}).get(image)
        return self.present(image) or (copy is not None and copy.landed <= now)

    def images(self, node: str, now: float) -> list[tuple[str, float]]:
        """(image, MB) of the images on ``node``'s disk at ``now`` (landed), the
        largest first, as a kubelet lists them."""
        return sorted(((name, c.size) for name, c in self._disks.get(node, {}).items()
                       if c.landed <= now), key=lambda ic: (-ic[1], ic[0]))

    def used(self, node: str) -> float:
        """MB of ``node``'s disk taken, by images landed or on their way."""
        return sum(c.size for c in self._disks.get(node, {}).values())

    def pinned(self, node: str) -> set[str]:
        return {u.image for u in self._users.values() if u.node == node}

    def need_of(self, user: str) -> Need | None:
        return self._needs.get(user)

    def link_free(self) -> float:
        """When the link has sent everything asked of it."""
        return self._free

    # ---- changes ----------------------------------------------------------------
    def need(self, now: float, user: str, node: str, image: str, size: float) -> Need:
        """Pod ``user`` on ``node`` needs ``image`` of ``size`` MB (> 0); asked again,
        where it stands. The image is in use on the node until :meth:`release`."""
        if user in self._needs:
            return self._needs[user]
        self._sent(now)
        if self.present(image):
            need = Need(now)
        else:
            self._users[user] = _Use(node, image, size)
            need = self._bring(now, user)
        self._needs[user] = need
        return need

    def release(self, now: float, user: str) -> list[tuple[str, Need]]:
        """Pod ``user`` left its node (ended, deleted): its image is no longer in use
        for it. Returns the pods that were waiting for room and now have it."""
        self._needs.pop(user, None)
        use = self._users.pop(user, None)
        if use is None:
            return []
        waiting = self._waiting.get(use.node, [])
        if user in waiting:
            waiting.remove(user)
            return []
        copy = self._disks.get(use.node, {}).get(use.image)
        if copy is not None:
            copy.used = max(copy.used, now)
        return self.retry(now, use.node)

    def retry(self, now: float, node: str) -> list[tuple[str, Need]]:
        """Give room on ``node`` to the pods waiting for it that now fit, in the order
        they came (an image landing unused, or a pod leaving, may have made room)."""
        self._sent(now)
        moved = []
        for user in list(self._waiting.get(node, [])):
            self._waiting[node].remove(user)
            need = self._bring(now, user)
            self._needs[user] = need
            if need.ready is not None:
                moved.append((user, need))
        return moved

    def seed(self, now: float, node: str, image: str, size: float) -> None:
        """``image`` is on ``node`` already (a restarted kubelet reads its Node's
        ``status.images``), if it fits."""
        disk = self._disks.setdefault(node, {})
        if image not in disk and not self.present(image) \
                and self.used(node) + size <= self.repo.disk:
            disk[image] = Copy(size, now, now)

    def _bring(self, now: float, user: str) -> Need:
        use = self._users[user]
        disk = self._disks.setdefault(use.node, {})
        copy = disk.get(use.image)
        if copy is not None:  # there, or on its way to the node
            copy.used = max(copy.used, now)
            if copy.landed <= now:
                return Need(now)
            return Need(copy.landed, self._transfer_to(use.node, use.image, now))
        short, evicted = self._make_room(now, use.node, use.size)
        if short > 0:
            self._waiting.setdefault(use.node, []).append(user)
            return Need(None, room=short)
        transfer = self._join(now, use.image) or self._send(now, use.image, use.size)
        transfer.nodes.append(use.node)
        disk[use.image] = Copy(transfer.size, transfer.end, transfer.end)
        return Need(transfer.end, transfer, evicted=evicted)

    def _sent(self, now: float) -> None:
        """The transfers that have ended leave the link (FIFO: they end in order)."""
        ended = 0
        while ended < len(self.link) and self.link[ended].end <= now:
            ended += 1
        del self.link[:ended]

    def _transfer_to(self, node: str, image: str, now: float) -> Transfer | None:
        return next((t for t in self.link if t.image == image and node in t.nodes
                     and t.end > now), None)

    def _join(self, now: float, image: str) -> Transfer | None:
        if not self.repo.multicast:
            return None
        return next((t for t in self.link if t.image == image and t.end > now), None)

    def _send(self, now: float, image: str, size: float) -> Transfer:
        start = max(now, self._free)
        transfer = Transfer(image, size, now, start, start + size / self.repo.bandwidth)
        self.link.append(transfer)
        self._free = transfer.end
        return transfer

    def _make_room(self, now: float, node: str, size: float) -> tuple[float, tuple[str, ...]]:
        """Evict until ``size`` MB fit on ``node``; nothing is evicted unless that
        makes them fit. Returns the MB still missing (0: they fit), and the images
        evicted."""
        disk = self._disks.setdefault(node, {})
        free = self.repo.disk - self.used(node)
        if size <= free:
            return 0.0, ()
        pinned = self.pinned(node)
        victims = sorted((c.used, name) for name, c in disk.items()
                         if c.landed <= now and name not in pinned)
        chosen, freed = [], 0.0
        for _, name in victims:
            if free + freed >= size:
                break
            chosen.append(name)
            freed += disk[name].size
        if free + freed < size:
            return size - free - freed, ()
        for name in chosen:
            del disk[name]
        return 0.0, tuple(chosen)
