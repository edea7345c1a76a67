"""resource.Quantity: the one parser and arithmetic of quantities ("500m", "1Gi", "1e3", 2).

Upstream: k8s.io/apimachinery/pkg/api/resource (ParseQuantity, Quantity.Cmp/Add/Sub/String/
Value/MilliValue, CanonicalizeBytes). What it keeps of upstream:
- the grammar: an optionally signed decimal number ("1.", ".5" too), then one suffix: binary
  Ki..Ei, decimal n u m "" k M G T P E (exa, not an exponent), or a decimal exponent e3 / E-2
  / E+6; nothing else, no spaces;
- the value as parsed: exact, rounded up (away from zero) to a whole nano ("3.001n" is 4n),
  a binary one capped at 2^63-1 ("9Ei" and "9223372036854775807Ki" are both
  9223372036854775807; "12E" stays 12e18);
- the format (BinarySI, DecimalSI, DecimalExponent) from the suffix, with a BinarySI value
  between 0 and 1 reading as DecimalSI ("0.000000000001Ki" is 2n);
- Cmp by value ("1000m" equals "1"), Add/Sub keeping the left operand's format unless it is
  zero, Value()/MilliValue() rounded up ("1.5m" cpu is 2 millicores), String() canonical.

The hot callers (the scheduler counts every pod's requests, the QoS class of every created pod)
use milli_value/value/nanos: integers, cached per distinct quantity (a pod template repeats
the same few strings).
"""
from __future__ import annotations

import functools
import math
import re
from fractions import Fraction
from typing import Any

QUANTITY_FMT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
PARSE_ERROR = f"quantities must match the regular expression '{QUANTITY_FMT}'"

DECIMAL_EXPONENT = "DecimalExponent"   # 12e6
BINARY_SI = "BinarySI"                 # 12Mi
DECIMAL_SI = "DecimalSI"               # 12M, and plain numbers

_RE = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?")
_SUFFIX = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_BINARY_UNITS = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_NANO = 10 ** 9
MAX_ALLOWED = 2**63 - 1                        # resource.maxAllowed
MAX_MILLI_VALUE = (2**63 - 1) // 1000          # resource.MaxMilliValue
# Upstream holds "1e999999999" as an inf.Dec (1, scale -999999999); an exact Fraction of it
# would take minutes to compute, so decimal exponents past this one count as this one.
MAX_EXPONENT = 1000


class Quantity:
    """An exact value (a Fraction, as upstream's parser leaves it) and its format. Immutable:
    arithmetic returns new quantities."""

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

    def cmp(self, other: Quantity) -> int:
        """Upstream: Quantity.Cmp (-1, 0, 1)."""
        return (self.value > other.value) - (self.value < other.value)

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


def parse(value: Any) -> Quantity:
    """A quantity from its JSON form ("500m", "1Gi", 2); ValueError if malformed."""
    q = Quantity.parse(value)
    if q is None:
        raise ValueError(f"quantities must match the regular expression: {value!r}")
    return q


def parse_quantity(value: object) -> Fraction | None:
    """The exact value of a quantity as upstream parses it ("500m" -> 1/2, "1Gi" ->
    1073741824, 2 -> 2), None if malformed."""
    q = Quantity.parse(value)
    return None if q is None else q.value


@functools.lru_cache(maxsize=4096)
def _parse_cached(s: str) -> Quantity | None:
    return _parse(s)


def _parse(value: Any) -> Quantity | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return Quantity(_round(Fraction(value)), DECIMAL_SI)
    if not isinstance(value, str):
        return None
    m = _RE.fullmatch(value)
    if m is None:
        return None
    number, suffix = m.group(1), m.group(2) or ""
    if suffix in _SUFFIX:
        v, fmt = Fraction(number) * _SUFFIX[suffix], BINARY_SI if suffix.endswith("i") else DECIMAL_SI
    else:                                  # an exponent, e3 or E-2 ("E" alone is exa)
        exp, n = int(suffix[1:]), Fraction(number)
        if not n:
            v = n
        elif exp < -len(number) - 10:      # under a nano: rounds up to one, 10**exp not computed
            v = Fraction(1 if n > 0 else -1, _NANO)
        elif exp > MAX_EXPONENT:           # see MAX_EXPONENT
            v = n * Fraction(10) ** MAX_EXPONENT
        else:
            v = n * Fraction(10) ** exp
        fmt = DECIMAL_EXPONENT
    v = _round(v, fmt == BINARY_SI)
    if fmt == BINARY_SI and 0 < abs(v) < 1:
        fmt = DECIMAL_SI                   # upstream: "this avoids rounding and hopefully confusion"
    return Quantity(v, fmt)


def _round(v: Fraction, binary: bool = False) -> Fraction:
    """Rounded up (away from zero) to a whole nano, a binary one capped at maxAllowed, as
    ParseQuantity."""
    if _NANO % v.denominator == 0 and not binary:      # the common case: nothing to do
        return v
    a = abs(v)
    if _NANO % a.denominator:
        a = Fraction(-(-a.numerator * _NANO // a.denominator), _NANO)
    if binary and a > MAX_ALLOWED:         # upstream caps only BinarySI ("12E" stays 12e18)
        a = Fraction(MAX_ALLOWED)
    return a if v >= 0 else -a


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


def canonical(value: Any) -> str | None:
    """The text upstream stores and answers for a quantity sent as `value` (Quantity's
    UnmarshalJSON then MarshalJSON: String()): "0.5" -> "500m", "1000m" -> "1", 2 -> "2",
    "1.5Ki" -> "1536"; None if malformed. Past MAX_EXPONENT the text is kept as sent."""
    if value.__class__ is str:
        return _canonical_text(value)
    q = Quantity.parse(value)
    return None if q is None else str(q)


@functools.lru_cache(maxsize=4096)
def _canonical_text(value: str) -> str | None:
    q = Quantity.parse(value)
    if q is None:
        return None
    return value if abs(q.value) >= 10**MAX_EXPONENT else str(q)


def resource_list(rl: object) -> dict[str, Quantity]:
    """A ResourceList's well-formed quantities (validation refuses the others)."""
    if not isinstance(rl, dict):
        return {}
    return {k: q for k, v in rl.items() if (q := Quantity.parse(v)) is not None}


# --- integer fast paths (the scheduler, the QoS class) -----------------------------------------
# Strings are cached (a pod template repeats the same few); numbers (rare in JSON) are not, which
# also keeps True and 1 (equal keys to a cache) apart. benchmarks/quantity_bench.py measures it.

def milli_value(value: Any) -> int:
    """Quantity.MilliValue of a JSON quantity: "500m" -> 500, "2" -> 2000, "1.5m" -> 2 (rounded
    up); malformed -> 0."""
    return _milli(value) if value.__class__ is str else _milli.__wrapped__(value)


def value(value: Any) -> int:
    """Quantity.Value of a JSON quantity: "1Gi" -> 1073741824, "1k" -> 1000, "100m" -> 1
    (rounded up); malformed -> 0."""
    return _units(value) if value.__class__ is str else _units.__wrapped__(value)


def nanos(value: Any) -> int:
    """A quantity in units of 10^-9, exactly as upstream holds it ("1000m" and "1" are both
    10^9, "1e-12" is 1); malformed (refused by decoding and validation anyway) -> 0."""
    return _nanos(value) if value.__class__ is str else _nanos.__wrapped__(value)


@functools.lru_cache(maxsize=4096)
def _milli(value: Any) -> int:
    q = Quantity.parse(value)
    return 0 if q is None else math.ceil(q.value * 1000)


@functools.lru_cache(maxsize=4096)
def _units(value: Any) -> int:
    q = Quantity.parse(value)
    return 0 if q is None else math.ceil(q.value)


@functools.lru_cache(maxsize=4096)
def _nanos(value: Any) -> int:
    q = Quantity.parse(value)
    return 0 if q is None else int(q.value * _NANO)
