"""The declared CEL type of a schema node, as a rule's `self` sees it, with the size bounds the
cost estimator uses.

Upstream: SchemaDeclType (k8s.io/apiserver pkg/cel/common/schemas.go), DeclType with
MaxElements and MinSerializedSize and MaybeAssignTypeName (pkg/cel/types.go), the size
constants of pkg/cel/limits.go, and MaxCardinality (apiextensions-apiserver pkg/apiserver/
schema/cel/model/schemas.go, the unbounded estimates of pkg/cel/common/schemas.go):
- int-or-string is `dyn`; an array is a list and a map (additionalProperties) a map only when
  their items are exposed; an object exposes the properties whose schema is exposed, under
  their escaped names (unknown fields of x-kubernetes-preserve-unknown-fields are not
  exposed); a schema with no type (preserve-unknown-fields alone) is not exposed (None);
- strings of format byte are bytes, date and date-time timestamps, duration durations;
- at the root of a resource (and of an embedded one) apiVersion, kind and metadata (name and
  generateName only, at most 253 and 252 long) are always there;
- the maxLength, maxItems and maxProperties of allOf members bound the node too
  (foldAllOfBounds).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..schema.structural import Structural, ValueValidation
from .values import escape

MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024          # celconfig.MaxRequestSizeBytes
# Upstream: pkg/cel/limits.go
MAX_DURATION_SIZE_JSON = 32
MAX_DATETIME_SIZE_JSON = 32
MIN_DURATION_SIZE_JSON = 3
JSON_DATE_SIZE = 12
MIN_DATETIME_SIZE_JSON = 21
MIN_STRING_SIZE = 2
MIN_BOOL_SIZE = 4
MIN_NUMBER_SIZE = 1

SCALARS = frozenset({"int", "double", "bool", "string", "bytes", "timestamp", "duration", "dyn"})


@dataclass(eq=False, slots=True)
class DeclType:
    """Upstream: DeclType. kind is `object`, `list`, `map` or a scalar of SCALARS; `name` an
    object's type name (MaybeAssignTypeName)."""
    kind: str
    max_elements: int = 0
    min_serialized_size: int = 1
    fields: dict[str, DeclType] = field(default_factory=dict)
    elem: DeclType | None = None
    name: str = "object"

    def key(self) -> str:
        """A canonical text of the type (environments are cached by it)."""
        if self.kind == "object":
            inner = ",".join(f"{k}:{v.key()}" for k, v in sorted(self.fields.items()))
            return f"{self.name}{{{inner}}}"
        if self.kind in ("list", "map"):
            assert self.elem is not None
            return f"{self.kind}({self.elem.key()})"
        return self.kind


def _zero_if_negative(v: int) -> int:
    return max(v, 0)


def schema_decl_type(s: Structural | None, resource_root: bool, depth: int = 0) -> DeclType | None:
    """Upstream: SchemaDeclType — None when the schema is not exposed to CEL."""
    if s is None or depth > 64:
        return None
    vv = s.value_validation
    max_length = _bound(s, "max_length") if s.type == "string" or s.x_int_or_string else None
    if s.x_int_or_string:
        bound = _zero_if_negative(max_length) * 4 if max_length is not None else MAX_REQUEST_SIZE_BYTES - 2
        return DeclType("dyn", bound, 1)
    if resource_root:
        props = dict(s.properties)
        if not _has_type_and_object_meta(s):
            props.update(_type_and_object_meta(s))
    else:
        props = s.properties
    if s.type == "array":
        if s.items is None:
            return None
        items = schema_decl_type(s.items, s.items.x_embedded_resource, depth + 1)
        if items is None:
            return None
        max_items = _bound(s, "max_items")
        if max_items is not None:
            n = _zero_if_negative(max_items)
        else:
            n = (MAX_REQUEST_SIZE_BYTES - 2) // (items.min_serialized_size + 1)
        return DeclType("list", n, 2, elem=items)
    if s.type == "object":
        ap = s.additional_properties_schema
        if ap is not None:
            values = schema_decl_type(ap, ap.x_embedded_resource, depth + 1)
            if values is None:
                return None
            max_properties = _bound(s, "max_properties")
            if max_properties is not None:
                n = _zero_if_negative(max_properties)
            else:
                n = (MAX_REQUEST_SIZE_BYTES - 2) // (values.min_serialized_size + 6)
            return DeclType("map", n, 2, elem=values)
        required = set(vv.required) if vv is not None else set()
        fields: dict[str, DeclType] = {}
        min_size = 2                    # {}
        for name, prop in props.items():
            t = schema_decl_type(prop, prop.x_embedded_resource, depth + 1)
            if t is None:
                continue
            escaped = escape(name)
            if escaped is not None:
                fields[escaped] = t
            if name in required and not prop.has_default:
                min_size += len(name.encode()) + t.min_serialized_size + 4
        return DeclType("object", 0, min_size, fields)
    if s.type == "string":
        return _string(s, max_length)
    if s.type == "boolean":
        return DeclType("bool", 0, MIN_BOOL_SIZE)
    if s.type == "number":
        return DeclType("double", 0, MIN_NUMBER_SIZE)
    if s.type == "integer":
        return DeclType("int", 0, MIN_NUMBER_SIZE)
    return None


def _string(s: Structural, max_length: int | None) -> DeclType:
    fmt = s.value_validation.format if s.value_validation is not None else ""
    per_request = MAX_REQUEST_SIZE_BYTES - 2
    if fmt == "byte":
        return DeclType("bytes", _zero_if_negative(max_length) if max_length is not None else per_request,
                        MIN_STRING_SIZE)
    if fmt == "duration":
        return DeclType("duration", MAX_DURATION_SIZE_JSON, MIN_DURATION_SIZE_JSON)
    if fmt == "date":
        return DeclType("timestamp", JSON_DATE_SIZE, JSON_DATE_SIZE)
    if fmt == "date-time":
        return DeclType("timestamp", MAX_DATETIME_SIZE_JSON, MIN_DATETIME_SIZE_JSON)
    if max_length is not None:
        n = _zero_if_negative(max_length) * 4
    else:
        enum = s.value_validation.enum if s.value_validation is not None else None
        if enum:
            n = max((len(v.encode()) for v in enum if isinstance(v, str)), default=0)
        else:
            n = per_request
    return DeclType("string", n, MIN_STRING_SIZE)


def _has_type_and_object_meta(s: Structural) -> bool:
    """Upstream: WithTypeAndObjectMeta's test — all of kind, apiVersion and metadata.name and
    .generateName already declared with their types."""
    p = s.properties
    meta = p.get("metadata")
    return (p.get("kind") is not None and p["kind"].type == "string"
            and p.get("apiVersion") is not None and p["apiVersion"].type == "string"
            and meta is not None and meta.type == "object"
            and meta.properties.get("name") is not None and meta.properties["name"].type == "string"
            and meta.properties.get("generateName") is not None
            and meta.properties["generateName"].type == "string")


def _bound(s: Structural, attr: str) -> int | None:
    """The node's maxLength, maxItems or maxProperties, or the tightest one of its allOf
    members when that is tighter (upstream: foldAllOfBounds — every member holds, so its bound
    bounds the value; anyOf, oneOf and not are not folded)."""
    vv = s.value_validation
    if vv is None:
        return None
    direct = getattr(vv, attr)
    tightest = _tightest(vv.all_of, attr, 0)
    if tightest is None or (direct is not None and direct <= tightest):
        return direct
    return tightest


def _tightest(all_of: list[Any], attr: str, depth: int) -> int | None:
    best: int | None = None
    if depth > 16:
        return None
    for member in all_of:
        for bound in (getattr(member.vv, attr), _tightest(member.vv.all_of, attr, depth + 1)):
            if bound is not None and (best is None or bound < best):
                best = bound
    return best


# Upstream: DNS1123SubdomainMaxLength, metadata.name's bound (generateName's is one less: the
# generated suffix is at least one byte)
NAME_MAX_LENGTH = 253


def _string_schema(max_length: int | None = None) -> Structural:
    s = Structural()
    s.type = "string"
    if max_length is not None:
        s.value_validation = ValueValidation()
        s.value_validation.max_length = max_length
    return s


def _capped(existing: Structural | None, max_length: int) -> Structural:
    """Upstream: cappedLengthStringType."""
    vv = existing.value_validation if existing is not None else None
    if vv is not None and vv.max_length is not None and vv.max_length < max_length:
        max_length = vv.max_length
    return _string_schema(max_length)


def _type_and_object_meta(s: Structural) -> dict[str, Structural]:
    """Upstream: WithTypeAndObjectMeta's properties — apiVersion, kind, and metadata with name
    and generateName, their lengths capped."""
    meta = s.properties.get("metadata")
    props = meta.properties if meta is not None else {}
    m = Structural()
    m.type = "object"
    m.properties = {"name": _capped(props.get("name"), NAME_MAX_LENGTH),
                    "generateName": _capped(props.get("generateName"), NAME_MAX_LENGTH - 1)}
    return {"kind": _string_schema(), "apiVersion": _string_schema(), "metadata": m}


def assign_type_name(t: DeclType, name: str) -> DeclType:
    """Upstream: MaybeAssignTypeName — objects named by their path from the rule's node
    (`selfType0.spec`, a list's items `<name>.@idx`, a map's values `<name>.@elem`)."""
    if t.kind == "object":
        if t.name != "object":
            name = t.name
        fields = {k: assign_type_name(v, f"{name}.{k}") for k, v in t.fields.items()}
        return DeclType("object", t.max_elements, t.min_serialized_size, fields, None, name)
    if t.kind == "list" and t.elem is not None:
        return DeclType("list", t.max_elements, t.min_serialized_size, elem=assign_type_name(t.elem, f"{name}.@idx"))
    if t.kind == "map" and t.elem is not None:
        return DeclType("map", t.max_elements, t.min_serialized_size, elem=assign_type_name(t.elem, f"{name}.@elem"))
    return t


def max_cardinality(min_size: int) -> int:
    """Upstream: MaxCardinality — how many values of this smallest serialized size a request
    can hold (one comma between them): how often a rule may run when a list or map above it
    is unbounded."""
    return MAX_REQUEST_SIZE_BYTES // (min_size + 1)
