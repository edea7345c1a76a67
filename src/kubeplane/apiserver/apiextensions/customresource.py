"""A CRD's served versions as registry definitions: custom objects through the generic store.

Upstream: crdHandler.getOrCreateServingInfoFor (apiserver/customresource_handler.go) and
pkg/registry/customresource (strategy.go, validator.go, tableconvertor). Each served version
becomes a ResourceDefinition named as status.acceptedNames says (kind, plural, singular,
shortNames, categories), stored under upstream's key /registry/<group>/<plural>/[<ns>/]<name>
in the storage version (conversion None: the apiVersion is rewritten, both ways).

The write pipeline is the built-in kinds' (store.py): the definition's defaulter prunes and
defaults with the version's structural schema, its validators check the ObjectMeta as
upstream's customResourceStrategy does, then the object against the schema (schema.validate).
Bodies decode against a definition made for the version (`schema_definition`): apiVersion,
kind, a typed ObjectMeta and the schema's own top-level properties.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import orjson

from ...api import errors
from ...api.errors import FieldError
from ...api.resources import STATUS, Subresource
from ...api.schema import definitions
from ...api.validation import meta
from ...api.validation.names import name_is_dns_subdomain
from ..openapi import CUSTOM_V3
from ..registry.definition import Column, Obj, ResourceDefinition, Row
from ..registry.strategy import Strategy
from ..tables.printers import translate_timestamp_since
from . import celvalidation, schema
from .selectable import field_selectors
from .scale import CUSTOM_SCALE, ScalePaths, validate_scale_spec, validate_scale_status

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."

celvalidation.install()      # custom objects run their x-kubernetes-validations
_serial = itertools.count(1)


# --- the strategy -----------------------------------------------------------------------------

class CustomResourceStrategy(Strategy):
    """Upstream: customResourceStrategy — generation 1 on create and +1 on any change outside
    metadata (status included unless a status subresource splits it off); /status writes
    change nothing but status."""

    def __init__(self, group: str, plural: str, has_status: bool, scale: ScalePaths | None = None) -> None:
        self.group, self.plural, self.has_status = group, plural, has_status
        self.scale = scale                  # the scale subresource's paths (apiextensions/scale.py)
        self.terminating = False            # the CRD is being deleted (set by the controller)
        self.sets_generation = True

    def prepare_for_create(self, obj: Obj) -> None:
        if self.terminating:
            # Upstream: crdHandler.serveResource refuses a create while the CRD terminates.
            err = errors.MethodNotSupported(self.group, self.plural, "create")
            err.message = "create not allowed while custom resource definition is terminating"
            raise err
        super().prepare_for_create(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.keep_stored_status(new, old)
        gen = old["metadata"].get("generation", 0)
        changed = _without_metadata(new) != _without_metadata(old)
        new["metadata"]["generation"] = gen + 1 if changed else gen

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """Upstream: statusStrategy.PrepareForUpdate — the old object with the new status (and
        the managedFields the status write recorded)."""
        status, has = new.get("status"), "status" in new
        managed = new["metadata"].get("managedFields")
        keep = {k: v for k, v in old.items() if k != "status"}
        new.clear()
        new.update(keep)
        new["metadata"] = dict(old["metadata"])
        if managed is not None:
            new["metadata"]["managedFields"] = managed
        if has:
            new["status"] = status


def _without_metadata(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k != "metadata"}


# --- validation -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Validator:
    """Upstream: customResourceStrategy.Validate/ValidateUpdate and customResourceValidator:
    ObjectMeta (names as DNS subdomains), then the object against the version's schema, then
    the scale subresource's replicas and selector (ValidateScaleSpec, ValidateScaleStatus)."""
    namespaced: bool
    structural: schema.Structural
    scale: ScalePaths | None = None
    storage: bool = True            # the storage version (its defaults are the store's: `default`)
    has_defaults: bool = True       # whether the schema declares any (else defaulting is a no-op)

    def validate(self, obj: Obj) -> list[FieldError]:
        errs = _generic_meta(meta.validate_object_meta(_dict(obj.get("metadata")), self.namespaced,
                                                       name_is_dns_subdomain))
        errs += schema.validate(self.structural, obj)
        return errs + validate_scale_spec(obj, self.scale) + validate_scale_status(obj, self.scale)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errs = _generic_meta(meta.validate_object_meta_update(_dict(new.get("metadata")), _dict(old.get("metadata"))))
        errs += schema.validate_update(self.structural, new, old)      # ratcheting, as upstream
        return errs + validate_scale_spec(new, self.scale) + validate_scale_status(new, self.scale)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errs = meta.validate_object_meta_update(_dict(new.get("metadata")), _dict(old.get("metadata")))
        errs += schema.validate_update(self.structural, new, old)
        return errs + validate_scale_status(new, self.scale)

    def coerce(self, obj: Obj) -> list[str]:
        """What upstream's decoder does to a custom object in the version it is sent in
        (schemaCoercingDecoder, unstructuredSchemaCoercer.apply, then the codec's defaulter):
        prune the fields the schema does not know, drop nulls it does not allow, default;
        returns the unknown fields as the strict decoding errors name them. The storage
        version's defaults are left to the store (the definition's defaulter, `default`)."""
        unknown = schema.prune(obj, self.structural)
        schema.prune_non_nullable_nulls_without_defaults(obj, self.structural)
        if not self.storage and self.has_defaults:
            schema.default(obj, self.structural)
        return [f'unknown field "{p}"' for p in unknown]

    def default(self, obj: Obj) -> None:
        """Defaulting, then pruning (upstream: the codec's schema defaulter, then the decoder's
        pruning and its dropping of nulls where the schema allows none)."""
        if self.has_defaults:
            schema.default(obj, self.structural)
        schema.prune(obj, self.structural)
        schema.prune_non_nullable_nulls_without_defaults(obj, self.structural)


def _dict(v: Any) -> Obj:
    return v if isinstance(v, dict) else {}


# The kube finalizer-name rule of built-in kinds (api/validation/meta.py validate_finalizers);
# a custom object's finalizers only need to be qualified names, and get a warning instead.
KUBE_FINALIZER_RULE = "name is neither a standard finalizer name nor is it fully qualified"


def _generic_meta(errs: list[FieldError]) -> list[FieldError]:
    """apimachinery's ObjectMeta validation, which customResourceStrategy uses: the core
    flavour's kube finalizer-name errors left out. Upstream: ValidateObjectMetaAccessor."""
    return [e for e in errs if e.detail != KUBE_FINALIZER_RULE]


def finalizer_warnings(obj: Obj) -> list[str]:
    """Upstream: customResourceStrategy.WarningsOnCreate (generateWarningsFromObj,
    validateKubeFinalizerName): a finalizer without a path is not refused, only warned of."""
    out = []
    for f in sorted(set(_dict(obj.get("metadata")).get("finalizers") or [])):
        if isinstance(f, str) and "/" not in f and f not in meta.STANDARD_FINALIZERS:
            out.append(f"metadata.finalizers: {errors.go_quote(f)}: prefer a domain-qualified finalizer name "
                       "including a path (/) to avoid accidental conflicts with other finalizer writers")
    return out


# --- tables -----------------------------------------------------------------------------------

def _columns(version: Obj) -> tuple[list[Column], list[tuple[str, str]]]:
    """The Table columns and, per custom column, (type, jsonPath). Upstream: tableconvertor.New,
    with the Age column when the version has no additionalPrinterColumns."""
    name_doc = definitions()[_META + "ObjectMeta"]["properties"]["name"].get("description", "")
    age_doc = definitions()[_META + "ObjectMeta"]["properties"]["creationTimestamp"].get("description", "")
    custom = [c for c in version.get("additionalPrinterColumns") or [] if isinstance(c, dict)]
    if not custom:
        custom = [{"name": "Age", "type": "date", "description": age_doc, "jsonPath": ".metadata.creationTimestamp"}]
    cols = [{"name": "Name", "type": "string", "format": "name", "description": name_doc, "priority": 0}]
    cols += [{"name": c.get("name", ""), "type": c.get("type", ""), "format": c.get("format", ""),
              "description": c.get("description", ""), "priority": int(c.get("priority") or 0)} for c in custom]
    return cols, [(str(c.get("type", "")), str(c.get("jsonPath", ""))) for c in custom]


def _lookup(obj: Any, path: str) -> tuple[Any, bool]:
    """A simple JSON path (.a.b) in obj: (value, found)."""
    for part in path.strip(".").split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None, False
        obj = obj[part]
    return obj, True


def _cell(type_: str, value: Any, now: float) -> Any:
    """Upstream: cellForJSONValue, and the jsonpath printer for string columns."""
    if type_ == "string":
        return value if isinstance(value, str) else _go_print(value)
    if type_ == "integer":
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if type_ == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if type_ == "boolean":
        return value if isinstance(value, bool) else None
    if type_ == "date" and isinstance(value, str):
        try:
            return translate_timestamp_since(value, now)
        except ValueError:
            return None
    return None


def _go_print(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def _printer(paths: list[tuple[str, str]]) -> Any:
    def print_row(obj: Obj, now: float) -> Row:
        cells: list[Any] = [_dict(obj.get("metadata")).get("name", "")]
        for type_, path in paths:
            value, found = _lookup(obj, path)
            cells.append(_cell(type_, value, now) if found and value is not None else None)
        return cells, None
    return print_row


# --- the definitions --------------------------------------------------------------------------

# Upstream: swaggerPartialObjectMetadataDescriptions / ...ListDescriptions (the OpenAPI builder's
# metadata descriptions, controller/openapi/builder/builder.go).
_OBJECT_META_DOC = ("Standard object's metadata. More info: "
                    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
_LIST_META_DOC = ("Standard list metadata. More info: "
                  "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")


def _type_meta() -> Obj:
    """apiVersion and kind with TypeMeta's descriptions. Upstream: addTypeMetaProperties (builder.go)"""
    typed = definitions()["io.k8s.api.core.v1.ConfigMap"]["properties"]
    return {p: {"description": typed[p].get("description", ""), "type": "string"} for p in ("apiVersion", "kind")}


def schema_definition(group: str, version: str, kind: str, root: Obj, plural: str = "") -> str:
    """Register the schema definitions a served version decodes against and OpenAPI publishes
    (the kind and its list); returns the kind's definition name. A new name per call: the
    decoders and patchers cache by name, and a CRD's schema may change."""
    name = f"custom.{next(_serial)}.{group}.{version}.{kind}"
    props = {k: v for k, v in _dict(root.get("properties")).items() if k not in ("apiVersion", "kind", "metadata")}
    node: Obj = {"description": root.get("description", ""), "type": "object",
                 "properties": {**_type_meta(),
                                "metadata": {"$ref": f"#/$defs/{_META}ObjectMeta", "description": _OBJECT_META_DOC},
                                **props},
                 "x-kubernetes-group-version-kind": [{"group": group, "kind": kind, "version": version}]}
    if root.get("x-kubernetes-preserve-unknown-fields"):
        node = {k: v for k, v in node.items() if k != "properties"}
        node["x-kubernetes-preserve-unknown-fields"] = True
    defs = definitions()
    defs[name] = node
    CUSTOM_V3[name] = openapi_v3(group, version, kind, root)
    defs[name + "List"] = {
        "description": f"{kind}List is a list of {kind}",
        "type": "object",
        "properties": {**_type_meta(),
                       "metadata": {"$ref": f"#/$defs/{_META}ListMeta", "description": _LIST_META_DOC},
                       "items": {"type": "array", "items": {"$ref": f"#/$defs/{name}"},
                                 "description": f"List of {plural}. More info: "
                                                "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                                                "api-conventions.md"}},
        "required": ["items"],
        "x-kubernetes-group-version-kind": [{"group": group, "kind": kind + "List", "version": version}]}
    return name


def forget_schema_definition(name: str) -> None:
    defs = definitions()
    defs.pop(name, None)
    defs.pop(name + "List", None)
    CUSTOM_V3.pop(name, None)


# --- OpenAPI v3 ---------------------------------------------------------------------------------

# What a structural schema keeps of a JSONSchemaProps (Generic, Extensions, ValueValidation and
# the structure): `example`, `externalDocs`, `id`, `$schema`, `definitions`... are not published.
_STRUCTURAL_KEYS = frozenset({
    "description", "type", "title", "default", "nullable",
    "format", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
    "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties", "required",
    "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-validations"})
_TRUE_ONLY = ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string")
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]
_EMBEDDED_DOCS = {
    "apiVersion": "apiVersion defines the versioned schema of this representation of an object. More info: "
                  "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
    "kind": "kind is a string value representing the type of this object. In CamelCase. More info: "
            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}


def openapi_v3(group: str, version: str, kind: str, root: Obj) -> Obj:
    """The schema upstream's builder publishes in v3 for a served version: the structural
    schema unfolded (x-kubernetes-int-or-string gets its anyOf), value validations,
    nullable, defaults and x-kubernetes-validations kept, embedded resources given
    apiVersion/kind/metadata, then metadata, apiVersion and kind at the root — also under a
    root that preserves unknown fields (v2 drops those properties; v3 keeps them).
    Upstream: generateBuilder, buildKubeNative, addEmbeddedProperties, addTypeMetaProperties
    (controller/openapi/builder/builder.go), Structural.Unfold and ToKubeOpenAPI (schema/)."""
    node: Obj = _kube_openapi(root, embedded=False) if root else {"type": "object"}
    node.setdefault("type", "object")
    props = {k: v for k, v in _dict(node.get("properties")).items() if k not in ("apiVersion", "kind", "metadata")}
    node["properties"] = {**_type_meta(), "metadata": {"$ref": f"#/$defs/{_META}ObjectMeta",
                                                       "description": _OBJECT_META_DOC}, **props}
    node["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    return node


def _kube_openapi(s: Obj, embedded: bool = True) -> Obj:
    out: Obj = {k: v for k, v in s.items() if k in _STRUCTURAL_KEYS}
    out.update({k: True for k in _TRUE_ONLY if s.get(k) is True})
    if isinstance(s.get("properties"), dict):
        out["properties"] = {k: _kube_openapi(_dict(v)) for k, v in s["properties"].items()}
    for k in ("items", "additionalProperties", "not"):
        if isinstance(s.get(k), dict):
            out[k] = _kube_openapi(s[k])
        elif k == "additionalProperties" and isinstance(s.get(k), bool):
            out[k] = s[k]
    for k in ("allOf", "anyOf", "oneOf"):
        if isinstance(s.get(k), list):
            out[k] = [_kube_openapi(_dict(v)) for v in s[k]]
    _unfold_int_or_string(out)
    if embedded and out.get("x-kubernetes-embedded-resource"):
        _add_embedded_properties(out)
    return out


def _unfold_int_or_string(s: Obj) -> None:
    """Upstream: Structural.Unfold — an int-or-string gets anyOf integer/string, or, when it has
    an anyOf of its own, that as the first allOf (unless either pattern is there already)."""
    if not s.get("x-kubernetes-int-or-string"):
        return
    all_of = s.get("allOf") or []
    if s.get("anyOf") == _INT_OR_STRING or (all_of and all_of[0] == {"anyOf": _INT_OR_STRING}):
        return
    if "anyOf" not in s:
        s["anyOf"] = [dict(t) for t in _INT_OR_STRING]
    else:
        s["allOf"] = [{"anyOf": [dict(t) for t in _INT_OR_STRING]}, *all_of]


def _add_embedded_properties(s: Obj) -> None:
    """Upstream: addEmbeddedProperties — an embedded resource's apiVersion, kind and metadata,
    kind and apiVersion required."""
    props = dict(_dict(s.get("properties")))
    props.update({k: {"description": doc, "type": "string"} for k, doc in _EMBEDDED_DOCS.items()})
    props["metadata"] = {"$ref": f"#/$defs/{_META}ObjectMeta", "description": _OBJECT_META_DOC}
    s["properties"] = props
    required = list(s.get("required") or [])
    s["required"] = required + [k for k in ("kind", "apiVersion") if k not in required]


def served_definitions(crd: Obj) -> list[ResourceDefinition]:
    """The ResourceDefinitions of crd's served versions, named as its status.acceptedNames.

    Upstream: getOrCreateServingInfoFor (one storage per served version, all in the storage
    version's key space)."""
    spec, names = _dict(crd.get("spec")), _dict(_dict(crd.get("status")).get("acceptedNames"))
    group, kind, plural = str(spec.get("group", "")), str(names.get("kind", "")), str(names.get("plural", ""))
    namespaced = spec.get("scope") == "Namespaced"
    storage_v = next((_dict(v) for v in spec.get("versions") or [] if _dict(v).get("storage")), {})
    storage = _StorageVersion.of(storage_v)
    out = []
    for v in spec.get("versions") or []:
        v = _dict(v)
        if not v.get("served"):
            continue
        out.append(_definition(crd, v, group, kind, plural, namespaced, storage, names))
    return out


@dataclass(frozen=True)
class _StorageVersion:
    """The storage version: its name, its schema, and whether that has defaults (what reads
    need: stored objects are defaulted with it)."""
    name: str
    structural: schema.Structural | None
    defaults: bool

    @classmethod
    def of(cls, v: Obj) -> _StorageVersion:
        root = _dict(_dict(v.get("schema")).get("openAPIV3Schema"))
        defaults = _has_defaults(root)
        return cls(str(v.get("name", "")), schema.structural_from(root) if defaults else None, defaults)


def _definition(crd: Obj, v: Obj, group: str, kind: str, plural: str, namespaced: bool, storage: _StorageVersion,
                names: Obj) -> ResourceDefinition:
    version = str(v.get("name", ""))
    root = _dict(_dict(v.get("schema")).get("openAPIV3Schema"))
    subresources = _dict(v.get("subresources"))
    has_status = subresources.get("status") is not None
    subs: list[Subresource] = []
    if has_status:
        subs.append(STATUS(kind))
    scale = ScalePaths.from_crd(subresources.get("scale"))
    if scale is not None:
        subs.append(CUSTOM_SCALE)
    structural = schema.structural_from(root)
    validator = _Validator(namespaced, structural, scale, version == storage.name,
                           structural.has_default or _defaults_below(structural, {}))
    cols, paths = _columns(v)
    to_storage, from_storage = _conversions(group, version, storage, validator.structural)
    return ResourceDefinition(
        group, version, kind, plural, str(names.get("singular", "")), namespaced,
        schema_definition(group, version, kind, root, plural),
        short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
        subresources=tuple(subs), storage_prefix=f"{group}/{plural}",
        strategy=CustomResourceStrategy(group, plural, has_status, scale), defaulter=validator.default,
        defaults_outside_spec=True, coerce=validator.coerce, validates_served_version=True,
        validate=validator.validate, validate_update=validator.validate_update, warnings=finalizer_warnings,
        validate_status_update=validator.validate_status_update,
        field_selectors=field_selectors(v, namespaced),
        columns=lambda: [dict(c) for c in cols], printer=_printer(paths),
        to_storage=to_storage, from_storage=from_storage,
        deprecation_warning=_deprecation_warning(v, group, kind),
        strategic_merge=False,
    )


def _deprecation_warning(v: Obj, group: str, kind: str) -> str:
    """Upstream: the handler's deprecation warning for a deprecated version."""
    if not v.get("deprecated"):
        return ""
    if isinstance(v.get("deprecationWarning"), str):
        return v["deprecationWarning"]
    return f"{group}/{v.get('name', '')} {kind} is deprecated"


def _conversions(group: str, version: str, storage: _StorageVersion, served: schema.Structural) -> tuple[Any, Any]:
    """Conversion None between a served version and the storage version: the apiVersion only
    (upstream: nopConverter), the fields the target version does not know pruned (its
    schemaCoercingConverter). Reads default with the storage version's schema first, as
    upstream's storage codec defaults what it decodes (a default added to the schema after an
    object was stored shows at once). The storage version without defaults reads the stored
    bytes as they are."""
    served_gv, storage_gv = f"{group}/{version}", f"{group}/{storage.name}"
    rewrite = version != storage.name and bool(storage.name)

    def to_storage(obj: Obj) -> Obj:
        return {**obj, "apiVersion": storage_gv} if obj.get("apiVersion") == served_gv else obj
    if not rewrite and not storage.defaults:
        return None, None

    below: dict[int, bool] = {}

    def from_storage(obj: Obj) -> Obj:
        av = obj.get("apiVersion")
        stored_default = (storage.structural is not None and av == storage_gv
                          and needs_defaults(obj, storage.structural, below))
        convert = av != served_gv and isinstance(av, str) and av.startswith(group + "/")
        if not (stored_default or convert):
            return obj
        obj = orjson.loads(orjson.dumps(obj))       # stored objects are shared: change a copy
        if stored_default and storage.structural is not None:
            schema.default(obj, storage.structural)
        if convert:
            schema.prune(obj, served)
            schema.prune_non_nullable_nulls_without_defaults(obj, served)
            obj["apiVersion"] = served_gv
        return obj
    return (to_storage if rewrite else None), from_storage


def needs_defaults(x: Any, s: schema.Structural | None, below: dict[int, bool]) -> bool:
    """Whether schema.default(x, s) would change x: a field with a default absent (or a
    non-nullable null) anywhere the schema has one. Reads ask this first, so a stored object
    that has its defaults already (every object written since the schema got them) is served
    as stored, without the copy and the defaulting walk. `below`: the memo of which schema
    nodes have a default in their subtree (by id, for one schema's lifetime)."""
    if s is None or not _defaults_below(s, below):
        return False
    if isinstance(x, dict):
        for k, prop in s.properties.items():
            if prop.has_default and (k not in x or (x[k] is None and not prop.nullable)):
                return True
        ap = s.additional_properties_schema
        for k, v in x.items():
            sub = s.properties.get(k)
            if sub is None and ap is not None and v is None and not ap.nullable and ap.has_default:
                return True
            if needs_defaults(v, sub if sub is not None else ap, below):
                return True
    elif isinstance(x, list) and s.items is not None:
        items = s.items
        return any((v is None and not items.nullable and items.has_default) or needs_defaults(v, items, below)
                   for v in x)
    return False


def _defaults_below(s: schema.Structural, below: dict[int, bool]) -> bool:
    """Whether s or a schema under it declares a default."""
    hit = below.get(id(s))
    if hit is None:
        below[id(s)] = False                # a guard while the subtree is walked
        subs = [*s.properties.values(), s.items, s.additional_properties_schema]
        hit = below[id(s)] = any(c is not None and (c.has_default or _defaults_below(c, below)) for c in subs)
    return hit


def _has_defaults(root: Obj) -> bool:
    """Whether the schema declares a default anywhere (a property named "default" counts too:
    then reads only cost a copy)."""
    return b'"default"' in orjson.dumps(root)
