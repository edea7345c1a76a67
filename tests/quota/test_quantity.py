"""Quantities as quota prints them: canonical forms, and sums in their left operand's format.

The expected strings are what upstream's Quantity.String() gives for the same input
(apimachinery/pkg/api/resource/quantity_test.go TestQuantityCanonicalize-style facts).
"""
from __future__ import annotations

import pytest

from kubeplane.quota.quantity import parse


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
