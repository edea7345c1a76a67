"""resource.Quantity as quota counts it: an exact value plus the format it prints in.

Quota arithmetic must compare numerically ("1000m" equals "1") and print sums the way upstream
does, because the sums end up in `status.used` and in the `exceeded quota` messages: a sum keeps
the format of its left operand (unless that one is zero), and String() is the canonical form
(`1500m`, `2k`, `1536Mi`, `1e3`).

The value parser is the validator's (api/validation/quantity.py, exact Fractions, cached);
this module adds the format and the canonical printing.

Upstream: Quantity.Add/Sub/Cmp/String/CanonicalizeBytes, int64Amount.AsCanonicalBytes,
infDecAmount.AsCanonicalBase1024Bytes (k8s.io/apimachinery/pkg/api/resource).
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

from ..api.validation.quantity import parse_quantity

DECIMAL_EXPONENT = "DecimalExponent"   # 12e6
BINARY_SI = "BinarySI"                 # 12Mi
DECIMAL_SI = "DecimalSI"               # 12M, and plain numbers

_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_UNITS = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO = 10 ** 9
MAX_MILLI_VALUE = (2**63 - 1) // 1000          # resource.MaxMilliValue


class Quantity:
    """An exact value (a Fraction, rounded up to nano precision as upstream's parser does) and
    its format. Immutable: arithmetic returns new quantities."""

    __slots__ = ("value", "format")

    def __init__(self, value: Fraction | int, fmt: str = DECIMAL_SI) -> None:
        self.value = value if type(value) is Fraction else Fraction(value)   # re-wrapping costs ~1 µs
        self.format = fmt

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        """Numeric equality (upstream's Cmp() == 0): 1000m == 1."""
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        return self.value >= other.value

    def is_zero(self) -> bool:
        return self.value == 0

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def add(self, y: Quantity) -> Quantity:
        """Upstream: Quantity.Add — a zero left operand takes the right one's format."""
        return Quantity(self.value + y.value, y.format if self.value == 0 else self.format)

    def sub(self, y: Quantity) -> Quantity:
        """Upstream: Quantity.Sub."""
        return Quantity(self.value - y.value, y.format if self.value == 0 else self.format)

    def neg(self) -> Quantity:
        return Quantity(-self.value, self.format)

    def round_up(self) -> Quantity:
        """To a whole number, away from zero. Upstream: Quantity.RoundUp(0)."""
        v = self.value
        n = math.ceil(v) if v >= 0 else math.floor(v)
        return self if n == v else Quantity(n, self.format)

    def __str__(self) -> str:
        return _canonical(self.value, self.format)

    @classmethod
    def parse(cls, value: Any) -> Quantity | None:
        """A quantity from its JSON form, or None if malformed (module parse() raises)."""
        return _parse_cached(value) if isinstance(value, str) else _parse(value)

    def int_value(self) -> int:
        """Upstream: Quantity.Value (rounded up)."""
        return math.ceil(self.value)

    def milli_value(self) -> int:
        """Upstream: Quantity.MilliValue (rounded up)."""
        return math.ceil(self.value * 1000)


@functools.lru_cache(maxsize=4096)
def _parse_cached(s: str) -> Quantity | None:
    return _parse(s)


def parse(value: Any) -> Quantity:
    """A quantity from its JSON form ("500m", "1Gi", 2); ValueError if malformed."""
    q = Quantity.parse(value)
    if q is None:
        raise ValueError(f"quantities must match the regular expression: {value!r}")
    return q


def _parse(value: Any) -> Quantity | None:
    v = parse_quantity(value)
    if v is None:
        return None
    nanos = v * _NANO
    if nanos.denominator != 1:               # finer than nano: upstream rounds up (away from zero)
        v = Fraction(math.ceil(nanos) if nanos > 0 else math.floor(nanos), _NANO)
    return Quantity(v, _format_of(value))


def _format_of(value: Any) -> str:
    if not isinstance(value, str):
        return DECIMAL_SI
    s = value.rstrip("0123456789+-")                     # "1e3" -> "1e", "5Gi" -> "5Gi"
    if s.endswith(_BINARY_SUFFIXES):
        return BINARY_SI
    if s.endswith(("e", "E")) and s != value:
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def _canonical(v: Fraction, fmt: str) -> str:
    """Upstream: Quantity.CanonicalizeBytes. Worked examples: 1.5 (DecimalSI) -> 1500m;
    2000 -> 2k; 1536Mi (BinarySI, a multiple of 1024) -> 1536Mi; 1023 (BinarySI, under 1024)
    -> 1023; 1500 (BinarySI, not a multiple of 1024) -> 1500; 12e2 -> 1200."""
    if v == 0:
        return "0"
    if fmt == BINARY_SI:
        if -1024 < v < 1024 or v.denominator != 1:
            fmt = DECIMAL_SI               # avoids rounding: shown as DecimalSI
        else:
            n, unit = int(v), 0
            while unit < len(_BINARY_UNITS) - 1 and n % 1024 == 0:
                n, unit = n // 1024, unit + 1
            return f"{n}{_BINARY_UNITS[unit]}"
    elif fmt != DECIMAL_SI:
        fmt = DECIMAL_EXPONENT
    mantissa, exponent = int(v * _NANO), -9      # an integer: parsing rounded to nano
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    extra = exponent % 3                   # make the exponent a multiple of 3
    mantissa, exponent = mantissa * 10 ** extra, exponent - extra
    if exponent == 0:
        return str(mantissa)
    if fmt == DECIMAL_SI and exponent in _DECIMAL_SUFFIX:
        return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
    return f"{mantissa}e{exponent}"


ZERO = Quantity(0)


def one() -> Quantity:
    """resource.NewQuantity(1, DecimalSI)."""
    return Quantity(1)


def resource_list(rl: object) -> dict[str, Quantity]:
    """A ResourceList's well-formed quantities (validation refuses the others)."""
    if not isinstance(rl, dict):
        return {}
    return {k: q for k, v in rl.items() if (q := Quantity.parse(v)) is not None}
