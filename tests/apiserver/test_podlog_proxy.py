"""pods/log for a node no in-process kubelet serves: the API server reads the Node, picks its
address and kubelet port, and proxies to the kubelet's /containerLogs over HTTPS.

A real KubeletServer on a free loopback port stands in front of a fake host; the API server
is the in-process one of conftest (memory storage, fake clock).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.api.types import core_v1, from_dict
from kubeplane.apiserver.handlers.podlog import (LogOptions, kubelet_error, kubelet_port, log_location,
                                                 preferred_node_address, validate_container)
from kubeplane.apiserver.request import Request
from kubeplane.kubelet.server import KubeletServer
from kubeplane.utils.clock import FakeClock, rfc3339

API = Any                     # conftest's API fixture (conftest is not imported, as elsewhere)
START = 1_700_000_000.0
TOKEN = "admin-token"
LOG = "/api/v1/namespaces/default/pods/web/log"


@dataclass
class FakeHost:
    pods: dict[str, Any] = field(default_factory=dict)
    clock: FakeClock = field(default_factory=lambda: FakeClock(START))
    gate: asyncio.Event | None = None            # follow: the second line waits for it
    calls: list[LogOptions] = field(default_factory=list)
    closed: int = 0

    def container_logs(self, namespace: str, pod: str, uid: str, opts: LogOptions) -> AsyncIterator[bytes]:
        self.calls.append(opts)
        if opts.previous:
            raise errors.BadRequest(f'previous terminated container "{opts.container}" in pod "{pod}" not found')
        return self._stream(opts.follow)

    async def _stream(self, follow: bool) -> AsyncIterator[bytes]:
        try:
            yield b"line 1\n"
            if follow and self.gate is not None:
                await self.gate.wait()
            yield b"line 2\n"
        finally:
            self.closed += 1


def pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]}}


def node(name: str, port: int, addresses: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    addrs = addresses if addresses is not None else [("InternalIP", "127.0.0.1"), ("Hostname", name)]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"addresses": [{"type": t, "address": a} for t, a in addrs],
                       "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}}


@pytest.fixture
async def kubelet(api: API) -> AsyncIterator[tuple[FakeHost, KubeletServer]]:
    """A kubelet server for node-0 holding pod default/web, and both objects in storage."""
    host = FakeHost()
    server = KubeletServer(host, token=TOKEN, port=0)
    await server.start()
    api.server.tokens = {TOKEN: "kubeplane-admin"}
    try:
        assert (await api.create("/api/v1/nodes", node("node-0", server.port))).status == 201
        r = await api.create("/api/v1/namespaces/default/pods", pod("web", node="node-0"))
        assert r.status == 201
        host.pods[r.json["metadata"]["uid"]] = from_dict(r.json, core_v1.Pod)
        yield host, server
    finally:
        await server.stop()


async def test_logs_are_proxied_with_the_options(api: API, kubelet: Any) -> None:
    host, _ = kubelet
    r = await api.get(LOG, {"tailLines": "2", "timestamps": "true", "limitBytes": "99", "sinceSeconds": "5"})
    assert (r.status, r.body, r.content_type) == (200, b"line 1\nline 2\n", "text/plain")
    assert host.calls == [LogOptions("c", tail_lines=2, limit_bytes=99, timestamps=True, since_seconds=5)]


async def test_kubelet_errors_pass_through_with_their_code(api: API, kubelet: Any) -> None:
    r = await api.get(LOG, {"previous": "true"})
    assert (r.status, r.json["reason"], r.json["message"]) == (
        400, "BadRequest", 'previous terminated container "c" in pod "web" not found')


async def test_follow_streams_and_closing_it_stops_the_kubelet_stream(api: API, kubelet: Any) -> None:
    host, _ = kubelet
    host.gate = asyncio.Event()
    resp = await api.server.route_trusted(Request.build("GET", LOG, "follow=true"))
    assert resp.status == 200 and not isinstance(resp.body, bytes)
    it = resp.body.__aiter__()
    assert await asyncio.wait_for(it.__anext__(), 5) == b"line 1\n"
    await it.aclose()                                   # what the HTTP front end does when kubectl goes
    end = asyncio.get_running_loop().time() + 5
    while host.closed == 0 and asyncio.get_running_loop().time() < end:
        await asyncio.sleep(0.01)
    assert host.closed == 1 and host.calls[0].follow


async def test_follow_ends_when_the_kubelet_stream_ends(api: API, kubelet: Any) -> None:
    resp = await api.server.route_trusted(Request.build("GET", LOG, "follow=true"))
    assert b"".join([c async for c in resp.body]) == b"line 1\nline 2\n"    # type: ignore[union-attr]


async def test_a_token_the_kubelet_does_not_know_gets_its_401(api: API, kubelet: Any) -> None:
    api.server.tokens = {"another-token": "someone"}
    r = await api.get(LOG)
    assert (r.status, r.json["reason"]) == (401, "Unauthorized")


async def test_unknown_node_is_not_found(api: API) -> None:
    assert (await api.create("/api/v1/namespaces/default/pods", pod("web", node="ghost"))).status == 201
    r = await api.get(LOG)
    assert (r.status, r.json["message"]) == (404, 'nodes "ghost" not found')


async def test_nobody_listening_is_an_internal_error_naming_the_url(api: API) -> None:
    server = KubeletServer(None, token=TOKEN, port=0)     # take a free port, then free it
    port = await server.start()
    await server.stop()
    await api.create("/api/v1/nodes", node("node-1", port))
    await api.create("/api/v1/namespaces/default/pods", pod("web", node="node-1"))
    r = await api.get(LOG)
    assert r.status == 500 and r.json["reason"] == "InternalError"
    assert r.json["message"].startswith(f'Get "https://127.0.0.1:{port}/containerLogs/default/web/c": dial tcp ')
    assert "refused" in r.json["message"]


async def test_the_in_process_registry_still_wins(api: API, kubelet: Any) -> None:
    host, _ = kubelet

    class Conn:
        def container_logs(self, namespace: str, pod: str, uid: str, opts: LogOptions) -> AsyncIterator[bytes]:
            async def gen() -> AsyncIterator[bytes]:
                yield b"from the registry\n"
            return gen()
    api.server.nodes["node-0"] = Conn()                  # type: ignore[assignment]
    r = await api.get(LOG)
    assert r.body == b"from the registry\n" and host.calls == []


async def test_in_process_kubelet_gets_since_time_as_seconds_before_now(api: API, kubelet: Any) -> None:
    """What a kubelet does with sinceTime (kubelet/server.log_options), on the in-process path
    too: 10:00:00 asked at 10:00:30 is the last 30 seconds."""
    host, _ = kubelet
    api.server.nodes["node-0"] = host                       # type: ignore[assignment]
    since = api.clock.now() - 30
    r = await api.get(LOG, {"sinceTime": rfc3339(since)})
    assert r.status == 200 and host.calls == [LogOptions("c", since_seconds=30.0)]    # type: ignore[arg-type]


@pytest.mark.parametrize("query, status, message", [
    ({"tailLines": "-1"}, 422,
     'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'),
    ({"limitBytes": "0"}, 422, 'PodLogOptions "web" is invalid: limitBytes: Invalid value: 0: must be greater than 0'),
    ({"sinceSeconds": "0"}, 422,
     'PodLogOptions "web" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0'),
    ({"sinceSeconds": "5", "sinceTime": "2024-05-01T10:00:00Z"}, 422,
     'PodLogOptions "web" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified'),
    ({"sinceTime": "yesterday"}, 400, None),
])
@pytest.mark.parametrize("in_process", [True, False], ids=["in-process kubelet", "proxied"])
async def test_bad_log_options_are_refused_before_any_kubelet_is_asked(
        api: API, kubelet: Any, in_process: bool, query: dict[str, str], status: int, message: str | None) -> None:
    """Upstream: LogREST.Get validates PodLogOptions (ValidatePodLogOptions) first."""
    host, _ = kubelet
    if in_process:
        api.server.nodes["node-0"] = host                   # type: ignore[assignment]
    r = await api.get(LOG, query)
    assert r.status == status and host.calls == []
    if message is not None:
        assert r.json["message"] == message and r.json["details"]["kind"] == "PodLogOptions"


async def test_a_pod_not_yet_scheduled_has_an_empty_log(api: API) -> None:
    """Upstream: LogLocation returns no location without a node, and StreamObject answers the
    null stream 204 No Content: `kubectl logs` of a Pending pod prints nothing (issue #44190)."""
    p = pod("web", node="")
    del p["spec"]["nodeName"]
    assert (await api.create("/api/v1/namespaces/default/pods", p)).status == 201
    r = await api.get(LOG)
    assert (r.status, r.body) == (204, b"")
    r = await api.get(LOG, {"container": "nope"})           # the container is checked first
    assert (r.status, r.json["message"]) == (400, "container nope is not valid for pod web")


async def test_an_ephemeral_containers_log_is_asked_of_the_kubelet(api: API, kubelet: Any) -> None:
    """`kubectl logs web -c debugger-x` after `kubectl debug`: ephemeral containers are valid
    pods/log targets. Upstream: podHasContainerWithName (AllFeatureEnabledContainers)"""
    host, _ = kubelet
    r = await api.get("/api/v1/namespaces/default/pods/web")
    body = r.json
    body["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox"}]
    r = await api.call("PUT", "/api/v1/namespaces/default/pods/web/ephemeralcontainers", body=body)
    assert r.status == 200, r.json
    host.pods[r.json["metadata"]["uid"]] = from_dict(r.json, core_v1.Pod)     # what the kubelet now sees
    r = await api.get(LOG, {"container": "debugger"})
    assert (r.status, r.body) == (200, b"line 1\nline 2\n")
    assert [c.container for c in host.calls] == ["debugger"]


# --- the pieces ------------------------------------------------------------------------------


@pytest.mark.parametrize(("addresses", "labels", "expected"), [
    ([("Hostname", "n"), ("InternalIP", "10.0.0.1")], {}, "10.0.0.1"),         # InternalIP first, for us
    ([("ExternalIP", "1.2.3.4"), ("Hostname", "n")], {}, "n"),                 # then upstream's order
    ([("ExternalIP", "1.2.3.4"), ("ExternalDNS", "n.example")], {}, "n.example"),
    ([("ExternalIP", "1.2.3.4")], {"kubernetes.io/hostname": "h"}, "h"),        # the hostname label
    ([("ExternalIP", "1.2.3.4")], {}, "1.2.3.4"),
])
def test_preferred_node_address(addresses: list[tuple[str, str]], labels: dict[str, str], expected: str) -> None:
    n = node("n", 1, addresses)
    n["metadata"]["labels"] = labels
    assert preferred_node_address(n) == expected


def test_no_address_at_all_is_upstreams_no_match_error() -> None:
    with pytest.raises(errors.StatusError, match=r"no preferred addresses found; known addresses: \[\]") as e:
        preferred_node_address(node("n", 1, []))
    assert e.value.code == 503          # upstream's text; not a 500: the server is fine (the fuzz test)


def test_kubelet_port_defaults_to_10250() -> None:
    assert kubelet_port(node("n", 4321)) == 4321
    assert kubelet_port({"status": {}}) == 10250
    assert kubelet_port(node("n", 0)) == 10250


def test_log_location() -> None:
    n = node("n", 41234)
    assert log_location(n, "default", "web", LogOptions("c", follow=True, tail_lines=10)) == \
        "https://127.0.0.1:41234/containerLogs/default/web/c?follow=true&tailLines=10"
    assert log_location(n, "default", "web", LogOptions("c"), "2024-05-01T10:00:00Z") == \
        "https://127.0.0.1:41234/containerLogs/default/web/c?sinceTime=2024-05-01T10%3A00%3A00Z"
    v6 = node("n", 10250, [("InternalIP", "fd00::1")])
    assert log_location(v6, "ns", "p", LogOptions("c")) == "https://[fd00::1]:10250/containerLogs/ns/p/c"


@pytest.mark.parametrize(("code", "body", "reason", "message"), [
    (404, orjson.dumps({"kind": "Status", "code": 404, "reason": "NotFound", "message": 'pod "x" does not exist'}),
     "NotFound", 'pod "x" does not exist'),                                   # a Status passes through
    (400, b"container is waiting", "BadRequest", "container is waiting"),     # plain text, as upstream wraps it
    (500, b"boom", "InternalError", "Internal error occurred: boom"),
    (403, b"Forbidden (user=x)", "Forbidden", "Forbidden (user=x)"),
    (502, b"", "", "the server responded with the status code 502 but did not return more information"),
])
def test_kubelet_error(code: int, body: bytes, reason: str, message: str) -> None:
    r = kubelet_error(code, body)
    st = orjson.loads(r.body)                              # type: ignore[arg-type]
    assert (r.status, st.get("reason", ""), st["message"]) == (code, reason, message)


def _pod(containers: list[str], init: tuple[str, ...] = (), ephemeral: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"metadata": {"name": "test"}, "spec": {
        "containers": [{"name": n} for n in containers], "initContainers": [{"name": n} for n in init],
        "ephemeralContainers": [{"name": n} for n in ephemeral]}}


# Upstream: TestCheckLogLocation (pkg/registry/core/pod/strategy_test.go), container cases.
@pytest.mark.parametrize(("p", "requested", "expected"), [
    (_pod(["mycontainer"]), "", "mycontainer"),                                           # simple
    (_pod([]), "", "a container name must be specified for pod test"),                    # missing container
    (_pod(["container1", "container2"]), "",                                              # choice of two
     "a container name must be specified for pod test, choose one of: [container1 container2]"),
    (_pod(["container1", "container2"], init=("initcontainer1",)), "",                     # initcontainers
     "a container name must be specified for pod test, choose one of: [initcontainer1 container1 container2]"),
    (_pod(["container1", "container2"], init=("initcontainer1",), ephemeral=("debugger",)), "",
     "a container name must be specified for pod test, choose one of: "
     "[initcontainer1 container1 container2 debugger]"),
    (_pod(["container1", "container2"]), "unknown", "container unknown is not valid for pod test"),  # bad container
    (_pod(["container1", "container2"]), "container2", "container2"),                     # good with two
    (_pod(["c"], init=("i",), ephemeral=("debugger",)), "debugger", "debugger"),
    (_pod(["c"], init=("i",), ephemeral=("debugger",)), "i", "i"),
])
def test_validate_container(p: dict[str, Any], requested: str, expected: str) -> None:
    try:
        got = validate_container(p, "test", requested)
    except errors.StatusError as e:
        assert (e.code, e.status()["message"]) == (400, expected)
    else:
        assert got == expected
