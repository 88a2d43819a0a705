"""Parsing of the times, durations and resource quantities users write.

Times and durations are seconds: a number (``90``, ``1.5``) or a string of one or more
``<number><unit>`` parts with units ``d``, ``h``, ``m``, ``s`` from largest to smallest
(``"90s"``, ``"5m"``, ``"1h30m"``, ``"1.5h"``). A time is a duration since the scenario's
clock zero, so both use :func:`parse_duration`.

Quantities follow Kubernetes where that is unambiguous, with one deliberate difference:
in a scenario a bare number is *cores* for cpu (as in Kubernetes) but *MiB* for memory
(Kubernetes would read bytes), because scenario files write ``memory: 1024`` meaning
1 GiB. A Lease or NodePool is a Kubernetes object, so its memory is a Kubernetes
quantity (a bare number is bytes, :func:`parse_memory_quantity`); as nobody asks for
a VM of less than a MiB, a value below 1Mi there is refused with the reading the user
likely meant (``256`` -> "did you mean 256Mi?").

Arithmetic goes through :class:`~decimal.Decimal` so that e.g. ``0.1`` cores is exactly
100 millicores rather than 100.00000000000001 rounded up to 101.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal
from typing import TypeGuard

__all__ = [
    "NegativeValueError",
    "describe",
    "format_cpu",
    "format_duration",
    "format_memory",
    "format_seconds",
    "parse_cpu",
    "parse_duration",
    "parse_memory",
    "parse_memory_quantity",
]

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PLAIN_NUMBER = re.compile(_NUMBER)
_DURATION_PART = re.compile(rf"\s*({_NUMBER})([dhms])\s*")
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_UNIT_ORDER = "dhms"

_DURATION_FORMS = (
    "seconds (e.g. 90 or 1.5) or a number with a unit s, m, h or d "
    '(e.g. "90s", "5m", "1h30m", "1.5h")'
)
_CPU_FORMS = 'cores (e.g. 2 or 0.5) or millicores (e.g. "500m")'
_MEMORY_FORMS = 'MiB (e.g. 512) or a quantity (e.g. "512Mi", "1Gi", "1G")'
_QUANTITY_FORMS = 'a quantity (e.g. "512Mi", "1Gi", "1G"; a bare number is bytes)'

_MIB = 1024 * 1024
_MEMORY_SUFFIX_BYTES: dict[str, int] = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
    # Kubernetes spells decimal kilo "k"; "K" is accepted too because nobody means
    # anything else by it.
    "k": 1000,
    "K": 1000,
    "M": 1000**2,
    "G": 1000**3,
    "T": 1000**4,
    "P": 1000**5,
    "E": 1000**6,
}
_MEMORY = re.compile(rf"({_NUMBER})\s*({'|'.join(_MEMORY_SUFFIX_BYTES)})?")


class NegativeValueError(ValueError):
    """A well-formed but negative time or quantity (callers may treat it apart)."""


def describe(value: object) -> str:
    """Render a user's input for an error message the way they would have written it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return repr(value)


def format_seconds(seconds: float) -> str:
    """``3600.0`` -> ``"3600s"``, ``1.5`` -> ``"1.5s"``."""
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{seconds}s"


def format_duration(seconds: float) -> str:
    """Seconds as users write a duration, largest unit first, to the millisecond:
    ``5400`` -> ``"1h30m"``, ``90`` -> ``"1m30s"``, ``86400`` -> ``"1d"``, ``1.5`` ->
    ``"1.5s"``, ``0`` -> ``"0s"``; :func:`parse_duration` reads it back."""
    millis = round(abs(seconds) * 1000)
    parts = []
    for unit in _UNIT_ORDER[:-1]:
        count, millis = divmod(millis, _UNIT_SECONDS[unit] * 1000)
        if count:
            parts.append(f"{count}{unit}")
    if millis or not parts:
        whole, fraction = divmod(millis, 1000)
        parts.append(f"{whole}.{fraction:03d}".rstrip("0").rstrip(".") + "s")
    return ("-" if seconds < 0 and parts != ["0s"] else "") + "".join(parts)


def format_cpu(millicores: int) -> str:
    """``4000`` -> ``"4 cores"``, ``1000`` -> ``"1 core"``, ``500`` -> ``"500m"``."""
    if millicores % 1000:
        return f"{millicores}m"
    cores = millicores // 1000
    return f"{cores} core" if cores == 1 else f"{cores} cores"


def format_memory(mib: int) -> str:
    return f"{mib}Mi"


def _is_number(value: object) -> TypeGuard[int | float]:
    # bool is an int subclass, but `vms: true` is a typo, never a count.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _decimal(value: int | float) -> Decimal:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"must be a finite number, got {describe(value)}")
    # repr() of a float is its shortest round-tripping decimal, which is what the user
    # wrote in the YAML file.
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _ceil(value: Decimal) -> int:
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def _check_sign(value: object, number: Decimal) -> None:
    if number < 0:
        raise NegativeValueError(f"must not be negative, got {describe(value)}")


def _parse(value: object, parse_text: Callable[[str], Decimal], forms: str) -> Decimal:
    """A non-negative number as written, or ``parse_text`` of a string."""
    if _is_number(value):
        number = _decimal(value)
    elif isinstance(value, str):
        number = parse_text(value)
    else:
        raise ValueError(f"expected {forms}, got {describe(value)}")
    _check_sign(value, number)
    return number


def parse_duration(value: object) -> float:
    """Seconds from a number or a duration string; negative and malformed raise ValueError."""
    return float(_parse(value, _parse_duration_text, _DURATION_FORMS))


def _parse_duration_text(text: str) -> Decimal:
    stripped = text.strip()
    if stripped.startswith("-"):
        try:
            _parse_duration_text(stripped[1:])
        except ValueError:
            pass
        else:
            raise NegativeValueError(f"must not be negative, got {describe(text)}")
    if _PLAIN_NUMBER.fullmatch(stripped):
        return Decimal(stripped)
    malformed = ValueError(f"invalid duration {describe(text)}: expected {_DURATION_FORMS}")
    if not stripped:
        raise malformed
    total = Decimal(0)
    position = 0
    last_rank = -1
    while position < len(stripped):
        match = _DURATION_PART.match(stripped, position)
        if match is None:
            raise malformed
        number, unit = match.groups()
        rank = _UNIT_ORDER.index(unit)
        if rank <= last_rank:
            raise ValueError(
                f"invalid duration {describe(text)}: units must go from largest to smallest, "
                f'each at most once (e.g. "1h30m")'
            )
        last_rank = rank
        total += Decimal(number) * _UNIT_SECONDS[unit]
        position = match.end()
    return total


def parse_cpu(value: object) -> int:
    """Millicores from cores (number or ``"2"``) or ``"500m"``; fractions round up."""
    if _is_number(value):
        millicores = _decimal(value) * 1000
    elif isinstance(value, str):
        text = value.strip()
        unit = 1
        if text.endswith("m"):
            text = text[:-1].rstrip()
        else:
            unit = 1000
        if text.startswith("-") and _PLAIN_NUMBER.fullmatch(text[1:]):
            raise NegativeValueError(f"must not be negative, got {describe(value)}")
        if not _PLAIN_NUMBER.fullmatch(text):
            raise ValueError(f"invalid cpu quantity {describe(value)}: expected {_CPU_FORMS}")
        millicores = Decimal(text) * unit
    else:
        raise ValueError(f"expected {_CPU_FORMS}, got {describe(value)}")
    _check_sign(value, millicores)
    # Kubernetes cannot express less than 1m; rounding up never under-provisions.
    return _ceil(millicores)


def parse_memory(value: object) -> int:
    """MiB from a number (MiB) or a quantity (``"512Mi"``, ``"1Gi"``, ``"1G"``); rounds up."""
    return _ceil(_parse(value, _parse_memory_text, _MEMORY_FORMS))


def parse_memory_capacity(value: str) -> int:
    """MiB a node can hold, from its allocatable quantity (a bare number is bytes, as
    Kubernetes writes it); rounds down, so a node is never taken for larger."""
    text = value.strip()
    if _PLAIN_NUMBER.fullmatch(text):
        return int(Decimal(text) // _MIB)
    return int(_parse_memory_text(text) // 1)


#: a smaller unit's quantity -> the larger unit the user likely meant ("512Ki": "512Mi")
_MEANT_UNIT = {None: "Mi", "Ki": "Mi", "k": "M", "K": "M"}


def parse_memory_quantity(value: object) -> int:
    """MiB from a Kubernetes memory quantity (a bare number is bytes, ``"512Mi"``,
    ``"1Gi"``, ``"1G"``), as a Lease or a NodePool gives it; rounds up. Below 1Mi
    raises ValueError: a unit was likely left out, and the message says which."""
    suffix: str | None = None
    if _is_number(value):
        number, mib = describe(value), _decimal(value) / _MIB
    elif isinstance(value, str) and _PLAIN_NUMBER.fullmatch(value.strip()):
        number, mib = value.strip(), Decimal(value.strip()) / _MIB
    elif isinstance(value, str):
        mib = _parse_memory_text(value, _QUANTITY_FORMS)
        match = _MEMORY.fullmatch(value.strip().removeprefix("-"))  # read above
        number, suffix = match.groups() if match else (value.strip(), None)
    else:
        raise ValueError(f"expected {_QUANTITY_FORMS}, got {describe(value)}")
    _check_sign(value, mib)
    if mib < 1:
        _below_1mi(number, suffix)
    return _ceil(mib)


def _below_1mi(number: str, suffix: str | None) -> None:
    """Refuse a memory below 1Mi, suggesting the unit the user likely meant."""
    written = f"{number} bytes" if suffix is None else f"{number}{suffix}"
    why = " (a bare number is bytes, as in Kubernetes)" if suffix is None else ""
    meant = _MEANT_UNIT.get(suffix)
    hint = f"; did you mean {number}{meant}?" if meant and Decimal(number) >= 1 else ""
    raise ValueError(f"{written} is below 1Mi, the least leasehold accepts{why}{hint}")


def _parse_memory_text(text: str, forms: str = _MEMORY_FORMS) -> Decimal:
    stripped = text.strip()
    negative = stripped.startswith("-")
    match = _MEMORY.fullmatch(stripped[1:] if negative else stripped)
    if match is None:
        raise ValueError(
            f"invalid memory quantity {describe(text)}: expected {forms}"
            + _memory_hint(stripped)
        )
    number, suffix = match.groups()
    amount = Decimal(number)
    if negative:
        amount = -amount
    if suffix is None:
        return amount
    return amount * _MEMORY_SUFFIX_BYTES[suffix] / _MIB


def _memory_hint(text: str) -> str:
    """Suggest the Kubernetes spelling of the usual near-misses ("1GB", "1GiB", "512m")."""
    candidates = []
    if text.endswith("B"):
        candidates.append(text[:-1])
    if text.endswith("m"):
        # Kubernetes reads "m" as milli (of a byte): never what a memory size means.
        candidates.append(text[:-1] + "Mi")
    for candidate in candidates:
        if _MEMORY.fullmatch(candidate):
            return f' (did you mean "{candidate}"?)'
    return ""
