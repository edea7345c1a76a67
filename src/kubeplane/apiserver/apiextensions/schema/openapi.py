"""Validation of a value against an OpenAPI v3 schema, as kube-openapi's validate package does it
for custom resources, compiled once per schema.

Upstream: NewSchemaValidator/ConvertJSONSchemaPropsWithPostProcess and
kubeOpenAPIResultToFieldErrors (apiextensions-apiserver pkg/apiserver/validation/validation.go);
SchemaValidator.Validate and its type, schemaProps (allOf/anyOf/oneOf/not), string, format,
number, slice, common (enum) and object validators (kube-openapi pkg/validation/validate), with
the messages of kube-openapi pkg/validation/errors/schema.go.

A schema is compiled into a tree of `_Node`s, one per (sub)schema, each holding only the checks
its schema has, so validating an object walks the object once and never re-reads the schema
dict. Paths are kube-openapi's ("spec.ports[0].name"); the field path of an error is that name,
and errors kube-openapi raises without a name (anyOf, allOf, range checks) are at "<nil>" with
an empty value, exactly as upstream prints them.
"""
from __future__ import annotations

import math
from typing import Any

from kubeplane.api import errors, gojson
from kubeplane.api.errors import FieldError

from . import formats
from .regex import compile_go_regexp, go_matcher

Obj = dict[str, Any]
NIL = "<nil>"
_NO_OLD: Any = object()      # no old value to ratchet against (a create, or a new field)

_KIND = {bool: "boolean", str: "string", int: "integer", float: "number", list: "array", dict: "object"}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_FLOAT32_MAX = 3.4028234663852886e38
_MAX_JSON_FLOAT = float((1 << 53) - 1)


def _name_to_field(prefix: str, name: str) -> str:
    """kubeOpenAPIResultToFieldErrors: fldPath.Child(name without its leading dot)."""
    if not name or name == ".":
        return prefix or NIL
    name = name[1:] if name[0] == "." else name
    return f"{prefix}.{name}" if prefix else name


class Errs:
    """A validate.Result's error list, already converted to field errors; `prefix` is the field
    path the validated value sits at (ValidateCustomResource's fldPath)."""

    __slots__ = ("prefix", "items", "msgs")

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.items: list[FieldError] = []
        self.msgs: list[str] = []       # the kube-openapi error texts, for Result.AddErrors' dedup

    def add(self, e: FieldError, msg: str) -> None:
        # Result.AddErrors drops an error whose text was already reported.
        if msg not in self.msgs:
            self.msgs.append(msg)
            self.items.append(e)

    def extend(self, other: Errs) -> None:
        for e, msg in zip(other.items, other.msgs):
            self.add(e, msg)

    # --- the kube-openapi error kinds, converted as kubeOpenAPIResultToFieldErrors does ------

    def invalid_type(self, name: str, type_name: str, value: Any) -> None:
        msg = f"{name} in body must be of type {type_name}: {gojson.quote(value)}" if isinstance(value, str) \
            else f"{name} in body must be of type {type_name}"
        self.add(FieldError(errors.TYPE_INVALID, _name_to_field(self.prefix, name),
                            "" if value is None else value, msg), msg)

    def invalid(self, name: str, value: Any, msg: str) -> None:
        self.add(errors.invalid(_name_to_field(self.prefix, name), "" if value is None else value, msg), msg)

    def plain(self, msg: str) -> None:
        """An error that is not an openapi Validation: Invalid at the nil path, empty value."""
        self.add(errors.invalid(self.prefix or NIL, "", msg), msg)

    def required(self, name: str) -> None:
        self.add(errors.required(_name_to_field(self.prefix, name)), f"{name} in body is required")

    def enum(self, name: str, value: Any, values: list[Any]) -> None:
        supported = [v if isinstance(v, str) else gojson.marshal(v) for v in values]
        msg = f"{name} in body should be one of {supported!r}"
        self.add(errors.not_supported(_name_to_field(self.prefix, name), value, supported), msg)

    def too_long(self, name: str, max_len: int) -> None:
        self.add(errors.too_long(_name_to_field(self.prefix, name), max_len),
                 f"{name} in body should be at most {max_len} chars long")

    def too_many(self, name: str, actual: int, max_n: int, what: str) -> None:
        self.add(errors.too_many(_name_to_field(self.prefix, name), actual, max_n),
                 f"{name} in body should have at most {max_n} {what}")


def _v(x: float | int) -> str:
    """fmt's %v of a Go number."""
    return gojson.format_float_v(x) if isinstance(x, float) else str(x)


def _is_json_integer(f: float) -> bool:
    """swag.IsFloat64AJSONInteger"""
    return math.isfinite(f) and -_MAX_JSON_FLOAT <= f <= _MAX_JSON_FLOAT and f == int(f)


def _format_float_f(f: float) -> str:
    """strconv.FormatFloat(f, 'f', -1, 64)"""
    if not math.isfinite(f):
        return "+Inf" if f > 0 else "-Inf" if f < 0 else "NaN"
    r = repr(f)
    if "e" in r or "E" in r:
        from decimal import Decimal
        return format(Decimal(r), "f")
    return r[:-2] if r.endswith(".0") else r


def _in_range(val: int | float, type_name: str, fmt: str) -> bool:
    """IsValueValidAgainstRange without its message: val, printed as Go prints it, parses as
    the type and format."""
    if type_name == "integer":
        if isinstance(val, float):
            s = _format_float_f(val)
            if not s.lstrip("-").isdigit():
                return False
            val = int(s)
        lo, hi = (_INT32_MIN, _INT32_MAX) if fmt == "int32" else (_INT64_MIN, _INT64_MAX)
        return lo <= val <= hi
    if fmt == "float":
        return abs(float(val)) <= _FLOAT32_MAX or math.isnan(float(val))
    return True


def _range_error(prefix: str, type_name: str, fmt: str, name: str) -> str:
    if fmt:
        return f"{prefix} value must be of type {type_name} with format {fmt} in {name}"
    return f"{prefix} value must be of type {type_name} (default format) in {name}"


def go_deep_equal(a: Any, b: Any) -> bool:
    """reflect.DeepEqual of two decoded JSON values: types must match (1 is not 1.0)."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        return False
    if ta is dict:
        return len(a) == len(b) and all(k in b and go_deep_equal(v, b[k]) for k, v in a.items())
    if ta is list:
        return len(a) == len(b) and all(go_deep_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _enum_match(data: Any, ev: Any) -> bool:
    """basicCommonValidator: the value, converted to the enum value's Go type when reflect can,
    deep-equals it (so 1.5 matches an enum 1, as upstream's conversion truncates)."""
    te, td = type(ev), type(data)
    if ev is None or data is None:
        return False
    if te is td:
        return go_deep_equal(data, ev)
    if te is int and td is float:
        return math.isfinite(data) and int(data) == ev
    if te is float and td is int:
        return float(data) == ev
    if te is str and td is int:            # Go converts an integer to a string as a rune
        return (chr(data) if 0 <= data <= 0x10FFFF and not 0xD800 <= data <= 0xDFFF else "\ufffd") == ev
    return False


class _Node:
    """One compiled SchemaValidator."""

    __slots__ = ("types", "nullable", "format", "fmt_check", "type_applies", "ok_kinds", "num_type",
                 "num_format", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum",
                 "multiple_of", "max_length", "min_length", "pattern", "pattern_rx", "pattern_err",
                 "items", "min_items", "max_items", "unique_items", "enum", "min_properties",
                 "max_properties", "required", "properties", "additional", "additional_allows",
                 "all_of", "any_of", "one_of", "not_", "has_props_validator", "has_string",
                 "has_number", "has_slice", "has_object", "list_map_keys", "trivial", "check")

    def __init__(self, d: Obj) -> None:
        t = d.get("type")
        self.types: list[str] = [t] if isinstance(t, str) and t else []
        if d.get("x-kubernetes-int-or-string") is True:
            self.types = ["integer", "string"]
        self.nullable = d.get("nullable") is True
        fmt = d.get("format")
        self.format = formats.effective_format(self.types, fmt if isinstance(fmt, str) else "")
        self.fmt_check = formats.checker(self.format) if self.format else None
        self.type_applies = bool(self.types) or bool(self.format)
        self.ok_kinds = self._ok_kinds()
        self.num_type = self.types[0] if len(self.types) == 1 and self.types[0] in ("integer", "number") else ""
        self.num_format = self.format if (self.num_type == "integer" and self.format in ("int32", "int64")) or (
            self.num_type == "number" and self.format in ("float", "double")) else ""
        self.maximum = _number(d.get("maximum"))
        self.exclusive_maximum = d.get("exclusiveMaximum") is True
        self.minimum = _number(d.get("minimum"))
        self.exclusive_minimum = d.get("exclusiveMinimum") is True
        self.multiple_of = _number(d.get("multipleOf"))
        self.max_length = _integer(d.get("maxLength"))
        self.min_length = _integer(d.get("minLength"))
        p = d.get("pattern")
        self.pattern = p if isinstance(p, str) else ""
        self.pattern_rx: Any = None
        self.pattern_err: str | None = None
        if self.pattern:
            self.pattern_err = compile_go_regexp(self.pattern)[1]
            self.pattern_rx = go_matcher(self.pattern)
        items = d.get("items")
        self.items = _Node(items) if isinstance(items, dict) else None
        self.min_items = _integer(d.get("minItems"))
        self.max_items = _integer(d.get("maxItems"))
        self.unique_items = d.get("uniqueItems") is True
        enum = d.get("enum")
        self.enum = list(enum) if isinstance(enum, list) and enum else None
        self.min_properties = _integer(d.get("minProperties"))
        self.max_properties = _integer(d.get("maxProperties"))
        req = d.get("required")
        self.required = [r for r in req if isinstance(r, str)] if isinstance(req, list) else []
        props = d.get("properties")
        self.properties = {k: _Node(v if isinstance(v, dict) else {}) for k, v in props.items()} \
            if isinstance(props, dict) else {}
        ap = d.get("additionalProperties")
        self.additional = _Node(ap) if isinstance(ap, dict) else None
        self.additional_allows = ap is not False
        keys = d.get("x-kubernetes-list-map-keys")
        self.list_map_keys: tuple[str, ...] = tuple(k for k in keys if isinstance(k, str)) \
            if d.get("x-kubernetes-list-type") == "map" and isinstance(keys, list) else ()
        self.all_of = _nodes(d.get("allOf"))
        self.any_of = _nodes(d.get("anyOf"))
        self.one_of = _nodes(d.get("oneOf"))
        n = d.get("not")
        self.not_ = _Node(n) if isinstance(n, dict) else None
        self.has_props_validator = bool(self.all_of or self.any_of or self.one_of or self.not_)
        self.has_string = self.max_length is not None or self.min_length is not None or bool(self.pattern) \
            or self.fmt_check is not None
        self.has_number = bool(self.num_type) or self.maximum is not None or self.minimum is not None \
            or self.multiple_of is not None
        self.has_slice = self.items is not None or self.min_items is not None or self.max_items is not None \
            or self.unique_items
        self.has_object = bool(self.properties or self.required or self.additional is not None
                               or not self.additional_allows or self.min_properties is not None
                               or self.max_properties is not None)
        self.check: Any = self._specialize()

    def _specialize(self) -> Any:
        """check(x, name, errs) for this schema: check_full, or, for the shapes most schemas
        are made of (a typed leaf; an integer in a range; a string of bounded length; a list
        of items; an object of properties, required keys, additionalProperties), a closure
        that does only what the schema asks when the value has the expected type and passes,
        and check_full otherwise (so errors are check_full's). Sets `trivial`: the value types
        this check passes whatever their value (a parent skips the call, and the path)."""
        full = self.check_full
        self.trivial: frozenset[type] = frozenset()
        if self.enum is not None or self.has_props_validator:
            return full
        ok_kinds = self.ok_kinds
        shapes = (self.has_string, self.has_number, self.has_slice, self.has_object)
        if not any(shapes):
            if not self.type_applies:
                self.trivial = frozenset(_KIND) | {type(None)}
                return lambda x, name, errs: None
            self.trivial = ok_kinds
            return lambda x, name, errs: None if type(x) in ok_kinds else full(x, name, errs)
        if shapes == (False, True, False, False):
            return self._integer_range() or full
        if shapes == (True, False, False, False):
            if self.pattern or self.fmt_check is not None or str not in ok_kinds:
                return full
            lo, hi = self.min_length or 0, self.max_length if self.max_length is not None else math.inf
            return lambda x, name, errs: None if type(x) is str and lo <= len(x) <= hi else full(x, name, errs)
        if shapes == (False, False, True, False):
            return self._list_items() or full
        if shapes != (False, False, False, True) or dict not in ok_kinds or not self.additional_allows \
                or self.min_properties is not None or self.max_properties is not None:
            return full
        props = tuple((k, sub.check, sub.trivial) for k, sub in self.properties.items())
        required = tuple(self.required)
        additional = self.additional

        def check_object(x: Any, name: str, errs: Errs) -> None:
            if type(x) is not dict:
                full(x, name, errs)
                return
            if additional is not None:
                a_check, a_trivial = additional.check, additional.trivial
                for k, v in x.items():
                    if type(v) not in a_trivial and k not in self.properties:
                        a_check(v, f"{name}.{k}", errs)
            if name:
                for k, sub_check, trivial in props:
                    if k in x and type(v := x[k]) not in trivial:
                        sub_check(v, name + "." + k, errs)
            else:
                for k, sub_check, trivial in props:
                    if k in x and type(v := x[k]) not in trivial:
                        sub_check(v, k, errs)
            for k in required:
                if k not in x:
                    errs.required(name + "." + k)
        return check_object

    def _integer_range(self) -> Any:
        """An integer schema with only its range and bounds (the type's range, minimum,
        maximum): an int within all of them passes at once."""
        if self.num_type != "integer" or self.multiple_of is not None or int not in self.ok_kinds:
            return None
        lo, hi = (_INT32_MIN, _INT32_MAX) if self.num_format == "int32" else (_INT64_MIN, _INT64_MAX)
        for bound, exclusive, is_max in ((self.minimum, self.exclusive_minimum, False),
                                         (self.maximum, self.exclusive_maximum, True)):
            if bound is None:
                continue
            if not math.isfinite(bound) or not _in_range(bound, self.num_type, self.num_format):
                return None         # _bound reports that on every value
            b = int(bound)
            if is_max:
                hi = min(hi, b - 1 if exclusive else b)
            else:
                lo = max(lo, b + 1 if exclusive else b)
        full = self.check_full
        return lambda x, name, errs: None if type(x) is int and lo <= x <= hi else full(x, name, errs)

    def _list_items(self) -> Any:
        """An array schema with only items: each item checked (none for trivial items)."""
        items = self.items
        if items is None or self.min_items is not None or self.max_items is not None or self.unique_items \
                or list not in self.ok_kinds:
            return None
        full, item_check, trivial = self.check_full, items.check, items.trivial

        def check_list(x: Any, name: str, errs: Errs) -> None:
            if type(x) is not list:
                full(x, name, errs)
                return
            for i, v in enumerate(x):
                if type(v) not in trivial:
                    item_check(v, f"{name}[{i}]", errs)
        return check_list

    def _ok_kinds(self) -> frozenset[type]:
        """The Python types that pass the type validator whatever their value (float needs
        a look at the value when only integer is allowed)."""
        if not self.type_applies:
            return frozenset(_KIND)
        ok = set()
        for py, name in _KIND.items():
            if name in self.types or (name == "integer" and "number" in self.types):
                ok.add(py)
            elif py in (str, list) and self.format and not ("number" in self.types or "integer" in self.types):
                ok.add(py)
        if self.format and float in ok and "number" not in self.types:
            ok.discard(float)
        return frozenset(ok)

    # --- SchemaValidator.Validate ----------------------------------------------------------

    def check_ratchet(self, x: Any, old: Any, name: str, errs: Errs) -> None:
        """ratchetingValueValidator.Validate: x validated with its old value at hand; when x
        equals the old value its errors are dropped (they were accepted before), and its
        children that have an old value (same key; same map-list keys) ratchet alike."""
        r = Errs(errs.prefix)
        self.check_full(x, name, r, old)
        if r.items and not self.ratchet_equal(x, old):
            errs.extend(r)

    def ratchet_equal(self, x: Any, old: Any) -> bool:
        """CorrelatedObject.CachedDeepEqual: deep equality through the schema — map-list
        items matched by their keys (so a reordered map list is equal), and an object with a
        key the schema does not type (no property, no additionalProperties schema) never
        equal."""
        if x is None or old is None:
            return x is None and old is None
        tx, to = type(x), type(old)
        if (tx is list) != (to is list) or (tx is dict) != (to is dict):
            return False
        if tx is list:
            if len(x) != len(old):
                return False
            if not self.list_map_keys or self.items is None:
                return go_deep_equal(x, old)
            old_items = self._old_map_items(old) or {}
            for v in x:
                o = old_items.get(_map_key(v, self.list_map_keys), _NO_OLD)
                if o is _NO_OLD or not self.items.ratchet_equal(v, o):
                    return False
            return True
        if tx is dict:
            if len(x) != len(old):
                return False
            for k, v in x.items():
                sub = self.properties.get(k) or self.additional
                if k not in old or sub is None or not sub.ratchet_equal(v, old[k]):
                    return False
            return True
        return go_deep_equal(x, old)

    def check_full(self, x: Any, name: str, errs: Errs, old: Any = _NO_OLD) -> None:
        """SchemaValidator.Validate: every validator that applies to the value's kind."""
        if x is None:
            if self.type_applies and not self.nullable:
                errs.invalid_type(name, ",".join(self.types), "null")
            if self.enum is not None:
                errs.enum(name, None, self.enum)
            return
        t = type(x)
        if t not in self.ok_kinds:
            self._type_slow(x, t, name, errs)
        if self.has_props_validator:
            self._props_validator(x, name, errs)
        if t is str:
            if self.has_string:
                self._string(x, name, errs)
        elif t is int or t is float:
            if self.has_number:
                self._number(x, name, errs)
        elif t is list:
            if self.has_slice:
                self._slice(x, name, errs, old)
        if self.enum is not None and not any(_enum_match(x, ev) for ev in self.enum):
            errs.enum(name, x, self.enum)
        if t is dict:
            if self.has_object:
                self._object(x, name, errs, old)
            return

    def valid(self, x: Any) -> bool:
        r = Errs()
        self.check(x, "", r)
        return not r.items

    def match_count(self, x: Any) -> int:
        """validate.Result.MatchCount of validating x: how anyOf and oneOf pick the failure
        they report (the branch that matched most). One count per validator that applies,
        one per validator that counts itself (type when it passes, schemaProps, number,
        slice), plus what nested validators counted."""
        if x is None:
            return 1 if not self.type_applies or self.nullable else 0
        t = type(x)
        applicable = 3                              # schemaProps, common (enum), and the final Inc
        n = 1 + self._props_match_count(x)          # schemaProps counts itself
        if self.type_applies:
            applicable += 1
            e = Errs()
            if t not in self.ok_kinds:
                self._type_slow(x, t, "", e)
            n += 0 if e.items else 1
        if t is str:
            applicable += 1 + (self.fmt_check is not None)
        elif t is int or t is float:
            applicable += 1
            n += 1
        elif t is list:
            applicable += 1
            n += 1 + (sum(self.items.match_count(v) for v in x) if self.items is not None else 0)
        elif t is dict:
            applicable += 1
            for k, v in x.items():
                sub = self.properties.get(k)
                if sub is not None:
                    n += sub.match_count(v)
                elif self.additional is not None and self.additional_allows:
                    n += self.additional.match_count(v)
        return n + applicable

    def _props_match_count(self, x: Any) -> int:
        n = sum(sub.match_count(x) for sub in self.all_of)
        for subs, one in ((self.any_of, False), (self.one_of, True)):
            if not subs:
                continue
            valid = [sub for sub in subs if sub.valid(x)]
            if valid and (not one or len(valid) == 1):
                n += valid[0].match_count(x)
            elif not valid:
                n += max(sub.match_count(x) for sub in subs)
        return n

    def _type_slow(self, x: Any, t: type, name: str, errs: Errs) -> None:
        """typeValidator.Validate for the cases the ok_kinds fast path does not decide."""
        sch_type = _KIND.get(t, "")
        fmt = "int64" if t is int else "float64" if t is float else ""
        is_float_int = t is float and _is_json_integer(x) and "integer" in self.types
        is_int_float = t is int and "number" in self.types
        if t is not str and t is not list and self.format and not (
                sch_type in self.types or fmt == self.format or is_float_int or is_int_float):
            errs.invalid_type(name, self.format, fmt)
            return
        if "number" not in self.types and "integer" not in self.types and self.format and t in (str, list):
            return
        if not (sch_type in self.types or is_float_int or is_int_float):
            errs.invalid_type(name, ",".join(self.types), sch_type)

    def _props_validator(self, x: Any, name: str, errs: Errs) -> None:
        """schemaPropsValidator: anyOf, oneOf, allOf, not."""
        if self.any_of:
            best: Errs | None = None
            best_count = -1
            for sub in self.any_of:
                r = Errs(errs.prefix)
                sub.check(x, name, r)
                if not r.items:
                    best = None
                    break
                count = sub.match_count(x)
                if count > best_count:
                    best, best_count = r, count
            else:
                errs.plain(f"{gojson.quote(name)} must validate at least one schema (anyOf)")
            if best is not None:
                errs.extend(best)
        if self.one_of:
            validated, best = 0, None
            best_count = -1
            for sub in self.one_of:
                r = Errs(errs.prefix)
                sub.check(x, name, r)
                if not r.items:
                    validated += 1
                    best = None
                    continue
                count = sub.match_count(x)
                if validated == 0 and count > best_count:
                    best, best_count = r, count
            if validated != 1:
                more = "Found none valid" if validated == 0 else f"Found {validated} valid alternatives"
                errs.plain(f"{gojson.quote(name)} must validate one and only one schema (oneOf). {more}")
                if best is not None:
                    errs.extend(best)
        if self.all_of:
            validated = 0
            for sub in self.all_of:
                r = Errs(errs.prefix)
                sub.check(x, name, r)
                if not r.items:
                    validated += 1
                errs.extend(r)
            if validated != len(self.all_of):
                more = ". None validated" if validated == 0 else ""
                errs.plain(f"{gojson.quote(name)} must validate all the schemas (allOf){more}")
        if self.not_ is not None:
            r = Errs(errs.prefix)
            self.not_.check(x, name, r)
            if not r.items:
                errs.plain(f"{gojson.quote(name)} must not validate the schema (not)")

    def _string(self, x: str, name: str, errs: Errs) -> None:
        """stringValidator (first failure only), then formatValidator."""
        if self.max_length is not None and len(x) > self.max_length:
            errs.too_long(name, self.max_length)
        elif self.min_length is not None and len(x) < self.min_length:
            errs.invalid(name, x, f"{name} in body should be at least {self.min_length} chars long")
        elif self.pattern:
            if self.pattern_rx is None:
                errs.invalid(name, x, f"{name} in body should match '{self.pattern}, but pattern is invalid: "
                                      f"{self.pattern_err}'")
            elif not self.pattern_rx(x):
                errs.invalid(name, x, f"{name} in body should match '{self.pattern}'")
        if self.fmt_check is not None and not self.fmt_check(x):
            errs.invalid_type(name, self.format, x)

    def _number(self, x: int | float, name: str, errs: Errs) -> None:
        """numberValidator"""
        nt, nf = self.num_type, self.num_format
        if nt and not _in_range(x, nt, nf):
            errs.plain(_range_error("Checked", nt, nf, name))
        if self.multiple_of is not None:
            self._multiple_of(x, name, errs)
        if self.minimum is not None:
            self._bound(x, self.minimum, self.exclusive_minimum, False, name, errs)
        if self.maximum is not None:
            self._bound(x, self.maximum, self.exclusive_maximum, True, name, errs)

    def _multiple_of(self, x: int | float, name: str, errs: Errs) -> None:
        f = self.multiple_of
        assert f is not None
        native = _in_range(f, self.num_type, self.num_format) if self.num_type else True
        if not native:
            errs.plain(_range_error("MultipleOf", self.num_type, self.num_format, name))
        if native and isinstance(x, int):
            factor = int(f)
            if factor <= 0:
                errs.invalid(name, factor, f"factor MultipleOf declared for {name} must be positive: {factor}")
            elif x % factor:
                errs.invalid(name, x, f"{name} in body should be a multiple of {factor}")
            return
        if f <= 0:
            errs.invalid(name, f, f"factor MultipleOf declared for {name} must be positive: {_v(f)}")
            return
        mult = 1 / f * x if f < 1 else x / f
        if not _is_json_integer(mult):
            errs.invalid(name, x, f"{name} in body should be a multiple of {_v(f)}")

    def _bound(self, x: int | float, bound: float, exclusive: bool, is_max: bool, name: str, errs: Errs) -> None:
        """Maximum/Minimum(NativeType): an integer against the bound truncated to an integer
        when the bound fits the schema's type, else as floats."""
        what = "Maximum boundary" if is_max else "Minimum boundary"
        native = _in_range(bound, self.num_type, self.num_format) if self.num_type else True
        if not native:
            errs.plain(_range_error(what, self.num_type, self.num_format, name))
        b: int | float = int(bound) if native and isinstance(x, int) and math.isfinite(bound) else float(bound)
        if is_max:
            bad = x >= b if exclusive else x > b
            word = "less than" if exclusive else "less than or equal to"
        else:
            bad = x <= b if exclusive else x < b
            word = "greater than" if exclusive else "greater than or equal to"
        if bad:
            errs.invalid(name, x, f"{name} in body should be {word} {_v(b)}")

    def _slice(self, x: list[Any], name: str, errs: Errs, old: Any = _NO_OLD) -> None:
        """schemaSliceValidator (on an update, the items of a map list ratchet against the old
        item with the same keys: CorrelatedObject.Index)."""
        if self.items is not None:
            check = self.items.check
            old_items = self._old_map_items(old) if old is not _NO_OLD else None
            for i, v in enumerate(x):
                o = old_items.get(_map_key(v, self.list_map_keys), _NO_OLD) if old_items else _NO_OLD
                if o is _NO_OLD:
                    check(v, f"{name}[{i}]", errs)
                else:
                    self.items.check_ratchet(v, o, f"{name}[{i}]", errs)
        n = len(x)
        if self.min_items is not None and n < self.min_items:
            errs.invalid(name, n, f"{name} in body should have at least {self.min_items} items")
        if self.max_items is not None and n > self.max_items:
            errs.too_many(name, n, self.max_items, "items")
        if self.unique_items:
            for i, v in enumerate(x):
                if any(go_deep_equal(v, u) for u in x[:i]):
                    errs.invalid(name, None, f"{name} in body shouldn't contain duplicates")
                    break

    def _old_map_items(self, old: Any) -> dict[Any, Any] | None:
        if not self.list_map_keys or not isinstance(old, list):
            return None
        return {_map_key(o, self.list_map_keys): o for o in reversed(old) if isinstance(o, dict)}

    def _object(self, x: Obj, name: str, errs: Errs, old: Any = _NO_OLD) -> None:
        """objectValidator (on an update, a property or map value with an old value ratchets:
        CorrelatedObject.Key; apiVersion and kind at the root do not)."""
        if old is not _NO_OLD:
            self._object_ratchet(x, old, name, errs)
            return
        props = self.properties
        if self._object_bounds(x, name, errs) and (additional := self.additional) is not None:
            check = additional.check
            for k, v in x.items():
                if k not in props:
                    check(v, f"{name}.{k}", errs)
        for k, sub in props.items():
            if k in x:
                sub.check(x[k], f"{name}.{k}" if name else k, errs)
        for k in self.required:
            if k not in x:
                errs.required(f"{name}.{k}")

    def _object_ratchet(self, x: Obj, old: Any, name: str, errs: Errs) -> None:
        old_map = old if isinstance(old, dict) else {}
        props = self.properties
        if self._object_bounds(x, name, errs) and (additional := self.additional) is not None:
            for k, v in x.items():
                if k not in props:
                    self._sub(additional, v, old_map, k, f"{name}.{k}", errs, name)
        for k, sub in props.items():
            if k in x:
                self._sub(sub, x[k], old_map, k, f"{name}.{k}" if name else k, errs, name)
        for k in self.required:
            if k not in x:
                errs.required(f"{name}.{k}")

    def _object_bounds(self, x: Obj, name: str, errs: Errs) -> bool:
        """minProperties, maxProperties and forbidden additional properties (what ratcheting
        does not change); whether additional properties are allowed."""
        n = len(x)
        if self.min_properties is not None and n < self.min_properties:
            errs.invalid(name, n, f"{name} in body should have at least {self.min_properties} properties")
        if self.max_properties is not None and n > self.max_properties:
            errs.too_many(name, n, self.max_properties, "properties")
        props = self.properties
        if not self.additional_allows:
            for k in x:
                if k not in props:
                    errs.invalid(name, k, f"{name}.{k} in body is a forbidden property")
        return self.additional_allows

    @staticmethod
    def _sub(sub: _Node, v: Any, old_map: Obj, k: str, child: str, errs: Errs, name: str) -> None:
        if k in old_map and not (name == "" and k in ("kind", "apiVersion")):
            sub.check_ratchet(v, old_map[k], child, errs)
        else:
            sub.check(v, child, errs)


def _map_key(item: Any, keys: tuple[str, ...]) -> Any:
    """A map-list item's identity: its key fields' values (absent ones marked so)."""
    if not isinstance(item, dict):
        return None
    return tuple((k in item, _hashable(item.get(k))) for k in keys)


def _hashable(v: Any) -> Any:
    return (type(v), v) if not isinstance(v, (dict, list)) else gojson.marshal(v)


def _nodes(v: Any) -> list[_Node]:
    return [_Node(x) for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _number(v: Any) -> float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _integer(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


class SchemaValidator:
    """A compiled openAPIV3Schema (NewSchemaValidator)."""

    __slots__ = ("root",)

    def __init__(self, schema: Obj) -> None:
        self.root = _Node(schema)

    def validate(self, value: Any, fld_path: str = "") -> list[FieldError]:
        """Upstream: ValidateCustomResource(fldPath, value, validator)."""
        errs = Errs(fld_path)
        self.root.check(value, "", errs)
        return errs.items

    def validate_update(self, value: Any, old: Any, fld_path: str = "") -> list[FieldError]:
        """Upstream: ValidateCustomResourceUpdate with ratcheting (CRDValidationRatcheting, on
        by default): what was already invalid and is unchanged is not reported."""
        errs = Errs(fld_path)
        self.root.check_ratchet(value, old, "", errs)
        return errs.items
