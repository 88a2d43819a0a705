"""What a ``leasehold`` command is made of, whichever package contributes it.

:mod:`leasehold.cli` has the operator's own commands. Other packages contribute
theirs through the entry-point group :data:`GROUP`: each entry point is named after
its command and is a function that adds the command's subparser (``add(sub)``). The
emulator package contributes the simulator's and the emulated cluster's commands so,
and the operator package never imports it (DESIGN §1).

A command that needs an extra sets ``extra`` in its parser's defaults; ``leasehold``
then says, in one line, which extra to install when that extra's packages cannot be
imported, before the command runs (:func:`missing`, :func:`needs`)."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from leasehold.core.model import DISPATCH_NAMES, POLICY_NAMES, Backfilling

#: the entry-point group of contributed commands
GROUP = "leasehold.commands"
#: the distribution whose extras the commands need
DISTRIBUTION = "leasehold"

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
AddCommand: TypeAlias = Callable[[Subparsers], None]

#: the preemption policies and the backfilling modes, as the core declares them
POLICIES = POLICY_NAMES
BACKFILLING = tuple(b.value for b in Backfilling)
#: the dispatch strategies, as the core declares them (the first is the default)
DISPATCH = DISPATCH_NAMES


def fail(lines: Sequence[str]) -> int:
    """Each line as an ``error:`` on stderr; the exit status of bad input."""
    for line in lines:
        print(f"error: {line}", file=sys.stderr)
    return 2


def write_output(text: str, out: str | None) -> int:
    """``text`` to stdout or to ``out``: the command's exit status."""
    if out is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as exc:
        return fail([f"cannot write {out}: {exc.strerror or exc}"])
    return 0


def parsed(text: str, convert: Callable[[str], Any], noun: str) -> Any:
    """``convert(text)``, or argparse's error naming what was expected."""
    try:
        return convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None


def positive(text: str) -> float:
    value: float = parsed(text, float, "a number")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def count(text: str) -> int:
    value: int = parsed(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _extras() -> list[tuple[str, str]]:
    """(module, extra) for each top-level module a package of an extra of
    :data:`DISTRIBUTION` installs: the one named as the distribution (lower case, ``-``
    and ``.`` as ``_``: scipy, matplotlib, cryptography) where there is one or the
    distribution is not installed; otherwise those its installed files hold
    (common-expression-language installs ``cel``)."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    modules: dict[str, list[str]] = {}
    for module, distributions in importlib.metadata.packages_distributions().items():
        for distribution in distributions:
            modules.setdefault(_normal(distribution), []).append(module)
    out = []
    for requirement in requires:
        found = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*).*;.*\bextra\s*==\s*['\"]([^'\"]+)",
                         requirement)
        if found:
            name = re.sub(r"[-.]", "_", found[1].lower())
            installed = modules.get(_normal(found[1]), [])
            for module in [name] if name in installed or not installed else sorted(installed):
                out.append((module, found[2]))
    return out


def _normal(distribution: str) -> str:
    """A distribution's name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported."""
    gone = []
    for module, of in _extras():
        if of != extra:
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            gone.append(module)
    return gone


def extra_of(module: str) -> str | None:
    """The extra that installs ``module`` (a dotted name: its top package counts),
    other than ``dev``; None if none does."""
    top = module.partition(".")[0]
    return next((extra for name, extra in _extras() if name == top and extra != "dev"), None)


def needs(command: str, extra: str, modules: Sequence[str]) -> str:
    """The one line that says which extra a command needs."""
    return (f"leasehold {command} needs the extra {extra!r} ({', '.join(modules)} cannot be"
            f" imported): pip install 'leasehold[{extra}]'")
