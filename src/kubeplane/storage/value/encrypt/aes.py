"""AES-GCM and AES-CBC transformers (the aesgcm and aescbc providers).

Upstream: NewGCMTransformer, NewCBCTransformer
(k8s.io/apiserver/pkg/storage/value/encrypt/aes/aes.go), byte for byte:

    aesgcm: nonce (12 random bytes) + ciphertext + tag (16), the storage key as
            additional authenticated data
    aescbc: IV (16 random bytes) + ciphertext of the PKCS#7-padded value, no authentication

A random 96-bit nonce may be used with one key about 2^32 times before a repeat becomes
likely (NIST SP 800-38D); upstream's documentation asks to rotate aesgcm keys every 200,000
writes. Both use `cryptography` (OpenSSL, AES-NI), already a dependency for TLS.
"""
from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..transformer import TransformError

NONCE_SIZE = 12       # all data written so far breaks if this ever changes (TestGCMDataStable)
BLOCK_SIZE = 16


class GCMTransformer:
    """AES-GCM with a random nonce. Upstream: gcm (aes.go)."""

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)          # 16, 24 or 32 bytes; ValueError otherwise

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        if len(data) < NONCE_SIZE:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._aead.decrypt(data[:NONCE_SIZE], data[NONCE_SIZE:], key.encode()), False
        except InvalidTag:
            raise TransformError("cipher: message authentication failed") from None

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        nonce = os.urandom(NONCE_SIZE)
        return nonce + self._aead.encrypt(nonce, data, key.encode())


class CBCTransformer:
    """AES-CBC with PKCS#7 padding and a random IV. Upstream: cbc (aes.go).

    Not authenticated: a flipped byte decrypts to garbage (or a padding error), and CBC
    padding errors are the classic padding-oracle leak, hence upstream's "weak" rating."""

    __slots__ = ("_algorithm",)

    def __init__(self, key: bytes) -> None:
        self._algorithm = algorithms.AES(key)

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        if len(data) < BLOCK_SIZE:
            raise TransformError("the stored data was shorter than the required size")
        iv, data = data[:BLOCK_SIZE], data[BLOCK_SIZE:]
        if len(data) % BLOCK_SIZE:
            raise TransformError("the stored data is not a multiple of the block size")
        decryptor = Cipher(self._algorithm, modes.CBC(iv)).decryptor()
        result = decryptor.update(data) + decryptor.finalize()
        return _unpad(result), False

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        padding = BLOCK_SIZE - len(data) % BLOCK_SIZE        # 1..16: a full block when aligned
        iv = os.urandom(BLOCK_SIZE)
        encryptor = Cipher(self._algorithm, modes.CBC(iv)).encryptor()
        return iv + encryptor.update(data + bytes([padding]) * padding) + encryptor.finalize()


def _unpad(result: bytes) -> bytes:
    """Strip and check PKCS#7 padding, with upstream's messages."""
    padding = result[-1] if result else 0
    if padding == 0 or padding > len(result):
        raise TransformError("invalid PKCS7 data (empty or not padded)")
    if result[-padding:] != bytes([padding]) * padding:
        raise TransformError("invalid padding on input")
    return result[:-padding]
