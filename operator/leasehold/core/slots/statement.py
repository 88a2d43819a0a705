"""Trials on the slot table, kept or undone as a whole.

Volcano's ``Statement``: operations are carried out at once (so later ones see
earlier ones), remembered, and at the end either committed or discarded — undone in
reverse order, leaving the table as it was. The core's trials use it: holding slots
for several preempted leases jointly before any of them is moved, and trying a
booking at an earlier start during compression."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Protocol

from .booking import Booking


class Table(Protocol):
    def book(self, booking: Booking) -> None: ...

    def unbook(self, booking: Booking) -> None: ...


class Statement:
    """Use as a context manager: what is not committed by the end is discarded."""

    __slots__ = ("_table", "_undo")

    def __init__(self, table: Table) -> None:
        self._table = table
        #: what undoes each operation, in the order they were done
        self._undo: list[tuple[Callable[[Booking], None], Booking]] = []

    def book(self, booking: Booking) -> None:
        self._table.book(booking)
        self._undo.append((self._table.unbook, booking))

    def unbook(self, booking: Booking) -> None:
        self._table.unbook(booking)
        self._undo.append((self._table.book, booking))

    def commit(self) -> None:
        """Keep everything done so far."""
        self._undo.clear()

    def discard(self) -> None:
        """Undo everything not committed, the latest first."""
        while self._undo:
            undo, booking = self._undo.pop()
            undo(booking)

    def __enter__(self) -> Statement:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.discard()
