"""Encryption at rest: upstream's EncryptionConfiguration, providers and on-disk format.

Upstream: k8s.io/apiserver/pkg/storage/value (transformers, providers) and
pkg/server/options/encryptionconfig (the `--encryption-provider-config` file).

    path = ensure_default_config(data_dir)            # or the --encryption-provider-config file
    transformer = new_storage_transformer(path, RESOURCES)
    transformer.transform_to_storage("/registry/secrets/default/db", b'{"kind":"Secret",...}')
    # -> b"k8s:enc:secretbox:v1:key1:" + nonce + box

docs/encryption-at-rest.md is the user's guide (providers, identity, key rotation).
"""
from .encryptionconfig import (
    DEFAULT_CONFIG_NAME,
    EncryptionConfigError,
    LoadedEncryptionConfig,
    StorageKeyTransformer,
    ensure_default_config,
    load_encryption_config,
    new_storage_transformer,
)
from .transformer import (
    PrefixTransformer,
    PrefixTransformers,
    Transformer,
    TransformError,
)

__all__ = [
    "DEFAULT_CONFIG_NAME", "EncryptionConfigError", "LoadedEncryptionConfig", "PrefixTransformer",
    "PrefixTransformers", "StorageKeyTransformer", "TransformError", "Transformer", "ensure_default_config",
    "load_encryption_config", "new_storage_transformer",
]
