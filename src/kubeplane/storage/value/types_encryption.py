"""The EncryptionConfiguration file (apiVersion apiserver.config.k8s.io/v1) and its strict decoder.

Upstream: EncryptionConfiguration and friends (k8s.io/apiserver/pkg/apis/apiserver/
types_encryption.go, v1/types_encryption.go), decoded as upstream's config codec does: YAML or
JSON, `kind`/`apiVersion` checked, unknown fields rejected ("strict decoding error"), null
taken as absent (Go's encoding/json). Resource lists are processed in order, earlier lists
taking precedence; within a list, providers are tried in order for reads and the first one
writes:

    apiVersion: apiserver.config.k8s.io/v1
    kind: EncryptionConfiguration
    resources:
    - resources: [secrets]
      providers:
      - secretbox: {keys: [{name: key1, secret: <base64 of 32 bytes>}]}
      - identity: {}
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

GROUP_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"
# Also registered as v1/EncryptionConfig "due to a docs bug" (apiserver/v1/register.go).
LEGACY = ("v1", "EncryptionConfig")
# Other kinds of the same group: they decode, but are not an encryption configuration.
OTHER_KINDS = ("AdmissionConfiguration", "AuthenticationConfiguration", "AuthorizationConfiguration",
               "TracingConfiguration")


class DecodeError(ValueError):
    """The file is not a well-formed EncryptionConfiguration (message as upstream's decoder)."""


@dataclass(frozen=True, slots=True)
class Key:
    name: str = ""
    secret: str = field(default="", repr=False)   # base64; never printed (upstream: Key.String)


@dataclass(frozen=True, slots=True)
class AESConfiguration:
    keys: tuple[Key, ...] = ()


@dataclass(frozen=True, slots=True)
class SecretboxConfiguration:
    keys: tuple[Key, ...] = ()


@dataclass(frozen=True, slots=True)
class IdentityConfiguration:
    pass


@dataclass(frozen=True, slots=True)
class KMSConfiguration:
    """Parsed so a KMS entry gets a clear "not supported" instead of "unknown field"."""

    api_version: str = ""
    name: str = ""
    endpoint: str = ""


@dataclass(frozen=True, slots=True)
class ProviderConfiguration:
    """Exactly one of the fields is set in a valid configuration."""

    aesgcm: AESConfiguration | None = None
    aescbc: AESConfiguration | None = None
    secretbox: SecretboxConfiguration | None = None
    identity: IdentityConfiguration | None = None
    kms: KMSConfiguration | None = None

    def go_value(self) -> dict[str, Any]:
        """Upstream's internal ProviderConfiguration (no json tags: Go's field names in their
        order), the bad value in the "more than one provider" error; secrets read REDACTED."""
        def keys(c: AESConfiguration | SecretboxConfiguration | None) -> Any:
            return None if c is None else {"Keys": [{"Name": k.name, "Secret": "REDACTED"} for k in c.keys]}
        kms = self.kms and {"APIVersion": self.kms.api_version, "Name": self.kms.name,
                            "CacheSize": None, "Endpoint": self.kms.endpoint, "Timeout": None}
        doc = {"AESGCM": keys(self.aesgcm), "AESCBC": keys(self.aescbc), "Secretbox": keys(self.secretbox),
               "Identity": None if self.identity is None else {}, "KMS": kms}
        return doc


@dataclass(frozen=True, slots=True)
class ResourceConfiguration:
    resources: tuple[str, ...] = ()
    providers: tuple[ProviderConfiguration, ...] = ()


@dataclass(frozen=True, slots=True)
class EncryptionConfiguration:
    resources: tuple[ResourceConfiguration, ...] = ()


# --- strict decoding ----------------------------------------------------------------------
# A schema is ("struct", Go type, {json field: schema}), ("list", Go type, item schema) or
# ("string", "string") / ("int", "int32") / ("duration", "*v1.Duration"). Go type names make the
# type errors read like encoding/json's.

Schema = tuple[Any, ...]
_STR: Schema = ("string", "string")
_KEY: Schema = ("struct", "v1.Key", {"name": _STR, "secret": _STR})
_KEYS: Schema = ("list", "[]v1.Key", _KEY)
_AES: Schema = ("struct", "v1.AESConfiguration", {"keys": _KEYS})
_SECRETBOX: Schema = ("struct", "v1.SecretboxConfiguration", {"keys": _KEYS})
_IDENTITY: Schema = ("struct", "v1.IdentityConfiguration", {})
_KMS: Schema = ("struct", "v1.KMSConfiguration", {
    "apiVersion": _STR, "name": _STR, "cachesize": ("int", "int32"), "endpoint": _STR,
    "timeout": ("duration", "v1.Duration")})
_PROVIDER: Schema = ("struct", "v1.ProviderConfiguration", {
    "aesgcm": _AES, "aescbc": _AES, "secretbox": _SECRETBOX, "identity": _IDENTITY, "kms": _KMS})
_RESOURCE: Schema = ("struct", "v1.ResourceConfiguration", {
    "resources": ("list", "[]string", _STR), "providers": ("list", "[]v1.ProviderConfiguration", _PROVIDER)})
_CONFIG: Schema = ("struct", "v1.EncryptionConfiguration", {
    "kind": _STR, "apiVersion": _STR, "resources": ("list", "[]v1.ResourceConfiguration", _RESOURCE)})

_JSON_TYPES = ((bool, "bool"), (int, "number"), (float, "number"), (str, "string"), (list, "array"),
               (dict, "object"))


def _json_type(v: Any) -> str:
    return next((name for t, name in _JSON_TYPES if isinstance(v, t)), "value")


def _check(v: Any, schema: Schema, path: str, go_field: str, go_struct: str, unknown: list[str]) -> None:
    """Type-check v against schema; unknown fields are collected, not raised, so one error
    names them all (as upstream's strict decoder does). `path` has list indexes (strict
    errors), `go_field`/`go_struct` do not (encoding/json's UnmarshalTypeError)."""
    if v is None:                                    # null leaves the Go zero value
        return
    kind, go_type = schema[0], schema[1]
    ok = {"struct": isinstance(v, dict), "list": isinstance(v, list), "string": isinstance(v, str),
          "int": isinstance(v, int) and not isinstance(v, bool),
          "duration": isinstance(v, str)}[kind]
    if not ok:
        raise DecodeError(f"json: cannot unmarshal {_json_type(v)} into Go struct field "
                          f"{go_struct}.{go_field} of type {go_type}")
    if kind == "struct":
        struct = go_type.removeprefix("v1.")
        for name, item in v.items():
            sub = f"{path}.{name}" if path else str(name)
            if name not in schema[2]:
                unknown.append(sub)
            else:
                _check(item, schema[2][name], sub, f"{go_field}.{name}" if go_field else name, struct, unknown)
    elif kind == "list":
        for i, item in enumerate(v):
            _check(item, schema[2], f"{path}[{i}]", go_field, go_struct, unknown)


def _keys(d: dict[str, Any] | None) -> tuple[Key, ...]:
    return tuple(Key(k.get("name") or "", k.get("secret") or "") for k in (d or {}).get("keys") or () if k is not None)


def _provider(d: dict[str, Any]) -> ProviderConfiguration:
    def present(name: str) -> Any:
        return d.get(name) is not None
    aes = {name: AESConfiguration(_keys(d[name])) for name in ("aesgcm", "aescbc") if present(name)}
    kms = d.get("kms") or {}
    return ProviderConfiguration(
        aesgcm=aes.get("aesgcm"), aescbc=aes.get("aescbc"),
        secretbox=SecretboxConfiguration(_keys(d["secretbox"])) if present("secretbox") else None,
        identity=IdentityConfiguration() if present("identity") else None,
        kms=KMSConfiguration(kms.get("apiVersion") or "", kms.get("name") or "", kms.get("endpoint") or "")
        if present("kms") else None)


def _parse(data: bytes) -> Any:
    """JSON or YAML (a superset) into plain values. The file is the operator's own, but it is
    still parsed with the safe loader: no tags, no objects."""
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass                                     # let YAML report it (JSON is YAML)
    try:
        return yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise DecodeError(f"error converting YAML to JSON: yaml: {str(e).splitlines()[0]}") from None


def _check_type_meta(doc: Any) -> None:
    """Upstream: the universal decoder's kind/version checks (missing, unregistered)."""
    if doc is None:                                  # an empty document (comments only)
        doc = {}
    if not isinstance(doc, dict) or not all(isinstance(doc.get(f) or "", str) for f in ("kind", "apiVersion")):
        raise DecodeError("couldn't get version/kind; json parse error: the file is not an object "
                          "with string kind and apiVersion")
    kind, version = doc.get("kind"), doc.get("apiVersion")
    if not kind:
        raise DecodeError("Object 'Kind' is missing in the file")
    if not version:
        raise DecodeError("Object 'apiVersion' is missing in the file")
    if (version, kind) in ((GROUP_VERSION, KIND), LEGACY):
        return
    if version == GROUP_VERSION and kind in OTHER_KINDS:
        raise DecodeError(f"got unexpected config type: {GROUP_VERSION}, Kind={kind}")
    raise DecodeError(f'no kind "{kind}" is registered for version "{version}"')


def decode(data: bytes) -> EncryptionConfiguration:
    """Strictly decode an EncryptionConfiguration file; raises DecodeError."""
    doc = _parse(data)
    _check_type_meta(doc)
    unknown: list[str] = []
    _check(doc, _CONFIG, "", "", "EncryptionConfiguration", unknown)
    if unknown:
        raise DecodeError("strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown))
    return EncryptionConfiguration(tuple(
        ResourceConfiguration(tuple(r or "" for r in rc.get("resources") or ()),
                              tuple(_provider(p or {}) for p in rc.get("providers") or ()))
        for rc in doc.get("resources") or () if rc is not None))
