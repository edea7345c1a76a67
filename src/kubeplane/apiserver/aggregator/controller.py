"""The aggregator inside the API server: which group-versions are proxied, to where, whether
they are available, and what their discovery documents say.

It keeps the APIServices, Services and EndpointSlices in memory (listed, then watched straight
from storage, as the CRD controller does: it lives in the server), and from them:
- `backends`: (group, version) -> Backend for every APIService with spec.service (the proxy's
  routing table; the built-in v1beta1.metrics.k8s.io, served by kubeplane itself, is local);
- the availability controller: each such APIService is checked (available.py) when it, its
  Service or its EndpointSlices change, every RESYNC seconds (upstream's 30 s resync, which
  also refreshes the discovery documents), after a failure with back-off (5 ms doubling to
  30 s, upstream's rate limiter), and, kubeplane's addition, as soon as a proxied request finds
  its backend unreachable;
- `discovery`: the APIResourceList each available backend answered to the check, for the
  merged discovery documents (discovery.py).

Upstream: kube-aggregator pkg/apiserver/apiservice_controller.go + apiserver.go (the proxy
handlers per APIService), pkg/controllers/status/remote (availability), the aggregated
discovery manager (pkg/apiserver/handler_discovery.go).
"""
from __future__ import annotations

import asyncio
import copy
import functools
import logging
from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors
from ...storage.interface import Compacted
from ..authentication.user import APISERVER
from ..filters.longrunning import is_long_running
from ..registry import store
from ..registry.apiregistration.apiservice import API_SERVICES
from ..request import Request, RequestInfo, Response
from .. import discovery as local_discovery
from . import metrics as availability_metrics, proxy as proxying, upgrade
from .discovery import Documents
from .available import available_condition, is_available, set_condition
from .proxy import Backend, build_tls, plain
from .resolver import SERVICE_NAME_LABEL, ResolveError, host_port, resolve_endpoint

if TYPE_CHECKING:
    import aiohttp
    from ..server import APIServer

log = logging.getLogger(__name__)

RESYNC = 30.0                      # seconds; upstream's APIService informer resync
WORKERS = 5                        # upstream: the availability controller's workers
BACKOFF_BASE, BACKOFF_MAX = 0.005, 30.0
CHECK_TIMEOUT = 5.0                # upstream's discovery client Timeout
MAX_DISCOVERY_BYTES = 10 << 20     # a backend's discovery document is read up to this
AGGREGATOR_USER, AGGREGATOR_GROUPS = "system:kube-aggregator", ("system:masters",)
WATCHED = {"apiservices": API_SERVICES.prefix, "services": "/registry/services/",
           "endpointslices": "/registry/endpointslices/"}
Obj = dict[str, Any]


def is_builtin_metrics(api_service: Obj) -> bool:
    """v1beta1.metrics.k8s.io as kubeplane registers it (metricsapi): served locally."""
    from ..metricsapi import api_service as builtin
    return (api_service["metadata"]["name"] == builtin()["metadata"]["name"]
            and (api_service.get("spec") or {}).get("service") == builtin()["spec"]["service"])


def is_remote(api_service: Obj) -> bool:
    return bool((api_service.get("spec") or {}).get("service")) and not is_builtin_metrics(api_service)


class Aggregator:
    """State: the watched objects (api_services by name, services and slices by
    (namespace, name)), `backends` derived from api_services, the dirty set of APIService
    names to check. Invariant: backends holds exactly the remote APIServices' group-versions."""

    def __init__(self, api: APIServer, *, proxy_client_cert: str | None = None,
                 proxy_client_key: str | None = None) -> None:
        self.api = api
        self.proxy_client_cert, self.proxy_client_key = proxy_client_cert, proxy_client_key
        self.api_services: dict[str, Obj] = {}
        self.services: dict[tuple[str, str], Obj] = {}
        self.slices: dict[tuple[str, str], Obj] = {}
        # (namespace, service) -> slice name -> slice: a request resolves without scanning them all
        self.service_slices: dict[tuple[str, str], dict[str, Obj]] = {}
        self.backends: dict[tuple[str, str], Backend] = {}
        self.discovery: dict[tuple[str, str], Obj] = {}     # (group, version) -> APIResourceList
        self.openapi: dict[tuple[str, str], tuple[bytes, str]] = {}   # (group, version) -> (OpenAPI v3, hash)
        self.generation = 0                                 # bumped whenever discovery changes
        self._dirty: dict[str, None] = {}
        self._failures: dict[str, int] = {}
        self._syncing: set[str] = set()                     # names being checked now
        self._workers: set[asyncio.Future[None]] = set()
        self._wake = asyncio.Event()
        self._revs: dict[str, int] = {}
        self._session: aiohttp.ClientSession | None = None
        self.documents = Documents()
        self.tunnels: set[asyncio.Future[None]] = set()       # upgraded connections being copied

    # --- serving ----------------------------------------------------------------------------

    def backend_for(self, info: RequestInfo) -> Backend | None:
        """The backend of /apis/<group>/<version>/..., None for a local group-version."""
        parts = info.parts
        if len(parts) < 3 or parts[0] != "apis":
            return None
        return self.backends.get((parts[1], parts[2]))

    def session(self) -> aiohttp.ClientSession:
        import aiohttp                  # loaded when an APIService is proxied, not at start-up
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=None),
                                                  auto_decompress=False)
        return self._session

    async def serve(self, req: Request, info: RequestInfo, backend: Backend) -> Response:
        """Proxy an authorized request. Upstream: proxyHandler.ServeHTTP"""
        if not backend.available:
            return plain(503, "service unavailable")
        if backend.transport_error:
            return plain(500, backend.transport_error)
        try:
            address = self.resolve(backend)
        except ResolveError as e:
            log.error("error resolving %s/%s: %s", backend.namespace, backend.service, e)
            return plain(503, "service unavailable")
        if req.hijack is not None and upgrade.wants_upgrade(req):
            resp = await upgrade.proxy_upgrade(backend, address, req, req.hijack, self.tunnels)
        else:
            resp = await proxying.proxy(self.session(), backend, address, req, info,
                                        self.api.options.request_timeout, is_long_running(info))
        if resp.status == 503 and resp.content_type == proxying.PLAIN_TEXT:
            self.enqueue(backend.name)            # unreachable: re-check it now, not at the resync
        return resp

    def discovery_response(self, req: Request, info: RequestInfo) -> Response | None:
        """/apis and /apis/<group> with the remote group-versions merged in, /openapi/v3 with
        their documents; None for any other path (served locally as before)."""
        if info.is_resource_request:            # the common case: nothing to merge
            return None
        parts = info.parts
        if parts[:2] == ("openapi", "v3"):
            return self.openapi_response(parts[2:])
        if not parts or parts[0] != "apis" or len(parts) > 2:
            return None
        path = "/" + "/".join(parts)
        wants = path == "/apis" and local_discovery.wants_aggregated(req.headers.get("accept", ""))
        body = self.documents.get(self, path, wants)
        if body is None:
            return None
        if wants:
            return Response(200, body, local_discovery.AGGREGATED_CT, [("vary", "Accept")])
        return Response(200, body, headers=[("vary", "Accept")] if path == "/apis" else [])

    def openapi_response(self, rest: tuple[str, ...]) -> Response | None:
        """/openapi/v3 with the remote documents listed, and a remote group-version's document;
        None for the local ones."""
        if not rest:
            from .. import openapi
            index = openapi.openapi_index()
            for (group, version), (_, digest) in sorted(self.openapi.items()):
                index["paths"][f"apis/{group}/{version}"] = {
                    "serverRelativeURL": f"/openapi/v3/apis/{group}/{version}?hash={digest}"}
            return Response(200, orjson.dumps(index))
        if len(rest) == 3 and rest[0] == "apis" and (found := self.openapi.get((rest[1], rest[2]))) is not None:
            return Response(200, found[0], headers=[("etag", f'"{found[1]}"')])
        return None

    def resolve(self, backend: Backend) -> tuple[str, int]:
        ns, name = backend.namespace, backend.service
        return resolve_endpoint(self.services.get((ns, name)), self.slices_of(ns, name), ns, name, backend.port)

    # --- the watched objects ------------------------------------------------------------------

    async def start(self) -> None:
        """List everything and check every remote APIService once."""
        for kind, prefix in WATCHED.items():
            kvs, self._revs[kind] = await self.api.storage.list(prefix)
            for kv in kvs:
                self._observe(kind, kv.obj, False)
        self.rebuild_backends()
        self.enqueue(*(n for n, a in self.api_services.items() if is_remote(a)))

    async def run(self) -> None:
        """Watch, check what changed, resync every RESYNC seconds, until cancelled."""
        watchers = [asyncio.ensure_future(self._watch(kind)) for kind in WATCHED]
        resync = asyncio.ensure_future(self._resync())
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                self._start_workers()
        finally:
            for t in (*watchers, resync, *self.tunnels, *self._workers):
                t.cancel()
            if self._session is not None:
                await self._session.close()

    def _start_workers(self) -> None:
        """Check dirty APIServices, up to WORKERS at once and never one twice at the same time
        (a slow backend, up to 5 s per check, holds back only its own). Upstream: Run's workers
        over the rate-limited queue."""
        for name in list(self._dirty):
            if len(self._syncing) >= WORKERS:
                return
            if name in self._syncing:
                continue                         # stays dirty: checked again when this one ends
            del self._dirty[name]
            self._syncing.add(name)
            worker = asyncio.ensure_future(self._sync_logged(name))
            self._workers.add(worker)
            worker.add_done_callback(functools.partial(self._worker_done, name))

    def _worker_done(self, name: str, worker: asyncio.Future[None]) -> None:
        self._workers.discard(worker)
        self._syncing.discard(name)
        self._wake.set()

    async def _resync(self) -> None:
        while True:
            await self.api.clock.sleep(RESYNC)
            self.enqueue(*(n for n, a in self.api_services.items() if is_remote(a)))

    async def _watch(self, kind: str) -> None:
        prefix = WATCHED[kind]
        while True:
            try:
                async for ev in self.api.storage.watch(prefix, self._revs[kind]):
                    self._revs[kind] = ev.revision
                    self._changed(kind, ev.kv.obj, ev.type == "DELETED")
            except Compacted:
                kvs, self._revs[kind] = await self.api.storage.list(prefix)
                for kv in kvs:
                    self._changed(kind, kv.obj, False)
            await self.api.clock.sleep(1.0)          # the watch ended (storage closing)

    def _observe(self, kind: str, obj: Obj, deleted: bool) -> None:
        meta = obj["metadata"]
        if kind == "apiservices":
            table: dict[Any, Obj] = self.api_services
            key: Any = meta["name"]
        else:
            table = self.services if kind == "services" else self.slices
            key = (meta.get("namespace", ""), meta["name"])
        if kind == "endpointslices":
            self._index_slice(key, obj, deleted)
        if deleted:
            table.pop(key, None)
        else:
            table[key] = obj

    def _index_slice(self, key: tuple[str, str], obj: Obj, deleted: bool) -> None:
        old = self.slices.get(key)
        for o in (old, obj):
            svc = ((o or {}).get("metadata", {}).get("labels") or {}).get(SERVICE_NAME_LABEL) if o else None
            if svc and (mine := self.service_slices.get((key[0], svc))) is not None:
                mine.pop(key[1], None)
                if not mine:
                    del self.service_slices[(key[0], svc)]
        svc = (obj["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL)
        if not deleted and svc:
            self.service_slices.setdefault((key[0], svc), {})[key[1]] = obj

    def slices_of(self, namespace: str, service: str) -> list[Obj]:
        """The EndpointSlices of one service. Upstream: EndpointSliceGetter.GetEndpointSlices"""
        return list(self.service_slices.get((namespace, service), {}).values())

    def _changed(self, kind: str, obj: Obj, deleted: bool) -> None:
        """Record a watch event and enqueue the APIServices it concerns (upstream's handlers)."""
        self._observe(kind, obj, deleted)
        meta = obj["metadata"]
        if kind == "apiservices":
            self.rebuild_backends()
            if is_remote(obj) or deleted:
                self.enqueue(meta["name"])
            return
        ns = meta.get("namespace", "")
        svc = meta["name"] if kind == "services" else (meta.get("labels") or {}).get("kubernetes.io/service-name")
        if svc:
            self.enqueue(*(n for n, a in self.api_services.items() if is_remote(a)
                           and (a["spec"]["service"].get("namespace"), a["spec"]["service"].get("name")) == (ns, svc)))

    def rebuild_backends(self) -> None:
        """The routing table from the APIServices. Upstream: proxyHandler.updateAPIService"""
        backends: dict[tuple[str, str], Backend] = {}
        for name, a in self.api_services.items():
            if not is_remote(a):
                continue
            spec = a["spec"]
            ref = spec["service"]
            old = self.backends.get((spec.get("group", ""), spec.get("version", "")))
            b = Backend(name, ref.get("namespace", ""), ref.get("name", ""), int(ref.get("port") or 443),
                        is_available(a))
            b.tls_key = (spec.get("caBundle"), bool(spec.get("insecureSkipTLSVerify")), b.namespace, b.service)
            if old is not None and old.name == name and old.ssl is not None and old.tls_key == b.tls_key:
                b.ssl = old.ssl
            else:
                try:
                    b.ssl = build_tls(spec, self.proxy_client_cert, self.proxy_client_key)
                except ValueError as e:
                    log.warning("%s", e)
                    b.transport_error = str(e)
            backends[(spec.get("group", ""), spec.get("version", ""))] = b
        gone = {gv for gv in self.discovery if gv not in backends}
        for gv in gone:
            del self.discovery[gv]
        for gv in [gv for gv in self.openapi if gv not in backends]:
            del self.openapi[gv]
        if gone or set(backends) != set(self.backends):
            self.generation += 1
        self.backends = backends

    # --- availability --------------------------------------------------------------------------

    def enqueue(self, *names: str) -> None:
        for n in names:
            self._dirty[n] = None
        if names:
            self._wake.set()

    async def _sync_logged(self, name: str) -> None:
        try:
            ok = await self.sync(name)
        except errors.Conflict:
            self.enqueue(name)                       # a newer APIService is on its way
            return
        except Exception:
            log.exception("Error checking the availability of APIService %s", name)
            ok = False
        if ok:
            self._failures.pop(name, None)
            return
        n = self._failures[name] = self._failures.get(name, 0) + 1
        self.api.clock.after_func(min(BACKOFF_BASE * 2 ** (n - 1), BACKOFF_MAX), self.enqueue, name)

    async def sync(self, name: str) -> bool:
        """Check one APIService and write its Available condition if it changed; False when the
        check failed (retried with back-off). Upstream: AvailableConditionController.sync"""
        original = self.api_services.get(name)
        if original is None:
            availability_metrics.forget(name)
            return True
        if not is_remote(original):
            return True
        ref = original["spec"]["service"]
        ns, svc = ref.get("namespace", ""), ref.get("name", "")
        gv = (original["spec"].get("group", ""), original["spec"].get("version", ""))
        new = copy.deepcopy(original)
        cond = await available_condition(new, self.services.get((ns, svc)), self.slices_of(ns, svc),
                                         lambda: self.discovery_check(gv))
        set_condition(new, cond, self.api.now())
        availability_metrics.set_unavailable_gauge(name, cond["status"] == "True")
        if cond["status"] != "True" and self.discovery.pop(gv, None) is not None:
            self.generation += 1
        if cond["status"] != "True":
            self.openapi.pop(gv, None)
        if self.api_services.get(name) is not original:
            return True                            # changed while checking: the newer one is queued
        if new.get("status") != original.get("status"):
            if (original.get("status") or {}).get("conditions") != new["status"]["conditions"]:
                log.info("changing APIService availability: name=%s newStatus=%s reason=%s message=%s",
                         name, cond["status"], cond["reason"], cond["message"])
            opts = store.WriteOptions(user=APISERVER, field_manager="kube-apiserver")
            stored, _ = await store.update(self.api, opts, API_SERVICES, new, original,
                                           int(original["metadata"]["resourceVersion"]), "status", [])
            availability_metrics.set_unavailable_counter(name, is_available(original), is_available(stored),
                                                         cond["reason"])
            self._changed("apiservices", stored, False)
            self._dirty.pop(name, None)            # our own write: nothing new to check
        return cond["reason"] != "FailedDiscoveryCheck"

    async def discovery_check(self, gv: tuple[str, str]) -> str | None:
        """GET /apis/<group>/<version> on an endpoint as system:kube-aggregator (system:masters);
        keep the answer for discovery. None if it answered 2xx in time, else upstream's error."""
        import aiohttp                  # loaded when an APIService is proxied, not at start-up
        backend = self.backends.get(gv)
        if backend is None:
            return None
        if backend.transport_error:
            return backend.transport_error
        try:
            host, port = self.resolve(backend)
        except ResolveError as e:
            return str(e)
        url = f"https://{host_port(host, port)}/apis/{gv[0]}/{gv[1]}"
        headers = [("X-Remote-User", AGGREGATOR_USER), *(("X-Remote-Group", g) for g in AGGREGATOR_GROUPS),
                   ("Accept", "application/json")]
        try:
            async with self.session().get(url, headers=headers, ssl=backend.ssl or True, server_hostname=backend.server_hostname,
                                          timeout=aiohttp.ClientTimeout(total=CHECK_TIMEOUT),
                                          allow_redirects=False) as resp:
                if not 200 <= resp.status < 300:
                    return f"failing or missing response from {url}: bad status from {url}: {resp.status}"
                body = await resp.content.read(MAX_DISCOVERY_BYTES)
        except asyncio.TimeoutError:
            return (f'failing or missing response from {url}: Get "{url}": context deadline exceeded '
                    "(Client.Timeout exceeded while awaiting headers)")
        except (aiohttp.ClientError, OSError, ValueError) as e:
            return f'failing or missing response from {url}: Get "{url}": {proxying.describe(e)}'
        self._remember_discovery(gv, body)
        await self._fetch_openapi(gv, backend, f"https://{host_port(host, port)}", headers)
        return None

    async def _fetch_openapi(self, gv: tuple[str, str], backend: Backend, base: str,
                             headers: list[tuple[str, str]]) -> None:
        """The backend's OpenAPI v3 document of the group-version (its /openapi/v3 index names
        it), for kubectl explain; a backend without one simply has none. Upstream: the
        openapiv3 aggregator's downloader (pkg/controllers/openapiv3/aggregator/downloader.go)."""
        import aiohttp                  # loaded when an APIService is proxied, not at start-up
        path = f"apis/{gv[0]}/{gv[1]}"
        try:
            index = orjson.loads(await self._get(f"{base}/openapi/v3", backend, headers) or b"null")
            url = ((index or {}).get("paths") or {}).get(path, {}).get("serverRelativeURL") or f"/openapi/v3/{path}"
            doc = await self._get(base + (url if url.startswith("/") else "/" + url), backend, headers)
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError, AttributeError):
            return
        if doc is None:
            self.openapi.pop(gv, None)
            return
        import hashlib
        self.openapi[gv] = (doc, hashlib.sha512(doc).hexdigest().upper())

    async def _get(self, url: str, backend: Backend, headers: list[tuple[str, str]]) -> bytes | None:
        import aiohttp                  # loaded when an APIService is proxied, not at start-up
        async with self.session().get(url, headers=headers, ssl=backend.ssl or True,
                                      server_hostname=backend.server_hostname,
                                      timeout=aiohttp.ClientTimeout(total=CHECK_TIMEOUT), allow_redirects=False) as resp:
            if resp.status != 200:
                return None
            body = await resp.content.read(MAX_DISCOVERY_BYTES)
            return body if resp.content.at_eof() else None

    def _remember_discovery(self, gv: tuple[str, str], body: bytes) -> None:
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            return
        if isinstance(doc, dict) and isinstance(doc.get("resources"), list) and self.discovery.get(gv) != doc:
            self.discovery[gv] = doc
            self.generation += 1


async def start(api: APIServer, **kwargs: Any) -> list[asyncio.Future[None]]:
    """Make the server's aggregator, list, and run it; its task is returned for `up` to cancel."""
    agg = Aggregator(api, **kwargs)
    await agg.start()
    api.aggregator = agg
    return [asyncio.ensure_future(agg.run())]
