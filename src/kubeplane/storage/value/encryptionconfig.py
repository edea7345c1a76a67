"""From an EncryptionConfiguration file to the transformer the store calls for every value.

Upstream: LoadEncryptionConfig, getTransformerOverridesAndKMSPluginProbes,
prefixTransformersAndProbes, aesPrefixTransformer, secretboxPrefixTransformer,
transformerFromOverrides (k8s.io/apiserver/pkg/server/options/encryptionconfig/config.go).

On disk, a value written by a provider is `k8s:enc:<provider>:v1:<key name>:` + ciphertext,
exactly as kube-apiserver writes it to etcd, so the two can read each other's data given the
same configuration. Reads try every provider whose prefix the value has; writes use the
first provider of the resource's list (and its first key).

Upstream picks a transformer per resource (GroupResource) when it builds each resource's
storage. Our store has one transformer for every key, so `StorageKeyTransformer` finds the
resource from the key's `/registry/<resource>/` prefix with one dict lookup, and keys of
resources no rule lists pass straight through: that is the common case on every write.
"""
from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import secrets
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kubeplane.api.errors import aggregate

from .encrypt.identity import IDENTITY
from .encrypt.secretbox import SecretboxTransformer
from .transformer import (
    PrefixTransformer,
    PrefixTransformers,
    Transformer,
    TransformError,
)
from .types_encryption import (
    DecodeError,
    EncryptionConfiguration,
    Key,
    ResourceConfiguration,
    decode,
)
from .validation_encryption import (
    ANY_GROUP_ANY_RESOURCE,
    GroupResource,
    decode_secret,
    parse_group_resource,
    validate_encryption_configuration,
)

AESCBC_PREFIX = "k8s:enc:aescbc:v1:"
AESGCM_PREFIX = "k8s:enc:aesgcm:v1:"
SECRETBOX_PREFIX = "k8s:enc:secretbox:v1:"

REGISTRY = "/registry/"
DEFAULT_CONFIG_NAME = "encryption-config.yaml"


class EncryptionConfigError(ValueError):
    """The configuration file cannot be used; the message is upstream's, one line."""


@dataclass(frozen=True, slots=True)
class LoadedEncryptionConfig:
    """Upstream: EncryptionConfiguration (config.go) without the KMS health checks."""

    transformers: dict[GroupResource, Transformer]
    content_hash: str                         # "sha256:<hex>" of the file, as upstream


def load_encryption_config(path: pathlib.Path | str) -> LoadedEncryptionConfig:
    """Read, decode, validate and build a configuration file; raises EncryptionConfigError.

    Upstream: LoadEncryptionConfig."""
    try:
        config, content_hash = _load_config(pathlib.Path(path))
    except EncryptionConfigError as e:
        raise EncryptionConfigError(f"error while parsing file: {e}") from None
    try:
        transformers = transformer_overrides(config)
    except EncryptionConfigError as e:
        raise EncryptionConfigError(f"error while building transformers: {e}") from None
    return LoadedEncryptionConfig(transformers, content_hash)


def _load_config(path: pathlib.Path) -> tuple[EncryptionConfiguration, str]:
    """Upstream: loadConfig, loadDataAndHash."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise EncryptionConfigError(
            f"error while loading file: error reading encryption provider configuration file "
            f"\"{path}\": open {path}: {os.strerror(e.errno or 0).lower()}") from None
    if not data:
        raise EncryptionConfigError(
            f"error while loading file: encryption provider configuration file \"{path}\" is empty")
    try:
        config = decode(data)
    except DecodeError as e:
        raise EncryptionConfigError(f"error decoding encryption provider configuration file \"{path}\": {e}") from None
    if errs := validate_encryption_configuration(config):
        raise EncryptionConfigError(aggregate(errs))
    return config, "sha256:" + hashlib.sha256(data).hexdigest()


def transformer_overrides(config: EncryptionConfiguration) -> dict[GroupResource, Transformer]:
    """One PrefixTransformers per listed resource (or wildcard), earlier lists first.

    Upstream: getTransformerOverridesAndKMSPluginProbes. A resource after a wildcard that
    covers it ("*." then "secrets") could never be reached, so it is an error."""
    chains: dict[GroupResource, list[PrefixTransformer]] = {}
    for rc in config.resources:
        transformers = prefix_transformers(rc)
        for resource in rc.resources:
            gr = parse_group_resource(resource)
            for mask in (GroupResource(gr.group, "*"), ANY_GROUP_ANY_RESOURCE):
                if mask in chains:
                    raise EncryptionConfigError(
                        f"resource \"{_yaml_string(gr)}\" is masked by earlier rule \"{_yaml_string(mask)}\"")
            chains.setdefault(gr, []).extend(transformers)
    return {gr: PrefixTransformers(TransformError("no matching prefix found"), *chain)
            for gr, chain in chains.items()}


def _yaml_string(gr: GroupResource) -> str:
    """Upstream: grYAMLString ("*." for every core resource)."""
    return "*." if gr == ("", "*") else str(gr)


def prefix_transformers(rc: ResourceConfiguration) -> list[PrefixTransformer]:
    """The providers of one resource list, in order. Upstream: prefixTransformersAndProbes."""
    result = []
    for provider in rc.providers:
        if provider.aesgcm is not None:
            from .encrypt.aes import GCMTransformer       # cryptography's ciphers: only when configured
            result.append(_keyed(provider.aesgcm.keys, GCMTransformer, AESGCM_PREFIX, "AES", "aes"))
        elif provider.aescbc is not None:
            from .encrypt.aes import CBCTransformer
            result.append(_keyed(provider.aescbc.keys, CBCTransformer, AESCBC_PREFIX, "AES", "aes"))
        elif provider.secretbox is not None:
            result.append(_keyed(provider.secretbox.keys, SecretboxTransformer, SECRETBOX_PREFIX,
                                 "Secretbox", "secretbox"))
        elif provider.identity is not None:
            result.append(PrefixTransformer(b"", IDENTITY))
        elif provider.kms is not None:
            raise EncryptionConfigError("KMS providers are not supported by kubeplane")
        else:
            raise EncryptionConfigError("provider does not contain any of the expected providers: "
                                        "KMS, AESGCM, AESCBC, Secretbox, Identity")
    return result


def _keyed(keys: tuple[Key, ...], new: Callable[[bytes], Transformer], prefix: str, kind: str,
           lower: str) -> PrefixTransformer:
    """A provider: its keys behind `<name>:`, the first key writing.

    Upstream: aesPrefixTransformer, secretboxPrefixTransformer (validation has already
    refused what these checks catch; they stay for callers that skip it)."""
    if not keys:
        raise EncryptionConfigError(f"{lower} provider has no valid keys")
    chain = []
    for key in keys:
        if not key.name:
            raise EncryptionConfigError("key with invalid name provided")
        secret = decode_secret(key.secret) if key.secret else None
        if secret is None:
            raise EncryptionConfigError(f"could not obtain secret for named key {key.name}")
        try:
            transformer = new(secret)
        except ValueError:
            raise EncryptionConfigError(
                f"error while creating cipher for named key {key.name}: invalid key size {len(secret)}") from None
        chain.append(PrefixTransformer(key.name.encode() + b":", transformer))
    err = TransformError(f"no matching key was found for the provided {kind} transformer")
    return PrefixTransformer(prefix.encode(), PrefixTransformers(err, *chain))


def transformer_from_overrides(overrides: Mapping[GroupResource, Transformer], gr: GroupResource) -> Transformer:
    """The resource's own rule, else its group's "*.<group>", else "*.*", else identity.

    Upstream: transformerFromOverrides."""
    return (overrides.get(gr) or overrides.get(GroupResource(gr.group, "*"))
            or overrides.get(ANY_GROUP_ANY_RESOURCE) or IDENTITY)


class ServedResource(Protocol):
    """What StorageKeyTransformer needs of a resource (api.resources.ResourceInfo has it)."""

    @property
    def group(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def prefix(self) -> str: ...          # "/registry/<storage prefix or plural>/"


class StorageKeyTransformer:
    """The store's transformer: picks the resource's transformer by the key's prefix.

    `by_prefix` maps "/registry/secrets/" to the secrets chain for every served resource
    that some rule covers; the first resource of a shared prefix decides (core `events`
    before events.k8s.io, as upstream's validation insists). Keys under a prefix no served
    resource has (custom resources) get the "*.*" rule if there is one.

    Cost for a key no rule covers: one str.startswith over the encrypted prefixes (when
    there is no "*.*"), then identity. See benchmarks/encryption_at_rest.py.
    """

    __slots__ = ("_encrypted", "by_prefix", "default")

    def __init__(self, overrides: Mapping[GroupResource, Transformer], resources: Iterable[ServedResource]) -> None:
        by_prefix: dict[str, Transformer] = {}
        for r in resources:
            by_prefix.setdefault(r.prefix, transformer_from_overrides(overrides, GroupResource(r.group, r.plural)))
        self.default: Transformer = overrides.get(ANY_GROUP_ANY_RESOURCE) or IDENTITY
        self.by_prefix = {p: t for p, t in by_prefix.items() if t is not self.default}
        # Without "*.*" everything outside these prefixes is identity: one C-level check.
        self._encrypted = tuple(self.by_prefix) if self.default is IDENTITY else None

    def transformer_for_key(self, key: str) -> Transformer:
        if self._encrypted is not None and not key.startswith(self._encrypted):
            return IDENTITY
        end = key.find("/", len(REGISTRY))
        return self.by_prefix.get(key[:end + 1], self.default) if end > 0 else self.default

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        if self._encrypted is not None and not key.startswith(self._encrypted):
            return data
        return self.transformer_for_key(key).transform_to_storage(key, data)

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        if self._encrypted is not None and not key.startswith(self._encrypted):
            return IDENTITY.transform_from_storage(key, data)
        return self.transformer_for_key(key).transform_from_storage(key, data)


def new_storage_transformer(path: pathlib.Path | str, resources: Iterable[ServedResource]) -> StorageKeyTransformer:
    """Load `--encryption-provider-config` and map it onto the served resources."""
    return StorageKeyTransformer(load_encryption_config(path).transformers, resources)


# --- the default configuration ------------------------------------------------------------

DEFAULT_CONFIG = """\
# Encryption at rest for kubeplane (upstream's EncryptionConfiguration format), written on
# first start. Secrets are sealed with secretbox (XSalsa20-Poly1305) under key1; identity
# reads what was stored before encryption was on. Without this key the Secrets in state.db
# cannot be read: back it up with the data dir, and keep it private (0600).
# Key rotation and other providers: docs/encryption-at-rest.md
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources:
      - secrets
    providers:
      - secretbox:
          keys:
            - name: key1
              secret: {secret}
      - identity: {{}}
"""


def ensure_default_config(data_dir: pathlib.Path | str) -> pathlib.Path:
    """data_dir/encryption-config.yaml, created on first start with a fresh secretbox key.

    Reused as it is on later starts (only its mode is tightened to 0600 if loosened). The
    file appears atomically and is never replaced: two starts racing each write a temporary
    file, and the one whose link lands first wins; the other's key is discarded unused.

    Why secretbox: upstream rates it "strong" with no write limit, aesgcm "strongest" but to
    be rotated every 200,000 writes (random 96-bit nonces), aescbc "weak" (padding oracle).
    A key generated for the user will in practice never be rotated, so the default must stay
    safe however long it is used: secretbox's 192-bit random nonces make that so.
    """
    data_dir = pathlib.Path(data_dir)
    path = data_dir / DEFAULT_CONFIG_NAME
    if path.exists():
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        return path
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = DEFAULT_CONFIG.format(secret=_new_secret())
    fd, tmp = tempfile.mkstemp(dir=data_dir, prefix=".encryption-config.", suffix=".tmp")   # 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)                       # fails if another start got there first
        except FileExistsError:
            pass
        _fsync_dir(data_dir)
    finally:
        os.unlink(tmp)
    return path


def _new_secret() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


def _fsync_dir(d: pathlib.Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
