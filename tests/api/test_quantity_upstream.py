"""resource.Quantity as upstream parses and prints it: upstream's tables, row for row.

PARSE is TestQuantityParse's table (apimachinery pkg/api/resource/quantity_test.go): input ->
exact value and Format (rounded up to a nano, capped at 2^63-1, exa `E` vs exponent `e3`);
INVALID its invalid inputs; STRING TestQuantityString's (value, format) -> String() and an
alternate spelling that parses back to the same canonical text.
"""
from __future__ import annotations

from fractions import Fraction as F

import pytest

from kubeplane.api import quantity
from kubeplane.api.quantity import BINARY_SI as BSI
from kubeplane.api.quantity import DECIMAL_EXPONENT as DEX
from kubeplane.api.quantity import DECIMAL_SI as DSI
from kubeplane.api.quantity import Quantity

PARSE = [
    ("0", 0, DSI),
    ("0n", 0, DSI),
    ("0u", 0, DSI),
    ("0m", 0, DSI),
    ("0Ki", 0, BSI),
    ("0k", 0, DSI),
    ("0Mi", 0, BSI),
    ("0M", 0, DSI),
    ("0Gi", 0, BSI),
    ("0G", 0, DSI),
    ("0Ti", 0, BSI),
    ("0T", 0, DSI),
    ("1", 1, DSI),
    ("1Ki", 1024, BSI),
    ("8Ki", 8192, BSI),
    ("7Mi", 7340032, BSI),
    ("6Gi", 6442450944, BSI),
    ("5Ti", 5497558138880, BSI),
    ("4Pi", 4503599627370496, BSI),
    ("3Ei", 3458764513820540928, BSI),
    ("10Ti", 10995116277760, BSI),
    ("100Ti", 109951162777600, BSI),
    ("5n", F(1, 200000000), DSI),
    ("4u", F(1, 250000), DSI),
    ("3m", F(3, 1000), DSI),
    ("9", 9, DSI),
    ("8k", 8000, DSI),
    ("50k", 50000, DSI),
    ("7M", 7000000, DSI),
    ("6G", 6000000000, DSI),
    ("5T", 5000000000000, DSI),
    ("40T", 40000000000000, DSI),
    ("300T", 300000000000000, DSI),
    ("2P", 2000000000000000, DSI),
    ("1E", 1000000000000000000, DSI),
    ("1E-3", F(1, 1000), DEX),
    ("1e3", 1000, DEX),
    ("1E6", 1000000, DEX),
    ("1e9", 1000000000, DEX),
    ("1E12", 1000000000000, DEX),
    ("1e15", 1000000000000000, DEX),
    ("1E18", 1000000000000000000, DEX),
    ("1e14", 100000000000000, DEX),
    ("1e13", 10000000000000, DEX),
    ("1e3", 1000, DEX),
    ("100.035k", 100035, DSI),
    ("0.001", F(1, 1000), DSI),
    ("0.0005k", F(1, 2), DSI),
    ("0.005", F(1, 200), DSI),
    ("0.05", F(1, 20), DSI),
    ("0.5", F(1, 2), DSI),
    ("0.00050k", F(1, 2), DSI),
    ("0.00500", F(1, 200), DSI),
    ("0.05000", F(1, 20), DSI),
    ("0.50000", F(1, 2), DSI),
    ("0.5e0", F(1, 2), DEX),
    ("0.5e-1", F(1, 20), DEX),
    ("0.5e-2", F(1, 200), DEX),
    ("0.5e0", F(1, 2), DEX),
    ("10.035M", 10035000, DSI),
    ("1.2e3", 1200, DEX),
    ("1.3E+6", 1300000, DEX),
    ("1.40e9", 1400000000, DEX),
    ("1.53E12", 1530000000000, DEX),
    ("1.6e15", 1600000000000000, DEX),
    ("1.7E18", 1700000000000000000, DEX),
    ("9.01", F(901, 100), DSI),
    ("8.1k", 8100, DSI),
    ("7.123456M", 7123456, DSI),
    ("6.987654321G", 6987654321, DSI),
    ("5.444T", 5444000000000, DSI),
    ("40.1T", 40100000000000, DSI),
    ("300.2T", 300200000000000, DSI),
    ("2.5P", 2500000000000000, DSI),
    ("1.01E", 1010000000000000000, DSI),
    ("3.001n", F(1, 250000000), DSI),
    ("1.1E-9", F(1, 500000000), DEX),
    ("0.0000000001", F(1, 1000000000), DSI),
    ("0.0000000005", F(1, 1000000000), DSI),
    ("0.00000000050", F(1, 1000000000), DSI),
    ("0.5e-9", F(1, 1000000000), DEX),
    ("0.9n", F(1, 1000000000), DSI),
    ("0.00000012345", F(31, 250000000), DSI),
    ("0.00000012354", F(31, 250000000), DSI),
    ("9Ei", 9223372036854775807, BSI),
    ("9223372036854775807Ki", 9223372036854775807, BSI),
    ("12E", 12000000000000000000, DSI),
    ("100.035Ki", F(2560896, 25), BSI),
    ("0.5Mi", 524288, BSI),
    ("0.05Gi", F(268435456, 5), BSI),
    ("0.025Ti", F(137438953472, 5), BSI),
    ("0.000000000001Ki", F(1, 500000000), DSI),
    (".001", F(1, 1000), DSI),
    (".0001k", F(1, 10), DSI),
    ("1.", 1, DSI),
    ("1.G", 1000000000, DSI),
]

INVALID = ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "]

STRING = [
    (1073741824, BSI, "1Gi", "1024Mi"),
    (314572800, BSI, "300Mi", "307200Ki"),
    (6144, BSI, "6Ki", ""),
    (1074815565824, BSI, "1001Gi", "1025024Mi"),
    (1099511627776, BSI, "1Ti", "1024Gi"),
    (5, BSI, "5", "5000m"),
    (F(1, 2), BSI, "500m", "0.5"),
    (1000000000, DSI, "1G", "1000M"),
    (1000000000, DSI, "1G", "0.001T"),
    (1000000000, DSI, "1G", ""),
    (1000000000, DSI, "1G", ""),
    (F(1, 1000), DSI, "1m", "1000u"),
    (F(2, 25), DSI, "80m", ""),
    (F(27, 25), DSI, "1080m", "1.08"),
    (F(27, 25), DSI, "1080m", "1080000000n"),
    (F(27, 25), DSI, "1080m", ""),
    (300000000, DSI, "300M", ""),
    (1000000000000, DSI, "1T", ""),
    (1234567000000, DSI, "1234567M", ""),
    (F(1234567, 1000), BSI, "1234567m", ""),
    (3000, DSI, "3k", ""),
    (1025, BSI, "1025", ""),
    (0, DSI, "0", ""),
    (0, BSI, "0", ""),
    (1000000000, DEX, "1e9", ".001e12"),
    (F(1, 1000), DEX, "1e-3", "0.001e0"),
    (F(1, 1000000000), DEX, "1e-9", "1000e-12"),
    (F(2, 25), DEX, "80e-3", ""),
    (300000000, DEX, "300e6", ""),
    (1000000000000, DEX, "1e12", ""),
    (1000, DEX, "1e3", ""),
    (3000, DEX, "3e3", ""),
    (3000, DSI, "3k", ""),
    (0, DEX, "0", "00"),
    (F(1, 1000000000), DSI, "1n", ""),
    (F(1, 12500000), DSI, "80n", ""),
    (F(27, 25000000), DSI, "1080n", ""),
    (F(27, 25000000), DSI, "1080n", ""),
    (F(27, 25000000), DSI, "1080n", ""),
    (F(1, 1000000), DSI, "1u", ""),
    (F(1, 12500), DSI, "80u", ""),
    (F(27, 25000), DSI, "1080u", ""),
]


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE, ids=[r[0] for r in PARSE])
def test_parse(text: str, value: F | int, fmt: str) -> None:
    q = quantity.parse(text)
    assert (q.value, q.format) == (value, fmt)
    neg = quantity.parse("-" + text)             # "Try the negative version of everything"
    assert (neg.value, neg.format) == (-value, fmt)


@pytest.mark.parametrize("text", INVALID)
def test_invalid(text: str) -> None:
    assert Quantity.parse(text) is None
    assert quantity.parse_quantity(text) is None
    with pytest.raises(ValueError):
        quantity.parse(text)


@pytest.mark.parametrize(("value", "fmt", "expect", "alternate"), STRING, ids=[r[2] for r in STRING])
def test_string(value: F | int, fmt: str, expect: str, alternate: str) -> None:
    assert str(Quantity(value, fmt)) == expect
    assert str(quantity.parse(expect)) == expect
    if alternate:
        assert str(quantity.parse(alternate)) == expect
    if value:
        assert str(Quantity(-value, fmt)) == "-" + expect


@pytest.mark.parametrize(("text", "milli", "units", "nanos"), [
    ("1.5m", 2, 1, 1_500_000), ("500m", 500, 1, 500_000_000), ("2", 2000, 2, 2 * 10**9),
    ("1Gi", 2**30 * 1000, 2**30, 2**30 * 10**9), ("100m", 100, 1, 10**8), ("1e3", 10**6, 1000, 10**12),
    ("1E", 10**21, 10**18, 10**27), ("0", 0, 0, 0), ("-1.5m", -1, 0, -1_500_000), ("3.001n", 1, 1, 4),
    (2, 2000, 2, 2 * 10**9), (0.5, 500, 1, 5 * 10**8),
    ("bogus", 0, 0, 0), (True, 0, 0, 0), (None, 0, 0, 0), ({"a": 1}, 0, 0, 0),
])
def test_integer_fast_paths(text: object, milli: int, units: int, nanos: int) -> None:
    """MilliValue/Value round up (toward +inf, as math.Ceil on the scaled value)."""
    assert quantity.milli_value(text) == milli
    assert quantity.value(text) == units
    assert quantity.nanos(text) == nanos


def test_one_after_true_is_still_one() -> None:
    """True and 1 hash alike: the caches must not hand one's answer to the other."""
    assert quantity.milli_value(True) == 0
    assert quantity.milli_value(1) == 1000


def test_huge_exponents_are_not_computed() -> None:
    """Upstream holds them as inf.Decs; past MAX_EXPONENT they count as 10**MAX_EXPONENT."""
    assert quantity.parse("1e999999999").value == 10**quantity.MAX_EXPONENT
    assert quantity.parse("-2e999999999").value == -2 * 10**quantity.MAX_EXPONENT
    assert quantity.parse("1e-999999999").value == F(1, 10**9)
    assert quantity.parse("0e999999999").value == 0


def test_cmp() -> None:
    assert quantity.parse("1000m").cmp(quantity.parse("1")) == 0
    assert quantity.parse("1Gi").cmp(quantity.parse("1G")) == 1
    assert quantity.parse("1k").cmp(quantity.parse("1Ki")) == -1
