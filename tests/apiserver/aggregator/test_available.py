"""The availability controller's decision and the service resolver, as upstream's tables
(remote_available_controller_test.go TestSync, proxy_test.go TestResolve*)."""
from __future__ import annotations

import random
from typing import Any

import pytest

from kubeplane.apiserver.aggregator.available import available_condition, set_condition
from kubeplane.apiserver.aggregator.proxy import escape_extra_key, forwarded_headers, identity_headers
from kubeplane.apiserver.aggregator.resolver import ResolveError, resolve_endpoint
from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.apiserver.request import Request


def api_service(port: int = 1234) -> dict[str, Any]:
    return {"metadata": {"name": "remote.group"},
            "spec": {"group": "group", "version": "v1", "service": {"namespace": "foo", "name": "bar", "port": port}}}


def svc(port: int = 1234, port_name: str = "https", type_: str = "ClusterIP") -> dict[str, Any]:
    return {"metadata": {"namespace": "foo", "name": "bar"},
            "spec": {"type": type_, "ports": [{"port": port, "name": port_name}]}}


def slice_(ready: bool | None = True, port_name: str = "https", addresses: tuple[str, ...] = ("10.0.0.1",),
           family: str = "IPv4") -> dict[str, Any]:
    cond = {} if ready is None else {"ready": ready}
    return {"metadata": {"namespace": "foo", "name": "bar-1", "labels": {"kubernetes.io/service-name": "bar"}},
            "addressType": family, "ports": [{"name": port_name, "port": 6443}],
            "endpoints": [{"addresses": list(addresses), "conditions": cond}]}


async def passed() -> str | None:
    return None


async def failed() -> str | None:
    return "failing or missing response from https://10.0.0.1:6443/apis/group/v1: bad status from https://10.0.0.1:6443/apis/group/v1: 403"


@pytest.mark.parametrize("name,service,slices,check,expected", [
    ("no service", None, [], passed, ("False", "ServiceNotFound", 'service/bar in "foo" is not present')),
    ("service on another port", svc(port=6443), [slice_()], passed,
     ("False", "ServicePortError", 'service/bar in "foo" is not listening on port 1234')),
    ("no endpointslices", svc(), [], passed,
     ("False", "EndpointsNotFound", 'cannot find endpointslices for service/bar in "foo"')),
    ("no ready endpoint", svc(), [slice_(ready=False)], passed,
     ("False", "MissingEndpoints", 'endpointslices for service/bar in "foo" have no addresses with port name "https"')),
    ("endpoint on another port name", svc(), [slice_(port_name="http")], passed,
     ("False", "MissingEndpoints", 'endpointslices for service/bar in "foo" have no addresses with port name "https"')),
    ("ready unset counts as ready", svc(), [slice_(ready=None)], passed, ("True", "Passed", "all checks passed")),
    ("discovery fails", svc(), [slice_()], failed, ("False", "FailedDiscoveryCheck", "failing or missing response "
                                                    "from https://10.0.0.1:6443/apis/group/v1: bad status from "
                                                    "https://10.0.0.1:6443/apis/group/v1: 403")),
    ("an ExternalName service skips the endpoint checks", svc(port=1, type_="ExternalName"), [], passed,
     ("True", "Passed", "all checks passed")),
])
async def test_available_condition(name: str, service: Any, slices: list[Any], check: Any, expected: tuple) -> None:
    """Upstream: TestSync"""
    c = await available_condition(api_service(), service, slices, check)
    assert (c["status"], c["reason"], c["message"]) == expected


def test_set_condition_moves_the_transition_time_only_with_the_status() -> None:
    a: dict[str, Any] = {}
    set_condition(a, {"type": "Available", "status": "False", "reason": "A", "message": "a"}, "t1")
    set_condition(a, {"type": "Available", "status": "False", "reason": "B", "message": "b"}, "t2")
    assert a["status"]["conditions"] == [{"type": "Available", "status": "False", "reason": "B", "message": "b",
                                          "lastTransitionTime": "t1"}]
    set_condition(a, {"type": "Available", "status": "True", "reason": "Passed", "message": "ok"}, "t3")
    assert a["status"]["conditions"][0]["lastTransitionTime"] == "t3"


@pytest.mark.parametrize("name,service,slices,expected", [
    ("no service", None, [], 'service "bar" not found'),
    ("unsupported type", svc(type_="ExternalName"), [], 'unsupported service type "ExternalName"'),
    ("no such port", svc(port=80), [slice_()], 'no service port 1234 found for service "bar"'),
    ("no endpoints", svc(), [], 'no endpoints available for service "bar"'),
    ("only unready endpoints", svc(), [slice_(ready=False)], 'no endpoints available for service "bar"'),
    ("the port's name must match", svc(), [slice_(port_name="http")], 'no endpoints available for service "bar"'),
    ("ready", svc(), [slice_()], ("10.0.0.1", 6443)),
    ("NodePort is routed too", svc(type_="NodePort"), [slice_()], ("10.0.0.1", 6443)),
    ("only the first address of an endpoint", svc(), [slice_(addresses=("10.0.0.2", "10.0.0.3"))], ("10.0.0.2", 6443)),
])
def test_resolve_endpoint(name: str, service: Any, slices: list[Any], expected: Any) -> None:
    """Upstream: TestResolve (proxy_test.go)"""
    if isinstance(expected, str):
        with pytest.raises(ResolveError, match=expected.replace("(", r"\(")):
            resolve_endpoint(service, slices, "foo", "bar", 1234)
    else:
        assert resolve_endpoint(service, slices, "foo", "bar", 1234) == expected


def test_the_preferred_family_first() -> None:
    s = svc()
    s["spec"]["ipFamilies"] = ["IPv6"]
    slices = [slice_(addresses=("10.0.0.1",)), slice_(addresses=("fd00::1",), family="IPv6")]
    for seed in range(20):
        assert resolve_endpoint(s, slices, "foo", "bar", 1234, random.Random(seed)) == ("fd00::1", 6443)


def test_identity_headers_replace_what_the_client_sent() -> None:
    """Upstream: SetAuthProxyHeaders, and the authentication filter dropping Authorization."""
    req = Request.build("GET", "/apis/g/v/things", "", {})
    req.raw_headers = [(b"Accept", b"application/json"), (b"X-Remote-User", b"system:admin"),
                       (b"x-remote-group", b"system:masters"), (b"X-Remote-Extra-Scopes", b"all"),
                       (b"Authorization", b"Bearer t"), (b"Impersonate-User", b"root"),
                       (b"Connection", b"keep-alive, X-Secret"), (b"X-Secret", b"hop"), (b"Host", b"kubeplane")]
    req.user = UserInfo("bob", "", ("devs",), (("acme.com/project", ("x",)),))
    assert forwarded_headers(req) == [("Accept", "application/json"), ("X-Remote-User", "bob"),
                                      ("X-Remote-Group", "devs"), ("X-Remote-Extra-acme.com%2Fproject", "x")]
    assert identity_headers(UserInfo("u", "id", ())) == [("X-Remote-User", "u"), ("X-Remote-Uid", "id")]
    assert escape_extra_key("a%b c") == "a%25b%20c"
