"""networking.k8s.io/v1 validation: NetworkPolicy, Ingress, IngressClass, ServiceCIDR, IPAddress.

Upstream: pkg/apis/networking/validation/validation.go (ValidateNetworkPolicy,
ValidateNetworkPolicyPort, ValidateIPBlock, ValidateIngressCreate / ValidateIngressSpec and the
rule, path and backend validators, ValidateIngressClass, ValidateServiceCIDR,
ValidateIPAddress). Left out: Ingress status load-balancer IP/port checks, the ServiceCIDR update rule that
lets a single-stack CIDR gain a second family (any change is refused as immutable).
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import (is_dns1123_label, is_dns1123_subdomain, is_path_segment_name, is_valid_port_name,
                    is_valid_port_num, max_len_error, name_is_dns_subdomain, regex_error)

Obj = dict[str, Any]

PROTOCOLS = ["TCP", "UDP", "SCTP"]
POLICY_TYPES = ["Ingress", "Egress"]
PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_PATH_SUFFIXES = ("/..", "/.")
PARAMETER_SCOPES = ["Cluster", "Namespace"]
MAX_LEN_INGRESS_CLASS_CONTROLLER = 250
INVALID_CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"

_WILDCARD_FMT = r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_WILDCARD_RE = re.compile(_WILDCARD_FMT)
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE = re.compile(_HTTP_PATH_FMT)


class GoValue:
    """A bad value rendered as Go's %#v does for types the renderer cannot rebuild."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _parse_cidr(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(value, strict=False) if "/" in value else None
    except ValueError:
        return None


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """Upstream: IsWildcardDNS1123Subdomain"""
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _WILDCARD_RE.fullmatch(value):
        errs.append(regex_error("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS "
                                "subdomain, which must consist of lower case alphanumeric characters, '-' or '.' "
                                "and end with an alphanumeric character", _WILDCARD_FMT, "*.example.com"))
    return errs


# --- NetworkPolicy ------------------------------------------------------------------------

def validate_network_policy(np: Obj) -> list[FieldError]:
    errs = m.validate_object_meta(np.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_network_policy_spec(np.get("spec") or {}, "spec")


def validate_network_policy_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + validate_network_policy_spec(new.get("spec") or {}, "spec")


def validate_network_policy_spec(spec: Obj, path: str) -> list[FieldError]:
    errs = m.validate_label_selector(spec.get("podSelector"), path + ".podSelector")
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            rule_path = f"{path}.{direction}[{i}]"
            for j, port in enumerate((rule or {}).get("ports") or []):
                errs += validate_network_policy_port(port or {}, f"{rule_path}.ports[{j}]")
            for j, peer in enumerate((rule or {}).get(peers_key) or []):
                errs += validate_network_policy_peer(peer or {}, f"{rule_path}.{peers_key}[{j}]")
    policy_types = spec.get("policyTypes") or []
    for i, t in enumerate(policy_types):
        if t not in POLICY_TYPES:
            errs.append(errors.not_supported(f"{path}.policyTypes[{i}]", t, POLICY_TYPES))
    if len(policy_types) > 2:
        errs.append(errors.invalid(path + ".policyTypes", policy_types, "may not specify more than two policyTypes"))
    return errs


def validate_network_policy_port(port: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        errs.append(errors.not_supported(path + ".protocol", protocol, PROTOCOLS))
    value, end = port.get("port"), port.get("endPort")
    if value is None:
        if end is not None:
            errs.append(errors.invalid(path + ".endPort", end, "may not be specified when `port` is not specified"))
    elif isinstance(value, int):
        errs += [errors.invalid(path + ".port", value, msg) for msg in is_valid_port_num(value)]
        if end is not None:
            if end < value:
                errs.append(errors.invalid(path + ".endPort", value, "must be greater than or equal to `port`"))
            errs += [errors.invalid(path + ".endPort", end, msg) for msg in is_valid_port_num(end)]
    else:
        if end is not None:
            errs.append(errors.invalid(path + ".endPort", end, "may not be specified when `port` is non-numeric"))
        errs += [errors.invalid(path + ".port", value, msg) for msg in is_valid_port_name(str(value))]
    return errs


def validate_network_policy_peer(peer: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    if peer.get("podSelector") is not None:
        count += 1
        errs += m.validate_label_selector(peer["podSelector"], path + ".podSelector")
    if peer.get("namespaceSelector") is not None:
        count += 1
        errs += m.validate_label_selector(peer["namespaceSelector"], path + ".namespaceSelector")
    if peer.get("ipBlock") is not None:
        count += 1
        errs += validate_ip_block(peer["ipBlock"] or {}, path + ".ipBlock")
    if count == 0:
        errs.append(errors.required(path, "must specify a peer"))
    elif count > 1 and peer.get("ipBlock") is not None:
        errs.append(errors.forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def validate_ip_block(block: Obj, path: str) -> list[FieldError]:
    cidr = block.get("cidr") or ""
    if not cidr:
        return [errors.required(path + ".cidr")]
    net = _parse_cidr(cidr)
    if net is None:
        return [errors.invalid(path + ".cidr", cidr, INVALID_CIDR)]
    errs: list[FieldError] = []
    for i, except_cidr in enumerate(block.get("except") or []):
        except_path = f"{path}.except[{i}]"
        sub = _parse_cidr(except_cidr)
        if sub is None:
            errs.append(errors.invalid(except_path, except_cidr, INVALID_CIDR))
            continue
        if sub.version != net.version or sub.network_address not in net or net.prefixlen >= sub.prefixlen:
            errs.append(errors.invalid(except_path, except_cidr, "must be a strict subset of `cidr`"))
    return errs


# --- Ingress ------------------------------------------------------------------------------

def validate_ingress(ing: Obj) -> list[FieldError]:
    errs = m.validate_object_meta(ing.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_ingress_spec(ing.get("spec") or {}, "spec")


def validate_ingress_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + validate_ingress_spec(new.get("spec") or {}, "spec")


def validate_ingress_spec(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    rules = spec.get("rules") or []
    if not rules and spec.get("defaultBackend") is None:
        errs.append(errors.invalid(path, GoValue("[]networking.IngressRule(nil)"),
                                   "either `defaultBackend` or `rules` must be specified"))
    if spec.get("defaultBackend") is not None:
        errs += validate_ingress_backend(spec["defaultBackend"] or {}, path + ".defaultBackend")
    for i, rule in enumerate(rules):
        errs += _validate_ingress_rule(rule or {}, f"{path}.rules[{i}]")
    for i, tls in enumerate(spec.get("tls") or []):
        for j, host in enumerate((tls or {}).get("hosts") or []):
            check = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
            errs += [errors.invalid(f"{path}.tls[{i}].hosts[{j}]", host, msg) for msg in check(host)]
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errs += [errors.invalid(path + ".ingressClassName", class_name, msg)
                 for msg in name_is_dns_subdomain(class_name, False)]
    return errs


def _validate_ingress_rule(rule: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    host = rule.get("host") or ""
    if host:
        if _parse_ip(host) is not None:
            errs.append(errors.invalid(path + ".host", host, "must be a DNS name, not an IP address"))
        check = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
        errs += [errors.invalid(path + ".host", host, msg) for msg in check(host)]
    http = rule.get("http")
    if http is not None:
        paths = (http or {}).get("paths") or []
        if not paths:
            errs.append(errors.required(path + ".http.paths"))
        for i, p in enumerate(paths):
            errs += _validate_http_path(p or {}, f"{path}.http.paths[{i}]")
    return errs


def _validate_http_path(p: Obj, path: str) -> list[FieldError]:
    path_type, value = p.get("pathType"), p.get("path") or ""
    if path_type is None:
        return [errors.required(path + ".pathType", "pathType must be specified")]
    errs: list[FieldError] = []
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(errors.invalid(path + ".path", value, "must be an absolute path"))
        for seq in INVALID_PATH_SEQUENCES:
            if seq in value:
                errs.append(errors.invalid(path + ".path", value, f"must not contain '{seq}'"))
        for suffix in INVALID_PATH_SUFFIXES:
            if value.endswith(suffix):
                errs.append(errors.invalid(path + ".path", value, f"cannot end with '{suffix}'"))
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(errors.invalid(path + ".path", value, "must be an absolute path"))
    else:
        errs.append(errors.not_supported(path + ".pathType", path_type, PATH_TYPES))
    return errs + validate_ingress_backend(p.get("backend") or {}, path + ".backend")


def validate_ingress_backend(backend: Obj, path: str) -> list[FieldError]:
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [errors.invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return validate_ingress_typed_local_object_reference(resource or {}, path + ".resource")
    if service is None:
        return [errors.invalid(path, "", "resource or service backend is required")]
    errs = []
    name = service.get("name") or ""
    if not name:
        errs.append(errors.required(path + ".service.name"))
    else:
        errs += [errors.invalid(path + ".service.name", name, msg) for msg in _dns1035_label(name)]
    port = service.get("port") or {}
    port_name, port_number = port.get("name") or "", port.get("number") or 0
    if port_name and port_number:
        errs.append(errors.invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs += [errors.invalid(path + ".service.port.name", port_name, msg) for msg in is_valid_port_name(port_name)]
    elif port_number:
        errs += [errors.invalid(path + ".service.port.number", port_number, msg)
                 for msg in is_valid_port_num(port_number)]
    else:
        errs.append(errors.required(path, "port name or number is required"))
    return errs


def _dns1035_label(value: str) -> list[str]:
    """Upstream: ValidateServiceName (NameIsDNS1035Label)."""
    from .names import is_dns1035_label
    return is_dns1035_label(value)


# --- IngressClass -------------------------------------------------------------------------

def validate_ingress_class(ic: Obj) -> list[FieldError]:
    errs = m.validate_object_meta(ic.get("metadata") or {}, False, name_is_dns_subdomain)
    return errs + _validate_ingress_class_spec(ic.get("spec") or {}, "spec")


def validate_ingress_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += _validate_ingress_class_spec(new.get("spec") or {}, "spec")
    return errs + m.immutable((new.get("spec") or {}).get("controller"), (old.get("spec") or {}).get("controller"),
                              "spec.controller")


def _validate_ingress_class_spec(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    controller = spec.get("controller") or ""
    if len(controller) > MAX_LEN_INGRESS_CLASS_CONTROLLER:
        errs.append(errors.too_long(path + ".controller", MAX_LEN_INGRESS_CLASS_CONTROLLER))
    errs += _domain_prefixed_path(controller, path + ".controller")
    params = spec.get("parameters")
    if params is not None:
        errs += _validate_ingress_class_parameters(params or {}, path + ".parameters")
    return errs


def _domain_prefixed_path(value: str, path: str) -> list[FieldError]:
    """Upstream: IsDomainPrefixedPath"""
    if not value:
        return [errors.required(path)]
    host, _, rest = value.partition("/")
    if not host or not rest:
        return [errors.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [errors.invalid(path, host, msg) for msg in is_dns1123_subdomain(host)]
    if not _HTTP_PATH_RE.fullmatch(rest):
        errs.append(errors.invalid(path, rest, regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


def validate_ingress_typed_local_object_reference(ref: Obj, path: str) -> list[FieldError]:
    """Upstream: validateIngressTypedLocalObjectReference (a resource backend, IngressClass parameters)."""
    errs: list[FieldError] = []
    if ref.get("apiGroup") is not None:
        errs += [errors.invalid(path + ".apiGroup", ref["apiGroup"], msg) for msg in is_dns1123_subdomain(ref["apiGroup"])]
    for key in ("kind", "name"):
        value = str(ref.get(key) or "")
        if not value:
            errs.append(errors.required(f"{path}.{key}", f"{key} is required"))
        else:
            errs += [errors.invalid(f"{path}.{key}", value, msg) for msg in is_path_segment_name(value)]
    return errs


def _validate_ingress_class_parameters(params: Obj, path: str) -> list[FieldError]:
    """Upstream: validateIngressClassParametersReference"""
    errs = validate_ingress_typed_local_object_reference(params, path)
    scope = params.get("scope")
    if scope is None:
        return errs + [errors.required(path + ".scope")]
    if scope not in PARAMETER_SCOPES:
        return errs + [errors.not_supported(path + ".scope", scope, PARAMETER_SCOPES)]
    namespace = params.get("namespace")
    if scope == "Namespace":
        if namespace is None:
            errs.append(errors.required(path + ".namespace", "`parameters.scope` is set to 'Namespace'"))
        else:
            errs += [errors.invalid(path + ".namespace", namespace, msg) for msg in is_dns1123_label(namespace)]
    elif namespace is not None:
        errs.append(errors.forbidden(path + ".namespace", "`parameters.scope` is set to 'Cluster'"))
    return errs


# --- ServiceCIDR and IPAddress ------------------------------------------------------------

def validate_service_cidr(sc: Obj) -> list[FieldError]:
    errs = m.validate_object_meta(sc.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = sc.get("spec") or {}
    cidrs = spec.get("cidrs") or []
    if not cidrs:
        return errs + [errors.required("spec.cidrs", "at least one CIDR required")]
    if len(cidrs) > 2:
        return errs + [errors.invalid("spec.cidrs", spec, "may only hold up to 2 values")]
    families = []
    for i, cidr in enumerate(cidrs):
        net = _parse_cidr(cidr)
        if net is None:
            errs.append(errors.invalid(f"spec.cidrs[{i}]", cidr, INVALID_CIDR))
        else:
            families.append(net.version)
    if len(cidrs) == 2 and len(families) == 2 and families[0] == families[1]:
        errs.append(errors.invalid("spec.cidrs", spec, "may specify no more than one IP for each IP family, "
                                   "i.e 192.168.0.0/24 and 2001:db8::/64"))
    return errs


def validate_service_cidr_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + m.immutable((new.get("spec") or {}).get("cidrs"), (old.get("spec") or {}).get("cidrs"),
                              "spec.cidrs")


def validate_ip_address(ip: Obj) -> list[FieldError]:
    meta = ip.get("metadata") or {}
    errs = m.validate_object_meta(meta, False, _ip_address_name)
    ref = (ip.get("spec") or {}).get("parentRef")
    if ref is None:
        return errs + [errors.required("spec.parentRef")]
    for key in ("resource", "name"):
        if not ref.get(key):
            errs.append(errors.required(f"spec.parentRef.{key}"))
    return errs


def _ip_address_name(name: str, prefix: bool) -> list[str]:
    """Upstream: ValidateIPAddressName — the name is the IP address itself, canonical."""
    ip = _parse_ip(name)
    if ip is None:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    if str(ip) != name:
        return [f"must be in canonical form ({ip})"]
    return []


def validate_ip_address_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + m.immutable((new.get("spec") or {}).get("parentRef"), (old.get("spec") or {}).get("parentRef"),
                              "spec.parentRef")
