"""The API server's Prometheus metrics, with upstream's names, labels, help texts and buckets.

Upstream: apiserver/pkg/endpoints/metrics/metrics.go (requests) and
apiserver/pkg/storage/etcd3/metrics/metrics.go (storage). Served at /metrics in the text
exposition format (server.py); every series lives in prometheus_client's default REGISTRY, which
the other components' metrics share, so one scrape of `kubeplane up` shows them all.

Library: prometheus_client (the Prometheus project's own client), chosen over aioprometheus
(benchmarks/metrics_bench.py; BENCHMARKS.md "Metrics"): both print valid text format, but
aioprometheus costs ~18 µs for one labelled counter inc + histogram observe against ~7 µs, is
less maintained (last release 2023), and takes a dict of labels per call. Its `_created` series
(not upstream's) are turned off.

The per-request families (apiserver_request_total, apiserver_request_duration_seconds,
apiserver_response_sizes) and the per-storage-operation ones (etcd_*) are on the in-process hot
path: every controller, scheduler and kubelet request passes here. Even with its children kept,
prometheus_client takes a lock per value (~1.2 µs for a count and an observation), so these are
kept as plain lists (`_Series`, ~0.3 µs; all updates run on the event loop) and handed to
prometheus_client as families by a collector at scrape time (`_Collector`): the exposition is
still the library's. The rarely-moving ones (gauges, terminations) are plain values too.

So nothing here needs prometheus_client until the registry is read: it is imported (~10 ms)
and the collector registered by `register()`, at the first request served (monitor_request)
or scrape, not while `up` starts. Values recorded before that (the bootstrap's storage
operations) are in the plain series and show from the first scrape.

Every request that reaches routing is counted, the in-process components' included (upstream
they would be HTTP clients). As upstream, only requests for served resources (and discovery)
are labelled: a 404 for an unknown resource or path is not, so no client can grow the label
space.
"""
from __future__ import annotations

from bisect import bisect_left
from time import perf_counter
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import TYPE_CHECKING, Any

from ..api.resources import RESOURCES, ResourceInfo, lookup
from ..storage.interface import KeyExists, KeyNotFound, RevisionMismatch, StorageError
from .request import Request, RequestInfo, Response

if TYPE_CHECKING:
    from prometheus_client import Metric

    from ..storage.interface import KeyValue, Storage, Watcher


# What upstream's /metrics answers by default (prometheus_client's CONTENT_TYPE_PLAIN_0_0_4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
APISERVER_COMPONENT = "apiserver"
# Upstream: requestLatencies' buckets, also etcdRequestLatency's.
LATENCY_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20,
                   30, 45, 60)
_FIRST_LATENCY_BOUND = LATENCY_BUCKETS[0]      # where nearly every observation falls (< 5 ms)
SIZE_BUCKETS = tuple(1000.0 * 10 ** i for i in range(7))      # ExponentialBuckets(1000, 10, 7): 1 kB .. 1 GB

_REQ = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
_REQ_NO_DRY_RUN = ("verb", "group", "version", "resource", "subresource", "scope", "component")

_REQUEST_TOTAL_HELP = ("[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, "
                       "version, resource, scope, component, and HTTP response code.")
_REQUEST_DURATION_HELP = ("[STABLE] Response latency distribution in seconds for each verb, dry run value, group, "
                          "version, resource, subresource, scope and component.")
_RESPONSE_SIZES_HELP = ("[STABLE] Response size distribution in bytes for each group, version, verb, resource, "
                        "subresource, scope and component.")
_ETCD_DURATION_HELP = "[ALPHA] Etcd request latency in seconds for each operation and object type."
_ETCD_TOTAL_HELP = "[ALPHA] Etcd request counts for each operation and object type."
_ETCD_ERRORS_HELP = "[ALPHA] Etcd failed request counts for each operation and object type."
_ETCD = ("operation", "group", "resource")
_LONGRUNNING_HELP = ("[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, "
                     "version, resource, scope and component. Not all requests are tracked this way.")
_INFLIGHT_HELP = ("[STABLE] Maximal number of currently used inflight request limit of this apiserver per request "
                  "kind in last second.")
_TERMINATIONS_HELP = "[ALPHA] Number of requests which apiserver terminated in self-defense."
_STORAGE_OBJECTS_HELP = ("[STABLE] Number of stored objects at the time of last check split by kind. In case of a "
                         "fetching error, the value will be -1.")
_RESOURCE_OBJECTS_HELP = ("[ALPHA] Number of stored objects at the time of last check split by kind. In case of a "
                          "fetching error, the value will be -1.")
_longrunning: dict[tuple[str, ...], int] = {}        # labels without dry_run -> streams open
_inflight: dict[str, int] = {}                       # request kind -> the last second's watermark
_terminations: dict[tuple[str, ...], int] = {}       # labels without dry_run, code -> count
_objects: dict[ResourceInfo, int] = {}               # resource -> stored objects at the last scrape
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
    Every request served passes here (the in-process components' too): a resource request's
    labels are worked out inline.
    """
    if not info.is_resource_request:
        if req.path.rstrip("/") not in _DISCOVERY_PATHS:
            return None
        # Aggregated discovery: the subresource is the path.
        return (_reported_verb(req, info, ""), _dry_run(req), "", "", "", req.path.rstrip("/"), "",
                APISERVER_COMPONENT)
    group, version, resource, sub, verb = info.group, info.version, info.resource, info.subresource, info.verb
    ri = lookup(group, version, resource)
    if ri is None or sub and ri.subresource(sub) is None and not (ri.plural == "namespaces" and sub == "finalize"):
        return None
    scope = "resource" if info.name or verb == "create" else "namespace" if info.namespace else "cluster"
    if verb == "watch":
        reported = "WATCH"
    else:
        reported = req.method
        if reported == "GET" or reported == "HEAD":
            reported = "GET" if scope == "resource" else "LIST"
        elif reported == "PATCH" and req.headers.get("content-type") == _APPLY_PATCH:
            reported = "APPLY"
        if sub in _CONNECT_SUBRESOURCES:
            reported = "CONNECT"
        elif reported not in _VALID_VERBS:
            reported = "other"
    dry_run = req.query.get("dryRun")
    return (reported, "" if dry_run is None else "All" if dry_run == "All" else "invalid",
            group, version, resource, sub, scope, APISERVER_COMPONENT)


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


class _Series:
    """One label tuple's request figures: responses by code, a latency and a size histogram.

    A histogram is a list: the count of values up to each bound (bisect), then above the
    last, then their sum; the collector makes them cumulative.
    """

    __slots__ = ("codes", "latency", "sizes")

    def __init__(self) -> None:
        self.codes: dict[int, int] = {}
        self.latency = _histogram(LATENCY_BUCKETS)
        self.sizes = _histogram(SIZE_BUCKETS)


def _histogram(bounds: tuple[float, ...]) -> list[float]:
    return [0] * (len(bounds) + 1) + [0.0]


_requests: dict[tuple[str, ...], _Series] = {}


def monitor_request(req: Request, info: RequestInfo, resp: Response, elapsed: float) -> Response:
    """Count a served request and observe its latency (and a get's or list's response size).

    Upstream: MonitorRequest (via InstrumentRouteFunc). A streamed response (watch, pods/log) is
    counted when it starts and held in apiserver_longrunning_requests until it ends
    (upstream: RecordLongRunning); the returned Response wraps its body for that.
    """
    if not _registered:
        register()
    labels = request_labels(req, info)
    if labels is None:
        return resp
    s = _requests.get(labels)
    if s is None:
        s = _requests[labels] = _Series()
    s.codes[resp.status] = s.codes.get(resp.status, 0) + 1
    h = s.latency
    h[0 if elapsed <= _FIRST_LATENCY_BOUND else bisect_left(LATENCY_BUCKETS, elapsed)] += 1
    h[-1] += elapsed
    body = resp.body
    if isinstance(body, (bytes, bytearray)):
        if labels[0] in ("GET", "LIST"):
            h = s.sizes
            h[bisect_left(SIZE_BUCKETS, len(body))] += 1
            h[-1] += len(body)
        return resp
    return Response(resp.status, _tracked(body, (labels[0], *labels[2:])), resp.content_type, resp.headers)


async def _tracked(body: AsyncIterator[bytes], labels: tuple[str, ...]) -> AsyncIterator[bytes]:
    _longrunning[labels] = _longrunning.get(labels, 0) + 1
    try:
        async for chunk in body:
            yield chunk
    finally:
        _longrunning[labels] -= 1
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
    s = _requests.get(labels)
    if s is None:
        s = _requests[labels] = _Series()
    s.codes[code] = s.codes.get(code, 0) + 1
    key = (labels[0], *labels[2:], str(code))
    _terminations[key] = _terminations.get(key, 0) + 1


def set_inflight(kind: str, value: int) -> None:
    """Publish one request kind's in-flight watermark (filters/maxinflight.py calls it each second)."""
    _inflight[kind] = value


# --- storage ----------------------------------------------------------------------------------


def _storage_resources() -> dict[str, ResourceInfo]:
    """Storage prefix -> the resource stored there (the first registered: core Events before
    events.k8s.io's, which share their storage, as upstream)."""
    out: dict[str, ResourceInfo] = {}
    for ri in RESOURCES:
        out.setdefault(ri.prefix, ri)
    return out


def _group_resource(prefix: str) -> tuple[str, str]:
    """(group, resource) stored under a prefix /registry/<resource>/."""
    ri = _storage_resources().get(prefix)
    return (ri.group, ri.plural) if ri else ("", prefix[10:-1])


# operation -> storage prefix -> latency histogram + [errors]; labels are resolved at scrape time
_etcd: dict[str, dict[str, list[float]]] = {}


def _etcd_operation(operation: str) -> dict[str, list[float]]:
    """The histograms of one operation, by storage prefix (made once, kept by its callers)."""
    return _etcd.setdefault(operation, {})


def _observe_etcd(by_prefix: dict[str, list[float]], key: str, started: float, failed: bool = False) -> None:
    """One storage operation on key, started at perf_counter() `started`, into its operation's
    histograms (by_prefix, from _etcd_operation).

    Upstream: RecordEtcdRequest — etcd_request_duration_seconds, etcd_requests_total and
    etcd_request_errors_total by operation, group and resource.
    """
    prefix = key[:key.find("/", 10) + 1]           # "/registry/" is 10 characters
    h = by_prefix.get(prefix)
    if h is None:
        h = by_prefix[prefix] = [*_histogram(LATENCY_BUCKETS), 0]
    elapsed = perf_counter() - started
    h[0 if elapsed <= _FIRST_LATENCY_BOUND else bisect_left(LATENCY_BUCKETS, elapsed)] += 1
    h[-2] += elapsed
    if failed:
        h[-1] += 1


_GET, _LIST, _COUNT, _CREATE, _UPDATE, _DELETE = map(
    _etcd_operation, ("get", "list", "listWithCount", "create", "update", "delete"))


# A storage failure that is an answer (upstream: a failed etcd transaction, not an error).
_ANSWERS = (KeyExists, KeyNotFound, RevisionMismatch)


class InstrumentedStorage:
    """A Storage that times each of its operations into the etcd_* metrics and passes it on.

    Upstream times every etcd call of its store (etcd3/store.go); kubeplane's storage is the
    store, so the operations are timed at its interface: get, list, count (upstream's
    "listWithCount"), create, update, delete. As upstream, an answer is not an error: a missing
    key, an existing one or a stale revision (upstream's failed transaction) counts as a request;
    any other failure also counts in etcd_request_errors_total. The rest is the wrapped storage's.
    Each method is written out (no shared wrapper coroutine): ~0.5 µs per operation instead of ~0.9.
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

    async def get(self, key: str) -> KeyValue | None:
        started = perf_counter()
        try:
            kv = await self.storage.get(key)
        except BaseException as e:
            _observe_etcd(_GET, key, started, not isinstance(e, _ANSWERS))
            raise
        _observe_etcd(_GET, key, started)
        return kv

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        started = perf_counter()
        try:
            out = await self.storage.list(prefix)
        except BaseException as e:
            _observe_etcd(_LIST, prefix, started, not isinstance(e, _ANSWERS))
            raise
        _observe_etcd(_LIST, prefix, started)
        return out

    async def count(self, prefix: str) -> int:
        started = perf_counter()
        try:
            n = await self.storage.count(prefix)
        except BaseException as e:
            _observe_etcd(_COUNT, prefix, started, not isinstance(e, _ANSWERS))
            raise
        _observe_etcd(_COUNT, prefix, started)
        return n

    async def create(self, key: str, obj: dict[str, Any], spec_json: bytes | None = None) -> KeyValue:
        started = perf_counter()
        try:
            kv = await self.storage.create(key, obj, spec_json)
        except BaseException as e:
            _observe_etcd(_CREATE, key, started, not isinstance(e, _ANSWERS))
            raise
        _observe_etcd(_CREATE, key, started)
        return kv

    async def update(self, key: str, obj: dict[str, Any], expected_revision: int | None = None) -> KeyValue:
        started = perf_counter()
        try:
            kv = await self.storage.update(key, obj, expected_revision)
        except BaseException as e:
            _observe_etcd(_UPDATE, key, started, not isinstance(e, _ANSWERS))
            raise
        _observe_etcd(_UPDATE, key, started)
        return kv

    async def delete(self, key: str, expected_revision: int | None = None) -> KeyValue:
        started = perf_counter()
        try:
            kv = await self.storage.delete(key, expected_revision)
        except BaseException as e:
            _observe_etcd(_DELETE, key, started, not isinstance(e, _ANSWERS))
            raise
        _observe_etcd(_DELETE, key, started)
        return kv


def uninstrumented(storage: Storage) -> Storage:
    """The store under an InstrumentedStorage (or storage itself): for what is not an etcd
    request upstream, such as waiting for a commit or counting objects for a scrape."""
    return storage.storage if isinstance(storage, InstrumentedStorage) else storage


class _Collector:
    """Hands the plain series to prometheus_client as metric families at scrape time."""

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        total = CounterMetricFamily("apiserver_request_total", _REQUEST_TOTAL_HELP, labels=(*_REQ, "code"))
        latency = HistogramMetricFamily("apiserver_request_duration_seconds", _REQUEST_DURATION_HELP, labels=_REQ)
        sizes: dict[tuple[str, ...], list[float]] = {}      # without dry_run: variants merge, as upstream
        for labels, s in list(_requests.items()):
            for code, n in list(s.codes.items()):
                total.add_metric((*labels, str(code)), n)
            if any(s.latency[:-1]):
                latency.add_metric(labels, _cumulative(s.latency, LATENCY_BUCKETS), s.latency[-1])
            if any(s.sizes[:-1]):
                merged = sizes.setdefault((labels[0], *labels[2:]), _histogram(SIZE_BUCKETS))
                merged[:] = [a + b for a, b in zip(merged, s.sizes)]
        response_sizes = HistogramMetricFamily("apiserver_response_sizes", _RESPONSE_SIZES_HELP,
                                               labels=_REQ_NO_DRY_RUN)
        for labels, h in sizes.items():
            response_sizes.add_metric(labels, _cumulative(h, SIZE_BUCKETS), h[-1])
        yield total
        yield latency
        yield response_sizes
        yield _family(GaugeMetricFamily("apiserver_longrunning_requests", _LONGRUNNING_HELP, labels=_REQ_NO_DRY_RUN),
                      _longrunning)
        yield _family(GaugeMetricFamily("apiserver_current_inflight_requests", _INFLIGHT_HELP,
                                        labels=("request_kind",)), {(k,): v for k, v in _inflight.items()})
        yield _family(CounterMetricFamily("apiserver_request_terminations_total", _TERMINATIONS_HELP,
                                          labels=(*_REQ_NO_DRY_RUN, "code")), _terminations)
        objects = list(_objects.items())
        yield _family(GaugeMetricFamily("apiserver_storage_objects", _STORAGE_OBJECTS_HELP, labels=("resource",)),
                      {(f"{ri.plural}.{ri.group}" if ri.group else ri.plural,): n for ri, n in objects})
        yield _family(GaugeMetricFamily("apiserver_resource_objects", _RESOURCE_OBJECTS_HELP,
                                        labels=("group", "resource")), {(ri.group, ri.plural): n for ri, n in objects})
        yield from self._etcd()
        from .admission import policy_metrics
        from .admission.webhook import metrics as webhook_metrics   # not at import: as prometheus_client
        yield from webhook_metrics.collect()       # apiserver_admission_webhook_*
        yield from policy_metrics.collect()        # apiserver_{validating,mutating}_admission_policy_check_*
        from .cel import metrics as cel_metrics
        yield from cel_metrics.collect()           # apiserver_cel_*
        from .apiextensions.conversion import metrics as conversion_metrics
        yield from conversion_metrics.collect()    # apiserver_conversion_webhook_*, apiserver_crd_conversion_*
        from .aggregator import metrics as aggregator_metrics
        yield from aggregator_metrics.collect()    # aggregator_unavailable_apiservice{,_total}

    def _etcd(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily

        latency = HistogramMetricFamily("etcd_request_duration_seconds", _ETCD_DURATION_HELP, labels=_ETCD)
        total = CounterMetricFamily("etcd_requests_total", _ETCD_TOTAL_HELP, labels=_ETCD)
        errors = CounterMetricFamily("etcd_request_errors_total", _ETCD_ERRORS_HELP, labels=_ETCD)
        for operation, by_prefix in list(_etcd.items()):
            for prefix, h in list(by_prefix.items()):
                labels = (operation, *_group_resource(prefix))
                latency.add_metric(labels, _cumulative(h[:-1], LATENCY_BUCKETS), h[-2])
                total.add_metric(labels, sum(h[:-2]))
                if h[-1]:
                    errors.add_metric(labels, h[-1])
        yield latency
        yield total
        yield errors


def _family(family: Any, values: dict[tuple[str, ...], int]) -> Any:
    """family with one sample per label tuple of values."""
    for labels, value in list(values.items()):
        family.add_metric(labels, value)
    return family


def _cumulative(h: list[float], bounds: tuple[float, ...]) -> list[tuple[str, float]]:
    """A plain histogram's buckets as prometheus_client wants them: cumulative, "+Inf" last."""
    from prometheus_client.utils import floatToGoString

    out, acc = [], 0.0
    for bound, n in zip(bounds, h):
        acc += n
        out.append((floatToGoString(bound), acc))
    out.append(("+Inf", acc + h[len(bounds)]))
    return out


_registered = False


def register() -> None:
    """Import prometheus_client and register the collector in its default REGISTRY (once).

    Also turns its `_created` series off (not upstream's), for every metric of the process."""
    global _registered
    if _registered:
        return
    from prometheus_client import REGISTRY, disable_created_metrics
    disable_created_metrics()
    REGISTRY.register(_Collector())
    _registered = True


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
        _objects[ri] = n


async def render(storage: Storage) -> Response:
    """The /metrics answer: every series of the default registry in the text format."""
    register()
    from prometheus_client import REGISTRY

    from ..utils.serving import metrics_text                # formats in a thread
    await update_store_stats(uninstrumented(storage))     # counting for a scrape is not an etcd request
    return Response(200, await metrics_text(REGISTRY), CONTENT_TYPE)
