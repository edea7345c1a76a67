"""Go's net/netip parsers, for the error texts of Kubernetes' ip() and cidr() (upstream's table
tests compare them whole: `ParseAddr("192.168.0.1.0"): IPv4 address too long`).

Upstream: Go's net/netip (ParseAddr, parseIPv4, parseIPv6, ParsePrefix) — the same grammar
(no leading zeros in IPv4 fields, an optional `%zone` on IPv6, an embedded IPv4 only as the
last 32 bits) and the same messages; the value is Python's ipaddress object. The zone is
returned apart: Kubernetes refuses it with its own message.
"""
from __future__ import annotations

import ipaddress
from typing import Union

Addr = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


class ParseError(ValueError):
    """Go's parseAddrError / parsePrefixError: str() is Go's Error() text."""


def go_quote(s: str) -> str:
    """strconv.Quote for the printable ASCII these messages carry."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _addr_error(s: str, msg: str, at: str = "") -> ParseError:
    tail = f" (at {go_quote(at)})" if at else ""
    return ParseError(f"ParseAddr({go_quote(s)}): {msg}{tail}")


def parse_addr(s: str) -> tuple[Addr, str]:
    """Go's netip.ParseAddr: (address, zone)."""
    for c in s:
        if c == ".":
            return _parse_ipv4(s, s), ""
        if c == ":":
            return _parse_ipv6(s)
        if c == "%":
            raise _addr_error(s, "missing IPv6 address")
    raise _addr_error(s, "unable to parse IP")


def _parse_ipv4(s: str, whole: str) -> ipaddress.IPv4Address:
    fields: list[int] = []
    val = digits = 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if digits == 1 and val == 0:
                raise _addr_error(whole, "IPv4 field has octet with leading zero")
            val, digits = val * 10 + ord(c) - 48, digits + 1
            if val > 255:
                raise _addr_error(whole, "IPv4 field has value >255")
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise _addr_error(whole, "IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise _addr_error(whole, "IPv4 address too long")
            fields.append(val)
            val = digits = 0
        else:
            raise _addr_error(whole, "unexpected character", s[i:])
    if len(fields) < 3:
        raise _addr_error(whole, "IPv4 address too short")
    return ipaddress.IPv4Address(bytes([*fields, val]))


def _hex_field(s: str) -> int:
    """The number of hex digits s starts with."""
    n = 0
    while n < len(s) and s[n] in "0123456789abcdefABCDEF":
        n += 1
    return n


def _parse_ipv6(whole: str) -> tuple[ipaddress.IPv6Address, str]:
    s, zone = whole, ""
    if "%" in s:
        s, zone = s.split("%", 1)
        if not zone:
            raise _addr_error(whole, "zone must be a non-empty string")
    ip = bytearray(16)
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return ipaddress.IPv6Address(0), zone
    i = 0
    while i < 16:
        off = _hex_field(s)
        acc = 0
        for k in range(off):
            acc = acc * 16 + int(s[k], 16)
            if acc > 0xFFFF:
                raise _addr_error(whole, "IPv6 field has value >=2^16", s)
        if off == 0:
            raise _addr_error(whole, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _addr_error(whole, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if i + 4 > 16:
                raise _addr_error(whole, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            try:
                ip[i:i + 4] = _parse_ipv4(s, s).packed
            except ParseError as e:
                raise _addr_error(whole, str(e), s) from None
            s, i = "", i + 4
            break
        ip[i], ip[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _addr_error(whole, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(whole, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(whole, "multiple :: in address", s)
            ellipsis, s = i, s[1:]
            if not s:
                break
    if s:
        raise _addr_error(whole, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise _addr_error(whole, "address string too short")
        n = 16 - i
        ip[ellipsis + n:16] = ip[ellipsis:i]
        ip[ellipsis:ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        raise _addr_error(whole, "the :: must expand to at least one field of zeros")
    return ipaddress.IPv6Address(bytes(ip)), zone


def parse_prefix(s: str) -> tuple[Addr, int]:
    """Go's netip.ParsePrefix: (address with its host bits as written, prefix length)."""
    def error(msg: str) -> ParseError:
        return ParseError(f"netip.ParsePrefix({go_quote(s)}): {msg}")
    i = s.rfind("/")
    if i < 0:
        raise error("no '/'")
    try:
        ip, zone = parse_addr(s[:i])
    except ParseError as e:
        raise error(str(e)) from None
    if zone:
        raise error("IPv6 zones cannot be present in a prefix")
    bits = s[i + 1:]
    if (len(bits) > 1 and not "1" <= bits[0] <= "9") or not bits.isascii() or not bits.lstrip("+-").isdigit():
        raise error(f"bad bits after slash: {go_quote(bits)}")
    n = int(bits)
    if not 0 <= n <= ip.max_prefixlen:
        raise error("prefix length out of range")
    return ip, n


def is_4in6(ip: Addr) -> bool:
    return isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None


def addr_string(ip: Addr) -> str:
    """netip.Addr.String(): RFC 5952 (Python's compressed form is the same, except for an
    IPv4-mapped address, which Kubernetes refuses anyway)."""
    return ip.compressed
