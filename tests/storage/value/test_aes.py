"""AES-GCM and AES-CBC: upstream's aes_test.go as facts, plus upstream's recorded ciphertext."""
from __future__ import annotations

import os

import pytest
from encryption_vectors import LEGACY_GCM

from kubeplane.storage.value.encrypt.aes import CBCTransformer, GCMTransformer
from kubeplane.storage.value.transformer import (
    PrefixTransformer,
    PrefixTransformers,
    Transformer,
    TransformError,
)

LENGTHS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 128, 1024]

ROUND_TRIP = [
    pytest.param(lambda: GCMTransformer(b"a" * 16), id="GCM 16 byte key"),
    pytest.param(lambda: GCMTransformer(b"b" * 24), id="GCM 24 byte key"),
    pytest.param(lambda: GCMTransformer(b"c" * 32), id="GCM 32 byte key"),
    pytest.param(lambda: CBCTransformer(b"a" * 16), id="CBC 16 byte key"),
    pytest.param(lambda: CBCTransformer(b"b" * 24), id="CBC 24 byte key"),
    pytest.param(lambda: CBCTransformer(b"c" * 32), id="CBC 32 byte key"),
]


@pytest.mark.parametrize("make", ROUND_TRIP)
def test_round_trip(make) -> None:  # type: ignore[no-untyped-def]
    """Upstream: TestRoundTrip (aes_test.go)."""
    t: Transformer = make()
    for n in LENGTHS:
        data = os.urandom(n)
        out = t.transform_to_storage("/foo/bar", data)
        assert out != data or n == 0
        assert t.transform_from_storage("/foo/bar", out) == (data, False)


def test_gcm_layout_is_nonce_ciphertext_tag() -> None:
    """Upstream: gcm.TransformToStorage: 12-byte nonce + Seal (ciphertext and 16-byte tag);
    TestGCMDataStable pins the nonce size, or all stored data breaks."""
    out = GCMTransformer(b"0123456789abcdef").transform_to_storage("/k", b"x" * 10)
    assert len(out) == 12 + 10 + 16


def test_cbc_layout_is_iv_and_padded_blocks() -> None:
    """A full block of padding when the value is block-aligned (PKCS#7)."""
    t = CBCTransformer(b"0123456789abcdef")
    assert len(t.transform_to_storage("/k", b"x" * 15)) == 16 + 16
    assert len(t.transform_to_storage("/k", b"x" * 16)) == 16 + 32


def test_gcm_reads_upstream_ciphertext() -> None:
    """Upstream: TestGCMLegacyDataCompatibility."""
    t = GCMTransformer(b"snorlax_awesomes")
    assert t.transform_from_storage("bamboo", LEGACY_GCM) == (b"pandas are the best", False)


def test_gcm_authenticates_the_storage_key() -> None:
    """The key is the additional authenticated data: a value moved under another key fails."""
    t = GCMTransformer(b"snorlax_awesomes")
    with pytest.raises(TransformError, match="^cipher: message authentication failed$"):
        t.transform_from_storage("/registry/secrets/other/name", LEGACY_GCM)


def test_gcm_nonces_are_random() -> None:
    """Upstream: TestGCMNonce ("gcm"): never all zeros, first four bytes never zero; and no
    repeats among a thousand."""
    t = GCMTransformer(b"abcdefghijklmnopabcdefghijklmnop")
    nonces = set()
    for i in range(1000):
        nonce = t.transform_to_storage("authenticated_data", bytes([i % 8]) * 1000)[:12]
        assert nonce[:4] != b"\0\0\0\0"
        nonces.add(nonce)
    assert len(nonces) == 1000


@pytest.mark.parametrize(("new", "keys", "authenticated"), [
    (GCMTransformer, (b"abcdefghijklmnopabcdefghijklmnop", b"0123456789abcdef0123456789abcdef"), True),
    (CBCTransformer, (b"abcdefghijklmnop", b"0123456789abcdef"), False),
], ids=["gcm", "cbc"])
def test_key_rotation(new, keys, authenticated) -> None:  # type: ignore[no-untyped-def]
    """Upstream: TestGCMKeyRotation, TestCBCKeyRotation."""
    test_err = TransformError("test error")
    first, second = PrefixTransformer(b"first:", new(keys[0])), PrefixTransformer(b"second:", new(keys[1]))
    p = PrefixTransformers(test_err, first, second)
    out = p.transform_to_storage("authenticated_data", b"firstvalue")
    assert out.startswith(b"first:")
    assert p.transform_from_storage("authenticated_data", out) == (b"firstvalue", False)

    if authenticated:                                  # changing the context fails storage
        with pytest.raises(TransformError):
            p.transform_from_storage("incorrect_context", out)
    else:                                              # CBC mode does not support authentication
        assert p.transform_from_storage("incorrect_context", out) == (b"firstvalue", False)

    p = PrefixTransformers(test_err, second, first)   # reverse the order: the second key writes
    assert p.transform_from_storage("authenticated_data", out) == (b"firstvalue", True)


def test_gcm_wrong_key_and_corruption() -> None:
    out = GCMTransformer(b"k" * 32).transform_to_storage("/k", b"secret data")
    with pytest.raises(TransformError, match="authentication failed"):
        GCMTransformer(b"j" * 32).transform_from_storage("/k", out)
    for i in range(len(out)):
        flipped = out[:i] + bytes([out[i] ^ 0x20]) + out[i + 1:]
        with pytest.raises(TransformError):
            GCMTransformer(b"k" * 32).transform_from_storage("/k", flipped)
    with pytest.raises(TransformError, match="^the stored data was shorter than the required size$"):
        GCMTransformer(b"k" * 32).transform_from_storage("/k", out[:11])


@pytest.mark.parametrize(("data", "message"), [
    (b"short", "the stored data was shorter than the required size"),
    (b"i" * 16 + b"x" * 17, "the stored data is not a multiple of the block size"),
    (b"i" * 16, "invalid PKCS7 data (empty or not padded)"),     # an IV and nothing else
])
def test_cbc_malformed(data: bytes, message: str) -> None:
    with pytest.raises(TransformError) as exc:
        CBCTransformer(b"k" * 16).transform_from_storage("/k", data)
    assert str(exc.value) == message


def test_cbc_wrong_key_fails_on_padding_or_returns_garbage() -> None:
    """Unauthenticated: a wrong key is caught only by the padding check (most of the time);
    when the garbage happens to end in valid padding the value is not the plaintext."""
    out = CBCTransformer(b"k" * 32).transform_to_storage("/k", b'{"kind":"Secret"}')
    try:
        got, _ = CBCTransformer(b"j" * 32).transform_from_storage("/k", out)
    except TransformError as e:
        assert str(e) in ("invalid PKCS7 data (empty or not padded)", "invalid padding on input")
    else:
        assert got != b'{"kind":"Secret"}'


def test_bad_key_sizes_are_refused() -> None:
    with pytest.raises(ValueError):
        GCMTransformer(b"k" * 9)
    with pytest.raises(ValueError):
        CBCTransformer(b"k" * 9)
