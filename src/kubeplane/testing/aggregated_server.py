"""A tiny aggregated API server for tests: aiohttp over HTTPS on a free port of this host's routable address, with its
own CA, serving a custom.metrics.k8s.io/v1beta2 pods metric (or whatever routes a test adds),
trusting only the front proxy (a client certificate signed by the requestheader CA, CN in the
allowed names), and recording what reached it.

    adapter = AggregatedServer(service="custom-metrics", namespace="default",
                               requestheader_ca=front_proxy_ca_pem)
    adapter.pod_metrics["requests_per_second"] = {"web-1": "250m"}
    port = await adapter.start()
    ...  # an APIService with caBundle=adapter.ca_bundle, a selectorless Service, an EndpointSlice
    await adapter.stop()

Upstream's shape: the custom metrics API (k8s.io/metrics pkg/apis/custom_metrics/v1beta2:
MetricValueList, MetricValue with describedObject, metric{name, selector}, timestamp,
windowSeconds, value) and delegated requestheader authentication (apiserver pkg/authentication/
request/headerrequest).
"""
from __future__ import annotations

import base64
import datetime as dt
import socket
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ..utils.pki import _builder, serving_cert

GROUP, VERSION = "custom.metrics.k8s.io", "v1beta2"
EXTERNAL, EXTERNAL_VERSION = "external.metrics.k8s.io", "v1beta1"
# A sample-apiserver-like group with one listable kind, for kubectl get / api-resources / explain.
WARDLE, WARDLE_VERSION = "wardle.example.com", "v1alpha1"


def routable_address() -> str:
    """This host's address on its default route: an EndpointSlice may not point at loopback
    (upstream's validation refuses 127.0.0.0/8 and ::1), so the adapter listens here. A UDP
    connect sends nothing; it only picks the source address."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))
            return str(s.getsockname()[0])
        except OSError:
            return socket.gethostbyname(socket.gethostname())


@dataclass
class Seen:
    """One request as the adapter saw it."""
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, list[str]]
    client_cn: str


@dataclass
class AggregatedServer:
    service: str = "custom-metrics"
    namespace: str = "default"
    requestheader_ca: bytes | None = None            # None: no client certificate required
    allowed_names: tuple[str, ...] = ("front-proxy-client",)
    pod_metrics: dict[str, dict[str, str]] = field(default_factory=dict)   # metric -> pod -> quantity
    # metric -> [(labels, quantity)]: the series of an external metric
    external_metrics: dict[str, list[tuple[dict[str, str], str]]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    routes: dict[str, Any] = field(default_factory=dict)   # path -> async handler(request), tried first
    flunders: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)   # (namespace, name) -> object
    ca_pem: bytes = b""
    port: int = 0
    host: str = field(default_factory=routable_address)
    _runner: web.AppRunner | None = None
    _tmp: Any = None

    @property
    def ca_bundle(self) -> str:
        """spec.caBundle of the APIService (base64 of the CA's PEM)."""
        return base64.b64encode(self.ca_pem).decode()

    def tls(self) -> ssl.SSLContext:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = (_builder("aggregated-test-ca", None, ca_key.public_key())
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
              .sign(ca_key, hashes.SHA256()))
        self.ca_pem = ca.public_bytes(serialization.Encoding.PEM)
        cert, key = serving_cert(self.service,
                                 [f"{self.service}.{self.namespace}.svc", self.host], ca, ca_key)
        self._tmp = tempfile.TemporaryDirectory()
        d = Path(self._tmp.name)
        (d / "tls.crt").write_bytes(cert)
        (d / "tls.key").write_bytes(key)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(d / "tls.crt", d / "tls.key")
        if self.requestheader_ca is not None:
            ctx.load_verify_locations(cadata=self.requestheader_ca.decode())
            ctx.verify_mode = ssl.CERT_OPTIONAL
        return ctx

    async def start(self, port: int = 0) -> int:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, port, ssl_context=self.tls())
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]          # type: ignore[attr-defined]
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _client_cn(self, request: web.Request) -> str:
        ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return ""
        cert = x509.load_der_x509_certificate(der)
        names = cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)
        return str(names[0].value) if names else ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        cn = self._client_cn(request)
        headers: dict[str, list[str]] = {}
        for k, v in request.headers.items():
            headers.setdefault(k.lower(), []).append(v)
        self.seen.append(Seen(request.method, request.path, dict(request.query), headers, cn))
        if self.requestheader_ca is not None and cn not in self.allowed_names:
            return _json(401, status(401, "Unauthorized", "Unauthorized"))
        if (route := self.routes.get(request.path)) is not None:
            return await route(request)
        parts = [p for p in request.path.split("/") if p]
        if parts == ["apis", GROUP, VERSION]:
            return _json(200, resource_list())
        # /apis/custom.metrics.k8s.io/v1beta2/namespaces/<ns>/pods/<name or *>/<metric>
        if len(parts) == 8 and parts[:4] == ["apis", GROUP, VERSION, "namespaces"] and parts[5] == "pods":
            return self.pods_metric(parts[4], parts[6], parts[7])
        if parts == ["apis", EXTERNAL, EXTERNAL_VERSION]:
            return _json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                               "groupVersion": f"{EXTERNAL}/{EXTERNAL_VERSION}", "resources": []})
        if len(parts) == 6 and parts[:4] == ["apis", EXTERNAL, EXTERNAL_VERSION, "namespaces"]:
            return self.external_metric(parts[5], request.query.get("labelSelector", ""))
        if parts[:3] == ["apis", WARDLE, WARDLE_VERSION]:
            return self.wardle(parts[3:])
        if parts == ["openapi", "v3"]:
            return _json(200, {"paths": {f"apis/{WARDLE}/{WARDLE_VERSION}": {
                "serverRelativeURL": f"/openapi/v3/apis/{WARDLE}/{WARDLE_VERSION}?hash=0"}}})
        if parts == ["openapi", "v3", "apis", WARDLE, WARDLE_VERSION]:
            return _json(200, wardle_openapi())
        return _json(404, status(404, "NotFound", "the server could not find the requested resource"))

    def pods_metric(self, namespace: str, name: str, metric: str) -> web.Response:
        values = self.pod_metrics.get(metric)
        if values is None:
            return _json(404, status(404, "NotFound", f'the server could not find the metric {metric} for pods'))
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        items = [{"describedObject": {"kind": "Pod", "namespace": namespace, "name": pod, "apiVersion": "/v1"},
                  "metric": {"name": metric, "selector": None}, "timestamp": now, "windowSeconds": 60, "value": v}
                 for pod, v in sorted(values.items()) if name in ("*", pod)]
        return _json(200, {"kind": "MetricValueList", "apiVersion": f"{GROUP}/{VERSION}", "metadata": {},
                           "items": items})


    def external_metric(self, metric: str, selector: str) -> web.Response:
        """An ExternalMetricValueList of the series whose labels match `k=v,...` (equality only)."""
        series = self.external_metrics.get(metric)
        if series is None:
            return _json(404, status(404, "NotFound", f"the server could not find the metric {metric}"))
        wanted = dict(term.split("=", 1) for term in selector.split(",") if "=" in term)
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        items = [{"metricName": metric, "metricLabels": labels, "timestamp": now, "value": value}
                 for labels, value in series if all(labels.get(k) == v for k, v in wanted.items())]
        return _json(200, {"kind": "ExternalMetricValueList", "apiVersion": f"{EXTERNAL}/{EXTERNAL_VERSION}",
                           "metadata": {}, "items": items})

    def wardle(self, rest: list[str]) -> web.Response:
        """/apis/wardle.example.com/v1alpha1[/namespaces/<ns>]/flunders[/<name>]"""
        if not rest:
            return _json(200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{WARDLE}/{WARDLE_VERSION}",
                               "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": True,
                                              "kind": "Flunder", "verbs": ["get", "list"], "shortNames": ["fl"]}]})
        ns = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        if rest[0] != "flunders" or len(rest) > 2:
            return _json(404, status(404, "NotFound", "the server could not find the requested resource"))
        if len(rest) == 2:
            found = self.flunders.get((ns, rest[1]))
            if found is None:
                return _json(404, status(404, "NotFound", f'flunders.{WARDLE} "{rest[1]}" not found'))
            return _json(200, found)
        items = [o for (n, _), o in sorted(self.flunders.items()) if not ns or n == ns]
        return _json(200, {"kind": "FlunderList", "apiVersion": f"{WARDLE}/{WARDLE_VERSION}",
                           "metadata": {"resourceVersion": "1"}, "items": items})


def flunder(namespace: str, name: str, reference: str = "") -> dict[str, Any]:
    return {"apiVersion": f"{WARDLE}/{WARDLE_VERSION}", "kind": "Flunder",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-01-01T00:00:00Z",
                         "resourceVersion": "1", "uid": f"uid-{name}"},
            "spec": {"reference": reference}}


def wardle_openapi() -> dict[str, Any]:
    """The OpenAPI v3 document of wardle.example.com/v1alpha1 (kubectl explain reads it)."""
    string = {"type": "string"}
    gvk = {"group": WARDLE, "kind": "Flunder", "version": WARDLE_VERSION}
    ref = {"200": {"description": "OK", "content": {"application/json": {"schema": {
        "$ref": "#/components/schemas/com.example.wardle.v1alpha1.Flunder"}}}}}
    base = f"/apis/{WARDLE}/{WARDLE_VERSION}/namespaces/{{namespace}}/flunders"
    paths = {f"{base}/{{name}}": {"get": {"x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk,
                                          "responses": ref}}}
    return {"openapi": "3.0.0", "info": {"title": "wardle", "version": WARDLE_VERSION}, "paths": paths,
            "components": {"schemas": {"com.example.wardle.v1alpha1.Flunder": {
                "type": "object", "description": "Flunder is an example type of the sample API server.",
                "properties": {"apiVersion": {**string, "description": "APIVersion of the object."},
                               "kind": {**string, "description": "Kind of the object."},
                               "metadata": {"type": "object", "description": "Standard object's metadata."},
                               "spec": {"type": "object", "description": "Spec of the flunder.",
                                        "properties": {"reference": {**string, "description":
                                                                     "Reference names another flunder."}}}},
                "x-kubernetes-group-version-kind": [{"group": WARDLE, "kind": "Flunder", "version": WARDLE_VERSION}]}}}}


def resource_list() -> dict[str, Any]:
    """What custom-metrics adapters answer for /apis/custom.metrics.k8s.io/v1beta2."""
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}",
            "resources": [{"name": "pods/requests_per_second", "singularName": "", "namespaced": True,
                           "kind": "MetricValueList", "verbs": ["get"]}]}


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


def _json(code: int, body: Any) -> web.Response:
    return web.Response(status=code, body=orjson.dumps(body), content_type="application/json")


def self_signed_ca() -> tuple[bytes, ec.EllipticCurvePrivateKey]:
    """A throwaway CA (PEM, key)."""
    key = ec.generate_private_key(ec.SECP256R1())
    ca = (_builder("throwaway-ca", None, key.public_key())
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return ca.public_bytes(serialization.Encoding.PEM), key


class InThread:
    """An AggregatedServer on an event loop of its own thread, for synchronous tests (e2e with
    kubectl): start() returns its port, stop() ends it; the server's dicts may be changed from
    the test's thread (each assignment is atomic)."""

    def __init__(self, server: AggregatedServer) -> None:
        import asyncio
        import threading
        self.server = server
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="aggregated-server", daemon=True)
        self._thread.start()

    def _run(self, coro: Any) -> Any:
        import asyncio
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)

    def start(self, port: int = 0) -> int:
        return int(self._run(self.server.start(port)))

    def stop(self) -> None:
        self._run(self.server.stop())

    def close(self) -> None:
        self.stop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
