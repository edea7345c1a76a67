"""Just enough resource.Quantity to validate resources: parse to an exact Fraction.

Upstream rejects a malformed quantity while decoding (HTTP 400); objects reach us as JSON
dicts, so validation reports it instead, with the decoder's message.
"""
from __future__ import annotations

import functools
import re
from fractions import Fraction

QUANTITY_FMT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
PARSE_ERROR = f"quantities must match the regular expression '{QUANTITY_FMT}'"

_RE = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][-+]?[0-9]+)?")
_SUFFIX = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}


@functools.lru_cache(maxsize=4096)
def _parse_cached(value: str) -> Fraction | None:
    return _parse(value)


def parse_quantity(value: object) -> Fraction | None:
    """Exact value of a quantity ("500m" -> 1/2, "1Gi" -> 1073741824, 2 -> 2), None if malformed.

    Strings are cached: every pod of a template repeats the same requests and limits."""
    if isinstance(value, str):
        return _parse_cached(value)
    return _parse(value)


def _parse(value: object) -> Fraction | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Fraction(value)
    if not isinstance(value, str):
        return None
    m = _RE.fullmatch(value)
    if m is None:
        return None
    number, suffix = m.group(1), m.group(2) or ""
    if suffix not in _SUFFIX:          # an exponent, e3 or E-2 ("E" alone is exa)
        return Fraction(number) * Fraction(10) ** int(suffix[1:])
    return Fraction(number) * _SUFFIX[suffix]
