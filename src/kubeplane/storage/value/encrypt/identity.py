"""The identity provider: values stored as they are.

Upstream: identityTransformer, NewEncryptCheckTransformer
(k8s.io/apiserver/pkg/storage/value/encrypt/identity/identity.go).
"""
from __future__ import annotations

from ..transformer import TransformError

# Reserved for encrypted data on disk. JSON starts with '{' and protobuf with "k8s\x00", so
# an unencrypted object never starts with it.
ENCRYPTED_PREFIX = b"k8s:enc:"


class IdentityTransformer:
    """Stores values unchanged, and refuses to read encrypted ones: an encrypted value
    handed to the JSON decoder would only fail later with a less useful message, and when
    identity is listed before an encryption provider the refusal lets the search go on."""

    __slots__ = ()

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        if data.startswith(ENCRYPTED_PREFIX):
            raise TransformError("identity transformer tried to read encrypted data")
        return data, False

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        return data


IDENTITY = IdentityTransformer()
