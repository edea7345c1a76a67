"""Table columns and row printers of networking.k8s.io/v1: Ingress, IngressClass,
NetworkPolicy, ServiceCIDR, IPAddress.

Upstream: AddHandlers and printIngress, printIngressClass, printNetworkPolicy,
printServiceCIDR, printIPAddress (pkg/printers/internalversion/printers.go).
"""
from __future__ import annotations

from typing import Any

from .columns import Column, _age, _col, _doc, _name
from .printers import Row, format_label_selector, translate_timestamp_since

Obj = dict[str, Any]
_NET = "io.k8s.api.networking.v1."


def ingress_columns() -> list[Column]:
    return [
        _name(),
        _col("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
        _col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
        _col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
        _col("Ports", "string", "Ports of TLS configurations that open"),
        _age(),
    ]


def format_hosts(rules: list[Obj] | None) -> str:
    """Upstream: formatHosts — at most 3 hosts, "*" when no rule names one."""
    rules = rules or []
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and rule.get("host"):
            hosts.append(rule["host"])
    if not hosts:
        return "*"
    out = ",".join(hosts)
    return f"{out} + {len(rules) - 3} more..." if more else out


def ingress_address(status: Obj) -> str:
    """Upstream: ingressLoadBalancerStatusStringer (wide): the distinct IPs or hostnames."""
    seen: dict[str, None] = {}
    for ing in (status.get("loadBalancer") or {}).get("ingress") or []:
        addr = ing.get("ip") or ing.get("hostname")
        if addr:
            seen[addr] = None
    return ",".join(seen)


def print_ingress(obj: Obj, now: float) -> Row:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    return [meta.get("name", ""), spec.get("ingressClassName") or "<none>", format_hosts(spec.get("rules")),
            ingress_address(obj.get("status") or {}), "80, 443" if spec.get("tls") else "80",
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def ingress_class_columns() -> list[Column]:
    return [
        _name(),
        _col("Controller", "string", "Controller that is responsible for handling this class"),
        _col("Parameters", "string", "A reference to a resource with additional parameters"),
        _age(),
    ]


def print_ingress_class(obj: Obj, now: float) -> Row:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    params = spec.get("parameters")
    parameters = "<none>"
    if params:
        parameters = params.get("kind", "")
        if params.get("apiGroup") is not None:
            parameters += "." + params["apiGroup"]
        parameters += "/" + params.get("name", "")
    return [meta.get("name", ""), spec.get("controller", ""), parameters,
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def network_policy_columns() -> list[Column]:
    return [_name(), _col("Pod-Selector", "string", _doc(_NET + "NetworkPolicySpec", "podSelector")), _age()]


def print_network_policy(obj: Obj, now: float) -> Row:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), format_label_selector((obj.get("spec") or {}).get("podSelector")),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def service_cidr_columns() -> list[Column]:
    return [_name(), _col("CIDRs", "string", _doc(_NET + "ServiceCIDRSpec", "cidrs")), _age()]


def print_service_cidr(obj: Obj, now: float) -> Row:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), ",".join((obj.get("spec") or {}).get("cidrs") or []),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def ip_address_columns() -> list[Column]:
    return [_name(), _col("ParentRef", "string", _doc(_NET + "IPAddressSpec", "parentRef")), _age()]


def print_ip_address(obj: Obj, now: float) -> Row:
    """The parent as <resource>[.<group>][/<namespace>]/<name>, lower-cased group/resource."""
    meta = obj.get("metadata") or {}
    ref = (obj.get("spec") or {}).get("parentRef")
    parent = "<none>"
    if ref:
        group = ref.get("group", "")
        parent = (ref.get("resource", "") + ("." + group if group else "")).lower()
        if ref.get("namespace"):
            parent += "/" + ref["namespace"]
        parent += "/" + ref.get("name", "")
    return [meta.get("name", ""), parent, translate_timestamp_since(meta.get("creationTimestamp"), now)], None
