"""apiextensions.k8s.io/v1 validation: CustomResourceDefinitions.

Upstream: apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go. Upstream
validates the internal type, into which a v1 CRD converts with its per-version schemas,
subresources and printer columns hoisted to the top level when every version has the same
(Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_CustomResourceDefinitionSpec): a
one-version CRD's schema errors are reported under `spec.validation.openAPIV3Schema`, its
subresources' under `spec.subresources`, its columns' under `spec.additionalPrinterColumns`,
as a real API server prints them. `_Hoisted` reproduces that.

The openAPIV3Schema itself is the structural-schema library's, which lives in the server
(kubeplane.apiserver.apiextensions.schema.validate_crd_schema): the validators take it as
`validate_schema` (the CRD's registry definition binds it), none checks nothing.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import is_dns1035_label, is_dns1123_subdomain, name_is_dns_subdomain

Obj = dict[str, Any]
# (an openAPIV3Schema, its field path) -> its errors; None: the schema is not checked here.
SchemaValidator = Callable[[Obj, str, bool], list[FieldError]] | None     # (schema, path, status enabled)
# A version's selectableFields against its schema: (version, path) -> errors. Set by the schema
# library's side (apiserver/apiextensions/selectable.py); None checks nothing.
SELECTABLE_FIELDS_VALIDATOR: Callable[[Obj, str], list[FieldError]] | None = None

SCOPES = ["Cluster", "Namespaced"]
CONVERSION_STRATEGIES = ["None", "Webhook"]
CONVERSION_REVIEW_VERSIONS = ("v1", "v1beta1")
PRINTER_COLUMN_TYPES = "boolean,date,integer,number,string"                     # sets.List(): sorted
PRINTER_COLUMN_FORMATS = "byte,date,date-time,double,float,int32,int64,password"
MAX_DEPRECATION_WARNING = 256


def _dict(v: Any) -> Obj:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def versions_of(spec: Obj) -> list[Obj]:
    return [_dict(v) for v in _list(spec.get("versions"))]


# --- the internal form's hoisting ------------------------------------------------------------

@dataclass(frozen=True)
class _Hoisted:
    """Which per-version fields the internal type holds at the top level (all versions equal)."""
    schema: bool
    subresources: bool
    columns: bool

    @classmethod
    def of(cls, versions: list[Obj]) -> _Hoisted:
        def identical(key: str) -> bool:
            first = versions[0].get(key) if versions else None
            return bool(versions) and all(v.get(key) is not None and v.get(key) == first for v in versions)
        return cls(identical("schema"), identical("subresources"),
                   identical("additionalPrinterColumns") and bool(versions[0].get("additionalPrinterColumns")))


# --- the object -------------------------------------------------------------------------------

def _name_fn(crd: Obj) -> Any:
    spec = _dict(crd.get("spec"))
    required = f"{_str(_dict(spec.get('names')).get('plural'))}.{_str(spec.get('group'))}"

    def validate_name(name: str, prefix: bool) -> list[str]:
        msgs = name_is_dns_subdomain(name, prefix)
        if name != required:
            msgs.append('must be spec.names.plural+"."+spec.group')
        return msgs
    return validate_name


def validate_custom_resource_definition(crd: Obj, validate_schema: SchemaValidator = None) -> list[FieldError]:
    """Upstream: ValidateCustomResourceDefinition"""
    errs = m.validate_object_meta(_dict(crd.get("metadata")), False, _name_fn(crd))
    spec, status = _dict(crd.get("spec")), _dict(crd.get("status"))
    errs += validate_custom_resource_definition_spec(spec, "spec", validate_schema)
    errs += validate_custom_resource_definition_status(status, "status")
    errs += validate_stored_versions(_list(status.get("storedVersions")), versions_of(spec), "status.storedVersions")
    return errs


def validate_custom_resource_definition_update(crd: Obj, old: Obj,
                                               validate_schema: SchemaValidator = None) -> list[FieldError]:
    """Upstream: ValidateCustomResourceDefinitionUpdate"""
    errs = m.validate_object_meta_update(_dict(crd.get("metadata")), _dict(old.get("metadata")))
    spec, status = _dict(crd.get("spec")), _dict(crd.get("status"))
    errs += validate_custom_resource_definition_spec_update(spec, _dict(old.get("spec")), is_established(old), "spec",
                                                            validate_schema, ConversionOptions.for_update(old))
    errs += validate_custom_resource_definition_status(status, "status")
    errs += validate_stored_versions(_list(status.get("storedVersions")), versions_of(spec), "status.storedVersions")
    return errs


def validate_custom_resource_definition_status_update(crd: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateUpdateCustomResourceDefinitionStatus"""
    errs = m.validate_object_meta_update(_dict(crd.get("metadata")), _dict(old.get("metadata")))
    return errs + validate_custom_resource_definition_status(_dict(crd.get("status")), "status")


def is_established(crd: Obj) -> bool:
    return any(_dict(c).get("type") == "Established" and _dict(c).get("status") == "True"
               for c in _list(_dict(crd.get("status")).get("conditions")))


def validate_stored_versions(stored: list[Any], versions: list[Obj], path: str) -> list[FieldError]:
    """Upstream: ValidateCustomResourceDefinitionStoredVersions"""
    if not stored:
        return [errors.invalid(path, stored, "must have at least one stored version")]
    errs: list[FieldError] = []
    remaining = {v: i for i, v in enumerate(stored)}
    for v in versions:
        name = _str(v.get("name"))
        if v.get("storage") and name not in remaining:
            errs.append(errors.invalid(path, stored, "must have the storage version " + name))
        remaining.pop(name, None)
    errs += [errors.invalid(f"{path}[{i}]", v, f"missing from spec.versions; {v} was previously a storage version, "
                            f"and must remain in spec.versions until a storage migration ensures no data remains "
                            f"persisted in {v} and removes {v} from status.storedVersions")
             for v, i in remaining.items()]
    return errs


# --- spec -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConversionOptions:
    """Upstream's validationOptions for spec.conversion: on a create the caBundle is not checked
    (the CRD is not established yet) and a recognized review version is required; an update
    keeps what the old CRD got away with (allowInvalidCABundle,
    hasValidConversionReviewVersionOrEmpty)."""
    allow_invalid_ca_bundle: bool = True
    require_recognized_review_version: bool = True

    @classmethod
    def for_update(cls, old: Obj) -> ConversionOptions:
        conversion = _dict(_dict(old.get("spec")).get("conversion"))
        client = _dict(_dict(conversion.get("webhook")).get("clientConfig"))
        bundle = _str(client.get("caBundle"))
        versions = _list(_dict(conversion.get("webhook")).get("conversionReviewVersions"))
        return cls(allow_invalid_ca_bundle=not is_established(old) or (bool(bundle) and bool(_ca_bundle_error(bundle))),
                   require_recognized_review_version=not versions or
                   any(v in CONVERSION_REVIEW_VERSIONS for v in versions))


def validate_custom_resource_definition_spec(spec: Obj, path: str, validate_schema: SchemaValidator = None,
                                             conversion: ConversionOptions = ConversionOptions()) -> list[FieldError]:
    """Upstream: validateCustomResourceDefinitionSpec"""
    errs = _validate_group(_str(spec.get("group")), path + ".group")
    errs += _enum(path + ".scope", _str(spec.get("scope")), SCOPES)
    versions = versions_of(spec)
    hoisted = _Hoisted.of(versions)
    storage_count, seen, unique = 0, set[str](), True
    for i, v in enumerate(versions):
        vpath = f"{path}.versions[{i}]"
        storage_count += 1 if v.get("storage") is True else 0
        name = _str(v.get("name"))
        unique = unique and name not in seen
        seen.add(name)
        errs += [errors.invalid(vpath + ".name", name, msg) for msg in is_dns1035_label(name)]
        errs += _validate_version(v, vpath, hoisted, validate_schema)
    if not unique:
        errs.append(errors.invalid(path + ".versions", versions, "must contain unique version names"))
    if storage_count != 1:
        errs.append(errors.invalid(path + ".versions", versions, "must have exactly one version marked as storage version"))
    errs += _required_schemas(versions, hoisted, path)
    names = _dict(spec.get("names"))
    for key in ("plural", "singular", "kind", "listKind"):
        if not _str(names.get(key)):
            errs.append(errors.required(f"{path}.names.{key}"))
    errs += validate_custom_resource_definition_names(names, path + ".names")
    if versions and hoisted.schema:
        errs += _validate_schema(_dict(versions[0].get("schema")), path + ".validation", validate_schema,
                                 _has_status(versions[0]))
    if versions and hoisted.subresources:
        errs += validate_subresources(_dict(versions[0].get("subresources")), path + ".subresources")
    if versions and hoisted.columns:
        for j, col in enumerate(_list(versions[0].get("additionalPrinterColumns"))):
            errs += validate_column(_dict(col), f"{path}.additionalPrinterColumns[{j}]")
    if spec.get("preserveUnknownFields") is True and _dict(spec.get("conversion")).get("strategy", "None") != "None":
        errs.append(errors.invalid(path + ".conversion.strategy", _dict(spec.get("conversion")).get("strategy"),
                                   "must be None if spec.preserveUnknownFields is true"))
    errs += validate_conversion(spec.get("conversion"), path + ".conversion", conversion)
    if spec.get("preserveUnknownFields") is True:
        errs.append(errors.invalid(path + ".preserveUnknownFields", True, "cannot set to true, set "
                                   "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
    return errs


def validate_custom_resource_definition_spec_update(spec: Obj, old: Obj, established: bool, path: str,
                                                    validate_schema: SchemaValidator = None,
                                                    conversion: ConversionOptions = ConversionOptions()) -> list[FieldError]:
    """Upstream: validateCustomResourceDefinitionSpecUpdate — scope and kind are fixed once
    established (they decide the storage), group and plural always (they are the name)."""
    errs = validate_custom_resource_definition_spec(spec, path, validate_schema, conversion)
    names, old_names = _dict(spec.get("names")), _dict(old.get("names"))
    if established:
        errs += m.immutable(spec.get("scope"), old.get("scope"), path + ".scope")
        errs += m.immutable(names.get("kind"), old_names.get("kind"), path + ".names.kind")
    errs += m.immutable(spec.get("group"), old.get("group"), path + ".group")
    errs += m.immutable(names.get("plural"), old_names.get("plural"), path + ".names.plural")
    return errs


def _validate_group(group: str, path: str) -> list[FieldError]:
    if not group:
        return [errors.required(path)]
    if msgs := is_dns1123_subdomain(group):
        return [errors.invalid(path, group, ",".join(msgs))]
    if len(group.split(".")) < 2:
        return [errors.invalid(path, group, "should be a domain with at least one dot")]
    return []


def _enum(path: str, value: str, accepted: list[str]) -> list[FieldError]:
    """Upstream: validateEnumStrings (required)."""
    if not value:
        return [errors.required(path)]
    return [] if value in accepted else [errors.not_supported(path, value, accepted)]


def _validate_version(v: Obj, path: str, hoisted: _Hoisted, validate_schema: SchemaValidator) -> list[FieldError]:
    """Upstream: validateCustomResourceDefinitionVersion, less what the internal form holds at
    the top level."""
    errs = _validate_deprecation_warning(v, path + ".deprecationWarning")
    if not hoisted.schema and isinstance(v.get("schema"), dict):
        errs += _validate_schema(v["schema"], path + ".schema", validate_schema, _has_status(v))
    if not hoisted.subresources:
        errs += validate_subresources(_dict(v.get("subresources")), path + ".subresources")
    if not hoisted.columns:
        for j, col in enumerate(_list(v.get("additionalPrinterColumns"))):
            errs += validate_column(_dict(col), f"{path}.additionalPrinterColumns[{j}]")
    if SELECTABLE_FIELDS_VALIDATOR is not None:
        errs += SELECTABLE_FIELDS_VALIDATOR(v, path)
    return errs


def _validate_deprecation_warning(v: Obj, path: str) -> list[FieldError]:
    warning = v.get("deprecationWarning")
    if warning is None:
        return []
    errs: list[FieldError] = []
    if len(_str(warning).encode()) > MAX_DEPRECATION_WARNING:
        errs.append(errors.too_long(path, MAX_DEPRECATION_WARNING))
    if not v.get("deprecated"):
        errs.append(errors.invalid(path, warning, "can only be set for deprecated versions"))
    elif not _str(warning).isprintable():
        errs.append(errors.invalid(path, warning, "must only contain printable UTF-8 characters"))
    return errs


def _required_schemas(versions: list[Obj], hoisted: _Hoisted, path: str) -> list[FieldError]:
    """v1 requires a schema for every version (upstream: requireStructuralSchema's "schemas are required")."""
    if hoisted.schema and _dict(versions[0].get("schema")).get("openAPIV3Schema") is not None:
        return []
    return [errors.required(f"{path}.versions[{i}].schema.openAPIV3Schema", "schemas are required")
            for i, v in enumerate(versions) if _dict(v.get("schema")).get("openAPIV3Schema") is None]


def _validate_schema(validation: Obj, path: str, validate_schema: SchemaValidator, status_enabled: bool) -> list[FieldError]:
    """Upstream: validateCustomResourceDefinitionValidation; the schema's own rules are the
    structural-schema library's (which restricts the root when the status subresource is on)."""
    root = validation.get("openAPIV3Schema")
    if not isinstance(root, dict) or validate_schema is None:
        return []
    return validate_schema(root, path + ".openAPIV3Schema", status_enabled)


def _has_status(version: Obj) -> bool:
    """Whether the version (or, hoisted, every version) enables the status subresource."""
    return isinstance(_dict(version.get("subresources")).get("status"), dict)


# --- names, subresources, columns, conversion -------------------------------------------------

def validate_custom_resource_definition_status(status: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateCustomResourceDefinitionStatus"""
    return validate_custom_resource_definition_names(_dict(status.get("acceptedNames")), path + ".acceptedNames")


def validate_custom_resource_definition_names(names: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateCustomResourceDefinitionNames"""
    errs: list[FieldError] = []
    for key in ("plural", "singular"):
        if value := _str(names.get(key)):
            if msgs := is_dns1035_label(value):
                errs.append(errors.invalid(f"{path}.{key}", value, ",".join(msgs)))
    for key in ("kind", "listKind"):
        if value := _str(names.get(key)):
            if msgs := is_dns1035_label(value.lower()):
                errs.append(errors.invalid(f"{path}.{key}", value,
                                           "may have mixed case, but should otherwise match: " + ",".join(msgs)))
    for i, short in enumerate(_list(names.get("shortNames"))):
        if msgs := is_dns1035_label(_str(short)):
            errs.append(errors.invalid(f"{path}.shortNames[{i}]", short, ",".join(msgs)))
    kind = _str(names.get("kind"))
    if kind and kind == names.get("listKind"):
        errs.append(errors.invalid(path + ".listKind", kind, "kind and listKind may not be the same"))
    for i, category in enumerate(_list(names.get("categories"))):
        if msgs := is_dns1035_label(_str(category)):
            errs.append(errors.invalid(f"{path}.categories[{i}]", category, ",".join(msgs)))
    return errs


def validate_subresources(subresources: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateCustomResourceDefinitionSubresources — scale's paths are simple json
    paths under .spec (replicas) and .status (replicas, label selector)."""
    scale = subresources.get("scale")
    if not isinstance(scale, dict):
        return []
    errs = _scale_path(scale.get("specReplicasPath"), path + ".scale.specReplicasPath", ".spec", True)
    errs += _scale_path(scale.get("statusReplicasPath"), path + ".scale.statusReplicasPath", ".status", True)
    errs += _scale_path(scale.get("labelSelectorPath"), path + ".scale.labelSelectorPath", ".status", False)
    return errs


def _scale_path(value: Any, path: str, under: str, required: bool) -> list[FieldError]:
    s = _str(value)
    if not s:
        return [errors.required(path)] if required else []
    if errs := validate_simple_json_path(s, path):
        return errs
    if not s.startswith(under + "."):
        return [errors.invalid(path, s, f"should be a json path under {under}")]
    return []


def validate_simple_json_path(s: str, path: str) -> list[FieldError]:
    """Upstream: validateSimpleJSONPath"""
    if not s:
        return [errors.invalid(path, s, "must not be empty")]
    if s[0] != ".":
        return [errors.invalid(path, s, "must be a simple json path starting with .")]
    return []


def validate_column(col: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateCustomResourceColumnDefinition"""
    errs: list[FieldError] = []
    if not _str(col.get("name")):
        errs.append(errors.required(path + ".name"))
    typ = _str(col.get("type"))
    if not typ:
        errs.append(errors.required(path + ".type", "must be one of " + PRINTER_COLUMN_TYPES))
    elif typ not in PRINTER_COLUMN_TYPES.split(","):
        errs.append(errors.invalid(path + ".type", typ, "must be one of " + PRINTER_COLUMN_TYPES))
    fmt = _str(col.get("format"))
    if fmt and fmt not in PRINTER_COLUMN_FORMATS.split(","):
        errs.append(errors.invalid(path + ".format", fmt, "must be one of " + PRINTER_COLUMN_FORMATS))
    json_path = _str(col.get("jsonPath"))
    if not json_path:
        errs.append(errors.required(path + ".JSONPath"))
    else:
        errs += validate_simple_json_path(json_path, path + ".JSONPath")
    return errs


def validate_conversion(conversion: Any, path: str, opts: ConversionOptions = ConversionOptions()) -> list[FieldError]:
    """Upstream: validateCustomResourceConversion (internal field names: v1's
    webhook.clientConfig is webhookClientConfig, webhook.conversionReviewVersions is
    conversionReviewVersions)."""
    if not isinstance(conversion, dict):
        return []
    strategy = _str(conversion.get("strategy"))
    errs = _enum(path + ".strategy", strategy, CONVERSION_STRATEGIES)
    webhook = _dict(conversion.get("webhook"))
    client, review_versions = webhook.get("clientConfig"), _list(webhook.get("conversionReviewVersions"))
    cpath = path + ".webhookClientConfig"
    if strategy == "Webhook":
        if not isinstance(client, dict):
            errs.append(errors.required(cpath, "required when strategy is set to Webhook"))
        else:
            url, svc = client.get("url"), client.get("service")
            if (url is None) == (svc is None):
                errs.append(errors.required(cpath, "exactly one of url or service is required"))
            elif url is not None:
                errs += validate_webhook_url(cpath + ".url", _str(url), True)
            else:
                svc = _dict(svc)
                errs += validate_webhook_service(cpath + ".service", _str(svc.get("namespace")), _str(svc.get("name")),
                                                 svc.get("path"), svc.get("port"))
            bundle = _str(client.get("caBundle"))
            if bundle and not opts.allow_invalid_ca_bundle and (msg := _ca_bundle_error(bundle)):
                errs.append(errors.invalid(cpath + ".caBundle", bundle, msg))
        errs += _conversion_review_versions(review_versions, path + ".conversionReviewVersions",
                                            opts.require_recognized_review_version)
        return errs
    if client is not None:
        errs.append(errors.forbidden(cpath, "should not be set when strategy is not set to Webhook"))
    if review_versions:
        errs.append(errors.forbidden(path + ".conversionReviewVersions",
                                     "should not be set when strategy is not set to Webhook"))
    return errs


_URL_FORM = "; desired format: https://host[/path]"


def validate_webhook_url(path: str, url: str, force_https: bool) -> list[FieldError]:
    """Upstream: ValidateWebhookURL (apiserver pkg/util/webhook/validation.go)."""
    try:
        u = urlsplit(url)
        u.port      # noqa: B018  (a bad port is a parse error, as Go's url.Parse)
    except ValueError as e:
        return [errors.required(path, f"url must be a valid URL: {e}{_URL_FORM}")]
    errs: list[FieldError] = []
    if force_https and u.scheme != "https":
        errs.append(errors.invalid(path, u.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    host = u.netloc.rpartition("@")[2]
    if not host:
        errs.append(errors.invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in u.netloc:
        errs.append(errors.invalid(path, u.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if u.fragment:
        errs.append(errors.invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.query:
        errs.append(errors.invalid(path, u.query, "query parameters are not permitted in the URL"))
    return errs


def validate_webhook_service(path: str, namespace: str, name: str, url_path: Any, port: Any) -> list[FieldError]:
    """Upstream: ValidateWebhookService (apiserver pkg/util/webhook/validation.go)."""
    errs: list[FieldError] = []
    if not name:
        errs.append(errors.required(path + ".name"))
    if not namespace:
        errs.append(errors.required(path + ".namespace"))
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        errs.append(errors.invalid(path + ".port", port, "port is not valid: must be between 1 and 65535, inclusive"))
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return errs
    if url_path == "//":
        return errs + [errors.invalid(path + ".path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errs.append(errors.invalid(path + ".path", url_path, "must start with a '/'"))
    check = url_path[1:]
    check = check[:-1] if check.endswith("/") else check
    for i, step in enumerate(check.split("/")):
        if not step:
            errs.append(errors.invalid(path + ".path", url_path, f"segment[{i}] may not be empty"))
            continue
        errs += [errors.invalid(path + ".path", url_path, f"segment[{i}]: {msg}") for msg in is_dns1123_subdomain(step)]
    return errs


def _ca_bundle_error(bundle: str) -> str:
    """Upstream: ValidateCABundle — client-go's TLS config must load the PEM certificates ("" when fine)."""
    import ssl
    try:
        pem = base64.b64decode(bundle, validate=True).decode("ascii")
        ssl.create_default_context(cadata=pem)
    except (binascii.Error, ValueError, ssl.SSLError):
        return "unable to load root certificates: unable to parse bytes as PEM block"
    return ""


def _conversion_review_versions(versions: list[Any], path: str, require_recognized: bool) -> list[FieldError]:
    """Upstream: validateConversionReviewVersions"""
    if not versions:
        return [errors.required(path)]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if v in seen:
            errs.append(errors.invalid(f"{path}[{i}]", v, "duplicate version"))
            continue
        seen.add(v)
        errs += [errors.invalid(f"{path}[{i}]", v, msg) for msg in is_dns1035_label(_str(v))]
    if require_recognized and not seen & set(CONVERSION_REVIEW_VERSIONS):
        errs.append(errors.invalid(path, versions, "must include at least one of " + ", ".join(CONVERSION_REVIEW_VERSIONS)))
    return errs
