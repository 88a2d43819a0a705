"""The CEL functions kube-apiserver 1.32 adds to the standard ones for CRD rules and
that the ``common-expression-language`` library lacks, as far as this server
provides them: cel-go's string extensions (``charAt``, ``indexOf``,
``lastIndexOf``, ``lowerAscii``, ``upperAscii``, ``replace``, ``split``,
``substring``, ``trim``, ``join``) and Kubernetes' list and regex libraries
(``isSorted``, ``sum``, ``min``, ``max``, ``indexOf`` and ``lastIndexOf`` of a
list, ``find``, ``findAll``) and quantities (``quantity()``, ``isQuantity()``,
``isGreaterThan``, ``isLessThan``, ``compareTo``, ``add``, ``sub``, ``asInteger``,
``isInteger``, ``asApproximateFloat``, ``sign``). Each is called as a method
(``self.name.lowerAscii()``); the library passes the receiver first. Not provided:
``url()``, ``ip()``/``cidr()``, ``sets.*``, ``math.*``, ``format()`` (a rule calling
one fails when it runs, saying which). Indexes count Unicode code points, as
cel-go's do."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from itertools import pairwise
from typing import Any

from .validation import quantity as parse_quantity


class CelError(ValueError):
    """An error a function raises in a rule, worded as cel-go's."""


def _index(n: int, size: int) -> None:
    if n < 0 or n > size:
        raise CelError(f"index out of range: {n}")


def char_at(s: str, i: int) -> str:
    _index(i, len(s))
    return s[i:i + 1]


def index_of(x: Any, item: Any, offset: int = 0) -> int:
    if isinstance(x, list):  # the lists library's
        return next((i for i, v in enumerate(x) if v == item), -1)
    _index(offset, len(x))
    return int(x.find(item, offset))


def last_index_of(x: Any, item: Any, offset: int | None = None) -> int:
    if isinstance(x, list):
        return next((i for i in range(len(x) - 1, -1, -1) if x[i] == item), -1)
    if offset is None:
        return int(x.rfind(item))
    _index(offset, len(x))
    return int(x.rfind(item, 0, offset + len(item)))


def _ascii(s: str, upper: bool) -> str:
    """Only ASCII letters change case ("Ä" stays), as cel-go's lowerAscii/upperAscii."""
    src, dst = ("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return s.translate(str.maketrans(src, dst) if upper else str.maketrans(dst, src))


def replace(s: str, old: str, new: str, n: int = -1) -> str:
    return s.replace(old, new, n if n >= 0 else -1)


def split(s: str, sep: str, n: int = -1) -> list[str]:
    """Go's strings.SplitN: n < 0 every part, 0 none, else at most n."""
    if n == 0:
        return []
    if sep == "":
        parts = list(s)
        return parts if n < 0 or n >= len(parts) else [*parts[:n - 1], "".join(parts[n - 1:])]
    return s.split(sep) if n < 0 else s.split(sep, n - 1)


def substring(s: str, start: int, end: int | None = None) -> str:
    end = len(s) if end is None else end
    _index(start, len(s))
    _index(end, len(s))
    if start > end:
        raise CelError(f"invalid substring range. start: {start}, end: {end}")
    return s[start:end]


def join(items: list[Any], sep: str = "") -> str:
    if not all(isinstance(i, str) for i in items):
        raise CelError("join: the list holds values that are not strings")
    return sep.join(items)


def is_sorted(items: list[Any]) -> bool:
    return all(a <= b for a, b in pairwise(items))


def _sum(items: list[Any]) -> Any:
    return sum(items, 0.0 if any(isinstance(i, float) for i in items) else 0)


def _extreme(name: str, pick: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
    def call(items: list[Any]) -> Any:
        if not items:
            raise CelError(f"{name} called on empty list")
        return pick(items)
    return call


def find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def find_all(s: str, pattern: str, n: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, s)]
    return found if n < 0 else found[:n]


# ---- Kubernetes' quantity library ---------------------------------------------------

#: a quantity in CEL: a map holding its exact value, so that == compares values
#: ("1Gi" == "1024Mi") as Kubernetes' Quantity type does
_QUANTITY = "@quantity"
_INT64 = (-(2**63), 2**63 - 1)


def _quantity_of(value: Decimal) -> dict[str, str]:
    return {_QUANTITY: format(value.normalize(), "f")}


def _value(q: Any) -> Decimal:
    if isinstance(q, dict) and isinstance(q.get(_QUANTITY), str):
        return Decimal(q[_QUANTITY])
    raise CelError("no such overload")


def quantity(text: Any) -> dict[str, str]:
    if not isinstance(text, str):
        raise CelError("no such overload")
    value = parse_quantity(text)
    if value is None:
        raise CelError("quantities must match the regular expression"
                       " '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    return _quantity_of(value)


def _integral(v: Decimal) -> bool:
    return v == v.to_integral_value() and _INT64[0] <= v <= _INT64[1]


def as_integer(q: Any) -> int:
    v = _value(q)
    if not _integral(v):
        raise CelError("cannot convert value to integer")
    return int(v)


def _sign(v: Decimal) -> int:
    return (v > 0) - (v < 0)


def _plus(q: Any, other: Any, sign: int) -> dict[str, str]:
    step = Decimal(other) if isinstance(other, int) and not isinstance(other, bool) \
        else _value(other)
    return _quantity_of(_value(q) + sign * step)


#: name -> function, for every CEL context of a rule
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": quantity, "isQuantity": lambda s: isinstance(s, str)
    and parse_quantity(s) is not None,
    "isGreaterThan": lambda a, b: _value(a) > _value(b),
    "isLessThan": lambda a, b: _value(a) < _value(b),
    "compareTo": lambda a, b: _sign(_value(a) - _value(b)),
    "asInteger": as_integer, "isInteger": lambda q: _integral(_value(q)),
    "asApproximateFloat": lambda q: float(_value(q)), "sign": lambda q: _sign(_value(q)),
    "add": lambda q, other: _plus(q, other, 1), "sub": lambda q, other: _plus(q, other, -1),
    "charAt": char_at, "indexOf": index_of, "lastIndexOf": last_index_of,
    "lowerAscii": lambda s: _ascii(s, False), "upperAscii": lambda s: _ascii(s, True),
    "replace": replace, "split": split, "substring": substring, "trim": str.strip,
    "join": join, "isSorted": is_sorted, "sum": _sum, "min": _extreme("min", min),
    "max": _extreme("max", max), "find": find, "findAll": find_all,
}
