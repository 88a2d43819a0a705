"""Reading a trace file line by line: comments and blank lines skipped, every
malformed line reported with its file and line number — or, when asked, left out
and listed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def parsed_lines(
    lines: Iterable[str], source: str, parse: Callable[[str, int], T],
    error: type[ValueError], comment: str, skip_bad_lines: bool = False,
    skipped: list[str] | None = None,
) -> Iterator[T]:
    """``parse(text, line number)`` for every line that is not blank or a comment.
    ``parse`` raises ``error`` for a malformed line: it is re-raised as
    ``<source>:<line>: <problem>``, or with ``skip_bad_lines`` appended so to
    ``skipped`` and left out."""
    for lineno, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith(comment):
            continue
        try:
            yield parse(text, lineno)
        except error as exc:
            message = f"{source}:{lineno}: {exc}"
            if not skip_bad_lines:
                raise error(message) from None
            if skipped is not None:
                skipped.append(message)
