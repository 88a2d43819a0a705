"""Per-lease timelines from the core's actions, and a text Gantt chart of them.

A timeline is a list of ``(kind, start, end)`` segments: ``run`` while the VMs run,
``overhead`` while they are being resumed, suspended or migrated (they hold nodes
but do no work). Waiting is what lies between submission and the segments.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from leasehold.core.model import (
    Action,
    Cancel,
    Complete,
    Fail,
    Lost,
    Migrate,
    Resume,
    Start,
    Suspend,
)

Segment = tuple[str, float, float]


def lease_timelines(actions: Iterable[Action]) -> dict[str, list[Segment]]:
    out: dict[str, list[Segment]] = {}
    running_since: dict[str, float] = {}

    def close(lease: str, t: float) -> None:
        since = running_since.pop(lease, None)
        if since is not None and t > since:
            out.setdefault(lease, []).append(("run", since, t))

    for a in actions:
        if isinstance(a, Start):
            running_since[a.lease] = a.time
        elif isinstance(a, (Resume, Migrate)):
            close(a.lease, a.time)
            if a.running > a.time:
                out.setdefault(a.lease, []).append(("overhead", a.time, a.running))
            running_since[a.lease] = a.running
        elif isinstance(a, Suspend):
            close(a.lease, a.time)
            out.setdefault(a.lease, []).append(("overhead", a.time, a.vacated))
        elif isinstance(a, (Complete, Cancel, Fail, Lost)):
            close(a.lease, a.time)  # a lost run ran until its node went
    return out


_GLYPH = {"run": "#", "overhead": "~"}


def render_gantt(leases: list[dict[str, Any]], width: int = 60) -> list[str]:
    """One row per lease over [0, last end]: ``.`` waiting, ``#`` running,
    ``~`` resume/suspend/migrate overhead, ``x`` rejected on arrival."""
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
        for kind, a, b in segments:
            for c in range(col(a), max(col(a) + 1, col_end(b))):
                cells[c] = _GLYPH[kind]
        rows.append(f"  {r['name']:<{name_width}} |{''.join(cells)}|")
    return rows
