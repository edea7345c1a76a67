"""A pod spec's dnsConfig against its dnsPolicy, with upstream's messages and paths
(cases after TestValidatePodDNSConfig in validation_test.go)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from kubeplane.apiserver.registry.scheme import set_defaults, validate

DC = "spec.dnsConfig"
SEARCH_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', "
              "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
              "is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')")
IP_MSG = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def pod(**spec: Any) -> dict:
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
         "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], **spec}}
    set_defaults(p)
    return p


def _json(value: list[str]) -> str:
    return json.dumps(value, separators=(",", ":"))


# 10 * 191 + 128 characters and 10 spaces: 2048, the limit
LIMIT_SEARCHES = ["a" * 63 + "." + "b" * 63 + "." + "c" * 63] * 10 + ["d" * 63 + "." + "e" * 62 + ".f"]
LONG_SEARCHES = LIMIT_SEARCHES + ["f"]


DNS_CASES = [
    pytest.param("ClusterFirst", None, [], id="no-config"),
    pytest.param("ClusterFirst", {}, [], id="empty-config"),
    pytest.param("ClusterFirst", {"nameservers": ["127.0.0.1", "::1"], "searches": ["custom"],
                                  "options": [{"name": "ndots", "value": "3"}, {"name": "debug"}]}, [],
                 id="valid-config"),
    pytest.param("ClusterFirst", {"searches": ["_sip._tcp.abc_d.example.com", "example.com.", "."]}, [],
                 id="relaxed-searches"),
    pytest.param("None", {"nameservers": ["1.2.3.4"]}, [], id="none-with-nameserver"),
    pytest.param("None", None, [f"{DC}: Required value: must provide `dnsConfig` when `dnsPolicy` is None"],
                 id="none-requires-config"),
    pytest.param("None", {"searches": ["custom"]},
                 [f"{DC}.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"],
                 id="none-requires-nameserver"),
    pytest.param("ClusterFirst", {"nameservers": ["1.2.3.4", "1.2.3.5", "1.2.3.6", "1.2.3.7"]},
                 [f'{DC}.nameservers: Invalid value: ["1.2.3.4","1.2.3.5","1.2.3.6","1.2.3.7"]: '
                  "must not have more than 3 nameservers"], id="too-many-nameservers"),
    pytest.param("ClusterFirst", {"nameservers": ["invalid"]},
                 [f'{DC}.nameservers[0]: Invalid value: "invalid": {IP_MSG}'], id="invalid-nameserver"),
    pytest.param("ClusterFirst", {"searches": [f"s{i}" for i in range(33)]},
                 [f"{DC}.searches: Invalid value: {_json([f's{i}' for i in range(33)])}: "
                  "must not have more than 32 search paths"], id="too-many-searches"),
    pytest.param("ClusterFirst", {"searches": LONG_SEARCHES},
                 [f"{DC}.searches: Invalid value: {_json(LONG_SEARCHES)}: "
                  "must not have more than 2048 characters (including spaces) in the search list"],
                 id="search-list-too-long"),
    pytest.param("ClusterFirst", {"searches": ["custom?"]},
                 [f'{DC}.searches[0]: Invalid value: "custom?": {SEARCH_MSG}'], id="invalid-search"),
    pytest.param("ClusterFirst", {"searches": ["Example.com."]},
                 [f'{DC}.searches[0]: Invalid value: "Example.com": {SEARCH_MSG}'], id="search-trailing-dot-trimmed"),
    pytest.param("ClusterFirst", {"options": [{"value": "3"}]},
                 [f"{DC}.options[0]: Required value: must not be empty"], id="option-name-required"),
]


@pytest.mark.parametrize("policy,config,expected", DNS_CASES)
def test_pod_dns_config(policy: str, config: dict | None, expected: list[str]) -> None:
    spec: dict = {"dnsPolicy": policy}
    if config is not None:
        spec["dnsConfig"] = config
    assert [str(e) for e in validate(pod(**spec))] == expected


def test_search_list_at_the_limit_is_valid() -> None:
    assert len(" ".join(LIMIT_SEARCHES)) == 2048
    assert validate(pod(dnsConfig={"searches": LIMIT_SEARCHES})) == []
