"""The API server's Prometheus metrics, with upstream's names, labels, help texts and buckets.

Upstream: apiserver/pkg/endpoints/metrics/metrics.go (requests) and
apiserver/pkg/storage/etcd3/metrics/metrics.go (storage). Served at /metrics in the text
exposition format (server.py); every series lives in prometheus_client's default REGISTRY, which
the other components' metrics share, so one scrape of `kubeplane up` shows them all.

Library: prometheus_client (the Prometheus project's own client), chosen over aioprometheus
(benchmarks/metrics_bench.py; BENCHMARKS.md "Metrics"): both print valid text format, but
aioprometheus costs ~18 µs for one labelled counter inc + histogram observe against ~7 µs, is
less maintained (last release 2023), and takes a dict of labels per call. prometheus_client's
`labels()` is the expensive part (a lock and a tuple per call), so each distinct label tuple's
children are looked up once and kept (`_children`): one request then costs ~1 µs of metrics.
Its `_created` series (not upstream's) are turned off.

Every request that reaches routing is counted, the in-process components' included (upstream
they would be HTTP clients). As upstream, only requests for served resources (and discovery)
are labelled: a 404 for an unknown resource or path is not, so no client can grow the label
space.
"""
from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

from ..api.resources import RESOURCES, ResourceInfo, lookup
from ..storage.interface import KeyExists, KeyNotFound, RevisionMismatch, StorageError
from .request import Request, RequestInfo, Response

if TYPE_CHECKING:
    from ..storage.interface import KeyValue, Storage, Watcher

disable_created_metrics()

T = TypeVar("T")

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4      # what upstream's /metrics answers by default
APISERVER_COMPONENT = "apiserver"
# Upstream: requestLatencies' buckets, also etcdRequestLatency's.
LATENCY_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20,
                   30, 45, 60)
SIZE_BUCKETS = tuple(1000.0 * 10 ** i for i in range(7))      # ExponentialBuckets(1000, 10, 7): 1 kB .. 1 GB

_REQ = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
_REQ_NO_DRY_RUN = ("verb", "group", "version", "resource", "subresource", "scope", "component")

request_total = Counter(
    "apiserver_request_total", "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, "
    "group, version, resource, scope, component, and HTTP response code.", (*_REQ, "code"))
request_duration_seconds = Histogram(
    "apiserver_request_duration_seconds", "[STABLE] Response latency distribution in seconds for each verb, "
    "dry run value, group, version, resource, subresource, scope and component.", _REQ, buckets=LATENCY_BUCKETS)
response_sizes = Histogram(
    "apiserver_response_sizes", "[STABLE] Response size distribution in bytes for each group, version, verb, "
    "resource, subresource, scope and component.", _REQ_NO_DRY_RUN, buckets=SIZE_BUCKETS)
longrunning_requests = Gauge(
    "apiserver_longrunning_requests", "[STABLE] Gauge of all active long-running apiserver requests broken out "
    "by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
    _REQ_NO_DRY_RUN)
current_inflight_requests = Gauge(
    "apiserver_current_inflight_requests", "[STABLE] Maximal number of currently used inflight request limit "
    "of this apiserver per request kind in last second.", ("request_kind",))
request_terminations_total = Counter(
    "apiserver_request_terminations_total", "[ALPHA] Number of requests which apiserver terminated in "
    "self-defense.", (*_REQ_NO_DRY_RUN, "code"))
storage_objects = Gauge(
    "apiserver_storage_objects", "[STABLE] Number of stored objects at the time of last check split by kind. "
    "In case of a fetching error, the value will be -1.", ("resource",))
resource_objects = Gauge(
    "apiserver_resource_objects", "[ALPHA] Number of stored objects at the time of last check split by kind. "
    "In case of a fetching error, the value will be -1.", ("group", "resource"))
etcd_request_duration_seconds = Histogram(
    "etcd_request_duration_seconds", "[ALPHA] Etcd request latency in seconds for each operation and object type.",
    ("operation", "group", "resource"), buckets=LATENCY_BUCKETS)
etcd_requests_total = Counter(
    "etcd_requests_total", "[ALPHA] Etcd request counts for each operation and object type.",
    ("operation", "group", "resource"))
etcd_request_errors_total = Counter(
    "etcd_request_errors_total", "[ALPHA] Etcd failed request counts for each operation and object type.",
    ("operation", "group", "resource"))

# Upstream: validRequestMethods; any other reported verb is "other".
_VALID_VERBS = frozenset({"APPLY", "CONNECT", "CREATE", "DELETE", "DELETECOLLECTION", "GET", "LIST", "PATCH",
                          "POST", "PROXY", "PUT", "UPDATE", "WATCH", "WATCHLIST"})
_CONNECT_SUBRESOURCES = frozenset({"log", "exec", "portforward", "attach", "proxy"})   # validConnectRequests
_APPLY_PATCH = "application/apply-patch+yaml"
_DISCOVERY_PATHS = frozenset({"/api", "/apis"})


# --- requests ---------------------------------------------------------------------------------


def request_labels(req: Request, info: RequestInfo) -> tuple[str, ...] | None:
    """(verb, dry_run, group, version, resource, subresource, scope, component) as upstream
    reports them, or None for a request upstream does not instrument (404s, other paths).

    Upstream: MonitorRequest's reportedVerb (CanonicalVerb + cleanVerb), CleanScope, cleanDryRun.
    """
    if info.is_resource_request:
        ri = lookup(info.group, info.version, info.resource)
        if ri is None or info.subresource and ri.subresource(info.subresource) is None \
                and not (ri.plural == "namespaces" and info.subresource == "finalize"):
            return None
        scope = "resource" if info.name or info.verb == "create" else "namespace" if info.namespace else "cluster"
        labels = (info.group, info.version, info.resource, info.subresource, scope)
    elif req.path.rstrip("/") in _DISCOVERY_PATHS:       # aggregated discovery: subresource is the path
        labels = ("", "", "", req.path.rstrip("/"), "")
    else:
        return None
    return (_reported_verb(req, info, labels[4]), _dry_run(req), *labels, APISERVER_COMPONENT)


def _reported_verb(req: Request, info: RequestInfo, scope: str) -> str:
    if info.verb == "watch":
        return "WATCH"
    verb = req.method
    if verb in ("GET", "HEAD"):
        verb = "LIST" if scope not in ("resource", "") else "GET"
    elif verb == "PATCH" and req.headers.get("content-type") == _APPLY_PATCH:
        verb = "APPLY"
    if info.subresource in _CONNECT_SUBRESOURCES and info.is_resource_request:
        verb = "CONNECT"
    return verb if verb in _VALID_VERBS else "other"


def _dry_run(req: Request) -> str:
    """Upstream: cleanDryRun — "" without dryRun, "All", or "invalid" (anything else is rejected)."""
    value = req.query.get("dryRun")
    if value is None:
        return ""
    return "All" if value == "All" else "invalid"


class _Children:
    """One label tuple's metric children, looked up once (prometheus_client's labels() is the cost)."""

    __slots__ = ("codes", "duration", "labels", "sizes")

    def __init__(self, labels: tuple[str, ...]) -> None:
        self.labels = labels
        self.duration = request_duration_seconds.labels(*labels)
        self.sizes = response_sizes.labels(labels[0], *labels[2:])
        self.codes: dict[int, Any] = {}

    def count(self, code: int) -> None:
        child = self.codes.get(code)
        if child is None:
            child = self.codes[code] = request_total.labels(*self.labels, str(code))
        child.inc()


_children: dict[tuple[str, ...], _Children] = {}


def _children_for(labels: tuple[str, ...]) -> _Children:
    c = _children.get(labels)
    if c is None:
        c = _children[labels] = _Children(labels)
    return c


def monitor_request(req: Request, info: RequestInfo, resp: Response, elapsed: float) -> Response:
    """Count a served request and observe its latency (and a get's or list's response size).

    Upstream: MonitorRequest (via InstrumentRouteFunc). A streamed response (watch, pods/log) is
    counted when it starts and held in apiserver_longrunning_requests until it ends
    (upstream: RecordLongRunning); the returned Response wraps its body for that.
    """
    labels = request_labels(req, info)
    if labels is None:
        return resp
    c = _children_for(labels)
    c.count(resp.status)
    c.duration.observe(elapsed)
    body = resp.body
    if isinstance(body, (bytes, bytearray)):
        if labels[0] in ("GET", "LIST"):
            c.sizes.observe(len(body))
        return resp
    gauge = longrunning_requests.labels(labels[0], *labels[2:])
    return Response(resp.status, _tracked(body, gauge), resp.content_type, resp.headers)


async def _tracked(body: AsyncIterator[bytes], gauge: Any) -> AsyncIterator[bytes]:
    gauge.inc()
    try:
        async for chunk in body:
            yield chunk
    finally:
        gauge.dec()
        aclose = getattr(body, "aclose", None)
        if aclose is not None:
            await aclose()


def record_termination(req: Request, info: RequestInfo, code: int) -> None:
    """A request the server answered in self-defense (429 over the in-flight limit, 504 past its
    deadline): counted in apiserver_request_total (upstream: RecordDroppedRequest) and in
    apiserver_request_terminations_total (RecordRequestTermination)."""
    labels = request_labels(req, info)
    if labels is None:
        return
    _children_for(labels).count(code)
    request_terminations_total.labels(labels[0], *labels[2:], str(code)).inc()


def set_inflight(kind: str, value: int) -> None:
    """Publish one request kind's in-flight watermark (filters/maxinflight.py calls it each second)."""
    current_inflight_requests.labels(kind).set(value)


# --- storage ----------------------------------------------------------------------------------


def _storage_resources() -> dict[str, ResourceInfo]:
    """Storage prefix -> the resource stored there (the first registered: core Events before
    events.k8s.io's, which share their storage, as upstream)."""
    out: dict[str, ResourceInfo] = {}
    for ri in RESOURCES:
        out.setdefault(ri.prefix, ri)
    return out


def _group_resource(key: str) -> tuple[str, str]:
    """(group, resource) of a storage key /registry/<resource>/...; memoised per prefix."""
    prefix = key[:key.find("/", 10) + 1]             # "/registry/" is 10 characters
    gr = _PREFIXES.get(prefix)
    if gr is None:
        ri = _storage_resources().get(prefix)
        gr = _PREFIXES[prefix] = (ri.group, ri.plural) if ri else ("", prefix[10:-1])
    return gr


_PREFIXES: dict[str, tuple[str, str]] = {}
_etcd_children: dict[tuple[str, str, str], tuple[Any, Any]] = {}


def record_etcd_request(operation: str, key: str, started: float, failed: bool) -> None:
    """Upstream: RecordEtcdRequest — etcd_request_duration_seconds, etcd_requests_total and
    etcd_request_errors_total by operation, group and resource."""
    labels = (operation, *_group_resource(key))
    children = _etcd_children.get(labels)
    if children is None:
        children = _etcd_children[labels] = (etcd_request_duration_seconds.labels(*labels),
                                             etcd_requests_total.labels(*labels))
    children[0].observe(time.perf_counter() - started)
    children[1].inc()
    if failed:
        etcd_request_errors_total.labels(*labels).inc()


class InstrumentedStorage:
    """A Storage that times each of its operations into the etcd_* metrics and passes it on.

    Upstream times every etcd call of its store (etcd3/store.go); kubeplane's storage is the
    store, so the operations are timed at its interface: get, list, count (upstream's
    "listWithCount"), create, update, delete. As upstream, an answer is not an error: a missing
    key, an existing one or a stale revision (upstream's failed transaction) counts as a request;
    any other failure also counts in etcd_request_errors_total. The rest is the wrapped storage's.
    """

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def __getattr__(self, name: str) -> Any:
        return getattr(self.storage, name)

    @property
    def revision(self) -> int:
        return self.storage.revision

    @property
    def oldest_revision(self) -> int:
        return self.storage.oldest_revision

    @property
    def committed_revision(self) -> int:
        return self.storage.committed_revision

    def wait_committed(self, revision: int) -> Awaitable[None]:
        return self.storage.wait_committed(revision)

    def watch(self, prefix: str, after_revision: int) -> Watcher:
        return self.storage.watch(prefix, after_revision)

    def get(self, key: str) -> Awaitable[KeyValue | None]:
        return _timed("get", key, self.storage.get(key))

    def list(self, prefix: str) -> Awaitable[tuple[list[KeyValue], int]]:
        return _timed("list", prefix, self.storage.list(prefix))

    def count(self, prefix: str) -> Awaitable[int]:
        return _timed("listWithCount", prefix, self.storage.count(prefix))

    def create(self, key: str, obj: dict[str, Any]) -> Awaitable[KeyValue]:
        return _timed("create", key, self.storage.create(key, obj))

    def update(self, key: str, obj: dict[str, Any], expected_revision: int | None = None) -> Awaitable[KeyValue]:
        return _timed("update", key, self.storage.update(key, obj, expected_revision))

    def delete(self, key: str, expected_revision: int | None = None) -> Awaitable[KeyValue]:
        return _timed("delete", key, self.storage.delete(key, expected_revision))


async def _timed(operation: str, key: str, aw: Awaitable[T]) -> T:
    started, failed = time.perf_counter(), True
    try:
        result = await aw
        failed = False
        return result
    except (KeyExists, KeyNotFound, RevisionMismatch):
        failed = False
        raise
    finally:
        record_etcd_request(operation, key, started, failed)


async def update_store_stats(storage: Storage) -> None:
    """Count the stored objects of every resource into apiserver_storage_objects and
    apiserver_resource_objects (upstream refreshes them each minute; here at each scrape).

    Upstream: UpdateStoreStats — resource label "deployments.apps", "pods", ...; -1 on failure.
    """
    for prefix, ri in _storage_resources().items():
        try:
            n = await storage.count(prefix)
        except StorageError:              # a broken store reads as -1, as upstream
            n = -1
        storage_objects.labels(f"{ri.plural}.{ri.group}" if ri.group else ri.plural).set(n)
        resource_objects.labels(ri.group, ri.plural).set(n)


async def render(storage: Storage) -> Response:
    """The /metrics answer: every series of the default registry in the text format."""
    await update_store_stats(getattr(storage, "storage", storage))   # not timed as etcd requests
    return Response(200, generate_latest(REGISTRY), CONTENT_TYPE)
