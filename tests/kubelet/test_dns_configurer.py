"""The kubelet's DNS configurer: upstream's dns_test.go tables (ExpandedDNSConfig is GA: its
limits of 32 search paths and 2048 characters are the only ones)."""
from __future__ import annotations

import pathlib
from typing import Any

import pytest

from kubeplane.api.types import core_v1
from kubeplane.api.types.base import from_dict
from kubeplane.client.tools.record.fake import FakeRecorder
from kubeplane.kubelet.network.dns import (
    POD_DNS_CLUSTER,
    POD_DNS_HOST,
    POD_DNS_NONE,
    Configurer,
    DNSConfig,
    get_pod_dns_type,
    merge_dns_options,
    resolv_conf_text,
)
from kubeplane.utils.resolvconf import parse_resolv_conf

NODE_REF = {"kind": "Node", "name": "testNode", "uid": "testNode", "namespace": ""}


def pod(ns: str = "testNS", *, policy: str | None = None, host_network: bool = False,
        dns_config: dict[str, Any] | None = None, name: str = "test_pod") -> core_v1.Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "hostNetwork": host_network}
    if policy is not None:
        spec["dnsPolicy"] = policy
    if dns_config is not None:
        spec["dnsConfig"] = dns_config
    return from_dict({"metadata": {"name": name, "namespace": ns, "uid": ""}, "spec": spec}, core_v1.Pod)


@pytest.mark.parametrize("data,nameservers,searches,options,is_err", [
    ("", [], [], [], False),
    (" ", [], [], [], False),
    ("\n", [], [], [], False),
    ("\t\n\t", [], [], [], False),
    ("#comment\n", [], [], [], False),
    (" #comment\n", [], [], [], False),
    ("#comment\n#comment", [], [], [], False),
    ("#comment\nnameserver", [], [], [], True),
    ("#comment\nnameserver\nsearch", [], [], [], True),
    ("#comment\nnameserver 1.2.3.4\nsearch", ["1.2.3.4"], [], [], False),
    ("nameserver 1.2.3.4", ["1.2.3.4"], [], [], False),
    (" nameserver 1.2.3.4", ["1.2.3.4"], [], [], False),
    ("\tnameserver 1.2.3.4", ["1.2.3.4"], [], [], False),
    ("nameserver\t1.2.3.4", ["1.2.3.4"], [], [], False),
    ("nameserver \t 1.2.3.4", ["1.2.3.4"], [], [], False),
    ("nameserver 1.2.3.4\nnameserver 5.6.7.8", ["1.2.3.4", "5.6.7.8"], [], [], False),
    ("nameserver 1.2.3.4 #comment", ["1.2.3.4"], [], [], False),
    ("search ", [], [], [], False),
    ("search foo", [], ["foo"], [], False),
    ("search foo bar", [], ["foo", "bar"], [], False),
    ("search foo. bar", [], ["foo", "bar"], [], False),
    ("search foo bar bat\n", [], ["foo", "bar", "bat"], [], False),
    ("search foo\nsearch bar", [], ["bar"], [], False),
    ("nameserver 1.2.3.4\nsearch foo bar", ["1.2.3.4"], ["foo", "bar"], [], False),
    ("nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar", ["1.2.3.4", "5.6.7.8"], ["bar"], [], False),
    ("#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment", ["1.2.3.4"], ["foo"], [], False),
    ("options ", [], [], [], False),
    ("options ndots:5 attempts:2", [], [], ["ndots:5", "attempts:2"], False),
    ("options ndots:1\noptions ndots:5 attempts:3", [], [], ["ndots:5", "attempts:3"], False),
    ("nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4",
     ["1.2.3.4", "5.6.7.8"], ["bar"], ["ndots:5", "attempts:4"], False),
])
def test_parse_resolv_conf(data: str, nameservers: list[str], searches: list[str], options: list[str],
                           is_err: bool) -> None:
    """Upstream: TestParseResolvConf"""
    ns, srch, opts, errors = parse_resolv_conf(data)
    if is_err:
        assert errors
        return
    assert (ns, srch, opts, errors) == (nameservers, searches, options, [])


SEARCH_2048 = ["A" * 128] + ["A" * 127] * 15          # 2048 = 128 + 127 * 15 + 15
EXCEEDED = "Warning DNSConfigForming Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "
THIRTY_TWO = ["testNS.svc.TEST", "svc.TEST", "TEST", *map(str, range(4, 33))]


@pytest.mark.parametrize("host_names,result,events", [
    (["testNS.svc.TEST", "svc.TEST", "TEST"], ["testNS.svc.TEST", "svc.TEST", "TEST"], []),
    (["testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB"], ["testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB"], []),
    (["testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "B" * 256, "BBB"], ["testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB"],
     [EXCEEDED + "testNS.svc.TEST svc.TEST TEST AAA BBB"]),
    (SEARCH_2048, SEARCH_2048, []),
    ([*SEARCH_2048, "B"], SEARCH_2048, [EXCEEDED + " ".join(SEARCH_2048)]),
    (["testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB", "CCC", "DDD"],
     ["testNS.svc.TEST", "svc.TEST", "TEST", "AAA", "BBB", "CCC", "DDD"], []),     # 7: fine once expanded
    (THIRTY_TWO, THIRTY_TWO, []),
    ([*THIRTY_TWO, "33"], THIRTY_TWO, [EXCEEDED + " ".join(THIRTY_TWO)]),
], ids=["3 paths", "5 paths", "a path over 253", "2048 chars", "2050 chars", "7 paths", "32 paths", "33 paths"])
def test_form_dns_search_fits_limits(host_names: list[str], result: list[str], events: list[str]) -> None:
    """Upstream: TestFormDNSSearchFitsLimits (the ExpandedDNSConfig rows)"""
    recorder = FakeRecorder()
    c = Configurer(recorder, NODE_REF, [], [], "TEST", "")
    assert c.form_dns_search_fits_limits(list(host_names), pod()) == result
    assert recorder.events == events


@pytest.mark.parametrize("nameservers,expected,event", [
    (["127.0.0.1"], ["127.0.0.1"], False),
    (["127.0.0.1", "10.0.0.10", "8.8.8.8"], ["127.0.0.1", "10.0.0.10", "8.8.8.8"], False),
    (["127.0.0.1", "10.0.0.10", "8.8.8.8", "1.2.3.4"], ["127.0.0.1", "10.0.0.10", "8.8.8.8"], True),
])
def test_form_dns_nameservers_fits_limits(nameservers: list[str], expected: list[str], event: bool) -> None:
    """Upstream: TestFormDNSNameserversFitsLimits"""
    recorder = FakeRecorder()
    c = Configurer(recorder, NODE_REF, [], [], "TEST", "")
    assert c.form_dns_nameservers_fits_limits(nameservers, pod()) == expected
    assert recorder.events == ([("Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been "
                                 "omitted, the applied nameserver line is: 127.0.0.1 10.0.0.10 8.8.8.8")] if event else [])


@pytest.mark.parametrize("existing,pod_options,expected", [
    (["ndots:5", "debug"], [], ["ndots:5", "debug"]),
    (["ndots:5", "debug"], [{"name": "single-request"}, {"name": "attempts", "value": "3"}],
     ["ndots:5", "debug", "single-request", "attempts:3"]),
    (["ndots:5", "debug"], [{"name": "ndots", "value": "3"}, {"name": "debug"}, {"name": "single-request"},
                            {"name": "attempts", "value": "3"}], ["ndots:3", "debug", "single-request", "attempts:3"]),
])
def test_merge_dns_options(existing: list[str], pod_options: list[dict[str, str]], expected: list[str]) -> None:
    """Upstream: TestMergeDNSOptions"""
    opts = [from_dict(o, core_v1.PodDNSConfigOption) for o in pod_options]
    assert sorted(merge_dns_options(existing, opts)) == sorted(expected)


@pytest.mark.parametrize("host_network,policy,expected", [
    (False, "ClusterFirst", POD_DNS_CLUSTER),
    (True, "ClusterFirstWithHostNet", POD_DNS_CLUSTER),
    (False, "ClusterFirstWithHostNet", POD_DNS_CLUSTER),
    (False, "Default", POD_DNS_HOST),
    (True, "Default", POD_DNS_HOST),
    (True, "ClusterFirst", POD_DNS_HOST),
    (False, "None", POD_DNS_NONE),
])
def test_get_pod_dns_type(host_network: bool, policy: str, expected: str) -> None:
    """Upstream: TestGetPodDNSType"""
    assert get_pod_dns_type(pod(policy=policy, host_network=host_network)) == expected


def test_get_pod_dns_type_invalid_policy() -> None:
    with pytest.raises(ValueError, match="invalid DNSPolicy=invalidPolicy"):
        get_pod_dns_type(pod(policy="invalidPolicy"))


def test_get_pod_dns(tmp_path: pathlib.Path) -> None:
    """Upstream: testGetPodDNS. Pods 0-3: ClusterFirstWithHostNet, ClusterFirst (host network:
    falls back to Default), ClusterFirst, Default; first without a resolv.conf, then with one."""
    recorder = FakeRecorder()
    cluster_ns = "203.0.113.1"
    pods = [pod("", policy="ClusterFirstWithHostNet", host_network=True, name="pod0"),
            pod("", policy="ClusterFirst", host_network=True, name="pod1"),
            pod("", policy="ClusterFirst", host_network=False, name="pod2"),
            pod("", policy="Default", host_network=True, name="pod3")]
    c = Configurer(recorder, NODE_REF, [], [cluster_ns], "kubernetes.io", "")
    got = [c.get_pod_dns(p) for p in pods]
    assert got[0].servers == [cluster_ns] and got[0].searches[0] == ".svc.kubernetes.io"
    assert got[1].servers == ["127.0.0.1"] and got[1].searches == ["."]
    assert got[2].servers == [cluster_ns] and got[2].searches[0] == ".svc.kubernetes.io"
    assert got[3].servers == ["127.0.0.1"] and got[3].searches == ["."]

    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 8.8.8.8\nsearch host.domain other.domain\n")
    c = Configurer(recorder, NODE_REF, [], [cluster_ns], "kubernetes.io", str(resolv))
    got = [c.get_pod_dns(p) for p in pods]
    assert got[0].servers == [cluster_ns]
    assert len(got[0].searches) == len(got[1].searches) + 3 and got[0].searches[0] == ".svc.kubernetes.io"
    assert got[2].servers == [cluster_ns] and len(got[2].searches) == len(got[1].searches) + 3
    assert recorder.events == []


def _dns_config(nameservers: list[str], searches: list[str], options: list[dict[str, str]]) -> dict[str, Any]:
    return {"nameservers": nameservers, "searches": searches, "options": options}


@pytest.mark.parametrize("host_network,policy,dns_config,expected", [
    (False, "None", None, DNSConfig()),
    (False, "None", _dns_config(["203.0.113.1"], ["my.domain", "second.domain"],
                                [{"name": "ndots", "value": "3"}, {"name": "debug"}]),
     DNSConfig(["203.0.113.1"], ["my.domain", "second.domain"], ["ndots:3", "debug"])),
    (False, "ClusterFirst", _dns_config(["10.0.0.11"], ["my.domain"], [{"name": "ndots", "value": "3"}, {"name": "debug"}]),
     DNSConfig(["10.0.0.10", "10.0.0.11"], ["testNS.svc.kubernetes.io", "svc.kubernetes.io", "kubernetes.io",
                                            "host.domain", "my.domain"], ["ndots:3", "debug"])),
    (True, "ClusterFirstWithHostNet", _dns_config(["10.0.0.11"], ["my.domain"],
                                                  [{"name": "ndots", "value": "3"}, {"name": "debug"}]),
     DNSConfig(["10.0.0.10", "10.0.0.11"], ["testNS.svc.kubernetes.io", "svc.kubernetes.io", "kubernetes.io",
                                            "host.domain", "my.domain"], ["ndots:3", "debug"])),
    (False, "Default", _dns_config(["10.0.0.11"], ["my.domain"], [{"name": "ndots", "value": "3"}, {"name": "debug"}]),
     DNSConfig(["8.8.8.8", "10.0.0.11"], ["host.domain", "my.domain"], ["ndots:3", "debug"])),
], ids=["None", "None+dnsConfig", "ClusterFirst+dnsConfig", "ClusterFirstWithHostNet+dnsConfig", "Default+dnsConfig"])
def test_get_pod_dns_custom(tmp_path: pathlib.Path, host_network: bool, policy: str,
                            dns_config: dict[str, Any] | None, expected: DNSConfig) -> None:
    """Upstream: TestGetPodDNSCustom"""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 8.8.8.8\nsearch host.domain\n")
    c = Configurer(FakeRecorder(), NODE_REF, [], ["10.0.0.10"], "kubernetes.io", str(resolv))
    got = c.get_pod_dns(pod(policy=policy, host_network=host_network, dns_config=dns_config))
    assert (got.servers, got.searches, sorted(got.options)) == (expected.servers, expected.searches,
                                                                 sorted(expected.options))


def test_cluster_first_without_cluster_dns_falls_back_to_default_with_events(tmp_path: pathlib.Path) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 8.8.8.8\nsearch host.domain\noptions edns0\n")
    recorder = FakeRecorder()
    got = Configurer(recorder, NODE_REF, [], [], "cluster.local", str(resolv)).get_pod_dns(pod(policy="ClusterFirst"))
    assert (got.servers, got.searches, got.options) == (["8.8.8.8"], ["host.domain"], ["edns0"])
    msg = ('kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. '
           'Falling back to "Default" policy.')
    assert recorder.events == [f"Warning MissingClusterDNS {msg}",
                               f'Warning MissingClusterDNS pod: "test_pod_testNS()". {msg}']


def test_pod_resolv_conf_is_containerds_layout(tmp_path: pathlib.Path) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 8.8.8.8\nsearch corp.example\n")
    c = Configurer(None, NODE_REF, [], ["10.96.0.10"], "cluster.local", str(resolv))
    assert c.pod_resolv_conf(pod("default", policy="ClusterFirst")) == (
        "search default.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        "nameserver 10.96.0.10\noptions ndots:5\n")
    assert resolv_conf_text(DNSConfig()) == ""


@pytest.mark.parametrize("content,event", [
    ("search " + " ".join(f"d{i}" for i in range(30)), "contains search line consisting of more than 29 domains!"),
    ("search " + "a" * 254, "contains a search path which length is more than allowed 253 chars!"),
    ("search " + " ".join(["b" * 200] * 11), "contains search line which length is more than allowed 2048 chars!"),
])
def test_check_limits_for_resolv_conf(tmp_path: pathlib.Path, content: str, event: str) -> None:
    """Upstream: CheckLimitsForResolvConf's events on the node."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(content)
    recorder = FakeRecorder()
    Configurer(recorder, NODE_REF, [], ["10.96.0.10"], "cluster.local", str(resolv)).check_limits_for_resolv_conf()
    assert len(recorder.events) == 1 and recorder.events[0].startswith("Warning CheckLimitsForResolvConf Resolv.conf file")
    assert recorder.events[0].endswith(event)


def test_process_runtime_writes_the_pods_resolv_conf(tmp_path: pathlib.Path) -> None:
    from kubeplane.kubelet.runtime.process.runtime import ProcessRuntime
    resolv = tmp_path / "host-resolv.conf"
    resolv.write_text("nameserver 192.0.2.53\nsearch corp.example\n")
    rt = ProcessRuntime(root_dir=tmp_path / "kubelet")
    rt.dns_configurer = Configurer(None, None, [], ["10.96.0.10"], "cluster.local", str(resolv))
    p = from_dict({"metadata": {"name": "web", "namespace": "team", "uid": "u1"},
                   "spec": {"containers": [{"name": "c"}], "dnsPolicy": "ClusterFirst"}}, core_v1.Pod)
    rt.run_pod_sandbox(p)
    assert rt.resolv_conf_path("u1").read_text() == (
        "search team.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        "nameserver 10.96.0.10\noptions ndots:5\n")
    rt.remove_pod("u1")
    assert not rt.resolv_conf_path("u1").exists()


def test_pod_events_go_to_the_pods_node_recorder_as_a_reference() -> None:
    from kubeplane.kubelet.network.dns import PodEventRecorder
    recorder = FakeRecorder(include_object=True)
    seen: list[str] = []
    c = Configurer(PodEventRecorder(lambda uid: seen.append(uid) or recorder), None, [], ["1.1.1.1"] * 4,
                   "cluster.local", "")
    p = from_dict({"metadata": {"name": "web", "namespace": "team", "uid": "u1"},
                   "spec": {"containers": [{"name": "c"}]}}, core_v1.Pod)
    c.get_pod_dns(p)
    assert seen == ["u1"] and recorder.events == [
        "Warning DNSConfigForming Nameserver limits were exceeded, some nameservers have been omitted, the applied "
        "nameserver line is: 1.1.1.1 1.1.1.1 1.1.1.1 involvedObject{kind=Pod,apiVersion=v1}"]
