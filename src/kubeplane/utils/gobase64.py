"""Go's base64.StdEncoding decoder, as encoding/json uses it for every []byte field.

A Secret's `data`, a ConfigMap's `binaryData` (and every `format: byte` field) is a Go []byte:
encoding/json decodes its string with base64.StdEncoding.Decode, and the JSON encoder writes it
back as canonical base64. So what the API server accepts is exactly what that decoder accepts,
and what it returns is canonical:

* `\\r` and `\\n` anywhere are skipped (PEM-style line breaks: `aGVs\\nbG8=` is `hello`);
* padding is required (`YQ` is refused), nothing but line breaks may follow it;
* the unused low bits of the last character are ignored (StdEncoding is not Strict():
  `YR==` decodes to `a`, returned as `YQ==`);
* anything else is `illegal base64 data at input byte N` with Go's N.

Python's binascii.a2b_base64 differs: without strict_mode it skips every non-alphabet
character; with it, it refuses line breaks. So well-formed input (the common case) takes
binascii's strict path, and everything else walks Go's decodeQuantum.

Upstream: Encoding.Decode, Encoding.decodeQuantum, CorruptInputError (encoding/base64/base64.go)
"""
from __future__ import annotations

import binascii
import re

_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = "\r\n"
_PAD = "="
# Quanta of 4 alphabet characters, the last one maybe padded: Go and binascii agree on these.
_WELL_FORMED = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


class CorruptInputError(ValueError):
    """Upstream: CorruptInputError: the offset (in bytes) of the first byte Go refuses."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"illegal base64 data at input byte {offset}")
        self.offset = offset


def decode_string(s: str) -> bytes:
    """The bytes s encodes, as base64.StdEncoding.DecodeString decodes them; raises
    CorruptInputError. Upstream: Encoding.DecodeString"""
    if _WELL_FORMED.fullmatch(s):
        return binascii.a2b_base64(s)
    chars = _quanta(s)
    return binascii.a2b_base64(chars + _PAD * (-len(chars) % 4))


def canonical(s: str) -> str:
    """s as Go's JSON encoder writes the bytes it decodes to (no line breaks, zeroed unused
    bits); raises CorruptInputError. Returns s itself when it is canonical already."""
    if _WELL_FORMED.fullmatch(s):
        out = binascii.b2a_base64(binascii.a2b_base64(s), newline=False).decode()
        return s if out == s else out
    return binascii.b2a_base64(decode_string(s), newline=False).decode()


def _quanta(s: str) -> str:
    """The alphabet characters of s, after checking it as Go's Decode does, quantum by quantum.

    Offsets: s comes from a JSON string (valid UTF-8), and Go stops at the first byte outside
    the alphabet, so every character before an offset is ASCII: character and byte offsets agree.
    """
    out: list[str] = []
    si, n = 0, len(s)
    while si < n:
        si = _decode_quantum(s, si, out)
    return "".join(out)


def _decode_quantum(s: str, si: int, out: list[str]) -> int:
    """One quantum from s[si:] (appended to out); returns where the next one starts.

    Upstream: Encoding.decodeQuantum, line for line (its `j--; continue` skips a line break
    without counting it; NoPadding never applies to StdEncoding).
    """
    n, j = len(s), 0
    while j < 4:
        if si == n:
            if j == 0:
                return si
            raise CorruptInputError(si - j)
        ch = s[si]
        si += 1
        if ch in _ALPHABET:
            out.append(ch)
            j += 1
            continue
        if ch in _NEWLINES:
            continue
        if ch != _PAD or j < 2:           # a foreign byte, or padding after 0 or 1 characters
            raise CorruptInputError(si - 1)
        if j == 2:                        # "==" expected: the first "=" is consumed
            while si < n and s[si] in _NEWLINES:
                si += 1
            if si == n:
                raise CorruptInputError(n)          # not enough padding
            if s[si] != _PAD:
                raise CorruptInputError(si - 1)     # incorrect padding
            si += 1
        while si < n and s[si] in _NEWLINES:
            si += 1
        if si < n:
            raise CorruptInputError(si)             # trailing garbage
        return si
    return si
