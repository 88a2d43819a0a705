"""Custom objects checked against their CRD's OpenAPI v3 schema, as a real server
checks them: types, required fields, enums, bounds, lengths, patterns and item
counts, with the real server's field paths and wording; unknown fields pruned (or
refused with ``fieldValidation=Strict``); defaults filled in.

CEL rules (``x-kubernetes-validations``) are evaluated after these checks, as a
real server evaluates them (:mod:`.rules`), unless a check found a type, an enum,
a required field, a length or an item count wrong."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .rules import Node, evaluate

Schema = dict[str, Any]

#: the reason of an unknown field under ``fieldValidation=Strict`` (a real server
#: answers those with 400 BadRequest, not 422)
UNKNOWN = "FieldValueUnknown"

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "integer": (int,), "number": (int, float),
}


@dataclass(frozen=True, slots=True)
class Cause:
    field: str
    message: str
    reason: str = "FieldValueInvalid"

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else json.dumps(value, default=str)


def _is(value: Any, kind: str) -> bool:
    if isinstance(value, bool) and kind not in ("boolean",):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, (object,)))


#: the causes after which a real server evaluates no CEL rule (hasBlockingErr)
BLOCKING = ("FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
            "FieldValueTooMany", "FieldValueTypeInvalid")
NOT_CHECKED = ("Invalid value: \"null\": some validation rules were not checked because the"
               " object was invalid; correct the existing errors to complete validation")


def validate(obj: Any, schema: Schema, strict: bool = False, old: Any = None,
             rules: Node | None = None, ratchet: bool = False) -> list[Cause]:
    """Check ``obj`` in place: unknown fields are pruned (or reported when
    ``strict``), defaults filled in; then the CEL ``rules`` compiled from the
    schema, with ``old`` the object it replaces (None on a create; ``ratchet``: an
    update of the main resource). Returns what is wrong, one cause per field."""
    causes: list[Cause] = []
    _check(obj, schema, "", causes, strict, top=True)
    if rules is not None:
        if any(c.reason in BLOCKING for c in causes):
            causes.append(Cause("<nil>", NOT_CHECKED))
        else:
            causes += [Cause(f, m, r) for f, m, r in evaluate(rules, obj, old, ratchet)]
    return causes


def _check(value: Any, schema: Schema, path: str, causes: list[Cause], strict: bool,
           top: bool = False) -> None:
    here = path or "<root>"
    if value is None:
        if not schema.get("nullable"):
            kind = schema.get("type", "object")
            causes.append(Cause(here, f"Invalid value: \"null\": {here} in body must be of type"
                                      f" {kind}: \"null\"", "FieldValueTypeInvalid"))
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, (int, str)) and not isinstance(value, bool)):
            causes.append(Cause(here, f"Invalid value: {_show(value)}: {here} in body must be of"
                                      " type integer or string", "FieldValueTypeInvalid"))
        return
    kind = schema.get("type")
    if kind and not _is(value, kind):
        causes.append(Cause(here, f"Invalid value: \"{_type_name(value)}\": {here} in body must"
                                  f" be of type {kind}: \"{_type_name(value)}\"",
                            "FieldValueTypeInvalid"))
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_show(v) for v in schema["enum"])
        causes.append(Cause(here, f"Unsupported value: {_show(value)}: supported values:"
                                  f" {allowed}", "FieldValueNotSupported"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _bounds(value, schema, here, causes)
    if isinstance(value, str):
        _string(value, schema, here, causes)
    if isinstance(value, list):
        _array(value, schema, path, causes, strict)
    if isinstance(value, dict):
        _object(value, schema, path, causes, strict, top)


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number"}.get(type(value), type(value).__name__)


def _bounds(value: float, schema: Schema, here: str, causes: list[Cause]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None:
        if schema.get("exclusiveMinimum") and value <= low:
            causes.append(Cause(here, f"Invalid value: {_show(value)}: {here} in body should be"
                                      f" greater than {_show(low)}"))
        elif value < low:
            causes.append(Cause(here, f"Invalid value: {_show(value)}: {here} in body should be"
                                      f" greater than or equal to {_show(low)}"))
    if high is not None:
        if schema.get("exclusiveMaximum") and value >= high:
            causes.append(Cause(here, f"Invalid value: {_show(value)}: {here} in body should be"
                                      f" less than {_show(high)}"))
        elif value > high:
            causes.append(Cause(here, f"Invalid value: {_show(value)}: {here} in body should be"
                                      f" less than or equal to {_show(high)}"))


def _string(value: str, schema: Schema, here: str, causes: list[Cause]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(Cause(here, f"Invalid value: {_show(value)}: {here} in body should be at"
                                  f" least {schema['minLength']} chars long"))
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        causes.append(Cause(here, f"Too long: may not be more than {schema['maxLength']} bytes",
                            "FieldValueTooLong"))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        causes.append(Cause(here, f"Invalid value: {_show(value)}: {here} in body should match"
                                  f" '{schema['pattern']}'"))


def _array(value: list[Any], schema: Schema, path: str, causes: list[Cause], strict: bool
           ) -> None:
    here = path or "<root>"
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(Cause(here, f"Invalid value: {len(value)}: {here} in body should have at"
                                  f" least {schema['minItems']} items"))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(Cause(here, f"Too many: {len(value)}: must have at most"
                                  f" {schema['maxItems']} items", "FieldValueTooMany"))
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", causes, strict)


def _object(value: dict[str, Any], schema: Schema, path: str, causes: list[Cause],
            strict: bool, top: bool) -> None:
    props: dict[str, Schema] = schema.get("properties") or {}
    for name, sub in props.items():
        if name not in value and "default" in sub:
            value[name] = json.loads(json.dumps(sub["default"]))
    for name in schema.get("required", ()):
        if name not in value:
            causes.append(Cause(_join(path, name), "Required value", "FieldValueRequired"))
    extra = schema.get("additionalProperties")
    for name in list(value):
        if top and name in ("apiVersion", "kind", "metadata"):
            continue
        sub = props.get(name)
        if sub is None and isinstance(extra, dict):
            sub = extra
        if sub is not None:
            _check(value[name], sub, _join(path, name), causes, strict)
        elif not (schema.get("x-kubernetes-preserve-unknown-fields") or extra is True):
            if strict:
                causes.append(Cause(_join(path, name), f'unknown field "{_join(path, name)}"',
                                    UNKNOWN))
            else:
                del value[name]  # pruned, as a structural schema prunes
    for keyword in ("oneOf", "anyOf"):
        options = schema.get(keyword)
        if options:
            fits = [not _required_missing(value, o) for o in options]
            if keyword == "oneOf" and sum(fits) != 1:
                how = "one and only one"
            elif keyword == "anyOf" and not any(fits):
                how = "at least one"
            else:
                continue
            causes.append(Cause(path or "<root>", f"Invalid value: \"object\": {path or 'body'}"
                                                  f" must validate {how} schema ({keyword})"))


def _required_missing(value: dict[str, Any], option: Schema) -> bool:
    return any(name not in value for name in option.get("required", ()))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
