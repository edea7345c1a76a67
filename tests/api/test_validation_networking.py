"""networking.k8s.io/v1 defaulting and validation (upstream's defaults.go and validation.go
test tables, the main cases)."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.defaulting import networking as defaulting
from kubeplane.api.validation import networking as v


def msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def netpol(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "np", "namespace": "default"}, "spec": {"podSelector": {}, **spec}}


@pytest.mark.parametrize("spec, policy_types", [
    ({}, ["Ingress"]),
    ({"egress": [{}]}, ["Ingress", "Egress"]),
    ({"policyTypes": ["Egress"], "egress": [{}]}, ["Egress"]),
])
def test_network_policy_policy_types_default(spec: dict[str, Any], policy_types: list[str]) -> None:
    obj = netpol(**spec)
    defaulting.set_defaults_network_policy(obj)
    assert obj["spec"]["policyTypes"] == policy_types


def test_network_policy_port_protocol_defaults_to_tcp() -> None:
    obj = netpol(ingress=[{"ports": [{"port": 80}, {"protocol": "UDP", "port": 53}]}], egress=[{"ports": [{}]}])
    defaulting.set_defaults_network_policy(obj)
    assert [p["protocol"] for p in obj["spec"]["ingress"][0]["ports"]] == ["TCP", "UDP"]
    assert obj["spec"]["egress"][0]["ports"] == [{"protocol": "TCP"}]


def test_ingress_class_parameters_scope_defaults_to_cluster_and_ingress_has_no_defaults() -> None:
    ic = {"spec": {"controller": "a.io/c", "parameters": {"kind": "K", "name": "n"}}}
    defaulting.set_defaults_ingress_class(ic)
    assert ic["spec"]["parameters"]["scope"] == "Cluster"


def test_a_valid_network_policy() -> None:
    obj = netpol(ingress=[{"from": [{"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                                    {"namespaceSelector": {"matchLabels": {"p": "x"}}, "podSelector": {}}],
                           "ports": [{"protocol": "TCP", "port": 6379}, {"port": "http"},
                                     {"port": 32000, "endPort": 32768}]}],
                 policyTypes=["Ingress"])
    assert v.validate_network_policy(obj) == []


@pytest.mark.parametrize("rule, expected", [
    ({"ports": [{"protocol": "ICMP"}]},
     'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"'),
    ({"ports": [{"port": 0}]}, "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"),
    ({"ports": [{"port": 100, "endPort": 90}]},
     "spec.ingress[0].ports[0].endPort: Invalid value: 100: must be greater than or equal to `port`"),
    ({"ports": [{"port": "http", "endPort": 90}]},
     "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric"),
    ({"ports": [{"endPort": 90}]},
     "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is not specified"),
    ({"from": [{}]}, "spec.ingress[0].from[0]: Required value: must specify a peer"),
    ({"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]},
     "spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"),
    ({"from": [{"ipBlock": {"cidr": ""}}]}, "spec.ingress[0].from[0].ipBlock.cidr: Required value"),
    ({"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]},
     'spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.0/33": must be a valid CIDR value, '
     "(e.g. 10.9.8.0/24 or 2001:db8::/64)"),
    ({"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]}}]},
     'spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`'),
    ({"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.0.0/16"]}}]},
     'spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "10.0.0.0/16": must be a strict subset of `cidr`'),
])
def test_network_policy_rule_errors(rule: dict[str, Any], expected: str) -> None:
    assert msgs(v.validate_network_policy(netpol(ingress=[rule]))) == [expected]


def test_network_policy_policy_types() -> None:
    assert msgs(v.validate_network_policy(netpol(policyTypes=["Both"]))) == [
        'spec.policyTypes[0]: Unsupported value: "Both": supported values: "Ingress", "Egress"']
    errs = msgs(v.validate_network_policy(netpol(policyTypes=["Ingress", "Egress", "Ingress"])))
    assert errs == ['spec.policyTypes: Invalid value: ["Ingress","Egress","Ingress"]: '
                    "may not specify more than two policyTypes"]


def ingress(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "i", "namespace": "default"}, "spec": spec}


BACKEND = {"service": {"name": "web", "port": {"number": 80}}}


def path(**p: Any) -> dict[str, Any]:
    return {"rules": [{"host": "foo.example.com", "http": {"paths": [{"backend": BACKEND, **p}]}}]}


def test_a_valid_ingress() -> None:
    assert v.validate_ingress(ingress(ingressClassName="nginx", **path(path="/api", pathType="Prefix"),
                                      tls=[{"hosts": ["*.example.com"], "secretName": "s"}])) == []
    assert v.validate_ingress(ingress(defaultBackend=BACKEND)) == []
    assert v.validate_ingress(ingress(**path(pathType="ImplementationSpecific"))) == []


@pytest.mark.parametrize("spec, expected", [
    ({}, "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"),
    (path(path="/"), "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"),
    (path(path="api", pathType="Prefix"),
     'spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path'),
    (path(path="/a//b", pathType="Exact"),
     "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b\": must not contain '//'"),
    (path(path="/a/..", pathType="Prefix"),
     "spec.rules[0].http.paths[0].path: Invalid value: \"/a/..\": cannot end with '/..'"),
    (path(path="/", pathType="Regex"),
     'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: "Exact", '
     '"ImplementationSpecific", "Prefix"'),
    ({"defaultBackend": {}}, 'spec.defaultBackend: Invalid value: "": resource or service backend is required'),
    ({"defaultBackend": {"service": {"name": "web", "port": {}}}},
     "spec.defaultBackend: Required value: port name or number is required"),
    ({"defaultBackend": {"service": {"name": "web", "port": {"name": "http", "number": 80}}}},
     'spec.defaultBackend: Invalid value: "": cannot set both port name & port number'),
    ({"defaultBackend": {**BACKEND, "resource": {"kind": "K", "name": "n"}}},
     'spec.defaultBackend: Invalid value: "": cannot set both resource and service backends'),
    ({"defaultBackend": BACKEND, "ingressClassName": "Nginx"},
     'spec.ingressClassName: Invalid value: "Nginx": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
     "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
])
def test_ingress_errors(spec: dict[str, Any], expected: str) -> None:
    assert msgs(v.validate_ingress(ingress(**spec))) == [expected]


def test_ingress_host_must_not_be_an_ip() -> None:
    spec = path(path="/", pathType="Prefix")
    spec["rules"][0]["host"] = "1.2.3.4"
    assert msgs(v.validate_ingress(ingress(**spec)))[0] == \
        'spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address'


def test_ingress_class_controller_and_parameters() -> None:
    ok = {"metadata": {"name": "c", "resourceVersion": "1"}, "spec": {"controller": "example.com/ingress",
                                               "parameters": {"kind": "P", "name": "p", "scope": "Cluster"}}}
    assert v.validate_ingress_class(ok) == []
    bad = copy.deepcopy(ok)
    bad["spec"]["controller"] = "nodomain"
    assert msgs(v.validate_ingress_class(bad)) == [
        'spec.controller: Invalid value: "nodomain": must be a domain-prefixed path (such as "acme.io/foo")']
    bad = copy.deepcopy(ok)
    bad["spec"]["parameters"]["scope"] = "Namespace"
    assert msgs(v.validate_ingress_class(bad)) == [
        "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"]
    changed = copy.deepcopy(ok)
    changed["spec"]["controller"] = "example.com/other"
    assert msgs(v.validate_ingress_class_update(changed, ok)) == [
        'spec.controller: Invalid value: "example.com/other": field is immutable']


def test_service_cidr_and_ip_address() -> None:
    assert v.validate_service_cidr({"metadata": {"name": "c"}, "spec": {"cidrs": ["10.0.0.0/24", "fd00::/108"]}}) == []
    assert msgs(v.validate_service_cidr({"metadata": {"name": "c"}, "spec": {}})) == [
        "spec.cidrs: Required value: at least one CIDR required"]
    assert msgs(v.validate_service_cidr({"metadata": {"name": "c"}, "spec": {"cidrs": ["10.0.0.0/24", "10.1.0.0/24"]}}))[0] \
        .endswith("may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64")
    ip = {"metadata": {"name": "10.0.0.1"}, "spec": {"parentRef": {"resource": "services", "name": "s"}}}
    assert v.validate_ip_address(ip) == []
    assert msgs(v.validate_ip_address({"metadata": {"name": "10.0.0.1"}, "spec": {}})) == [
        "spec.parentRef: Required value"]
    assert msgs(v.validate_ip_address({**ip, "metadata": {"name": "2001:DB8::1"}})) == [
        'metadata.name: Invalid value: "2001:DB8::1": must be in canonical form (2001:db8::1)']


@pytest.mark.parametrize("ref, expected", [
    ({"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static-assets"}, []),
    ({"kind": "", "name": ""}, ["spec.defaultBackend.resource.kind: Required value: kind is required",
                                "spec.defaultBackend.resource.name: Required value: name is required"]),
    ({"apiGroup": "Bad_Group", "kind": "a/b", "name": ".."},
     ['spec.defaultBackend.resource.apiGroup: Invalid value: "Bad_Group": a lowercase RFC 1123 subdomain must consist '
      "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
      "(e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      "spec.defaultBackend.resource.kind: Invalid value: \"a/b\": may not contain '/'",
      "spec.defaultBackend.resource.name: Invalid value: \"..\": may not be '..'"]),
])
def test_ingress_resource_backend(ref: dict[str, Any], expected: list[str]) -> None:
    """Upstream: validateIngressTypedLocalObjectReference, also used for IngressClass parameters."""
    assert msgs(v.validate_ingress(ingress(defaultBackend={"resource": ref}))) == expected
    params = {**ref, "scope": "Cluster"}
    ic = {"metadata": {"name": "c"}, "spec": {"controller": "example.com/ingress", "parameters": params}}
    assert msgs(v.validate_ingress_class(ic)) == [e.replace("spec.defaultBackend.resource", "spec.parameters")
                                                  for e in expected]
