"""Advance reservations injected into a trace (004 §4.2): Haizea's LWF files, read
straight from the tarball their authors published (``shared/data/README.md``) or from a
directory, by name.

A *source* is a ``.tar.gz``/``.tgz``/``.tar`` archive or a directory; its injection
files are its ``*.lwf`` members (or files), named by their base name
(``work_10-dur_3h-size_2medium.lwf``): the archive is read in place, nothing is
extracted. The name ``none`` stands for no injection (the trace alone: 004's baseline
run, "without advance reservation leases").
"""

from __future__ import annotations

import fnmatch
import io
import re
import tarfile
from dataclasses import replace
from functools import cache
from pathlib import Path

from leasehold.core.model import LeaseType, Request

from .lwf import LWFError, lwf_requests_from

#: the injection that adds nothing: the trace alone
NONE = "none"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


class InjectionError(ValueError):
    """An injection source or name that cannot be read: says which and why."""


def _is_archive(source: Path) -> bool:
    return source.name.endswith(ARCHIVE_SUFFIXES)


@cache
def _members(source: str) -> dict[str, str]:
    """Base name -> member (archive) or path (directory) of every LWF file of
    ``source``. Cached: a grid reads the same archive's listing at every point."""
    path = Path(source)
    try:
        if _is_archive(path):
            with tarfile.open(path) as tar:
                names = [m.name for m in tar.getmembers() if m.isfile()]
        elif path.is_dir():
            names = [str(p) for p in path.rglob("*.lwf")]
        else:
            raise InjectionError(f"{source}: neither a directory nor a .tar.gz archive")
    except (OSError, tarfile.TarError) as exc:
        raise InjectionError(f"{source}: cannot read: {getattr(exc, 'strerror', None) or exc}"
                             ) from None
    return {Path(n).name: n for n in sorted(names) if n.endswith(".lwf")}


def names(source: str | Path) -> list[str]:
    """The injection files ``source`` holds, by base name, sorted."""
    return list(_members(str(source)))


def expand(source: str | Path, patterns: list[str]) -> list[str]:
    """Every name of ``source`` that a pattern matches (shell globs: ``work_*-dur_3h-*``),
    in the patterns' order, each once; ``none`` stays itself. A pattern that matches
    nothing is an :class:`InjectionError`."""
    known = names(source)
    out: list[str] = []
    for pattern in patterns:
        found = [NONE] if pattern == NONE else fnmatch.filter(known, pattern)
        if not found:
            raise InjectionError(f"{pattern!r} matches no injection file of {source}"
                                 f" ({len(known)} files, e.g. {', '.join(known[:2])})")
        out += [n for n in found if n not in out]
    return out


def injected_requests(source: str | Path, name: str, *, as_best_effort: bool = False,
                      skipped: list[str] | None = None) -> list[Request]:
    """The leases of injection ``name`` of ``source`` (:func:`..lwf.lwf_requests_from`),
    named ``ar<line>``; none for ``none``. Lines that are no valid lease (the four
    reservations that start before the trace does: ``lwf.py``) are left out and
    listed in ``skipped``. ``as_best_effort``: each reservation becomes a best-effort
    suspendable lease submitted at its ``reqTime`` (the other fields kept)."""
    if name == NONE:
        return []
    members = _members(str(source))
    if name not in members:
        raise InjectionError(f"{name!r} is no injection file of {source}")
    where = f"{source}:{name}"
    try:
        if _is_archive(Path(source)):
            with tarfile.open(source) as tar:
                fh = tar.extractfile(members[name])
                assert fh is not None  # a file member (listed as one)
                text = io.TextIOWrapper(fh, encoding="ascii", errors="replace").read()
        else:
            text = Path(members[name]).read_text(encoding="ascii", errors="replace")
    except (OSError, tarfile.TarError) as exc:
        raise InjectionError(f"{where}: cannot read: {exc}") from None
    try:
        reqs = lwf_requests_from(text.splitlines(), where, skip_bad_lines=True, skipped=skipped)
    except LWFError as exc:  # not raised with skip_bad_lines; kept for a clear message
        raise InjectionError(str(exc)) from None
    if as_best_effort:
        reqs = [replace(r, type=LeaseType.BEST_EFFORT_SUSPENDABLE, start=None) for r in reqs]
    return reqs


#: 004's names of the injected workloads: work_<rho>-dur_<delta>h-size_<n><nu>.lwf
_NAME = re.compile(r"work_(\d+)-dur_(\d+)h-size_\d?([a-z]+)\.lwf$")


def parameters(name: str) -> tuple[int, int, str] | None:
    """(ρ in %, δ in hours, ν) of a name as 004 §4.2 writes them (``[10%/3H/medium]``),
    or None for another name."""
    m = _NAME.search(name)
    return None if m is None else (int(m[1]), int(m[2]), m[3])


def label(name: str) -> str:
    """A name as 004 writes the workload: ``[10%/3H/medium]``; ``none`` as
    ``no reservations``; another name as itself."""
    if name == NONE:
        return "no reservations"
    p = parameters(name)
    return name if p is None else f"[{p[0]}%/{p[1]}H/{p[2]}]"
