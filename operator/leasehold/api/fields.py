"""Field types and the base model shared by the API models.

Every user-facing value goes through one of these annotated types, so a scenario file,
a Lease manifest and a Python caller get the same parsing and the same messages.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from .durations import describe, parse_cpu, parse_duration, parse_memory

__all__ = [
    "Count",
    "ExtendedCounts",
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


# ---- extended resources (issue 24) ----------------------------------------------
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def extended_name_problem(name: object) -> str | None:
    """Why ``name`` is no Kubernetes extended resource name, or ``None`` if it is one:
    ``domain/name`` (``nvidia.com/gpu``), the domain a DNS subdomain outside
    ``kubernetes.io``, the name at most 63 letters, digits, ``-``, ``_`` or ``.``."""
    if not isinstance(name, str):
        return f"a resource name must be text, got {describe(name)}"
    domain, slash, own = name.partition("/")
    if not slash:
        return (f'"{name}" is not an extended resource name: it needs a domain prefix,'
                ' as in "nvidia.com/gpu" (cpu and memory have fields of their own)')
    if not domain or len(domain) > 253 or not _DOMAIN.fullmatch(domain):
        return (f'"{name}": its prefix "{domain}" is not a DNS subdomain (lower-case'
                ' letters, digits, "-" and ".")')
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return f'"{name}": the kubernetes.io domain is reserved for native resources'
    if not own or len(own) > 63 or not _NAME.fullmatch(own):
        return (f'"{name}": the part after "/" must be 1-63 letters, digits, "-", "_" or'
                ' "." starting and ending with a letter or digit')
    return None


def parse_extended(value: object) -> dict[str, int]:
    """Extended resources as written: a mapping of resource names to whole counts >= 0
    (a count may be written as a string of digits, as Kubernetes quantities are)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("must be a mapping of resource names to counts, as in"
                         f" {{nvidia.com/gpu: 1}}, got {describe(value)}")
    out: dict[str, int] = {}
    for name, count in value.items():
        problem = extended_name_problem(name)
        if problem is not None:
            raise ValueError(problem)
        if isinstance(count, str) and count.strip().isdigit():
            count = int(count.strip())
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"{name}: must be a whole number >= 0, got {describe(count)}")
        out[name] = count
    return out


#: Extended resources (``{"nvidia.com/gpu": 1}``): counts by Kubernetes extended
#: resource name, per node of a pool or per VM of a lease (docs/resources.md)
ExtendedCounts = Annotated[dict[str, int], BeforeValidator(parse_extended)]
