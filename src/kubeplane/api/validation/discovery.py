"""Validation of discovery.k8s.io/v1 EndpointSlices, with upstream's messages and field paths.

Upstream: pkg/apis/discovery/validation/validation.go (ValidateEndpointSlice[Create|Update],
validateEndpoints, validateHints, validatePorts, validateAddressType).
"""
from __future__ import annotations

import ipaddress
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import core
from . import meta as m
from .names import (is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
                    name_is_dns_subdomain)

Obj = dict[str, Any]
SUPPORTED_ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000


def _too_many(path: str, actual: int, limit: int) -> FieldError:
    return errors.too_many(path, actual, limit)


def _address(address: str, address_type: str, path: str) -> list[FieldError]:
    if address_type in ("IPv4", "IPv6"):
        errs = core.is_valid_ip_for_legacy_field(address, path)
        if errs:
            return errs
        try:
            version = ipaddress.ip_address(address).version
        except ValueError:
            version = 4                               # legacy IPv4 with leading zeros
        if address_type == "IPv4" and version != 4:
            return [errors.invalid(path, address, "must be an IPv4 address")]
        if address_type == "IPv6" and version != 6:
            return [errors.invalid(path, address, "must be an IPv6 address")]
        return core.validate_endpoint_ip(address, path)
    if address_type == "FQDN":
        return [errors.invalid(path, address, msg) for msg in is_dns1123_subdomain(address)]
    return []


def _endpoints(endpoints: list[Obj], address_type: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(endpoints) > MAX_ENDPOINTS:
        errs.append(_too_many("endpoints", len(endpoints), MAX_ENDPOINTS))
    for i, endpoint in enumerate(endpoints):
        path = f"endpoints[{i}]"
        addresses = endpoint.get("addresses") or []
        if not addresses:
            errs.append(errors.required(path + ".addresses", "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            errs.append(_too_many(path + ".addresses", len(addresses), MAX_ADDRESSES))
        for j, address in enumerate(addresses):
            errs += _address(address, address_type, f"{path}.addresses[{j}]")
        if endpoint.get("nodeName") is not None:
            errs += [errors.invalid(path + ".nodeName", endpoint["nodeName"], msg)
                     for msg in is_dns1123_subdomain(endpoint["nodeName"])]
        if endpoint.get("hostname") is not None:
            errs += [errors.invalid(path + ".hostname", endpoint["hostname"], msg)
                     for msg in is_dns1123_label(endpoint["hostname"])]
        if endpoint.get("deprecatedTopology") is not None:
            errs += m.validate_labels(endpoint["deprecatedTopology"], path + ".deprecatedTopology")
        if isinstance(endpoint.get("hints"), dict):
            errs += _hints(endpoint["hints"], path + ".hints")
    return errs


MAX_ZONE_HINTS = MAX_NODE_HINTS = 8


def _hints(hints: Obj, path: str) -> list[FieldError]:
    """Upstream: validateHints — forZones (label values) then forNodes (node names), at most 8
    each (too many returns at once), names unique."""
    errs: list[FieldError] = []
    for key, limit, check in (("forZones", MAX_ZONE_HINTS, is_valid_label_value),
                              ("forNodes", MAX_NODE_HINTS, lambda name: name_is_dns_subdomain(name, False))):
        entries = [e if isinstance(e, dict) else {} for e in hints.get(key) or []]
        if len(entries) > limit:
            return errs + [_too_many(f"{path}.{key}", len(entries), limit)]
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            name, name_path = str(entry.get("name") or ""), f"{path}.{key}[{i}].name"
            if name in seen:
                errs.append(errors.duplicate(name_path, name))
            seen.add(name)
            errs += [errors.invalid(name_path, name, msg) for msg in check(name)]
    return errs


def _ports(ports: list[Obj]) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(ports) > MAX_PORTS:
        errs.append(_too_many("ports", len(ports), MAX_PORTS))
    names: set[str] = set()
    for i, port in enumerate(ports):
        path = f"ports[{i}]"
        name = port.get("name") or ""
        if name:
            errs += [errors.invalid(path + ".name", name, msg) for msg in is_dns1123_label(name)]
        if name in names:
            errs.append(errors.duplicate(path + ".name", name))
        names.add(name)
        protocol = port.get("protocol")
        if protocol is None:
            errs.append(errors.required(path + ".protocol"))
        elif protocol not in core.SUPPORTED_PORT_PROTOCOLS:
            errs.append(errors.not_supported(path + ".protocol", protocol, core.SUPPORTED_PORT_PROTOCOLS))
        if port.get("appProtocol") is not None:
            errs += [errors.invalid(path + ".appProtocol", port["appProtocol"], msg)
                     for msg in is_qualified_name(port["appProtocol"])]
    return errs


def validate_endpoint_slice(eps: Obj) -> list[FieldError]:
    """Upstream: ValidateEndpointSlice"""
    errs = m.validate_object_meta(eps.get("metadata") or {}, True, name_is_dns_subdomain)
    address_type = eps.get("addressType") or ""
    if not address_type:
        errs.append(errors.required("addressType"))
    elif address_type not in SUPPORTED_ADDRESS_TYPES:
        errs.append(errors.not_supported("addressType", address_type, SUPPORTED_ADDRESS_TYPES))
    errs += _endpoints(eps.get("endpoints") or [], address_type)
    return errs + _ports(eps.get("ports") or [])


def validate_endpoint_slice_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateEndpointSliceUpdate — the address type is immutable."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += [e for e in validate_endpoint_slice(new) if not e.field.startswith("metadata.")]
    errs += m.immutable(new.get("addressType"), old.get("addressType"), "addressType")
    return errs
