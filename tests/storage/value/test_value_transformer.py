"""PrefixTransformers and identity: upstream's transformer_test.go tables as facts."""
from __future__ import annotations

import pytest

from kubeplane.storage.value.encrypt.identity import IDENTITY
from kubeplane.storage.value.transformer import (
    PrefixTransformer,
    PrefixTransformers,
    TransformError,
)


class FakeTransformer:
    """Upstream: testTransformer (records what it was given, answers what it was told)."""

    def __init__(self, *, frm: bytes = b"", to: bytes = b"", err: TransformError | None = None,
                 stale: bool = False) -> None:
        self.frm, self.to, self.err, self.stale = frm, to, err, stale
        self.received_from: bytes | None = None
        self.received_to: bytes | None = None

    def transform_from_storage(self, key: str, data: bytes) -> tuple[bytes, bool]:
        self.received_from = data
        if self.err:
            raise self.err
        return self.frm, self.stale

    def transform_to_storage(self, key: str, data: bytes) -> bytes:
        self.received_to = data
        if self.err:
            raise self.err
        return self.to


TEST_ERR = TransformError("test error")
TRANSFORM_ERR = TransformError("transform error")


def prefix_from_transformers() -> list[PrefixTransformer]:
    return [
        PrefixTransformer(b"first:", FakeTransformer(frm=b"value1")),
        PrefixTransformer(b"second:", FakeTransformer(frm=b"value2")),
        PrefixTransformer(b"fails:", FakeTransformer(err=TRANSFORM_ERR)),
        PrefixTransformer(b"stale:", FakeTransformer(frm=b"value3", stale=True)),
    ]


@pytest.mark.parametrize(("data", "expect", "stale", "err", "match"), [
    (b"first:value", b"value1", False, None, 0),
    (b"second:value", b"value2", True, None, 1),      # not the first: stale
    (b"third:value", None, False, TEST_ERR, -1),      # no prefix matches: the configured error
    (b"fails:value", None, False, TRANSFORM_ERR, 2),  # the transformer's own error, unwrapped
    (b"stale:value", b"value3", True, None, 3),       # the transformer's own stale flag
])
def test_prefix_from(data: bytes, expect: bytes | None, stale: bool, err: TransformError | None,
                     match: int) -> None:
    """Upstream: TestPrefixFrom."""
    transformers = prefix_from_transformers()
    p = PrefixTransformers(TEST_ERR, *transformers)
    if err is not None:
        with pytest.raises(TransformError) as exc:
            p.transform_from_storage("/k", data)
        assert exc.value is err
    else:
        assert p.transform_from_storage("/k", data) == (expect, stale)
    if match != -1:
        fake = transformers[match].transformer
        assert isinstance(fake, FakeTransformer)
        assert fake.received_from == b"value"        # the prefix is stripped


@pytest.mark.parametrize(("prefix", "fake", "expect"), [
    (b"first:", FakeTransformer(to=b"value1"), b"first:value1"),
    (b"second:", FakeTransformer(to=b"value2"), b"second:value2"),
])
def test_prefix_to(prefix: bytes, fake: FakeTransformer, expect: bytes) -> None:
    """Upstream: TestPrefixTo."""
    p = PrefixTransformers(TEST_ERR, PrefixTransformer(prefix, fake), PrefixTransformer(b"other:", IDENTITY))
    assert p.transform_to_storage("/k", b"value") == expect
    assert fake.received_to == b"value"


def test_prefix_to_error_is_the_transformers() -> None:
    p = PrefixTransformers(TEST_ERR, PrefixTransformer(b"fails:", FakeTransformer(err=TRANSFORM_ERR)))
    with pytest.raises(TransformError) as exc:
        p.transform_to_storage("/k", b"value")
    assert exc.value is TRANSFORM_ERR


def test_failed_prefix_match_goes_on_to_a_later_one_with_the_same_prefix() -> None:
    """Two providers of one kind during a rotation share a prefix: the second must be tried."""
    p = PrefixTransformers(None,
                           PrefixTransformer(b"k8s:enc:aescbc:v1:", FakeTransformer(err=TRANSFORM_ERR)),
                           PrefixTransformer(b"k8s:enc:aescbc:v1:", FakeTransformer(frm=b"plain")))
    assert p.transform_from_storage("/k", b"k8s:enc:aescbc:v1:xyz") == (b"plain", True)


def test_all_matching_prefixes_fail_gives_every_error_once() -> None:
    """Upstream: errors.Reduce(errors.NewAggregate(errs)): "[a, b]", duplicates dropped."""
    other = TransformError("other error")
    p = PrefixTransformers(None,
                           PrefixTransformer(b"x:", FakeTransformer(err=TRANSFORM_ERR)),
                           PrefixTransformer(b"x:", FakeTransformer(err=TransformError("transform error"))),
                           PrefixTransformer(b"x:", FakeTransformer(err=other)))
    with pytest.raises(TransformError, match=r"^\[transform error, other error\]$"):
        p.transform_from_storage("/k", b"x:v")


def test_default_error_when_nothing_matches() -> None:
    p = PrefixTransformers(None, PrefixTransformer(b"first:", IDENTITY))
    with pytest.raises(TransformError, match="^the provided value does not match any of the supported transformers$"):
        p.transform_from_storage("/k", b"plain")


def test_identity_refuses_encrypted_data_and_the_search_goes_on() -> None:
    """Upstream: identityTransformer + prefixTransformers: identity first (decrypting away
    from encryption) still reads what is encrypted, through the later provider, as stale."""
    enc = FakeTransformer(frm=b"secret")
    p = PrefixTransformers(None, PrefixTransformer(b"", IDENTITY), PrefixTransformer(b"k8s:enc:x:", enc))
    assert p.transform_from_storage("/k", b'{"plain":1}') == (b'{"plain":1}', False)
    assert p.transform_from_storage("/k", b"k8s:enc:x:data") == (b"secret", True)
    assert p.transform_to_storage("/k", b"v") == b"v"


def test_identity_alone_reports_no_match_for_encrypted_data() -> None:
    """Identity's refusal is not an error worth listing: the configured error is raised."""
    p = PrefixTransformers(TransformError("no matching prefix found"), PrefixTransformer(b"", IDENTITY))
    with pytest.raises(TransformError, match="^no matching prefix found$"):
        p.transform_from_storage("/k", b"k8s:enc:aescbc:v1:key1:....")


def test_identity_transformer() -> None:
    assert IDENTITY.transform_to_storage("/k", b"k8s:enc:x") == b"k8s:enc:x"
    assert IDENTITY.transform_from_storage("/k", b"k8s\x00proto") == (b"k8s\x00proto", False)
    with pytest.raises(TransformError, match="^identity transformer tried to read encrypted data$"):
        IDENTITY.transform_from_storage("/k", b"k8s:enc:secretbox:v1:key1:")


def test_prefix_transformers_needs_one() -> None:
    with pytest.raises(ValueError):
        PrefixTransformers(None)
