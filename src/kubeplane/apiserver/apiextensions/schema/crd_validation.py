"""What upstream checks on a CRD version's `schema.openAPIV3Schema` when the CRD is written.

Upstream (apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go):
validateCustomResourceDefinitionValidation — the root rules when the status subresource is on,
`nullable` at the root, the structural rules, then the defaults (ValidateDefaults, defaulting/
validation.go) — and ValidateCustomResourceDefinitionOpenAPISchema with specStandardValidatorV3
(the fields a CRD schema may not use, list/map types, list-map keys, x-kubernetes-validations'
static rules). The options are those of a CRD created through apiextensions.k8s.io/v1
(defaults allowed, structural and pruned defaults required, atomic set items, valid types).

CEL rules are compiled by apiextensions.celvalidation, through hooks: `CEL_HOOK`, when set, is
called with (schema dict, path, the path of the uncorrelatable list above it or None) for each
schema carrying x-kubernetes-validations once the schema itself is valid, and returns its field
errors; `CEL_DEFAULTS_HOOK` checks a default against the rules of its schema.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError, JSONValue

from . import objectmeta
from .fieldpath import valid_field_path
from .openapi import SchemaValidator
from .pruning import prune
from .structural import (X_EMBEDDED, X_LIST_MAP_KEYS, X_LIST_TYPE, X_MAP_TYPE, X_PRESERVE,
                         X_VALIDATIONS, Structural, structural_from, reusing_nodes)
from .validation import child, index, key, validate_structural

Obj = dict[str, Any]

CEL_HOOK: Callable[[Obj, str, str | None], list[FieldError]] | None = None
# (openAPIV3Schema, its path) -> the rules' cost errors (per rule and the CRD's total)
CEL_COST_HOOK: Callable[[Obj, str], list[FieldError]] | None = None
# (schema, default, its path, resource root) -> the default's errors under the schema's rules
CEL_DEFAULTS_HOOK: Callable[[Structural, Any, str, bool], list[FieldError]] | None = None

OPENAPI_V3_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
SUPPORTED_VALIDATION_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid",
                                "FieldValueRequired"]
META_FIELDS = ("metadata", "kind", "apiVersion")

# JSONSchemaProps' fields in Go's order (json name, Go name), for the status-subresource rule.
_FIELDS = (("id", "ID"), ("$schema", "Schema"), ("$ref", "Ref"), ("description", "Description"),
           ("type", "Type"), ("nullable", "Nullable"), ("format", "Format"), ("title", "Title"),
           ("default", "Default"), ("maximum", "Maximum"), ("exclusiveMaximum", "ExclusiveMaximum"),
           ("minimum", "Minimum"), ("exclusiveMinimum", "ExclusiveMinimum"), ("maxLength", "MaxLength"),
           ("minLength", "MinLength"), ("pattern", "Pattern"), ("maxItems", "MaxItems"),
           ("minItems", "MinItems"), ("uniqueItems", "UniqueItems"), ("multipleOf", "MultipleOf"),
           ("enum", "Enum"), ("maxProperties", "MaxProperties"), ("minProperties", "MinProperties"),
           ("required", "Required"), ("items", "Items"), ("allOf", "AllOf"), ("oneOf", "OneOf"),
           ("anyOf", "AnyOf"), ("not", "Not"), ("properties", "Properties"),
           ("additionalProperties", "AdditionalProperties"), ("patternProperties", "PatternProperties"),
           ("dependencies", "Dependencies"), ("additionalItems", "AdditionalItems"),
           ("definitions", "Definitions"), ("externalDocs", "ExternalDocs"), ("example", "Example"),
           (X_PRESERVE, "XPreserveUnknownFields"), (X_EMBEDDED, "XEmbeddedResource"),
           ("x-kubernetes-int-or-string", "XIntOrString"), (X_LIST_MAP_KEYS, "XListMapKeys"),
           (X_LIST_TYPE, "XListType"), (X_MAP_TYPE, "XMapType"), (X_VALIDATIONS, "XValidations"))
ALLOWED_AT_ROOT_WITH_STATUS = ["Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum",
                               "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems",
                               "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs",
                               "Example", "XPreserveUnknownFields", "XValidations"]


@dataclass(frozen=True)
class ValidationOptions:
    """Upstream: validationOptions — what a write of the CRD requires. The defaults are a
    create through apiextensions.k8s.io/v1; an update relaxes a rule the stored CRD already
    breaks (requireStructuralSchema(oldSpec) and friends), which is the caller's to decide."""
    allow_defaults: bool = True
    require_structural_schema: bool = True
    require_pruned_defaults: bool = True
    require_atomic_set_type: bool = True
    require_map_list_keys_map_set_validation: bool = True
    require_valid_property_type: bool = True


def validate_crd_schema(crd_version_schema: Obj | None, path: str, status_enabled: bool = False,
                        opts: ValidationOptions | None = None) -> list[FieldError]:
    """Upstream: validateCustomResourceDefinitionValidation. `crd_version_schema` is a version's
    `schema` (CustomResourceValidation: {"openAPIV3Schema": ...}) and `path` its field path
    (`spec.versions[0].schema`); `status_enabled` says the version has the status subresource."""
    opts = opts or ValidationOptions()
    if not isinstance(crd_version_schema, dict):
        return []
    schema = crd_version_schema.get("openAPIV3Schema")
    if not isinstance(schema, dict):
        return []
    sp = child(path, "openAPIV3Schema")
    errs: list[FieldError] = []
    if status_enabled:
        errs += _status_root(schema, path)
    if schema.get("nullable") is True:
        errs.append(errors.forbidden(child(path, "openAPIV3Schema.nullable"), "nullable cannot be true at the root"))
    init_errs: list[FieldError] = []
    schema_ok = False
    s: Structural | None = None
    if opts.require_structural_schema:
        s = structural_from(schema)
        if s.conversion_errors:
            init_errs.append(errors.invalid(sp, "", s.conversion_errors[0]))
        elif structural_errs := validate_structural(s, sp):
            errs += structural_errs
        elif default_errs := validate_defaults(sp, s, opts.require_pruned_defaults):
            errs += default_errs
        else:
            schema_ok = True
    ssv = _SSV(allow_defaults=opts.allow_defaults, require_valid_property_type=opts.require_valid_property_type)
    with reusing_nodes(s) if s is not None else nullcontext():     # the CEL checks' structural schemas
        errs += validate_openapi_schema(schema, sp, ssv, True, opts, schema_ok)
        if schema_ok and CEL_COST_HOOK is not None:
            errs += CEL_COST_HOOK(schema, sp)
    if not errs:
        errs += init_errs
    return errs


def _is_zero(v: Any) -> bool:
    return v is None or v is False or v == "" or v == [] or v == {} or v == 0 and not isinstance(v, bool)


def _status_root(schema: Obj, path: str) -> list[FieldError]:
    """With the status subresource only fields that survive extracting properties[status]
    may sit at the root."""
    for name, go_name in _FIELDS:
        if name not in schema or _is_zero(schema[name]):
            continue
        if go_name == "Type":
            if schema["type"] != "object":
                return [errors.invalid(child(path, "openAPIV3Schema.type"), schema["type"],
                                       'only "object" is allowed as the type at the root of the schema if the '
                                       'status subresource is enabled')]
            continue
        if go_name not in ALLOWED_AT_ROOT_WITH_STATUS:
            allowed = "[" + " ".join(ALLOWED_AT_ROOT_WITH_STATUS) + "]"
            return [errors.invalid(child(path, "openAPIV3Schema"), JSONValue(schema),
                                   f"only {allowed} fields are allowed at the root of the schema if the status "
                                   "subresource is enabled")]
    return []


# --- defaults ------------------------------------------------------------------------------


def validate_defaults(path: str, s: Structural, require_pruned: bool = True) -> list[FieldError]:
    """Upstream: ValidateDefaults(pth, s, isResourceRoot=true, requirePrunedDefaults):
    every default (in properties and items, not in additionalProperties) is pruned-equal to
    itself, valid embedded metadata and valid against its own schema."""
    return _defaults(path, s, s, [], True, False, require_pruned)


def _defaults(path: str, s: Structural | None, root: Structural, where: list[str | None], is_root: bool,
              inside_meta: bool, require_pruned: bool) -> list[FieldError]:
    """`root` is the resource the default sits in (the CR or an embedded resource) and `where`
    the steps from it (a property name, or None for an array item): a default inside metadata
    is checked in the object it would make (upstream's SurroundingObjectFunc)."""
    if s is None:
        return []
    embedded = s.x_embedded_resource or is_root
    if embedded:
        inside_meta, root, where = False, s, []
    errs: list[FieldError] = []
    if s.has_default:
        dp = child(path, "default")
        d = s.default
        if inside_meta:
            meta_errs = objectmeta.validate("", _surrounding(where, d), root, True)
            if meta_errs:
                errs.append(errors.invalid(dp, d, f"must result in valid metadata: {errors.aggregate(meta_errs)}"))
            else:
                errs += SchemaValidator(s.raw).validate(d, dp) or _cel_default(s, d, dp, s is root)
        else:
            if require_pruned:
                pruned = _copy_json(d)
                prune(pruned, s, embedded)
                if pruned != d:
                    errs.append(errors.invalid(dp, d, "must not have unknown fields"))
            meta_errs = objectmeta.validate(dp, d, s, embedded)
            errs += meta_errs or SchemaValidator(s.raw).validate(d, dp) or _cel_default(s, d, dp, s is root)
    errs += _defaults(child(path, "items"), s.items, root, where + [None], False, inside_meta, require_pruned)
    for k, sub in s.properties.items():
        errs += _defaults(key(child(path, "properties"), k), sub, root, where + [k], False,
                          inside_meta or (embedded and k in META_FIELDS), require_pruned)
    return errs


def _cel_default(s: Structural, d: Any, dp: str, resource_root: bool) -> list[FieldError]:
    """Upstream: ValidateDefaults runs the schema's CEL rules on a default the schema accepts."""
    return CEL_DEFAULTS_HOOK(s, d, dp, resource_root) if CEL_DEFAULTS_HOOK is not None else []


def _surrounding(where: list[str | None], value: Any) -> Obj:
    """The object a default makes at `where` in a resource typed validation/v1 Validation."""
    obj: Obj = {"apiVersion": "validation/v1", "kind": "Validation"}
    if not where:
        return obj
    node: Any = obj
    for step, nxt in zip(where, where[1:] + ["<value>"]):
        leaf = value if nxt == "<value>" else ({} if isinstance(nxt, str) else [])
        if step is None:
            node.append(_copy_json(leaf))
            node = node[-1]
        else:
            node[step] = _copy_json(leaf)
            node = node[step]
    return obj


def _copy_json(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy_json(x) for x in v]
    return v


# --- ValidateCustomResourceDefinitionOpenAPISchema -----------------------------------------


@dataclass(frozen=True)
class _SSV:
    """specStandardValidatorV3"""
    allow_defaults: bool = True
    disallow_defaults_reason: str = ""
    inside_resource_meta: bool = False
    require_valid_property_type: bool = True
    uncorrelatable: str | None = None     # forbidOldSelfValidations: the list above whose items lack an identity

    def with_forbidden_defaults(self, reason: str) -> _SSV:
        return replace(self, allow_defaults=False, disallow_defaults_reason=reason)


def _schema_or_none(v: Any) -> Obj | None:
    return v if isinstance(v, dict) else None


def _str(d: Obj, k: str) -> str:
    v = d.get(k)
    return v if isinstance(v, str) else ""


def _list(d: Obj, k: str) -> list[Any]:
    v = d.get(k)
    return v if isinstance(v, list) else []


def _dict(d: Obj, k: str) -> Obj:
    v = d.get(k)
    return v if isinstance(v, dict) else {}


def validate_openapi_schema(schema: Obj | None, p: str, ssv: _SSV, is_root: bool, opts: ValidationOptions,
                            cel_ok: bool = False) -> list[FieldError]:
    """Upstream: ValidateCustomResourceDefinitionOpenAPISchema"""
    if schema is None:
        return []
    errs = _standard(schema, p, ssv)
    if schema.get("uniqueItems") is True:
        errs.append(errors.forbidden(child(p, "uniqueItems"),
                                     "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    props = _dict(schema, "properties")
    ap = schema.get("additionalProperties")
    if ap is not None:
        if props and (ap is False or isinstance(ap, dict)):
            errs.append(errors.forbidden(child(p, "additionalProperties"),
                                         "additionalProperties and properties are mutual exclusive"))
        sub = ssv.with_forbidden_defaults("inside additionalProperties applying to object metadata") \
            if ssv.inside_resource_meta else ssv
        errs += validate_openapi_schema(_schema_or_none(ap), child(p, "additionalProperties"), sub, False, opts, cel_ok)
    for name, prop in props.items():
        sub = ssv
        if (is_root or schema.get(X_EMBEDDED) is True) and name in META_FIELDS:
            sub = replace(sub, inside_resource_meta=True)
            if is_root:
                sub = sub.with_forbidden_defaults(f"in top-level {name}")
        errs += validate_openapi_schema(_schema_or_none(prop) or {}, key(child(p, "properties"), name), sub, False,
                                        opts, cel_ok)
    errs += validate_openapi_schema(_schema_or_none(schema.get("not")), child(p, "not"), ssv, False, opts)
    for junctor in ("allOf", "oneOf", "anyOf"):
        for i, x in enumerate(schema.get(junctor) or () if isinstance(schema.get(junctor), list) else ()):
            errs += validate_openapi_schema(_schema_or_none(x) or {}, index(child(p, junctor), i), ssv, False, opts)
    defs = schema.get("definitions")
    for name, x in (defs.items() if isinstance(defs, dict) else ()):
        errs += validate_openapi_schema(_schema_or_none(x) or {}, key(child(p, "definitions"), name), ssv, False, opts)
    items = schema.get("items")
    if isinstance(items, dict):
        sub = ssv if schema.get(X_LIST_TYPE) == "map" or ssv.uncorrelatable else replace(ssv, uncorrelatable=p)
        errs += validate_openapi_schema(items, child(p, "items"), sub, False, opts, cel_ok)
    elif isinstance(items, list):
        for i, x in enumerate(items):
            errs += validate_openapi_schema(_schema_or_none(x) or {}, index(child(p, "items"), i), ssv, False, opts)
    deps = schema.get("dependencies")
    for name, x in (deps.items() if isinstance(deps, dict) else ()):
        errs += validate_openapi_schema(_schema_or_none(x), key(child(p, "dependencies"), name), ssv, False, opts)
    if schema.get(X_PRESERVE) is False:
        errs.append(errors.invalid(child(p, X_PRESERVE), False, "must be true or undefined"))
    errs += _map_and_list_types(schema, p, opts.require_atomic_set_type)
    if opts.require_map_list_keys_map_set_validation:
        errs += _map_list_keys_map_set(schema, p)
    rules = schema.get(X_VALIDATIONS)
    if isinstance(rules, list) and rules:
        rule_errs = _validation_rules(rules, p, schema)
        errs += rule_errs
        if not errs and cel_ok and CEL_HOOK is not None:
            errs += CEL_HOOK(schema, p, ssv.uncorrelatable)
    return errs


def _standard(schema: Obj, p: str, ssv: _SSV) -> list[FieldError]:
    """Upstream: specStandardValidatorV3.validate"""
    errs: list[FieldError] = []
    t = schema.get("type")
    if ssv.require_valid_property_type and isinstance(t, str) and t and t not in OPENAPI_V3_TYPES:
        errs.append(errors.not_supported(child(p, "type"), t, OPENAPI_V3_TYPES))
    if schema.get("default") is not None and not ssv.allow_defaults:
        detail = "must not be set" + (f" {ssv.disallow_defaults_reason}" if ssv.disallow_defaults_reason else "")
        errs.append(errors.forbidden(child(p, "default"), detail))
    if schema.get("id"):
        errs.append(errors.forbidden(child(p, "id"), "id is not supported"))
    if schema.get("additionalItems") is not None:
        errs.append(errors.forbidden(child(p, "additionalItems"), "additionalItems is not supported"))
    if schema.get("patternProperties"):
        errs.append(errors.forbidden(child(p, "patternProperties"), "patternProperties is not supported"))
    if schema.get("definitions"):
        errs.append(errors.forbidden(child(p, "definitions"), "definitions is not supported"))
    if schema.get("dependencies") is not None:
        errs.append(errors.forbidden(child(p, "dependencies"), "dependencies is not supported"))
    if schema.get("$ref") is not None:
        errs.append(errors.forbidden(child(p, "$ref"), "$ref is not supported"))
    if t == "null":
        errs.append(errors.forbidden(child(p, "type"), "type cannot be set to null, use nullable as an alternative"))
    if isinstance(schema.get("items"), list) and schema["items"]:
        errs.append(errors.forbidden(child(p, "items"), "items must be a schema object and not an array"))
    if ssv.inside_resource_meta and schema.get(X_EMBEDDED) is True:
        errs.append(errors.forbidden(child(p, X_EMBEDDED), "must not be used inside of resource meta"))
    return errs


def _map_and_list_types(schema: Obj, p: str, require_atomic_set_type: bool) -> list[FieldError]:
    """x-kubernetes-map-type, x-kubernetes-list-type and x-kubernetes-list-map-keys."""
    errs: list[FieldError] = []
    t = _str(schema, "type")
    mt, lt = schema.get(X_MAP_TYPE), schema.get(X_LIST_TYPE)
    keys = _list(schema, X_LIST_MAP_KEYS)
    items = schema.get("items")
    item = items if isinstance(items, dict) else None
    tp = child(p, "type")
    if mt is not None and t != "object":
        msg = "must be object if x-kubernetes-map-type is specified"
        errs.append(errors.required(tp, msg) if not t else errors.invalid(tp, t, msg))
    if mt is not None and mt not in ("atomic", "granular"):
        errs.append(errors.not_supported(child(p, X_MAP_TYPE), mt, ["atomic", "granular"]))
    if lt is not None and t != "array":
        msg = "must be array if x-kubernetes-list-type is specified"
        errs.append(errors.required(tp, msg) if not t else errors.invalid(tp, t, msg))
    elif require_atomic_set_type and lt == "set" and item is not None:
        it = item.get("type")
        if it == "array" and item.get(X_LIST_TYPE) is not None and item.get(X_LIST_TYPE) != "atomic":
            errs.append(errors.invalid(child(child(p, "items"), X_LIST_TYPE), item.get(X_LIST_TYPE),
                                       "must be atomic as item of a list with x-kubernetes-list-type=set"))
        elif it == "object" and item.get(X_MAP_TYPE) != "atomic":
            errs.append(errors.invalid(child(child(p, "items"), X_MAP_TYPE), item.get(X_LIST_TYPE),
                                       "must be atomic as item of a list with x-kubernetes-list-type=set"))
    if lt is not None and lt not in ("atomic", "set", "map"):
        errs.append(errors.not_supported(child(p, X_LIST_TYPE), lt, ["atomic", "set", "map"]))
    if keys:
        if lt is None:
            errs.append(errors.required(child(p, X_LIST_TYPE), "must be map if x-kubernetes-list-map-keys is non-empty"))
        elif lt != "map":
            errs.append(errors.invalid(child(p, X_LIST_TYPE), lt, "must be map if x-kubernetes-list-map-keys is non-empty"))
    if lt == "map":
        errs += _list_map(schema, p, keys, items)
    return errs


def _list_map(schema: Obj, p: str, keys: list[Any], items: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    if not keys:
        errs.append(errors.required(child(p, X_LIST_MAP_KEYS), "must not be empty if x-kubernetes-list-type is map"))
    if items is None:
        errs.append(errors.required(child(p, "items"), "must have a schema if x-kubernetes-list-type is map"))
    elif not isinstance(items, dict):
        errs.append(errors.invalid(child(p, "items"), items, "must only have a single schema if x-kubernetes-list-type is map"))
    elif items.get("type") != "object":
        errs.append(errors.invalid(child(child(p, "items"), "type"), items.get("type") or "",
                                   "must be object if parent array's x-kubernetes-list-type is map"))
    else:
        props = _dict(items, "properties")
        seen: set[Any] = set()
        for k in keys:
            prop = props.get(k) if isinstance(k, str) else None
            if prop is not None:
                if isinstance(prop, dict) and prop.get("type") in ("array", "object"):
                    errs.append(errors.invalid(child(key(child(child(p, "items"), "properties"), k), "type"), "object",
                                               "must be a scalar type if parent array's x-kubernetes-list-type is map"))
            else:
                errs.append(errors.invalid(child(p, X_LIST_MAP_KEYS), keys, "entries must all be names of item properties"))
            if k in seen:
                errs.append(errors.invalid(child(p, X_LIST_MAP_KEYS), keys, "must not contain duplicate entries"))
            seen.add(k)
    return errs


def _map_list_keys_map_set(schema: Obj, p: str) -> list[FieldError]:
    """Upstream: validateMapListKeysMapSet — set and map items not nullable; map keys required
    or defaulted, and not nullable."""
    item = schema.get("items")
    lt = schema.get(X_LIST_TYPE)
    if not isinstance(item, dict) or lt not in ("set", "map"):
        return []
    errs: list[FieldError] = []
    ip = child(p, "items")
    if item.get("nullable") is True:
        errs.append(errors.forbidden(child(ip, "nullable"), f"cannot be nullable when x-kubernetes-list-type is {lt}"))
    if lt == "map":
        required = {r for r in _list(item, "required") if isinstance(r, str)}
        props = _dict(item, "properties")
        keys = _list(schema, X_LIST_MAP_KEYS)
        for k in keys:
            prop = props.get(k) if isinstance(k, str) else None
            if not isinstance(prop, dict):
                continue
            kp = key(child(ip, "properties"), k)
            if k not in required and prop.get("default") is None:
                errs.append(errors.required(child(kp, "default"), "this property is in x-kubernetes-list-map-keys, "
                                                                  "so it must have a default or be a required property"))
            if prop.get("nullable") is True:
                errs.append(errors.forbidden(child(kp, "nullable"),
                                             "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
    return errs


def _has_newlines(s: str) -> bool:
    return "\n" in s or "\r" in s


def _path_valid(schema: Obj, path: str) -> bool:
    """Upstream: pathValid (a schema that does not convert is someone else's error)."""
    s = structural_from(schema)
    if s.conversion_errors:
        return True
    try:
        valid_field_path(path, s)
    except ValueError:
        return False
    return True


def _validation_rules(rules: list[Any], p: str, schema: Obj) -> list[FieldError]:
    """The static checks of x-kubernetes-validations (compiling the rules is CEL's part)."""
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            rule = {}
        rp = index(child(p, X_VALIDATIONS), i)
        text, msg, msg_expr = _str(rule, "rule"), _str(rule, "message"), _str(rule, "messageExpression")
        if not text.strip():
            errs.append(errors.required(child(rp, "rule"), "rule is not specified"))
        elif msg and not msg.strip():
            errs.append(errors.invalid(child(rp, "message"), msg, "must be non-empty if specified"))
        elif _has_newlines(msg.strip()):
            errs.append(errors.invalid(child(rp, "message"), msg, "must not contain line breaks"))
        elif _has_newlines(text.strip()) and not msg.strip():
            errs.append(errors.required(child(rp, "message"), "message must be specified if rule contains line breaks"))
        if msg_expr and not msg_expr.strip():
            errs.append(errors.required(child(rp, "messageExpression"), "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in SUPPORTED_VALIDATION_REASONS:
            errs.append(errors.not_supported(child(rp, "reason"), reason, SUPPORTED_VALIDATION_REASONS))
        fp = _str(rule, "fieldPath")
        if fp and not fp.strip():
            errs.append(errors.invalid(child(rp, "fieldPath"), fp, "must be non-empty if specified"))
        if _has_newlines(fp):
            errs.append(errors.invalid(child(rp, "fieldPath"), fp, "must not contain line breaks"))
        if fp and not _path_valid(schema, fp):
            errs.append(errors.invalid(child(rp, "fieldPath"), fp, "must be a valid path"))
    return errs
