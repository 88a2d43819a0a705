"""Field types and the base model shared by the API models.

Every user-facing value goes through one of these annotated types, so a scenario file,
a Lease manifest and a Python caller get the same parsing and the same messages.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from .durations import describe, parse_cpu, parse_duration, parse_memory

__all__ = [
    "Count",
    "Loc",
    "MiB",
    "Millicores",
    "Name",
    "Number",
    "RuleViolations",
    "Seconds",
    "Spec",
]

#: A pydantic error location: field names and list indices.
Loc = tuple[str | int, ...]


class RuleViolations(ValueError):
    """Cross-field rule violations of one model, each located at the field to change.

    A model validator that raises a plain ValueError is reported by pydantic at the
    model as a whole, and only the first one; carrying ``(loc, message)`` pairs lets the
    scenario loader point at the right field and report every violation at once.
    ``loc`` is relative to the model that raised.
    """

    def __init__(self, violations: list[tuple[Loc, str]]) -> None:
        self.violations = violations
        super().__init__(
            "; ".join(f"{'.'.join(map(str, loc))}: {message}" for loc, message in violations)
        )


class Spec(BaseModel):
    """Base of the API models: unknown keys are errors (they are typos, not extensions)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _name(value: object) -> object:
    # YAML reads `name: 7` as an int; lease names in traces are numbers, so accept them.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _number(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {describe(value)}")
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {describe(value)}")
    return value


def _cpu_text(millicores: int) -> str:
    # Dumped as millicores: a bare number would be read back as cores.
    return f"{millicores}m"


Name = Annotated[str, BeforeValidator(_name), Field(min_length=1)]
#: Seconds, from a number or a duration string such as "1h30m".
Seconds = Annotated[float, BeforeValidator(parse_duration)]
#: Cpu in millicores, from cores (``2``, ``0.5``) or ``"500m"``.
Millicores = Annotated[int, BeforeValidator(parse_cpu), PlainSerializer(_cpu_text, return_type=str)]
#: Memory in MiB, from MiB (``512``) or a quantity (``"512Mi"``, ``"1Gi"``, ``"1G"``).
MiB = Annotated[int, BeforeValidator(parse_memory)]
#: A finite real number; booleans and strings are refused (they are typos in YAML).
Number = Annotated[float, BeforeValidator(_number)]
#: A whole number; strict, so that ``3.5`` or ``true`` is an error rather than 3 or 1.
Count = Annotated[int, Field(strict=True)]
