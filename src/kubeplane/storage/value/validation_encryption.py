"""Validation of an EncryptionConfiguration, rule for rule and message for message as upstream.

Upstream: ValidateEncryptionConfiguration (k8s.io/apiserver/pkg/apis/apiserver/validation/
validation_encryption.go). Two differences, both refusals of things kubeplane cannot honour:
a `kms` provider is Forbidden (no KMS plugins here), and two keys with the same name in one
provider are a Duplicate (upstream accepts them; the second would only be reached by trial
decryption, which makes a rotation's "which key wrote this" ambiguous).
"""
from __future__ import annotations

import base64
import binascii
from typing import NamedTuple


from kubeplane.api.errors import FieldError, JSONValue, duplicate, forbidden, invalid, required

from .types_encryption import EncryptionConfiguration, Key, ProviderConfiguration

MORE_THAN_ONE_ELEMENT_ERR = ("more than one provider specified in a single element, should split into "
                             "different list elements")
KEY_LEN_ERR_FMT = "secret is not of the expected length, got {}, expected one of {}"
AT_LEAST_ONE_REQUIRED_ERR_FMT = "at least one {} is required"
MANDATORY_FIELD_ERR_FMT = "{} is a mandatory field for a {}"
BASE64_ENCODING_ERR = "secrets must be base64 encoded"
ENCRYPTION_CONFIG_NIL_ERR = "EncryptionConfiguration can't be nil"
EVENTS_GROUP_ERR = ("'*.events.k8s.io' objects are stored using the 'events' API group in etcd. "
                    "Use 'events' instead in the config file")
EXTENSIONS_GROUP_ERR = "'extensions' group has been removed and cannot be used for encryption"
STAR_RESOURCE_ERR = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
OVERLAP_ERR = ("using overlapping resources such as 'secrets' and '*.' in the same resource list is not "
               "allowed as they will be masked")
NON_REST_API_RESOURCE_ERR = "resources which do not have REST API/s cannot be encrypted"
RESOURCE_NAME_ERR = "resource name should not contain capital letters"
RESOURCE_ACROSS_GROUP_ERR = "encrypting the same resource across groups is not supported"
DUPLICATE_RESOURCE_ERR = "the same resource cannot be specified multiple times"
NO_PROVIDER_ERR = "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
KMS_UNSUPPORTED_ERR = ("KMS providers are not supported by kubeplane; use aescbc, aesgcm, secretbox or "
                       "identity (docs/encryption-at-rest.md)")

AES_KEY_SIZES = (16, 24, 32)        # crypto/aes.NewCipher
SECRETBOX_KEY_SIZES = (32,)         # nacl/secretbox



class GroupResource(NamedTuple):
    """Upstream: schema.GroupResource."""

    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


ANY_GROUP_ANY_RESOURCE = GroupResource("*", "*")


def parse_group_resource(gr: str) -> GroupResource:
    """"deployments.apps" -> (apps, deployments), "*." -> ("", *), "*.*" -> (*, *).

    Upstream: schema.ParseGroupResource (split at the first dot)."""
    resource, dot, group = gr.partition(".")
    return GroupResource(group, resource) if dot else GroupResource("", gr)


def validate_encryption_configuration(c: EncryptionConfiguration | None) -> list[FieldError]:
    """Upstream: ValidateEncryptionConfiguration (reload=false: no KMS name uniqueness)."""
    root = "resources"
    if c is None:
        return [required(root, ENCRYPTION_CONFIG_NIL_ERR)]
    if not c.resources:
        return [required(root, AT_LEAST_ONE_REQUIRED_ERR_FMT.format(root))]
    errs: list[FieldError] = []
    for i, conf in enumerate(c.resources):
        r, p = f"{root}[{i}].resources", f"{root}[{i}].providers"
        if not conf.resources:
            errs.append(required(r, AT_LEAST_ONE_REQUIRED_ERR_FMT.format(r)))
        errs += validate_resource_overlap(list(conf.resources), r)
        errs += validate_resource_names(list(conf.resources), r)
        if not conf.providers:
            errs.append(required(p, AT_LEAST_ONE_REQUIRED_ERR_FMT.format(p)))
        for j, provider in enumerate(conf.providers):
            errs += _validate_provider(provider, f"{p}[{j}]")
    return errs


def _validate_provider(provider: ProviderConfiguration, path: str) -> list[FieldError]:
    errs = validate_single_provider(provider, path)
    if provider.kms is not None:
        errs.append(forbidden(f"{path}.kms", KMS_UNSUPPORTED_ERR))
    elif provider.aesgcm is not None:
        errs += validate_keys(provider.aesgcm.keys, f"{path}.aesgcm.keys", AES_KEY_SIZES)
    elif provider.aescbc is not None:
        errs += validate_keys(provider.aescbc.keys, f"{path}.aescbc.keys", AES_KEY_SIZES)
    elif provider.secretbox is not None:
        errs += validate_keys(provider.secretbox.keys, f"{path}.secretbox.keys", SECRETBOX_KEY_SIZES)
    return errs


def validate_resource_overlap(resources: list[str], path: str) -> list[FieldError]:
    """A duplicate, or a wildcard beside something it covers, in one list.

    Upstream: validateResourceOverlap, loop for loop: "*.*" overlaps anything; "*.g" overlaps
    everything else in group g; "*.apps" beside "*." is fine (different groups)."""
    if len(resources) < 2:
        return []
    grs = [parse_group_resource(r) for r in resources]
    has_overlap = has_duplicate = False
    for i, r1 in enumerate(grs):
        for j, r2 in enumerate(grs):
            if i == j:
                continue
            if r1 == r2 and not has_duplicate:
                has_duplicate = True
                continue
            if has_overlap:
                continue
            if r1 == ANY_GROUP_ANY_RESOURCE:
                has_overlap = True
                continue
            if r1[0] != r2[0]:
                continue
            if r1[1] == "*" or r2[1] == "*":
                has_overlap = True
    value = list(resources)
    errs = []
    if has_duplicate:
        errs.append(invalid(path, value, DUPLICATE_RESOURCE_ERR))
    if has_overlap:
        errs.append(invalid(path, value, OVERLAP_ERR))
    return errs


def _resource_name_error(res: str) -> str | None:
    group, resource = parse_group_resource(res)
    if res.lower() != res:
        return RESOURCE_NAME_ERR
    if res == "*":
        return STAR_RESOURCE_ERR
    if res in ("apiserveripinfo", "serviceipallocations", "servicenodeportallocations"):
        return NON_REST_API_RESOURCE_ERR
    if group == "events.k8s.io":
        return EVENTS_GROUP_ERR
    if group == "extensions":
        return EXTENSIONS_GROUP_ERR
    if group == "*" and resource != "*":
        return RESOURCE_ACROSS_GROUP_ERR
    return None


def validate_resource_names(resources: list[str], path: str) -> list[FieldError]:
    """Upstream: validateResourceNames (the first failing rule per entry)."""
    return [invalid(f"{path}[{j}]", res, err) for j, res in enumerate(resources)
            if (err := _resource_name_error(res)) is not None]


def validate_single_provider(provider: ProviderConfiguration, path: str) -> list[FieldError]:
    """Exactly one provider per list element. Upstream: validateSingleProvider."""
    found = sum(x is not None for x in (provider.kms, provider.aesgcm, provider.aescbc, provider.secretbox,
                                        provider.identity))
    if found == 0:
        return [invalid(path, JSONValue(provider.go_value()), NO_PROVIDER_ERR)]
    if found > 1:
        return [invalid(path, JSONValue(provider.go_value()), MORE_THAN_ONE_ELEMENT_ERR)]
    return []


def validate_keys(keys: tuple[Key, ...], path: str, expected_len: tuple[int, ...]) -> list[FieldError]:
    """Upstream: validateKeys, plus kubeplane's check that names are unique in one provider."""
    if not keys:
        return [required(path, AT_LEAST_ONE_REQUIRED_ERR_FMT.format("keys"))]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, key in enumerate(keys):
        errs += validate_key(key, f"{path}[{i}]", expected_len)
        if key.name and key.name in seen:
            errs.append(duplicate(f"{path}[{i}].name", key.name))
        seen.add(key.name)
    return errs


def validate_key(key: Key, path: str, expected_len: tuple[int, ...]) -> list[FieldError]:
    """Upstream: validateKey. The secret itself never appears in a message (REDACTED)."""
    errs: list[FieldError] = []
    if not key.name:
        errs.append(required(f"{path}.name", MANDATORY_FIELD_ERR_FMT.format("name", "key")))
    if not key.secret:
        errs.append(required(f"{path}.secret", MANDATORY_FIELD_ERR_FMT.format("secret", "key")))
        return errs
    secret = decode_secret(key.secret)
    if secret is None:
        errs.append(invalid(f"{path}.secret", "REDACTED", BASE64_ENCODING_ERR))
    elif len(secret) not in expected_len:
        sizes = "[" + " ".join(map(str, expected_len)) + "]"          # Go's %v of []int
        errs.append(invalid(f"{path}.secret", "REDACTED", KEY_LEN_ERR_FMT.format(len(secret), sizes)))
    return errs


def decode_secret(secret: str) -> bytes | None:
    """base64.StdEncoding.DecodeString: padding required, CR and LF ignored; None if invalid."""
    try:
        return base64.b64decode(secret.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return None

