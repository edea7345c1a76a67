"""Quantities as quota prints them: canonical forms, and sums in their left operand's format.

The expected strings are what upstream's Quantity.String() gives for the same input
(apimachinery/pkg/api/resource/quantity_test.go TestQuantityCanonicalize-style facts).
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.api.quantity import parse


@pytest.mark.parametrize("given, canonical", [
    ("0", "0"), ("0Gi", "0"), ("100m", "100m"), ("1.5", "1500m"), ("1500m", "1500m"), ("1000m", "1"),
    ("2000", "2k"), ("5", "5"), ("1k", "1k"), ("1M", "1M"), ("12345", "12345"),
    ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"), ("0.5Gi", "512Mi"),
    ("1023Ki", "1023Ki"), ("1.5Ki", "1536"), ("100Mi", "100Mi"),
    ("1e3", "1e3"), ("12e2", "1200"), ("1E6", "1e6"),
    ("0.1n", "1n"), ("1u", "1u"), ("-100m", "-100m"),
    (2, "2"), (0.5, "500m"),
])
def test_canonical(given: object, canonical: str) -> None:
    assert str(parse(given)) == canonical


@pytest.mark.parametrize("a, b, total", [
    pytest.param("1", "100m", "1100m", id="decimal"),
    pytest.param("50Gi", "2Gi", "52Gi", id="binary-stays-binary"),
    pytest.param("0", "1Gi", "1Gi", id="zero-takes-right-format"),
    pytest.param("1Gi", "1G", "2073741824", id="binary-left-keeps-binary"),
    pytest.param("1G", "1Gi", "2073741824", id="decimal-left"),
    pytest.param("500m", "500m", "1", id="whole"),
])
def test_add_keeps_the_left_format(a: str, b: str, total: str) -> None:
    assert str(parse(a).add(parse(b))) == total


def test_compares_numerically() -> None:
    assert parse("1000m") == parse("1")
    assert parse("1Gi") > parse("1G")
    assert parse("999m") < parse("1")


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "1Zi", None, True, [1]])
def test_malformed_is_a_value_error(bad: object) -> None:
    with pytest.raises(ValueError):
        parse(bad)


def test_round_up_to_whole_units() -> None:
    assert str(parse("1500m").round_up()) == "2"
    assert str(parse("2").round_up()) == "2"


# apimachinery pkg/api/resource/quantity_test.go TestQuantityString: (canonical, an alternate
# spelling that parses to the same canonical form).
QUANTITY_STRING = [
    ("1Gi", "1024Mi"), ("300Mi", "307200Ki"), ("6Ki", ""), ("1001Gi", "1025024Mi"), ("1Ti", "1024Gi"),
    ("5", "5000m"), ("500m", "0.5"), ("1G", "1000M"), ("1G", "0.001T"), ("1m", "1000u"), ("80m", ""),
    ("1080m", "1.08"), ("1080m", "1080000000n"), ("300M", ""), ("1T", ""), ("1234567M", ""), ("3k", ""),
    ("1025", ""), ("0", ""), ("1e9", ".001e12"), ("1e-3", "0.001e0"), ("1e-9", "1000e-12"), ("80e-3", ""),
    ("300e6", ""), ("1e12", ""), ("1e3", ""), ("3e3", ""), ("0", "00"), ("1n", ""), ("80n", ""), ("1080n", ""),
    ("1u", ""), ("80u", ""), ("1080u", ""),
]


@pytest.mark.parametrize("canonical, alternate", QUANTITY_STRING)
def test_upstream_quantity_string(canonical: str, alternate: str) -> None:
    assert str(parse(canonical)) == canonical
    if alternate:
        assert str(parse(alternate)) == canonical


# TestQuantityParseEmit, with the negated forms.
@pytest.mark.parametrize("given, emitted", [
    ("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000M", "1G"), (".001Ki", "1024m"),
    (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
])
def test_upstream_parse_emit(given: str, emitted: str) -> None:
    assert str(parse(given)) == emitted
    assert str(parse("-" + given)) == "-" + emitted


@pytest.mark.parametrize("value", ["100m", "1Gi"])
def test_adding_or_subtracting_zero_keeps_the_suffix(value: str) -> None:
    """TestQuantityAddZeroPreservesSuffix / TestQuantitySubZeroPreservesSuffix."""
    zero = parse("0")
    assert str(parse(value).add(zero)) == value
    assert str(zero.add(parse(value))) == value
    assert str(parse(value).sub(zero)) == value


@given(st.integers(min_value=-(10 ** 15), max_value=10 ** 15), st.integers(min_value=-9, max_value=9),
       st.sampled_from(["", "e", "Ki", "Mi", "Gi", "m", "k", "M"]))
def test_canonical_form_round_trips(mantissa: int, exponent: int, suffix: str) -> None:
    """Printing then parsing gives the same value, and printing is idempotent."""
    text = f"{mantissa}e{exponent}" if suffix == "e" else f"{mantissa}{suffix}"
    q = parse(text)
    again = parse(str(q))
    assert again == q
    assert str(again) == str(q)
