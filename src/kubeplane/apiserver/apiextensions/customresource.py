"""A CRD's served versions as registry definitions: custom objects through the generic store.

Upstream: crdHandler.getOrCreateServingInfoFor (apiserver/customresource_handler.go) and
pkg/registry/customresource (strategy.go, validator.go, tableconvertor). Each served version
becomes a ResourceDefinition named as status.acceptedNames says (kind, plural, singular,
shortNames, categories), stored under upstream's key /registry/<group>/<plural>/[<ns>/]<name>
in the storage version: objects cross versions where they meet storage (the definition's
storage_codec: conversion/codec.py, through the CRD's converter, None or Webhook).

The write pipeline is the built-in kinds' (store.py), on the object in the version it was sent
in: the definition's defaulter prunes and defaults with the version's structural schema, its
validators check the ObjectMeta as upstream's customResourceStrategy does, then the object
against the schema (schema.validate); only then is it converted for storage.
Bodies decode against a definition made for the version (`schema_definition`): apiVersion,
kind, a typed ObjectMeta and the schema's own top-level properties.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
from .conversion import CustomResourceCodec, UnresolvableCodec, new_converter
from .conversion.webhook_converter import webhook_client_config
from .helpers import version_priority
from .selectable import field_selectors
from .scale import CUSTOM_SCALE, ScalePaths, validate_scale_spec, validate_scale_status

if TYPE_CHECKING:
    from ..admission.webhook.client import ClientManager

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
    has_defaults: bool = True       # whether the schema declares any (else defaulting is a no-op)
    codec: CustomResourceCodec | None = None    # the CRD's, when this is its storage version

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
        (schemaCoercingDecoder, unstructuredSchemaCoercer.apply): prune the fields the schema
        does not know, drop nulls it does not allow; returns the unknown fields as the strict
        decoding errors name them. The defaults are the store's (the definition's defaulter,
        `default`, picked by the object's apiVersion: this version's)."""
        return [f'unknown field "{p}"' for p in schema.coerce(obj, self.structural)]

    def default(self, obj: Obj) -> None:
        """Defaulting, then pruning (upstream: the codec's schema defaulter, then the decoder's
        pruning and its dropping of nulls where the schema allows none), in one walk."""
        if self.has_defaults:
            schema.default_and_coerce(obj, self.structural)
        else:
            schema.coerce(obj, self.structural)
        if self.codec is not None:
            self.codec.defaulted(obj)       # so its storage encode need not coerce it again


def _dict(v: Any) -> Obj:
    return v if isinstance(v, dict) else {}


# The kube finalizer-name rule of built-in kinds (api/validation/meta.py validate_finalizers);
# a custom object's finalizers only need to be qualified names, and get a warning instead.
KUBE_FINALIZER_RULE = "name is neither a standard finalizer name nor is it fully qualified"


def _generic_meta(errs: list[FieldError]) -> list[FieldError]:
    """apimachinery's ObjectMeta validation, which customResourceStrategy uses: the core
    flavour's kube finalizer-name errors left out. Upstream: ValidateObjectMetaAccessor."""
    return [e for e in errs if e.detail != KUBE_FINALIZER_RULE]


def finalizer_warnings(obj: Obj, old: Obj | None = None) -> list[str]:
    """Upstream: customResourceStrategy.WarningsOnCreate and WarningsOnUpdate
    (generateWarningsFromObj, validateKubeFinalizerName): a finalizer without a path is not
    refused, only warned of — on an update, only one the update adds."""
    added = set(_dict(obj.get("metadata")).get("finalizers") or [])
    if old is not None:
        added -= set(_dict(old.get("metadata")).get("finalizers") or [])
    out = []
    for f in sorted(f for f in added if isinstance(f, str)):
        if "/" not in f and f not in meta.STANDARD_FINALIZERS:
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


def served_definitions(crd: Obj, clients: ClientManager | None = None) -> list[ResourceDefinition]:
    """The ResourceDefinitions of crd's served versions, named as its status.acceptedNames.
    `clients`: the webhook client a Webhook conversion strategy posts with.

    Upstream: getOrCreateServingInfoFor (one storage per served version, all in the storage
    version's key space, sharing the CRD's converter)."""
    spec, names = _dict(crd.get("spec")), _dict(_dict(crd.get("status")).get("acceptedNames"))
    group, kind, plural = str(spec.get("group", "")), str(names.get("kind", "")), str(names.get("plural", ""))
    namespaced = spec.get("scope") == "Namespaced"
    codec = storage_codec(crd, clients)
    out = []
    for v in spec.get("versions") or []:
        v = _dict(v)
        if not v.get("served"):
            continue
        out.append(_definition(crd, v, group, kind, plural, namespaced, codec, names))
    return out


def storage_codec(crd: Obj, clients: ClientManager | None = None) -> CustomResourceCodec | UnresolvableCodec:
    """The CRD's storage codec: every version's schema, and its converter (unresolvable when
    its webhook's client cannot be made, as upstream's NewConverter fails)."""
    spec, names = _dict(crd.get("spec")), _dict(_dict(crd.get("status")).get("acceptedNames"))
    if clients is not None and _webhook_client_error(spec, clients):
        return UnresolvableCodec()
    roots = {str(_dict(v).get("name", "")): _dict(_dict(_dict(v).get("schema")).get("openAPIV3Schema"))
             for v in spec.get("versions") or []}
    storage = next((str(_dict(v).get("name", "")) for v in spec.get("versions") or [] if _dict(v).get("storage")), "")
    return CustomResourceCodec(str(spec.get("group", "")), str(names.get("listKind", "")), storage,
                               {name: schema.structural_from(root) for name, root in roots.items()},
                               {name for name, root in roots.items() if _has_defaults(root)},
                               new_converter(crd, clients))


def _webhook_client_error(spec: Obj, clients: ClientManager) -> bool:
    """Whether the conversion webhook's TLS client cannot be made from its caBundle."""
    from ..admission.webhook.client import ClientConfigError     # with the clients: see controller.conversion_clients
    webhook = _dict(_dict(spec.get("conversion")).get("webhook"))
    cc = webhook_client_config(_dict(webhook.get("clientConfig")))
    try:
        clients.tls_context(cc.get("caBundle"))
    except ClientConfigError:
        return True
    return False


def _definition(crd: Obj, v: Obj, group: str, kind: str, plural: str, namespaced: bool,
                codec: CustomResourceCodec | UnresolvableCodec, names: Obj) -> ResourceDefinition:
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
    structural = codec.schemas.get(version) if isinstance(codec, CustomResourceCodec) else None
    structural = structural or schema.structural_from(root)
    storage = codec if isinstance(codec, CustomResourceCodec) and codec.storage_version == version \
        and codec.schemas.get(version) is structural else None
    validator = _Validator(namespaced, structural, scale, schema.has_defaults(structural), storage)
    cols, paths = _columns(v)
    return ResourceDefinition(
        group, version, kind, plural, str(names.get("singular", "")), namespaced,
        schema_definition(group, version, kind, root, plural),
        short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
        subresources=tuple(subs), storage_prefix=f"{group}/{plural}",
        strategy=CustomResourceStrategy(group, plural, has_status, scale), defaulter=validator.default,
        defaults_outside_spec=True, coerce=validator.coerce, validates_served_version=True,
        validate=validator.validate, validate_update=validator.validate_update, warnings=finalizer_warnings,
        warnings_on_update=finalizer_warnings,
        validate_status_update=validator.validate_status_update,
        field_selectors=field_selectors(v, namespaced),
        columns=lambda: [dict(c) for c in cols], printer=_printer(paths),
        storage_codec=codec.for_version(version),
        deprecation_warning=deprecation_warning(v, _dict(crd.get("spec"))),
        strategic_merge=False,
    )


def deprecation_warning(v: Obj, spec: Obj) -> str:
    """The Warning of every request to a deprecated version: its deprecationWarning, else
    upstream's default text naming the highest served, not deprecated, newer version.
    Upstream: defaultDeprecationWarning (customresource_handler.go)"""
    if not v.get("deprecated"):
        return ""
    if isinstance(v.get("deprecationWarning"), str):
        return v["deprecationWarning"]
    name, group = str(v.get("name", "")), str(spec.get("group", ""))
    kind = str(_dict(spec.get("names")).get("kind", ""))
    msg = f"{group}/{name} {kind} is deprecated"
    newer = sorted((str(o.get("name", "")) for o in map(_dict, spec.get("versions") or [])
                    if o.get("served") and not o.get("deprecated")
                    and version_priority(str(o.get("name", ""))) < version_priority(name)), key=version_priority)
    return f"{msg}; use {group}/{newer[0]} {kind}" if newer else msg


def _has_defaults(root: Obj) -> bool:
    """Whether the schema declares a default anywhere (a property named "default" counts too:
    then reads only cost a copy)."""
    return b'"default"' in orjson.dumps(root)
