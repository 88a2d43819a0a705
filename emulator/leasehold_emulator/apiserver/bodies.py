"""Request bodies decoded with limits, as kube-apiserver's decoders have them: YAML
aliases expand to a bounded size (a 600-byte "billion laughs" otherwise becomes
hundreds of megabytes), nesting is bounded (Python's recursion is not a limit to
meet with a RecursionError), integers fit in 64 bits and numbers are finite (Go's
encoders write neither 10**5000 nor NaN, so one such value breaks every list that
holds it), and only JSON's types come out (YAML timestamps and binaries stay the
strings they were written as)."""

from __future__ import annotations

import json
import math
from typing import Any

import yaml

from .errors import ApiError

#: deepest nesting of objects and arrays a body may have. Real objects stay far below
#: (a CRD's schema is among the deepest, a few dozen); what handles an object here
#: (copies, patches, schema checks) recurses once or twice per level
MAX_DEPTH = 100
#: nodes a YAML body's aliases may add when expanded, beyond those it spells out
#: (go-yaml, in kube-apiserver, likewise refuses "excessive aliasing")
MAX_ALIASED = 10_000
INT64 = (-(2**63), 2**63 - 1)


def _bad(message: str) -> ApiError:
    return ApiError(400, message)


class _Loader(yaml.SafeLoader):
    """Safe YAML whose scalars are JSON's: no timestamps, no binaries, no sets."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def _refuse_tag(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag} is not allowed here (only JSON's types are)",
        node.start_mark)


for _tag in ("timestamp", "binary", "set", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


def _expanded(root: yaml.Node) -> tuple[int, int]:
    """(nodes written, nodes once every alias is expanded), without expanding: an
    alias is the same node object met again, so sizes are summed per distinct node."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:  # iterative: depth is checked later, on the constructed value
        node, done = stack.pop()
        children = _children(node)
        if done:
            open_.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            continue
        if id(node) in size:
            continue
        if id(node) in open_:
            raise _bad("the YAML body refers to itself through an alias")
        open_.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)
    return len(size), size[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def parse_yaml(raw: bytes) -> Any:
    loader = _Loader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        written, total = _expanded(node)
        if total - written > MAX_ALIASED:
            raise _bad(f"the YAML body expands its aliases to {total} nodes from {written}:"
                       f" at most {MAX_ALIASED} more than written are allowed")
        value = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _bad(f"the body is not valid yaml: {exc}") from None
    except RecursionError:
        raise _bad(f"the body nests deeper than {MAX_DEPTH} levels") from None
    except ValueError:  # Python's own limit on an integer's digits
        raise _bad("the body holds an integer that does not fit in 64 bits") from None
    finally:
        loader.dispose()
    check(value)
    return value


def _constant(name: str) -> Any:
    raise _bad(f"the body holds {name}, which is not a JSON number")


def _int(text: str) -> int:
    # before Python converts it: 5,000 digits are not worth converting only to refuse
    if len(text.lstrip("-")) > 19:
        raise _bad(f"the body holds an integer that does not fit in 64 bits ({text[:24]}...)")
    return int(text)


def parse_json(raw: bytes) -> Any:
    try:
        value = json.loads(raw, parse_constant=_constant, parse_int=_int)
    except json.JSONDecodeError as exc:
        raise _bad(f"the body is not valid json: {exc}") from None
    except UnicodeDecodeError as exc:
        raise _bad(f"the body is not valid json: {exc}") from None
    except RecursionError:
        raise _bad(f"the body nests deeper than {MAX_DEPTH} levels") from None
    except ValueError:  # Python's own limit on an integer's digits
        raise _bad("the body holds an integer that does not fit in 64 bits") from None
    check(value)
    return value


def check(value: Any) -> None:
    """400 unless ``value`` is JSON within the limits above; the message says where."""
    if not _fine(value):
        _explain(value)


def _fine(value: Any) -> bool:
    """:func:`check` without the message: whether ``value`` passes, found without
    building the path of every value (most of the check's cost on every write);
    :func:`_explain` finds where a body that does not pass goes wrong."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if isinstance(v, dict):
            for k in v:
                if not isinstance(k, str):
                    return False
            depth += 1
            stack.extend([(x, depth) for x in v.values()
                          if not (isinstance(x, str) or x is None)])
        elif isinstance(v, list):
            depth += 1
            stack.extend([(x, depth) for x in v])
        elif isinstance(v, bool) or v is None or isinstance(v, str):
            continue
        elif isinstance(v, int):
            if not INT64[0] <= v <= INT64[1]:
                return False
        elif isinstance(v, float):
            if not math.isfinite(v):
                return False
        else:
            return False
    return True


def _explain(value: Any) -> None:
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        v, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _bad(f"the body nests deeper than {MAX_DEPTH} levels (at {where or '/'})")
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise _bad(f"the body has a key that is not a string: {k!r} at"
                               f" {where or '/'}")
                stack.append((x, f"{where}/{k}", depth + 1))
        elif isinstance(v, list):
            stack.extend((x, f"{where}/{i}", depth + 1) for i, x in enumerate(v))
        elif isinstance(v, bool) or v is None or isinstance(v, str):
            continue
        elif isinstance(v, int):
            if not INT64[0] <= v <= INT64[1]:
                raise _bad(f"the integer at {where or '/'} does not fit in 64 bits")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise _bad(f"the number at {where or '/'} is not finite ({v})")
        else:
            raise _bad(f"the value at {where or '/'} is not of a JSON type")
