"""Service validation beyond ports and types: upstream's ValidateService rules for externalName,
session affinity, external IPs, source ranges, traffic policies, load-balancer class and
healthCheckNodePort (cases after TestValidateServiceCreate/TestValidateServiceUpdate in
pkg/apis/core/validation/validation_test.go)."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api import defaults
from kubeplane.api.validation import core, ip

Obj = dict[str, Any]


def _svc(**spec: Any) -> Obj:
    base = {"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
            "selector": {"app": "a"}, "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}
    merged = {k: v for k, v in {**base, **spec}.items() if v is not None}
    svc = {"metadata": {"name": "svc", "namespace": "ns", "resourceVersion": "1"}, "spec": merged}
    defaults.set_defaults_service(svc)
    return svc


def _raw(svc: Obj, **spec: Any) -> Obj:
    """A field set after defaulting (what a client could store only by skipping it)."""
    svc["spec"].update(spec)
    return svc


def _lb(**spec: Any) -> Obj:
    ports = [{"port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30080}]
    return _svc(**{"type": "LoadBalancer", "ports": ports, **spec})


def _msgs(svc: Obj) -> list[str]:
    return [str(e) for e in core.validate_service(svc)]


def test_valid_services_pass() -> None:
    assert _msgs(_svc()) == []
    assert _msgs(_lb(externalTrafficPolicy="Local", healthCheckNodePort=30100, loadBalancerClass="example.com/lb",
                     loadBalancerSourceRanges=["10.0.0.0/8", " 192.168.0.0/16 "])) == []
    assert _msgs(_svc(type="ExternalName", externalName="example.com.", clusterIP=None, clusterIPs=None,
                      ipFamilies=None, ipFamilyPolicy=None, ports=[])) == []
    assert _msgs(_svc(sessionAffinity="ClientIP")) == []         # timeoutSeconds defaulted to 10800


@pytest.mark.parametrize("svc, expected", [
    (_svc(type="ExternalName", externalName="", clusterIP=None, clusterIPs=None, ipFamilies=None,
          ipFamilyPolicy=None), ["spec.externalName: Required value"]),
    (_svc(type="ExternalName", externalName="-bad-", clusterIP=None, clusterIPs=None, ipFamilies=None,
          ipFamilyPolicy=None),
     ['spec.externalName: Invalid value: "-bad-": a lowercase RFC 1123 subdomain must consist of lower case '
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
      "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
      "[a-z0-9])?)*')"]),
    (_svc(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86401}}),
     ["spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less "
      "than 86400"]),
    (_raw(_svc(), sessionAffinityConfig={"clientIP": {"timeoutSeconds": 10}}),
     ["spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None"]),
    (_svc(externalIPs=["127.0.0.1"], externalTrafficPolicy="Cluster"),
     ['spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)']),
    (_svc(externalIPs=["1.2.3.04"], externalTrafficPolicy="Cluster"),
     ['spec.externalIPs[0]: Invalid value: "1.2.3.04": must not have leading 0s']),
    (_svc(externalIPs=["2001:DB8::1"], externalTrafficPolicy="Cluster"),
     ['spec.externalIPs[0]: Invalid value: "2001:DB8::1": must be in canonical form ("2001:db8::1")']),
    (_raw(_svc(), externalIPs=["1.2.3.4"]), ["spec.externalTrafficPolicy: Required value"]),
    (_svc(externalTrafficPolicy="Local"),
     ['spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services']),
    (_svc(loadBalancerSourceRanges=["10.0.0.0/8"]),
     ["spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'"]),
    (_lb(loadBalancerSourceRanges=["10.0.0.1/8"]),
     ['spec.LoadBalancerSourceRanges[0]: Invalid value: "10.0.0.1/8": must not have bits set beyond the prefix '
      'length']),
    (_lb(loadBalancerSourceRanges=["foo"]),
     ['spec.LoadBalancerSourceRanges[0]: Invalid value: "foo": must be a valid CIDR value, (e.g. 10.9.8.0/24 or '
      '2001:db8::/64)']),
    (_svc(allocateLoadBalancerNodePorts=True),
     ["spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'"]),
    (_svc(loadBalancerClass="example.com/lb"),
     ["spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'"]),
    (_lb(loadBalancerClass="-x-"),
     ['spec.loadBalancerClass: Invalid value: "-x-": name part must consist of alphanumeric characters, \'-\', '
      "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
      "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    (_lb(externalTrafficPolicy="Local"), ["spec.healthCheckNodePort: Required value"]),
    (_lb(healthCheckNodePort=30100),
     ["spec.healthCheckNodePort: Invalid value: 30100: may only be set when `type` is 'LoadBalancer' and "
      "`externalTrafficPolicy` is 'Local'"]),
    (_svc(internalTrafficPolicy="Nearby"),
     ['spec.internalTrafficPolicy: Unsupported value: "Nearby": supported values: "Cluster", "Local"']),
    (_svc(trafficDistribution="Anywhere"),
     ['spec.trafficDistribution: Unsupported value: "Anywhere": supported values: "PreferClose", '
      '"PreferSameNode", "PreferSameZone"']),
    (_lb(ports=[{"port": 10250, "protocol": "TCP", "targetPort": 1, "nodePort": 30001}]),
     ["spec.ports[0]: Invalid value: 10250: may not expose port 10250 externally since it is used by kubelet"]),
    (_svc(ports=[{"port": 80, "protocol": "TCP", "targetPort": 80, "appProtocol": "a/b/c"}]),
     ['spec.ports[0].appProtocol: Invalid value: "a/b/c": a valid label key must consist of alphanumeric '
      "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
      "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with "
      "an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]),
])
def test_service_errors(svc: Obj, expected: list[str]) -> None:
    assert _msgs(svc) == expected


def test_service_update_rules() -> None:
    old = _lb(externalTrafficPolicy="Local", healthCheckNodePort=30100, loadBalancerClass="example.com/a")
    new = copy.deepcopy(old)
    new["spec"]["loadBalancerClass"] = "example.com/b"
    new["spec"]["healthCheckNodePort"] = 30101
    assert [str(e) for e in core.validate_service_update(new, old)] == [
        'spec.loadBalancerClass: Invalid value: "example.com/b": may not change once set',
        "spec.healthCheckNodePort: Forbidden: field is immutable"]


@pytest.mark.parametrize("value, expected", [
    ("1.2.3.4", []), ("::ffff:1.2.3.4", ["must not be an IPv4-mapped IPv6 address"]),
    ("01.2.3.4", ["must not have leading 0s"]), ("x", ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]),
])
def test_is_valid_ip(value: str, expected: list[str]) -> None:
    assert [e.detail for e in ip.is_valid_ip("f", value)] == expected


@pytest.mark.parametrize("value, expected", [
    ("10.0.0.0/8", []), ("2001:db8::/64", []), ("2001:DB8::/64", ['must be in canonical form ("2001:db8::/64")']),
    ("10.0.0.0/08", ["must not have leading 0s in IP or prefix length"]),
    ("::ffff:1.2.3.0/120", ["must not have an IPv4-mapped IPv6 address"]),
    ("10.0.0.0", ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]),
])
def test_is_valid_cidr(value: str, expected: list[str]) -> None:
    assert [e.detail for e in ip.is_valid_cidr("f", value)] == expected
