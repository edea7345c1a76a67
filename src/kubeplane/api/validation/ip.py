"""Strict IP and CIDR validation for fields newer than the legacy ones.

Upstream: IsValidIP, IsValidCIDR, parseIP, parseCIDR (k8s.io/apimachinery
pkg/util/validation/ip.go) and ValidateNonSpecialIP (pkg/apis/core/validation). Go's sloppy
parser accepts IPv4 octets with leading zeros, which Python's ipaddress refuses: they are
parsed here by hand so that such a value gets upstream's "must not have leading 0s".
"""
from __future__ import annotations

import ipaddress
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
INVALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
INVALID_CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _sloppy_ipv4(value: str) -> ipaddress.IPv4Address | None:
    """netutils.ParseIPSloppy's IPv4 form: four decimal octets, leading zeros ignored."""
    parts = value.split(".")
    if len(parts) != 4 or not all(p.isdigit() and p.isascii() and len(p) <= 3 and int(p) < 256 for p in parts):
        return None
    return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))


def parse_ip(value: str) -> tuple[IPAddress | None, bool]:
    """(the address ParseIPSloppy gives, whether netip.ParseAddr accepts the text)."""
    try:
        return ipaddress.ip_address(value), True
    except ValueError:
        return _sloppy_ipv4(value), False


def _go_string(ip: IPAddress) -> str:
    """net.IP.String(): an IPv4-mapped IPv6 address prints as IPv4."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


def is_valid_ip(path: str, value: str) -> list[FieldError]:
    """Upstream: IsValidIP (strict, canonical)."""
    ip, strict = parse_ip(value)
    if ip is None:
        return [errors.invalid(path, value, INVALID_IP)]
    errs: list[FieldError] = []
    if not strict:
        errs.append(errors.invalid(path, value, "must not have leading 0s"))
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        errs.append(errors.invalid(path, value, "must not be an IPv4-mapped IPv6 address"))
    if errs:
        return errs
    canonical = _go_string(ip)
    return [] if value == canonical else [errors.invalid(path, value, f'must be in canonical form ("{canonical}")')]


def is_valid_cidr(path: str, value: str) -> list[FieldError]:
    """Upstream: IsValidCIDR (strict, canonical)."""
    addr_text, sep, prefix_text = value.partition("/")
    ip, strict = parse_ip(addr_text)
    max_len = 32 if isinstance(ip, ipaddress.IPv4Address) else 128
    if ip is None or not sep or not prefix_text.isdigit() or int(prefix_text) > max_len:
        return [errors.invalid(path, value, INVALID_CIDR)]
    if not strict or (prefix_text != "0" and prefix_text.startswith("0")):
        return [errors.invalid(path, value, "must not have leading 0s in IP or prefix length")]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return [errors.invalid(path, value, "must not have an IPv4-mapped IPv6 address")]
    net = ipaddress.ip_network(f"{ip}/{int(prefix_text)}", strict=False)
    if net.network_address != ip:
        return [errors.invalid(path, value, "must not have bits set beyond the prefix length")]
    return [] if value == str(net) else [errors.invalid(path, value, f'must be in canonical form ("{net}")')]


def validate_non_special_ip(value: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateNonSpecialIP (every check applies, unlike ValidateEndpointIP)."""
    ip, _ = parse_ip(str(value))
    if ip is None:
        return [errors.invalid(path, value, "must be a valid IP address")]
    errs: list[FieldError] = []
    if ip.is_unspecified:
        errs.append(errors.invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        errs.append(errors.invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip.is_link_local:
        errs.append(errors.invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if ip in ipaddress.ip_network("224.0.0.0/24") or (isinstance(ip, ipaddress.IPv6Address)
                                                       and ip in ipaddress.ip_network("ff02::/16")):
        errs.append(errors.invalid(path, value, "may not be in the link-local multicast range "
                                                "(224.0.0.0/24, ff02::/10)"))
    return errs
