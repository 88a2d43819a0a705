"""The slot table: per-pool capacity over time (004 §3.1–3.2, DESIGN §2.2).

* :mod:`.booking` — a booking, one claim on a pool for ``[start, end)``;
* :mod:`.pool` — what every pool's table answers (earliest fit, free windows) and does;
* :mod:`.counted` — identical slots counted against a free-slot profile, nodes bound
  when a lease starts;
* :mod:`.exclusive` — whole-node VMs: one slot per node;
* :mod:`.packed` — VMs packed on nodes by cpu and memory, each booking pinned to nodes;
* :mod:`.shared` — the shared pool: counted while its bookings are of one shape,
  packed otherwise;
* :mod:`.rooms` — where a shared pool's nodes hold VMs of a shape, all nodes at once;
* :mod:`.table` — all pools;
* :mod:`.statement` — trials, committed or undone as a whole.
"""

from __future__ import annotations

from .booking import DOWN, Booking, Segments, clip
from .counted import CountedPool
from .exclusive import ExclusivePool
from .packed import PackedPool
from .pool import PoolTable, fit_count, fit_counts, fit_extended, fit_in
from .shared import SharedPool
from .statement import Statement
from .table import SlotTable, make_pool

__all__ = [
    "DOWN",
    "Booking",
    "CountedPool",
    "ExclusivePool",
    "PackedPool",
    "PoolTable",
    "Segments",
    "SharedPool",
    "SlotTable",
    "Statement",
    "clip",
    "fit_count",
    "fit_counts",
    "fit_extended",
    "fit_in",
    "make_pool",
]
