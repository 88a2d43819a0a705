"""Per-lease timelines from the core's actions, and a text Gantt chart of them.

A timeline is a list of ``(kind, start, end)`` segments, by start: ``run`` while the
VMs run, ``overhead`` while they are being resumed, suspended, migrated or stopped,
or (on a pool with a VM model) booted or shut down (they hold nodes but do no
work). Each segment is a span in which the lease's VMs hold nodes, as its bookings
in the slot table do: a migration holds its source nodes (until its VMs have left
them) and its target nodes (from when they land) at once, so two segments may
overlap. Waiting is what lies between submission and the
segments.

A segment ends when the lease's next action says so, not when it was planned to:
a run or an overhead is cut when the lease is suspended, migrated, stopped,
completed, failed or lost, and a migration to a later slot holds nothing between
leaving its source and landing (its landing starts with the :class:`Resume` that
opens the reservation, wherever and whenever re-planning has put it by then).
"""

from __future__ import annotations

from collections.abc import Iterable
from math import inf
from typing import Any

from leasehold.core.model import (
    Action,
    Cancel,
    Complete,
    Fail,
    Lost,
    Migrate,
    Requeue,
    Resume,
    Start,
    Suspend,
    Unstart,
)

Segment = tuple[str, float, float]

#: a segment begun and not ended yet: its kind, start, planned end (``inf`` while a
#: run lasts) and whether it is a migration's source, which the lease's later
#: actions do not cut (its VMs leave those nodes as planned), but a failure or a
#: lost node does (the core frees everything at once)
_Open = tuple[str, float, float, bool]


def lease_timelines(actions: Iterable[Action]) -> dict[str, list[Segment]]:
    out: dict[str, list[Segment]] = {}
    held: dict[str, list[_Open]] = {}

    def end(lease: str, t: float, sources: bool = False) -> None:
        """End the lease's segments at ``t`` (a migration's source too if ``sources``)."""
        kept: list[_Open] = []
        for kind, a, b, source in held.pop(lease, ()):
            if source and not sources and b > t:
                kept.append((kind, a, b, source))
                continue
            b = min(b, t)
            if b > a:
                out.setdefault(lease, []).append((kind, a, b))
        if kept:
            held[lease] = kept

    def hold(lease: str, kind: str, a: float, b: float, source: bool = False) -> None:
        if b > a:
            held.setdefault(lease, []).append((kind, a, b, source))

    for a in actions:
        name, t = a.lease, a.time
        if isinstance(a, (Fail, Lost)):
            end(name, t, sources=True)
            continue
        if not isinstance(a, (Start, Resume, Migrate, Suspend, Cancel, Requeue, Complete,
                              Unstart)):
            continue  # admitted, reserved (again) or rejected: nothing held changes
        end(name, t)
        if isinstance(a, Start):
            if a.running is not None:  # its VMs boot first
                hold(name, "overhead", t, a.running)
            hold(name, "run", t if a.running is None else a.running, inf)
        elif isinstance(a, Resume):
            hold(name, "overhead", t, a.running)
            hold(name, "run", a.running, inf)
        elif isinstance(a, Migrate):
            hold(name, "overhead", t, a.vacated, source=True)
            if a.nodes:  # landing now; a later landing starts with its Resume
                hold(name, "overhead", t, a.running)
                hold(name, "run", a.running, inf)
        elif isinstance(a, (Suspend, Cancel, Requeue, Complete)) and a.vacated is not None:
            hold(name, "overhead", t, a.vacated)  # a completion's: its VMs shut down
    for name in list(held):  # what the actions left to end as planned
        end(name, inf, sources=True)
    for segments in out.values():
        segments.sort(key=lambda s: (s[1], s[2]))
    return out


_GLYPH = {"run": "#", "overhead": "~"}


def render_gantt(leases: list[dict[str, Any]], width: int = 60) -> list[str]:
    """One row per lease over [0, last end]: ``.`` waiting, ``=`` its image being
    transferred (pools that deploy images), ``#`` running, ``~``
    resume/suspend/migrate overhead, ``x`` rejected on arrival."""
    ends = [seg[2] for r in leases for seg in r.get("timeline", [])]
    ends += [r["end"] for r in leases if r["end"] is not None]
    horizon = max(ends, default=0) or 1
    scale = width / horizon
    name_width = max((len(r["name"]) for r in leases), default=4)

    def col(t: float) -> int:
        return min(width - 1, int(t * scale))

    def col_end(t: float) -> int:  # exclusive: a segment reaching the horizon fills the row
        return width if t >= horizon else int(t * scale)

    rows = []
    for r in leases:
        cells = [" "] * width
        segments = r.get("timeline", [])
        if r["phase"] == "Rejected":
            cells[col(r["submitted"])] = "x"
        else:
            last = r["end"] if r["end"] is not None else horizon
            for c in range(col(r["submitted"]), col_end(last)):
                cells[c] = "."
        for tr in r.get("transfers", []):  # its image on the way: it waits for it
            for c in range(col(tr["start"]), max(col(tr["start"]) + 1, col_end(tr["end"]))):
                if cells[c] in " .":
                    cells[c] = "="
        for kind, a, b in segments:
            for c in range(col(a), max(col(a) + 1, col_end(b))):
                cells[c] = _GLYPH[kind]
        rows.append(f"  {r['name']:<{name_width}} |{''.join(cells)}|")
    return rows
