"""resource.Quantity as the admission plugins need it: exact values, the rounded integer views
upstream compares (Value, MilliValue), sums that keep the first operand's format, and the
canonical String() upstream prints in its messages.

Upstream: k8s.io/apimachinery/pkg/api/resource (quantity.go: Value, MilliValue, String /
CanonicalizeBytes, Add). Values are kept as exact Fractions (api/validation/quantity.py parses).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ....api.validation.quantity import parse_quantity

DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"
MAX_MILLI_VALUE = (2**63 - 1) // 1000          # resource.MaxMilliValue
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}


@dataclass(frozen=True, slots=True)
class Quantity:
    value: Fraction
    format: str = DECIMAL_SI

    @classmethod
    def parse(cls, text: object) -> Quantity | None:
        """A quantity from its JSON form ("500m", "1Gi", 2), or None if malformed."""
        v = parse_quantity(text)
        if v is None:
            return None
        s = str(text)
        fmt = BINARY_SI if s.endswith("i") else DECIMAL_EXPONENT if ("e" in s or "E" in s) else DECIMAL_SI
        # Upstream keeps nano precision at most, rounding up.
        return cls(Fraction(math.ceil(v * 10**9), 10**9), fmt)

    def int_value(self) -> int:
        """Upstream: Quantity.Value (rounded up)."""
        return math.ceil(self.value)

    def milli_value(self) -> int:
        """Upstream: Quantity.MilliValue (rounded up)."""
        return math.ceil(self.value * 1000)

    def add(self, other: Quantity) -> Quantity:
        """Upstream: Quantity.Add — the receiver's format is kept."""
        return Quantity(self.value + other.value, self.format)

    def __str__(self) -> str:
        """Upstream: Quantity.String (CanonicalizeBytes)."""
        v = self.value
        if v == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI and (-1024 < v < 1024 or v.denominator != 1):
            fmt = DECIMAL_SI                      # small or fractional binary values print in SI
        if fmt == BINARY_SI:
            n, k = int(v), 0
            while k < len(_BINARY_SUFFIXES) - 1 and n % 1024 == 0:
                n //= 1024
                k += 1
            return f"{n}{_BINARY_SUFFIXES[k]}"
        nanos = int(v * 10**9)                   # exact: parse kept nano precision
        exp = -9
        while exp < 18 and nanos % 1000 == 0:
            nanos //= 1000
            exp += 3
        if fmt == DECIMAL_EXPONENT:
            return f"{nanos}e{exp}" if exp else str(nanos)
        return f"{nanos}{_DECIMAL_SUFFIXES[exp]}"


def resource_list(rl: object) -> dict[str, Quantity]:
    """A ResourceList's well-formed quantities (validation refuses the others)."""
    out: dict[str, Quantity] = {}
    if isinstance(rl, dict):
        for k, v in rl.items():
            q = Quantity.parse(v)
            if q is not None:
                out[k] = q
    return out
