"""A CRD's CEL validation rules (``x-kubernetes-validations``), compiled once when
the CRD is stored and evaluated on every write of its objects, as kube-apiserver
1.32 evaluates them (apiextensions-apiserver's ``schema/cel``), with the
``common-expression-language`` library:

- ``self`` is the value the rule sits on; at an object's root it shows
  ``apiVersion``, ``kind`` and, of the metadata, only ``name`` and ``generateName``.
  A rule on a null or absent value is not evaluated.
- A *transition rule* (one that reads ``oldSelf``) is evaluated only on an update,
  and only where the old object had a value there: the old value follows the new
  one through object fields (not those of an ``x-kubernetes-map-type: atomic``
  map) and through the items of an ``x-kubernetes-list-type: map`` list, matched
  by their keys; anywhere else the CRD is refused, as a real server refuses it.
  With ``optionalOldSelf`` it is evaluated on a create too, ``oldSelf`` an
  optional value.
- A rule that fails gives its ``messageExpression``'s value, else its ``message``,
  else ``failed rule: <rule>``, at its field (``fieldPath`` below it), with its
  ``reason`` (Invalid by default; Forbidden, Required, Duplicate).
- Ratcheting (CRDValidationRatcheting, on by default since 1.30): on an update of
  the main resource, a rule without ``oldSelf`` that fails on a value the update
  left as it was is not an error (a real server sends a warning).
- A rule that does not compile makes the CRD's create or update a 422 naming the
  rule (:func:`compile_schema`).

Kubernetes' additions to CEL are those of :mod:`.celib` (strings, lists, regex,
quantities).
Not evaluated as a real server does: cel-go's static type checking beyond
undefined fields of declared objects (:func:`_check_fields`; other mistakes are
found when the rule runs, and a rule that does not return a bool is a failed rule),
the cost budgets, the escaping of property names (``self.foo__dash__bar``), the
other Kubernetes CEL libraries (``url()``, ``ip()``, ...: a rule calling one fails
when it runs), and formats as types (a ``date-time`` string is a string, not
a timestamp)."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

import cel

from .celib import FUNCTIONS

Schema = dict[str, Any]
#: (field, message, reason), as in a 422's causes
Cause = tuple[str, str, str]

INVALID, FORBIDDEN, REQUIRED, DUPLICATE = ("FieldValueInvalid", "FieldValueForbidden",
                                           "FieldValueRequired", "FieldValueDuplicate")
REASONS = (DUPLICATE, FORBIDDEN, INVALID, REQUIRED)
#: the longest message a messageExpression may give (celconfig's, in bytes)
MESSAGE_MAX = 5 * 1024
#: the emulated API server's log (server.py's)
log = logging.getLogger("leasehold.apiserver")

#: a field path's parts: a name after a dot, or a quoted one in brackets
_PATH_PART = re.compile(r"\.([^.\[\]']+)|\['((?:[^'\\]|\\.)*)'\]")
#: cel-go's parser limits (kube-apiserver's too): past them a rule does not compile.
#: They also keep the library, which recurses, from overflowing the server's stack
#: (a sum of 20,000 terms did).
SIZE_LIMIT, DEPTH_LIMIT = 100_000, 250
#: string literals (their contents are not nesting), and what nests in cel-go's parser
_LITERAL = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"",
                      re.DOTALL)
_NESTING = re.compile(r"[-+*/%<>=!]=?|\bin\b|[.(\[{]")
#: an error one of our functions raised, as the library wraps it
_RAISED = re.compile(r"CelError: (.*?)\. Check function arguments")


@dataclass(frozen=True, slots=True)
class Rule:
    source: str
    program: Any  # cel.Program; None when it did not compile
    error: str  # why it did not compile
    transition: bool  # reads oldSelf
    optional_old_self: bool
    message: str  # the message when it fails and no messageExpression gives one
    error_text: str  # how errors while evaluating it name it
    message_expression: Any  # cel.Program or None
    reason: str
    field_path: str  # normalized, relative to the rule's value ("" for none)


@dataclass(slots=True)
class Node:
    """The compiled rules of one schema and of those below it (only branches that
    hold rules)."""

    kind: str  # the schema's type ("" for int-or-string and untyped values)
    rules: tuple[Rule, ...] = ()
    properties: dict[str, Node] = field(default_factory=dict)
    items: Node | None = None
    additional: Node | None = None
    all_of: tuple[Node, ...] = ()
    root: bool = False  # an object's root (or an embedded resource's)
    atomic_map: bool = False  # fields of an atomic map are not correlated with the old
    map_keys: tuple[str, ...] | None = None  # a map list's keys (None: not correlated)
    #: the functions of .celib its rules call (handing the library all of them on
    #: every write cost a Lease's write a quarter more)
    functions: dict[str, Any] = field(default_factory=dict)


def compile_schema(schema: Schema, where: str = "") -> tuple[Node | None, list[Cause]]:
    """The compiled rules of a CRD version's schema (None when it has none), and
    what is wrong with them, as a CRD's create or update is refused for them
    (``where``: the schema's path in the CRD)."""
    problems: list[Cause] = []
    node = _compile(schema, where, True, None, problems)
    return node, problems


def _compile(s: Schema, where: str, root: bool, uncorrelatable: str | None,
             problems: list[Cause]) -> Node | None:
    compiled = tuple(_rule(entry, s, root, f"{where}.x-kubernetes-validations[{i}]",
                           uncorrelatable, problems)
                     for i, entry in enumerate(s.get("x-kubernetes-validations") or ()))
    atomic = s.get("x-kubernetes-map-type") == "atomic"
    props: dict[str, Node] = {}
    for name, sub in (s.get("properties") or {}).items():
        if not isinstance(sub, dict):
            continue  # refused with the CRD (validation.crd); nothing to compile
        node = _compile(sub, f"{where}.properties[{name}]",
                        bool(sub.get("x-kubernetes-embedded-resource")),
                        uncorrelatable or (where if atomic else None), problems)
        if node is not None:
            props[name] = node
    items = None
    if isinstance(s.get("items"), dict):
        # only a map list's items are correlated with the old ones (by their keys)
        listed = s.get("x-kubernetes-list-type") == "map"
        items = _compile(s["items"], f"{where}.items",
                         bool(s["items"].get("x-kubernetes-embedded-resource")),
                         uncorrelatable or (None if listed else where), problems)
    additional = None
    if isinstance(s.get("additionalProperties"), dict):
        sub = s["additionalProperties"]
        additional = _compile(sub, f"{where}.additionalProperties",
                              bool(sub.get("x-kubernetes-embedded-resource")), uncorrelatable,
                              problems)
    all_of = tuple(n for i, sub in enumerate(s.get("allOf") or ()) if isinstance(sub, dict)
                   and (n := _compile({**sub, "type": s.get("type")}, f"{where}.allOf[{i}]",
                                      root, uncorrelatable, problems)) is not None)
    if not (compiled or props or items or additional or all_of):
        return None
    keys = s.get("x-kubernetes-list-map-keys")
    called = {name for r in compiled for p in (r.program, r.message_expression)
              if p is not None for name in p.functions()}
    return Node(kind=_kind(s), rules=compiled, properties=props, items=items,
                functions={k: f for k, f in FUNCTIONS.items() if k in called},
                additional=additional, all_of=all_of, root=root, atomic_map=atomic,
                map_keys=tuple(k for k in keys if isinstance(k, str))
                if s.get("x-kubernetes-list-type") == "map" and isinstance(keys, list)
                else None)


def _kind(s: Schema) -> str:
    return "" if s.get("x-kubernetes-int-or-string") else str(s.get("type") or "")


def _go_rule(entry: dict[str, Any]) -> str:
    """The rule as kube-apiserver prints it in a CRD's causes (Go's %#v of its
    ValidationRule)."""
    def text(key: str) -> str:
        return json.dumps(str(entry.get(key) or ""), ensure_ascii=False)

    def pointer(key: str, kind: str) -> str:
        value = entry.get(key)
        return f"(*{kind})(nil)" if value is None else f"(*{kind})({json.dumps(value)})"
    return (f"apiextensions.ValidationRule{{Rule:{text('rule')}, Message:{text('message')},"
            f" MessageExpression:{text('messageExpression')},"
            f" Reason:{pointer('reason', 'apiextensions.FieldValueErrorReason')},"
            f" FieldPath:{text('fieldPath')},"
            f" OptionalOldSelf:{pointer('optionalOldSelf', 'bool')}}}")


def _rule(entry: dict[str, Any], s: Schema, root: bool, at: str, uncorrelatable: str | None,
          problems: list[Cause]) -> Rule:
    source = str(entry.get("rule") or "")
    message = str(entry.get("message") or "")
    expression = str(entry.get("messageExpression") or "")
    reason = entry.get("reason")
    path = entry.get("fieldPath")
    found: list[Cause] = []
    if not source.strip():
        found.append((f"{at}.rule", "Required value: rule is not specified", REQUIRED))
    elif message and not message.strip():
        found.append((f"{at}.message", f"Invalid value: {_q(message)}: message must be"
                      " non-empty if specified", INVALID))
    elif "\n" in message.strip():
        found.append((f"{at}.message", f"Invalid value: {_q(message)}: message must not"
                      " contain line breaks", INVALID))
    elif "\n" in source.strip() and not message.strip():
        found.append((f"{at}.message", "Required value: message must be specified if rule"
                      " contains line breaks", REQUIRED))
    if expression and not expression.strip():
        found.append((f"{at}.messageExpression", "Required value: messageExpression must be"
                      " non-empty if specified", REQUIRED))
    if reason is not None and reason not in REASONS:
        found.append((f"{at}.reason", f"Unsupported value: {_q(reason)}: supported values: "
                      + ", ".join(_q(r) for r in REASONS), "FieldValueNotSupported"))
    normalized = ""
    if path is not None:
        text = str(path)
        if not text.strip():
            found.append((f"{at}.fieldPath", f"Invalid value: {_q(text)}: fieldPath must be"
                          " non-empty if specified", INVALID))
        elif "\n" in text:
            found.append((f"{at}.fieldPath", f"Invalid value: {_q(text)}: fieldPath must not"
                          " contain line breaks", INVALID))
        else:
            valid = _field_path(text, s)
            if valid is None:
                found.append((f"{at}.fieldPath", f"Invalid value: {_q(text)}: fieldPath must"
                              " be a valid path", INVALID))
            else:
                normalized = valid
    problems.extend(found)
    program, error, transition = None, "", False
    if found:
        error = found[0][1]
    else:
        try:
            program = _compile_expression(source)
            transition = "oldSelf" in program.variables()
            _check_fields(source, s, root)
        except _Refused as exc:  # the library's parse errors: the rule, not the server
            program, transition = None, False
            error = f"compilation failed: {exc}"
            problems.append((f"{at}.rule", f"Invalid value: {_go_rule(entry)}: {error}",
                             INVALID))
    compiled_message = None
    if expression.strip() and not found:
        try:
            compiled_message = _compile_expression(expression)
            _check_fields(expression, s, root)
        except _Refused as exc:
            compiled_message = None
            problems.append((f"{at}.messageExpression", f"Invalid value: {_go_rule(entry)}:"
                             f" messageExpression compilation failed: {exc}", INVALID))
    optional = entry.get("optionalOldSelf") is True
    if program is not None:
        if transition and uncorrelatable is not None:
            problems.append((f"{at}.rule", f"Invalid value: {_q(source)}: oldSelf cannot be"
                             " used on the uncorrelatable portion of the schema within"
                             f" {uncorrelatable}", INVALID))
        elif not transition and entry.get("optionalOldSelf") is not None:
            problems.append((f"{at}.optionalOldSelf", f"Invalid value:"
                             f" {json.dumps(entry['optionalOldSelf'])}: may not be set if"
                             " oldSelf is not used in rule", INVALID))
    named = message.strip() or source.strip()
    return Rule(source=source, program=program, error=error, transition=transition,
                optional_old_self=optional,
                message=message.strip() or f"failed rule: {named}", error_text=named,
                message_expression=compiled_message,
                reason=reason if reason in REASONS else INVALID, field_path=normalized)


class _Refused(Exception):
    """An expression that does not compile, with cel-go's words."""


def _compile_expression(source: str) -> Any:
    """A compiled program, or :class:`_Refused` saying why not (cel-go's limits
    first: the library itself has none)."""
    size = len(source)
    if size > SIZE_LIMIT:
        raise _Refused(f"ERROR: <input>:-1:0: expression code point size exceeds limit:"
                       f" size: {size}, limit {SIZE_LIMIT}")
    # nesting as cel-go's parser counts it, at most: every operator, selection, call,
    # index and bracket outside literals (&& and || chains are balanced, not nested)
    depth = len(_NESTING.findall(_LITERAL.sub("''", source)))
    if depth > DEPTH_LIMIT:
        raise _Refused(f"ERROR: <input>:-1:0: expression recursion limit exceeded:"
                       f" {DEPTH_LIMIT}")
    try:
        return cel.compile(source)
    except ValueError as exc:  # its parse errors: without its preamble, cel-go's grammar's
        raise _Refused(str(exc).removeprefix(f"Failed to parse expression '{source}': ")
                       ) from None
    except BaseException as exc:  # a panic in the library (pyo3's PanicException)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise _Refused(f"ERROR: <input>:-1:0: {exc}") from None


#: ``self.a.b`` or ``oldSelf.a`` outside literals, and whether a call follows
_SELECTION = re.compile(r"(?<![\w.])(?:self|oldSelf)((?:\s*\.\s*[A-Za-z_]\w*)+)(\s*\()?")
_SEGMENT = re.compile(r"\.\s*([A-Za-z_]\w*)")


def _check_fields(source: str, s: Schema, root: bool) -> None:
    """The one part of cel-go's type checking done here: ``self.x`` (and
    ``has(self.x)``) where the schema declares the fields and ``x`` is not one is
    ``undefined field 'x'``, refusing the CRD as a real server does; a typo would
    otherwise make ``has()`` false for ever. Where the schema leaves the type open
    (maps, int-or-string, preserved unknown fields, embedded resources, escaped
    names) nothing is checked."""
    blanked = _LITERAL.sub(lambda m: "'" + " " * (len(m.group()) - 2) + "'", source)
    for m in _SELECTION.finditer(blanked):
        segments = list(_SEGMENT.finditer(m.group(1)))
        if m.group(2):
            segments = segments[:-1]  # the last one is a method: self.name.startsWith(...)
        here: Any = s
        at_root = root
        for seg in segments:
            name = seg.group(1)
            if at_root and name in ("apiVersion", "kind", "metadata"):
                break  # a real server adds these at an object's root
            props = here.get("properties") if isinstance(here, dict) else None
            if not isinstance(props, dict) or not props or "__" in name \
                    or here.get("x-kubernetes-preserve-unknown-fields") \
                    or here.get("x-kubernetes-embedded-resource"):
                break
            if name not in props:
                column = m.start(1) + seg.start() + 1
                raise _Refused(f"ERROR: <input>:1:{column}: undefined field '{name}'\n"
                               f" | {source}\n | {'.' * (column - 1)}^")
            here, at_root = props[name], False


def _q(value: Any) -> str:
    """A value as Go's %q prints a string."""
    return json.dumps(value if isinstance(value, str) else str(value), ensure_ascii=False)


def _field_path(text: str, s: Schema) -> str | None:
    """A rule's fieldPath (".spec.a", ".m['k.1']") as a real server normalizes it,
    or None when it names no field of ``s``."""
    out = ""
    pos = 0
    here: Any = s
    while pos < len(text):
        m = _PATH_PART.match(text, pos)
        if m is None or not isinstance(here, dict):
            return None
        name = m.group(1) if m.group(1) is not None else re.sub(r"\\(.)", r"\1", m.group(2))
        pos = m.end()
        if here.get("properties"):
            if name not in here["properties"]:
                return None
            here = here["properties"][name]
            out = f"{out}.{name}" if out else name
        elif isinstance(here.get("additionalProperties"), dict):
            here = here["additionalProperties"]
            out = f"{out}[{name}]"
        else:
            return None
    return out or None


# ---- evaluation -------------------------------------------------------------------

def evaluate(node: Node, obj: Any, old: Any = None, ratchet: bool = False) -> list[Cause]:
    """What ``obj`` breaks of the rules in ``node`` (``old``: the object it replaces,
    None on a create; ``ratchet``: an update of the main resource, where failures
    on unchanged values are let through)."""
    out: list[Cause] = []
    _evaluate(node, obj, old, "", ratchet and old is not None and obj == old, ratchet, out)
    return out


def _evaluate(node: Node, value: Any, old: Any, path: str, same: bool, ratchet: bool,
              out: list[Cause]) -> None:
    if value is None:
        return  # a real server evaluates no rule on a null value
    if node.rules:
        _expressions(node, value, old, path, same, out)
    for also in node.all_of:
        _evaluate(also, value, old, path, same, ratchet, out)
    if isinstance(value, dict):
        correlated = isinstance(old, dict) and not node.atomic_map
        for name, item in value.items():
            sub = node.properties.get(name, node.additional)
            if sub is None:
                continue
            before = old.get(name) if correlated else None
            where = (f"{path}.{name}" if path else name) if name in node.properties \
                else f"{path}[{name}]"
            _evaluate(sub, item, before, where,
                      (item == before) if ratchet and before is not None else same, ratchet,
                      out)
    elif isinstance(value, list) and node.items is not None:
        olds = _by_keys(old, node.map_keys) if node.map_keys is not None else {}
        for i, item in enumerate(value):
            before = olds.get(_keys(item, node.map_keys)) if olds and node.map_keys else None
            _evaluate(node.items, item, before, f"{path}[{i}]",
                      (item == before) if ratchet and before is not None else same, ratchet,
                      out)


def _keys(item: Any, keys: tuple[str, ...] | None) -> tuple[Any, ...] | None:
    if not isinstance(item, dict) or keys is None:
        return None
    return tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)


def _by_keys(old: Any, keys: tuple[str, ...] | None) -> dict[tuple[Any, ...] | None, Any]:
    if not isinstance(old, list):
        return {}
    return {_keys(item, keys): item for item in old}


def _view(value: Any) -> Any:
    """An object's root as CEL sees it: of its metadata, the name and generateName."""
    if isinstance(value, dict) and isinstance(value.get("metadata"), dict):
        meta = value["metadata"]
        return {**value, "metadata": {k: meta[k] for k in ("name", "generateName")
                                      if k in meta}}
    return value


def _expressions(node: Node, value: Any, old: Any, path: str, same: bool,
                 out: list[Cause]) -> None:
    here = path or "<nil>"
    shown = _q(node.kind)
    me = _view(value) if node.root else value
    before = _view(old) if node.root else old
    # one context per value: the library converts the value once, not once a rule
    try:
        compares = old is not None and any(r.transition for r in node.rules)
        plain = cel.Context({"self": me, "oldSelf": before} if compares else {"self": me},
                            node.functions)
    except ValueError as exc:  # a value the library cannot convert: every rule's error
        out += [(here, f"Invalid value: {shown}: {_failure(exc, r)}", INVALID)
                for r in node.rules]
        return
    optional = None
    for rule in node.rules:
        if rule.program is None:
            out.append((here, f"Invalid value: {shown}: rule compile error: {rule.error}",
                        INVALID))
            continue
        if rule.transition and old is None and not rule.optional_old_self:
            continue  # a transition rule: only where there is an old value
        activation = plain
        try:
            if rule.optional_old_self:
                optional = optional or cel.Context({"self": me, "oldSelf": (
                    cel.OptionalValue.none() if old is None else cel.OptionalValue.of(before))},
                    node.functions)
                activation = optional
            result = rule.program.execute(activation)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a failure to evaluate (a panic in the library too)
            out.append((here, f"Invalid value: {shown}: {_failure(exc, rule)}", INVALID))
            continue
        if result is True:
            continue
        if same and not rule.transition:
            continue  # ratcheted: the value is as it was (a real server warns)
        where = here if not rule.field_path else (
            f"{path}{'' if rule.field_path.startswith('[') else '.'}{rule.field_path}"
            if path else rule.field_path)
        detail = _message(rule, activation)
        if rule.reason == FORBIDDEN:
            out.append((where, f"Forbidden: {detail}", FORBIDDEN))
        elif rule.reason == REQUIRED:
            out.append((where, f"Required value: {detail}", REQUIRED))
        elif rule.reason == DUPLICATE:
            out.append((where, f"Duplicate value: {shown}", DUPLICATE))
        else:
            out.append((where, f"Invalid value: {shown}: {detail}", INVALID))


def _failure(exc: BaseException, rule: Rule) -> str:
    """An error while evaluating ``rule``, worded as cel-go's and kube-apiserver's."""
    if isinstance(exc, KeyError):  # the library's missing map key
        return f"no such key: {exc.args[0] if exc.args else ''} evaluating rule:" \
               f" {rule.error_text}"
    text = str(exc)
    raised = _RAISED.search(text)  # one of ours (celib), wrapped by the library
    if raised:
        text = raised.group(1)
    if text.lower().startswith("no such overload"):
        return (f"'{text}': call arguments did not match a supported operator, function or"
                f" macro signature for rule: {rule.error_text}")
    return f"{text} evaluating rule: {rule.error_text}"


def _message(rule: Rule, activation: Any) -> str:
    """The messageExpression's value when it gives a usable one, else the message."""
    if rule.message_expression is None:
        return rule.message
    try:
        value = rule.message_expression.execute(activation)
    except Exception as exc:  # as a real server: logged there, the static message here
        log.warning("messageExpression of rule %r failed, its message given instead: %s",
                    rule.source, exc)
        return rule.message
    if not isinstance(value, str):
        return rule.message
    text = value.strip()
    if not text or "\n" in text or len(text.encode()) > MESSAGE_MAX:
        return rule.message
    return text
