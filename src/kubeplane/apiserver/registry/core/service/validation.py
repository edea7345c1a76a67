"""The loose pre-validation the allocators run on clusterIP(s), ipFamilies and ipFamilyPolicy
before they allocate (the full validation comes after, as upstream's BeginCreate precedes it).

Upstream: ValidateServiceClusterIPsRelatedFields and IsValidIPForLegacyField with strict
validation (pkg/apis/core/validation, apimachinery util/validation/ip.go).
"""
from __future__ import annotations

import ipaddress
from typing import Any

from .....api import errors
from .....api.errors import FieldError
from . import ipallocator
from .ipallocator import IPV4, IPV6, family_of

Obj = dict[str, Any]
NONE = "None"


def _ips(spec: Obj, field: str) -> list[Any]:
    v = spec.get(field)
    return list(v) if isinstance(v, list) else []


def validate_cluster_ips_related_fields(svc: Obj) -> list[FieldError]:
    """Upstream: ValidateServiceClusterIPsRelatedFields (the loose pre-validation alloc runs)."""
    spec: Obj = svc["spec"] if isinstance(svc.get("spec"), dict) else {}
    if spec.get("type") == "ExternalName":
        return []
    errs: list[FieldError] = []
    ip, ips = spec.get("clusterIP") or "", _ips(spec, "clusterIPs")
    if ip:
        if not ips:
            errs.append(errors.required("spec.clusterIPs"))
        elif ips[0] != ip:
            errs.append(errors.invalid("spec.clusterIPs", ips, "first value must match `clusterIP`"))
    elif ips:
        errs.append(errors.invalid("spec.clusterIPs", ips, "must be empty when `clusterIP` is not specified"))
    seen: set[str] = set()
    for i, fam in enumerate(_ips(spec, "ipFamilies")):
        if fam not in (IPV4, IPV6):
            errs.append(errors.not_supported(f"spec.ipFamilies[{i}]", fam, [IPV4, IPV6]))
        if fam in seen:
            errs.append(errors.duplicate(f"spec.ipFamilies[{i}]", fam))
        seen.add(fam)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in POLICIES:
        errs.append(errors.not_supported("spec.ipFamilyPolicy", policy, list(POLICIES)))
    bad = False
    for i, cip in enumerate(ips):
        if i == 0 and cip == NONE:
            if len(ips) > 1:
                bad = True
                errs.append(errors.invalid("spec.clusterIPs", ips, "'None' must be the first and only value"))
            continue
        for msg in _ip_problems(cip):
            bad = True
            errs.append(errors.invalid(f"spec.clusterIPs[{i}]", cip, msg))
    if len(ips) > 2:
        errs.append(errors.invalid("spec.clusterIPs", ips, "may only hold up to 2 values"))
    if bad:
        return errs
    if len(ips) > 1 and len({family_of(x) for x in ips[:2]}) != 2:
        errs.append(errors.invalid("spec.clusterIPs", ips, "may specify no more than one IP for each IP family"))
    fams = _ips(spec, "ipFamilies")
    if ips and ips[0] != NONE and fams:
        for i, cip in enumerate(ips[:len(fams)]):
            if fams[i] == IPV4 and family_of(cip) == IPV6:
                errs.append(errors.invalid(f"spec.clusterIPs[{i}]", cip,
                                           f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"))
            if fams[i] == IPV6 and family_of(cip) != IPV6:
                errs.append(errors.invalid(f"spec.clusterIPs[{i}]", cip,
                                           f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"))
    return errs


POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")


def _ip_problems(value: Any) -> list[str]:
    """Upstream: IsValidIPForLegacyField with strict validation (StrictIPCIDRValidation)."""
    if not isinstance(value, str) or ipallocator.parse_ip(value) is None:
        if isinstance(value, str) and _sloppy_ipv4(value):
            return ["must not have leading 0s"]
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    addr = ipaddress.ip_address(value)
    if addr.version == 6 and addr.ipv4_mapped is not None:
        return ["must not be an IPv4-mapped IPv6 address"]
    return []


def _sloppy_ipv4(value: str) -> bool:
    """An IPv4 address that only Go's ParseIPSloppy takes (octets with leading zeros)."""
    parts = value.split(".")
    return len(parts) == 4 and all(p.isascii() and p.isdigit() and 0 < len(p) <= 3 and int(p) < 256 for p in parts)
