"""secretbox (XSalsa20-Poly1305): upstream's secretbox_test.go as facts, and NaCl's output."""
from __future__ import annotations

import os

import pytest
from encryption_vectors import GO_BOX

from kubeplane.storage.value.encrypt.secretbox import SecretboxTransformer
from kubeplane.storage.value.transformer import (
    PrefixTransformer,
    PrefixTransformers,
    TransformError,
)

KEY1 = b"\x01" * 32
KEY2 = b"\x02" * 32


def test_reads_what_go_and_nacl_seal() -> None:
    stored = b"\x02" * 24 + GO_BOX
    assert SecretboxTransformer(KEY1).transform_from_storage("/any", stored) == (b"\x03" * 64, False)


def test_layout_is_nonce_then_box() -> None:
    out = SecretboxTransformer(KEY1).transform_to_storage("/k", b"\x03" * 64)
    assert len(out) == 24 + 16 + 64
    assert out[:24] != b"\0" * 24


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 128, 1024])
def test_round_trip(n: int) -> None:
    """Upstream: TestRoundTrip (secretbox_test.go)."""
    t = SecretboxTransformer(KEY1)
    data = os.urandom(n)
    assert t.transform_from_storage("", t.transform_to_storage("", data)) == (data, False)


def test_key_rotation() -> None:
    """Upstream: TestSecretboxKeyRotation."""
    test_err = TransformError("test error")
    first = PrefixTransformer(b"first:", SecretboxTransformer(KEY1))
    second = PrefixTransformer(b"second:", SecretboxTransformer(KEY2))
    p = PrefixTransformers(test_err, first, second)
    out = p.transform_to_storage("authenticated_data", b"firstvalue")
    assert out.startswith(b"first:")
    assert p.transform_from_storage("authenticated_data", out) == (b"firstvalue", False)
    # secretbox does not authenticate the context: another key reads it the same
    assert p.transform_from_storage("incorrect_context", out) == (b"firstvalue", False)
    p = PrefixTransformers(test_err, second, first)
    assert p.transform_from_storage("authenticated_data", out) == (b"firstvalue", True)


def test_wrong_key_and_corruption() -> None:
    out = SecretboxTransformer(KEY1).transform_to_storage("/k", b"secret")
    with pytest.raises(TransformError, match="^output array was not large enough for encryption$"):
        SecretboxTransformer(KEY2).transform_from_storage("/k", out)
    for i in range(len(out)):                          # every corrupted byte is caught (Go: TestSealOpen)
        with pytest.raises(TransformError):
            SecretboxTransformer(KEY1).transform_from_storage("/k", out[:i] + bytes([out[i] ^ 0x20]) + out[i + 1:])
    with pytest.raises(TransformError, match="^the stored data was shorter than the required size$"):
        SecretboxTransformer(KEY1).transform_from_storage("/k", out[:39])


def test_key_must_be_32_bytes() -> None:
    with pytest.raises(ValueError, match="expected key size 32 for secretbox provider, got 16"):
        SecretboxTransformer(b"k" * 16)
