"""Memory the operator has freed, given back to the system.

glibc's malloc keeps what a process frees in its heaps for reuse, and returns a
heap's free pages only from its top. The operator frees as much as it takes — the
Leases that ended, their pods, each step's API bodies — yet, most of all in the
arena of the thread the core runs in, what it frees lies between what it keeps: in
the soak benchmark (1,000 Leases a minute, each deleted once ended) its resident
memory grew ~2 MB a minute while its live Python objects stayed flat. glibc's
``malloc_trim(0)`` gives back every free page of every arena; it costs well under a
millisecond. Where there is no such call (musl, macOS), nothing is done.

And the collector of cyclic garbage, tuned for a process with a large, long-lived
heap (:func:`tune_collector`)."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from typing import NoReturn

#: seconds between two trims of the heap
TRIM_EVERY = 10.0
#: allocations (less deallocations) between two collections of the youngest
#: generation; CPython's default is 700
YOUNG_EVERY = 20_000


def tune_collector() -> None:
    """Fewer full collections, each shorter. At CPython's defaults the scale
    benchmark's operator made 20 full collections in its first ~35 s, ~0.1 s each
    over the whole heap (5,000 Leases, the libraries, the shell), many of them in
    the core's busiest steps; so tuned, none in the same span. A full collection
    follows a number of young ones, and with more allocations between young ones
    fewer objects live long enough to be promoted; what is there at start-up
    (modules, the libraries' own objects) lives as long as the process and is frozen
    out of every collection. Process-wide: for the operator's entry point."""
    gc.freeze()
    gc.set_threshold(YOUNG_EVERY, *gc.get_threshold()[1:])


def trimmer() -> Callable[[], None] | None:
    """glibc's ``malloc_trim(0)``, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int

    def give_back() -> None:
        trim(0)
    return give_back


async def trimmed(every: float = TRIM_EVERY) -> NoReturn:
    """Give freed memory back every ``every`` seconds, forever (or sleep forever,
    where it cannot be given back)."""
    trim = trimmer()
    while True:
        await asyncio.sleep(every)
        if trim is not None:
            trim()
