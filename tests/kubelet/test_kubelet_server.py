"""The kubelet's HTTPS server (/containerLogs) on a free loopback port, first in front of a fake
host that records what it is asked, then in front of a real kubelet started by run_kubelet
with the process runtime, reached through the API server's pods/log. Every test stops what
it started.
"""
from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import aiohttp
import orjson
import pytest
from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from kubeplane.api import errors
from kubeplane.api.types import core_v1, from_dict
from kubeplane.api.podlog import LogOptions
from kubeplane.apiserver.request import Request
from kubeplane.testing.fake import FakeClientset
from kubeplane.kubelet import run_kubelet
from kubeplane.kubelet.server import KubeletServer, kubeconfig_token, log_options, reported_address
from kubeplane.utils.clock import FakeClock, parse_rfc3339

from process_testutil import PY, eventually

TOKEN = "kubelet-token"
NOW = parse_rfc3339("2024-05-01T10:00:30Z")


def pod(name: str = "web", ns: str = "default", uid: str = "uid-1") -> core_v1.Pod:
    return from_dict({"metadata": {"name": name, "namespace": ns, "uid": uid},
                      "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "x"}],
                               "initContainers": [{"name": "init", "image": "x"}]}}, core_v1.Pod)


@dataclass
class FakeHost:
    """Serves `chunks` for every request (waiting on `gate` before the last one when set)."""

    pods: dict[str, Any] = field(default_factory=lambda: {"uid-1": pod()})
    clock: FakeClock = field(default_factory=lambda: FakeClock(NOW))
    chunks: list[bytes] = field(default_factory=lambda: [b"one\n", b"two\n"])
    gate: asyncio.Event | None = None
    fail: errors.StatusError | None = None
    calls: list[tuple[str, str, str, LogOptions]] = field(default_factory=list)
    closed: int = 0

    def container_logs(self, namespace: str, pod: str, uid: str, opts: LogOptions) -> AsyncIterator[bytes]:
        self.calls.append((namespace, pod, uid, opts))
        if self.fail is not None:
            raise self.fail
        return self._stream()

    async def _stream(self) -> AsyncIterator[bytes]:
        try:
            for i, chunk in enumerate(self.chunks):
                if self.gate is not None and i == len(self.chunks) - 1:
                    await self.gate.wait()
                yield chunk
        finally:
            self.closed += 1


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeHost, KubeletServer, aiohttp.ClientSession]]:
    host = FakeHost()
    server = KubeletServer(host, token=TOKEN, port=0)
    await server.start()
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False),
                                    headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        yield host, server, session
    finally:
        await session.close()
        await server.stop()


def url(server: KubeletServer, path: str = "default/web/c") -> str:
    return f"https://127.0.0.1:{server.port}/containerLogs/{path}"


async def test_streams_the_log_with_the_options_of_the_query(served: Any) -> None:
    host, server, session = served
    q = {"follow": "true", "previous": "true", "timestamps": "true", "tailLines": "5", "limitBytes": "100",
         "sinceSeconds": "60"}
    async with session.get(url(server), params=q) as r:
        assert (r.status, await r.read(), r.headers["Content-Type"]) == (200, b"one\ntwo\n", "text/plain")
        assert r.headers["Transfer-Encoding"] == "chunked"
    assert host.calls == [("default", "web", "uid-1", LogOptions("c", True, True, 5, 100, True, 60))]
    assert host.closed == 1


async def test_follow_sends_each_chunk_as_it_comes_and_stops_when_the_client_goes(served: Any) -> None:
    host, server, session = served
    host.gate = asyncio.Event()                    # "two" never comes until the gate opens
    async with session.get(url(server), params={"follow": "true"}) as r:
        assert r.status == 200
        assert await asyncio.wait_for(r.content.readline(), 5) == b"one\n"
    # The client left while the host still waited: the server stops reading the log.
    await eventually(lambda: host.closed == 1, what="the host's log stream closed")


@pytest.mark.parametrize("auth", [None, "Bearer wrong", f"Basic {TOKEN}", "Bearer "])
async def test_requests_without_the_kubeconfig_token_get_401(served: Any, auth: str | None) -> None:
    host, server, session = served
    headers = {"Authorization": auth} if auth is not None else {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as anon:
        async with anon.get(url(server), headers=headers) as r:
            assert r.status == 401
            assert (await r.json())["reason"] == "Unauthorized"
    assert host.calls == []


async def test_metrics_are_served_in_the_text_format_probes_apart(served: Any) -> None:
    host, server, session = served
    base = f"https://127.0.0.1:{server.port}"
    async with session.get(f"{base}/metrics") as r:
        assert (r.status, r.headers["Content-Type"]) == (200, "text/plain; version=0.0.4; charset=utf-8")
        names = {f.name for f in text_string_to_metric_families(await r.text())}
    assert "process_cpu_seconds" in names or "python_gc_objects_collected" in names    # the process registry
    async with session.get(f"{base}/metrics/probes") as r:
        assert r.status == 200
        assert all(f.name.startswith("prober_probe") for f in text_string_to_metric_families(await r.text()))


@pytest.mark.parametrize(("path", "code", "body"), [
    ("/healthz", 200, "ok"),
    ("/healthz?verbose", 200, "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n"),
    ("/healthz/syncloop", 200, "ok"),
    ("/healthz?exclude=log&verbose=1", 200, "[+]ping ok\n[+]log excluded: ok\n[+]syncloop ok\nhealthz check passed\n"),
])
async def test_healthz_answers_as_upstreams_kubelet(served: Any, path: str, code: int, body: str) -> None:
    host, server, session = served
    async with session.get(f"https://127.0.0.1:{server.port}{path}") as r:
        assert (r.status, await r.text(), r.headers["Content-Type"]) == (code, body, "text/plain; charset=utf-8")
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    async with session.get(f"https://127.0.0.1:{server.port}/healthz/nope") as r:
        assert r.status == 404


@pytest.mark.parametrize("path", ["/metrics", "/metrics/probes", "/healthz", "/healthz/ping"])
async def test_metrics_and_healthz_need_the_token_too(served: Any, path: str) -> None:
    host, server, session = served
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as anon:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            async with anon.get(f"https://127.0.0.1:{server.port}{path}", headers=headers) as r:
                assert r.status == 401
                assert (await r.json())["reason"] == "Unauthorized"


async def test_a_kubelet_without_a_token_lets_nobody_in() -> None:
    server = KubeletServer(FakeHost(), token="", port=0)
    await server.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as s:
            for headers in ({}, {"Authorization": "Bearer "}):
                async with s.get(url(server), headers=headers) as r:
                    assert r.status == 401
    finally:
        await server.stop()


@pytest.mark.parametrize(("path", "query", "fail", "code", "reason", "message"), [
    ("default/other/c", {}, None, 404, "NotFound", 'pod "other" does not exist'),
    ("kube-system/web/c", {}, None, 404, "NotFound", 'pod "web" does not exist'),
    ("default/web/nope", {}, None, 404, "NotFound", 'container "nope" not found in pod "web"'),
    ("default/web/c", {"previous": "true"},
     errors.BadRequest('previous terminated container "c" in pod "web" not found'),
     400, "BadRequest", 'previous terminated container "c" in pod "web" not found'),
    ("default/web/c", {"tailLines": "x"}, None, 400, "BadRequest", "Unable to decode query."),
    ("default/web/c", {"tailLines": "-1"}, None, 422, "Invalid", "Invalid request."),
    ("default/web/c", {"limitBytes": "0"}, None, 422, "Invalid", "Invalid request."),
    ("default/web/c", {"sinceSeconds": "0"}, None, 422, "Invalid", "Invalid request."),
    ("default/web/c", {"sinceSeconds": "5", "sinceTime": "2024-05-01T10:00:00Z"}, None, 422, "Invalid",
     "Invalid request."),
])
async def test_errors_are_status_bodies_with_upstreams_codes(served: Any, path: str, query: dict[str, str],
                                                            fail: Any, code: int, reason: str, message: str) -> None:
    host, server, session = served
    host.fail = fail
    async with session.get(url(server, path), params=query) as r:
        body = await r.json()
    assert (r.status, body["kind"], body["code"], body["reason"], body["message"]) == (
        code, "Status", code, reason, message)


async def test_init_container_logs_are_served(served: Any) -> None:
    host, server, session = served
    async with session.get(url(server, "default/web/init")) as r:
        assert r.status == 200
    assert host.calls[0][3].container == "init"


@pytest.mark.parametrize(("query", "expected"), [
    ({}, LogOptions("c")),
    ({"follow": "1", "timestamps": "false"}, LogOptions("c", follow=True)),
    ({"tail": "7"}, LogOptions("c", tail_lines=7)),                  # the old name for tailLines
    ({"tail": "all", "tailLines": "3"}, LogOptions("c")),              # "all" drops tailLines
    ({"sinceTime": "2024-05-01T10:00:00Z"}, LogOptions("c", since_seconds=30)),   # now is 10:00:30
    ({"sinceTime": "2024-05-01T11:00:00Z"}, LogOptions("c", since_seconds=0)),    # the future: from now
])
def test_log_options_table(query: dict[str, str], expected: LogOptions) -> None:
    assert log_options(query, "c", NOW) == expected


async def test_serves_tls_with_a_self_signed_certificate_for_its_address(served: Any) -> None:
    _, server, _ = served
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=ctx)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    cert = x509.load_der_x509_certificate(der)
    assert cert.issuer == cert.subject                       # self-signed
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    strict = ssl.create_default_context()                    # nobody's CA signed it
    with pytest.raises(ssl.SSLCertVerificationError):
        await asyncio.open_connection("127.0.0.1", server.port, ssl=strict)


async def test_port_zero_picks_a_free_port_and_a_taken_port_fails_at_start() -> None:
    a = KubeletServer(FakeHost(), token=TOKEN, port=0)
    port = await a.start()
    try:
        assert port > 0 and a.port == port
        with pytest.raises(OSError):
            await KubeletServer(FakeHost(), token=TOKEN, port=port).start()
    finally:
        await a.stop()


def test_kubeconfig_token_is_the_current_users(tmp_path: Any) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("""
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: other, user: {token: nope}}, {name: admin, user: {token: s3cret}}]
contexts: [{name: a, context: {cluster: c, user: other}}, {name: b, context: {cluster: c, user: admin}}]
current-context: b
""")
    assert kubeconfig_token(path) == "s3cret"
    path.write_text("apiVersion: v1\nkind: Config\nusers: [{name: u, user: {}}]\n"
                    "contexts: [{name: a, context: {user: u}}]\n")
    assert kubeconfig_token(path) == ""


def test_reported_address() -> None:
    assert reported_address("127.0.0.1") == "127.0.0.1"
    assert reported_address("10.1.2.3") == "10.1.2.3"
    wildcard = reported_address("0.0.0.0")
    assert wildcard != "0.0.0.0" and wildcard.count(".") == 3


# --- a real kubelet behind the server, reached through the API server -------------------------


async def test_run_kubelet_serves_its_pods_logs_through_the_api_server(tmp_path: Any) -> None:
    """run_kubelet with a server: the node reports 127.0.0.1 and the bound port, and pods/log
    (no in-process registry) is proxied to the server, which reads the real process's output."""
    cs = await FakeClientset.new()
    cs.api.tokens = {TOKEN: "admin"}               # the API server presents this token to the kubelet
    server = KubeletServer(None, token=TOKEN, port=0)
    task = asyncio.ensure_future(run_kubelet(cs, nodes=1, runtime="process", node_prefix="node-",
                                             data_dir=tmp_path, server=server))
    try:
        node = await eventually(lambda: _node(cs), what="node registered")
        assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]
        assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == server.port > 0
        await cs.core_v1().pods("default").create(from_dict({
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {"nodeName": "node-0", "restartPolicy": "Never", "containers": [
                {"name": "c", "image": "python:3", "command": [PY, "-c", "print('hello'); print('world')"]}]}},
            core_v1.Pod))

        async def logs() -> Any:
            r = await cs.api.route_trusted(Request.build("GET", "/api/v1/namespaces/default/pods/hello/log"))
            return r.body if r.status == 200 and r.body == b"hello\nworld\n" else None
        assert await eventually(logs, timeout=10, what="the pod's output through pods/log") == b"hello\nworld\n"
        assert cs.api.nodes == {}                  # it came over HTTPS, not the registry
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    with pytest.raises(OSError):                   # the server stopped with the kubelet
        await asyncio.open_connection("127.0.0.1", server.port)


async def _node(cs: FakeClientset) -> Any:
    r = await cs.api.route_trusted(Request.build("GET", "/api/v1/nodes/node-0"))
    return orjson.loads(r.body) if r.status == 200 else None
