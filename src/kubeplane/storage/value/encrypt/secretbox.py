"""The secretbox transformer: XSalsa20 and Poly1305 (NaCl's crypto_secretbox).

Upstream: secretboxTransformer (k8s.io/apiserver/pkg/storage/value/encrypt/secretbox),
byte for byte: nonce (24 random bytes) + Poly1305 tag (16) + XSalsa20 ciphertext, which is
golang.org/x/crypto/nacl/secretbox.Seal's output after the nonce. The storage key is not
authenticated (secretbox has no associated data), as upstream.

Library: PyNaCl's low-level `nacl.bindings.crypto_secretbox` / `crypto_secretbox_open`.
Compared on one seal / one open, 1 KiB | 16 KiB values, best of three runs on the shared
2-core machine (`.venv/bin/python benchmarks/encryption_at_rest.py`):

    PyNaCl 1.6 bindings (here) 2.4 / 2.2 us  | 11.1 / 10.8 us   libsodium bundled in the wheel
    PyNaCl SecretBox class     3.5 / 3.2 us  | 12.7 / 12.5 us   (builds an EncryptedMessage)
    pysodium 0.7               3.2 / 2.8 us  | 20.3 / 20.0 us   ctypes; needs the system libsodium
    (aesgcm, cryptography      1.2 / 0.9 us  |  2.3 / 1.8 us    for reference: AES-NI)

All three reproduce golang.org/x/crypto's TestSecretBox vector (computed with C NaCl), so
correctness does not separate them: both bind libsodium. PyNaCl wins on speed for larger
values (cffi passes buffers without copies) and on installation (a wheel that carries
libsodium, where pysodium fails at import on machines without the system library); it is
maintained by PyCA, who also maintain `cryptography`. `cryptography` alone cannot do it: it
has Poly1305 but no Salsa20/XSalsa20, and a cipher core hand-written in Python would be
orders of magnitude slower and a new place for bugs.
"""
from __future__ import annotations

import functools
import os
from types import SimpleNamespace

from ..transformer import TransformError

NONCE_SIZE = 24
OVERHEAD = 16         # the Poly1305 tag
KEY_SIZE = 32


class SecretboxTransformer:
    """Upstream: secretboxTransformer (secretbox.go). 192-bit random nonces: unlike AES-GCM's
    96-bit ones, a repeat is negligible however many values one key seals."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_SIZE:
            raise ValueError(f"expected key size 32 for secretbox provider, got {len(key)}")
        self._key = bytes(key)

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        if len(data) < OVERHEAD + NONCE_SIZE:
            raise TransformError("the stored data was shorter than the required size")
        nacl = _nacl()
        try:
            return nacl.crypto_secretbox_open(data[NONCE_SIZE:], data[:NONCE_SIZE], self._key), False
        except nacl.CryptoError:
            # upstream's message for a failed Open (wrong key or tampered data), kept verbatim
            raise TransformError("output array was not large enough for encryption") from None

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        nonce = os.urandom(NONCE_SIZE)
        return nonce + _nacl().crypto_secretbox(data, nonce, self._key)


@functools.cache
def _nacl() -> SimpleNamespace:
    """PyNaCl's functions, imported at the first seal or open: `up` builds this transformer
    before it serves, and need not load libsodium (~2.5 ms) until a Secret is written or read."""
    from nacl.bindings import crypto_secretbox, crypto_secretbox_open
    from nacl.exceptions import CryptoError
    return SimpleNamespace(crypto_secretbox=crypto_secretbox, crypto_secretbox_open=crypto_secretbox_open,
                           CryptoError=CryptoError)
