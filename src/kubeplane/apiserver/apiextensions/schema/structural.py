"""The structural schema of a CustomResourceDefinition version, built from its openAPIV3Schema.

A structural schema splits an OpenAPI v3 schema in two: the skeleton (type, properties, items,
additionalProperties and the x-kubernetes-* extensions at every level), and the value
validations under allOf/anyOf/oneOf/not, which may only restrict what the skeleton already
specifies. Pruning, defaulting and validation all walk the skeleton.

Upstream: Structural, NewStructural (apiextensions-apiserver pkg/apiserver/schema/structural.go,
convert.go). `structural_from` never raises: what NewStructural would refuse (an items array,
$ref, id, ...) is kept in `conversion_errors` and reported by validate_structural.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

Obj = dict[str, Any]

# While a CRD version's schema is validated (reusing_nodes), the structural schema of any of its
# nodes is the node of the whole schema's: the CEL checks ask for the structural schema of every
# node with rules, and of the whole again for the costs (a 3,000-node schema built four times).
_NODES: ContextVar[dict[int, Structural] | None] = ContextVar("structural_nodes", default=None)

# The extensions that exist only on the skeleton (ForbiddenExtensions in value validations).
X_PRESERVE = "x-kubernetes-preserve-unknown-fields"
X_EMBEDDED = "x-kubernetes-embedded-resource"
X_INT_OR_STRING = "x-kubernetes-int-or-string"
X_LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
X_LIST_TYPE = "x-kubernetes-list-type"
X_MAP_TYPE = "x-kubernetes-map-type"
X_VALIDATIONS = "x-kubernetes-validations"


class ValueValidation:
    """Upstream: ValueValidation — the constraints a value must meet, beside the skeleton."""

    __slots__ = ("format", "maximum", "exclusive_maximum", "minimum", "exclusive_minimum",
                 "max_length", "min_length", "pattern", "max_items", "min_items", "unique_items",
                 "multiple_of", "enum", "max_properties", "min_properties", "required",
                 "all_of", "one_of", "any_of", "not_")

    def __init__(self) -> None:
        self.format = ""
        self.maximum: float | None = None
        self.exclusive_maximum = False
        self.minimum: float | None = None
        self.exclusive_minimum = False
        self.max_length: int | None = None
        self.min_length: int | None = None
        self.pattern = ""
        self.max_items: int | None = None
        self.min_items: int | None = None
        self.unique_items = False
        self.multiple_of: float | None = None
        self.enum: list[Any] | None = None
        self.max_properties: int | None = None
        self.min_properties: int | None = None
        self.required: list[str] = []
        self.all_of: list[NestedValueValidation] = []
        self.one_of: list[NestedValueValidation] = []
        self.any_of: list[NestedValueValidation] = []
        self.not_: NestedValueValidation | None = None


class NestedValueValidation:
    """Upstream: NestedValueValidation — a value validation under a logical junctor. The
    skeleton fields found there are kept to be reported as not structural."""

    __slots__ = ("vv", "x_validations", "items", "properties", "additional_properties",
                 "forbidden_generics", "forbidden_extensions", "raw")

    def __init__(self) -> None:
        self.vv = ValueValidation()
        self.x_validations: list[Obj] = []
        self.items: NestedValueValidation | None = None
        self.properties: dict[str, NestedValueValidation] | None = None
        self.additional_properties: NestedValueValidation | None = None
        self.forbidden_generics: Obj = {}      # type, title, description, default, nullable
        self.forbidden_extensions: Obj = {}    # the x-kubernetes-* skeleton extensions
        self.raw: Obj = {}                     # the JSONSchemaProps it was built from


class Structural:
    """Upstream: Structural. `raw` is the JSONSchemaProps dict it was built from;
    `additional_properties` is None, True/False (the bool form) or a Structural."""

    __slots__ = ("items", "properties", "additional_properties",
                 "type", "description", "title", "default", "has_default", "nullable",
                 "x_preserve_unknown_fields", "x_embedded_resource", "x_int_or_string",
                 "x_list_map_keys", "x_list_type", "x_map_type", "x_validations",
                 "value_validation", "raw", "conversion_errors", "_compiled", "_list_memo", "_embedded", "_coercer", "_cel_rules")

    def __init__(self) -> None:
        self.items: Structural | None = None
        self.properties: dict[str, Structural] = {}
        self.additional_properties: Structural | bool | None = None
        self.type = ""
        self.description = ""
        self.title = ""
        self.default: Any = None        # Go's Default.Object: a null default is no default
        self.has_default = False
        self.nullable = False
        self.x_preserve_unknown_fields = False
        self.x_embedded_resource = False
        self.x_int_or_string = False
        self.x_list_map_keys: list[str] = []
        self.x_list_type: str | None = None
        self.x_map_type: str | None = None
        self.x_validations: list[Obj] = []     # CEL rules: evaluated by a later hook, not here
        self.value_validation: ValueValidation | None = None
        self.raw: Obj = {}
        self.conversion_errors: list[str] = []
        self._compiled: Any = None         # validate's compiled form (schema/__init__.py)
        self._list_memo: Any = None        # listtype's: which subtrees hold set/map lists
        self._embedded: Any = None         # pruning's: this schema as a resource root (made once)
        self._coercer: Any = None          # coercer's compiled walks (by whether they default)
        self._cel_rules: Any = None        # celvalidation's compiled x_validations (by resource_root)

    @property
    def additional_properties_schema(self) -> Structural | None:
        """StructuralOrBool.Structural: the schema of additionalProperties, when one is given."""
        ap = self.additional_properties
        return ap if isinstance(ap, Structural) else None

    def __repr__(self) -> str:
        return f"Structural(type={self.type!r}, properties={list(self.properties)!r})"


def structural_from(schema: Any) -> Structural:
    """Upstream: NewStructural. Never raises; conversion failures are in `conversion_errors`
    of the returned root (the first one is what upstream's error would say)."""
    nodes = _NODES.get()
    if nodes is not None and (hit := nodes.get(id(schema))) is not None and hit.raw is schema:
        return hit
    errs: list[str] = []
    s = _structural(schema if isinstance(schema, dict) else {}, errs)
    s.conversion_errors = errs
    return s


# --- JSONSchemaProps field accessors: a wrong JSON type reads as Go's zero value ------------


def _str(d: Obj, key: str) -> str:
    v = d.get(key)
    return v if isinstance(v, str) else ""


def _bool(d: Obj, key: str) -> bool:
    return d.get(key) is True


def _num(d: Obj, key: str) -> float | None:
    v = d.get(key)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _int(d: Obj, key: str) -> int | None:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return int(v)


def _str_list(d: Obj, key: str) -> list[str]:
    v = d.get(key)
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _schemas(d: Obj, key: str) -> list[Obj]:
    v = d.get(key)
    return [x if isinstance(x, dict) else {} for x in v] if isinstance(v, list) else []


def _unsupported(d: Obj, errs: list[str]) -> None:
    """Upstream: validateUnsupportedFields."""
    for key, name in (("id", "id"), ("$schema", "schema"), ("$ref", "$ref"),
                      ("patternProperties", "patternProperties"), ("dependencies", "dependencies")):
        if d.get(key):
            errs.append(f"OpenAPIV3Schema '{name}' is not supported")
    if "additionalItems" in d and d["additionalItems"] is not None:
        errs.append("OpenAPIV3Schema 'additionalItems' is not supported")
    if d.get("definitions"):
        errs.append("OpenAPIV3Schema 'definitions' is not supported")
    if isinstance(d.get("items"), list):
        errs.append("OpenAPIV3Schema 'items' must be a schema, but is an array")
    if d.get(X_PRESERVE) is False:
        errs.append("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined")


def _value_validation(d: Obj, vv: ValueValidation, errs: list[str]) -> None:
    """Upstream: newValueValidation"""
    vv.format = _str(d, "format")
    vv.maximum = _num(d, "maximum")
    vv.exclusive_maximum = _bool(d, "exclusiveMaximum")
    vv.minimum = _num(d, "minimum")
    vv.exclusive_minimum = _bool(d, "exclusiveMinimum")
    vv.max_length = _int(d, "maxLength")
    vv.min_length = _int(d, "minLength")
    vv.pattern = _str(d, "pattern")
    vv.max_items = _int(d, "maxItems")
    vv.min_items = _int(d, "minItems")
    vv.unique_items = _bool(d, "uniqueItems")
    vv.multiple_of = _num(d, "multipleOf")
    vv.max_properties = _int(d, "maxProperties")
    vv.min_properties = _int(d, "minProperties")
    vv.required = _str_list(d, "required")
    enum = d.get("enum")
    vv.enum = list(enum) if isinstance(enum, list) and enum else None
    vv.all_of = [_nested(x, errs) for x in _schemas(d, "allOf")]
    vv.any_of = [_nested(x, errs) for x in _schemas(d, "anyOf")]
    vv.one_of = [_nested(x, errs) for x in _schemas(d, "oneOf")]
    n = d.get("not")
    vv.not_ = _nested(n, errs) if isinstance(n, dict) else None


def _rules(d: Obj) -> list[Obj]:
    v = d.get(X_VALIDATIONS)
    return [r for r in v if isinstance(r, dict)] if isinstance(v, list) else []


def _structural(d: Obj, errs: list[str]) -> Structural:
    _unsupported(d, errs)
    s = Structural()
    s.raw = d
    s.type = _str(d, "type")
    s.description = _str(d, "description")
    s.title = _str(d, "title")
    s.nullable = _bool(d, "nullable")
    if d.get("default") is not None:
        s.default, s.has_default = d["default"], True
    s.x_preserve_unknown_fields = _bool(d, X_PRESERVE)
    s.x_embedded_resource = _bool(d, X_EMBEDDED)
    s.x_int_or_string = _bool(d, X_INT_OR_STRING)
    s.x_list_map_keys = _str_list(d, X_LIST_MAP_KEYS)
    lt, mt = d.get(X_LIST_TYPE), d.get(X_MAP_TYPE)
    s.x_list_type = lt if isinstance(lt, str) else None
    s.x_map_type = mt if isinstance(mt, str) else None
    s.x_validations = _rules(d)
    vv = ValueValidation()
    _value_validation(d, vv, errs)
    s.value_validation = vv
    items = d.get("items")
    if isinstance(items, dict):
        s.items = _structural(items, errs)
    props = d.get("properties")
    if isinstance(props, dict):
        s.properties = {k: _structural(v if isinstance(v, dict) else {}, errs) for k, v in props.items()}
    ap = d.get("additionalProperties")
    if isinstance(ap, dict):
        s.additional_properties = _structural(ap, errs)
    elif isinstance(ap, bool):
        s.additional_properties = ap
    return s


_GENERIC_KEYS = ("type", "title", "description", "default", "nullable")
_EXTENSION_KEYS = (X_PRESERVE, X_EMBEDDED, X_INT_OR_STRING, X_LIST_MAP_KEYS, X_LIST_TYPE, X_MAP_TYPE)


def _nested(d: Obj, errs: list[str]) -> NestedValueValidation:
    """Upstream: newNestedValueValidation"""
    _unsupported(d, errs)
    v = NestedValueValidation()
    v.raw = d
    _value_validation(d, v.vv, errs)
    v.x_validations = _rules(d)
    v.forbidden_generics = {k: d[k] for k in _GENERIC_KEYS if k in d}
    v.forbidden_extensions = {k: d[k] for k in _EXTENSION_KEYS if k in d}
    items = d.get("items")
    if isinstance(items, dict):
        v.items = _nested(items, errs)
    props = d.get("properties")
    if isinstance(props, dict):
        v.properties = {k: _nested(x if isinstance(x, dict) else {}, errs) for k, x in props.items()}
    ap = d.get("additionalProperties")
    if isinstance(ap, dict):
        v.additional_properties = _nested(ap, errs)
    elif ap is True:
        v.additional_properties = NestedValueValidation()
    return v


@contextmanager
def reusing_nodes(s: Structural) -> Iterator[None]:
    """Within the block, structural_from of a dict that s (a root without conversion errors,
    so none of its nodes has any) was built from answers s's node for it, not a new one.
    The dicts must not change meanwhile (a CRD's validation only reads them)."""
    if s.conversion_errors:
        yield
        return
    nodes: dict[int, Structural] = {}
    stack = [s]
    while stack:
        n = stack.pop()
        nodes[id(n.raw)] = n
        stack.extend(n.properties.values())
        if n.items is not None:
            stack.append(n.items)
        if isinstance(n.additional_properties, Structural):
            stack.append(n.additional_properties)
    token = _NODES.set(nodes)
    try:
        yield
    finally:
        _NODES.reset(token)
