"""metrics.k8s.io/v1beta1: NodeMetrics and PodMetrics, what `kubectl top` and the HPA read.

Upstream serves this group from metrics-server behind the aggregated APIService
v1beta1.metrics.k8s.io: it scrapes every kubelet's resource metrics each 15 s
(--metric-resolution) and answers from that cache. kubeplane answers in the API server itself
(no second server, no proxying, which the aggregator here does not do), from the same source:
each node's kubelet connection, the one pods/log already uses (in-process kubelets hand
themselves to the API server; a kubelet in another process is asked for its Summary API,
/stats/summary, over HTTPS as pods/log proxies; kubelet/resource_usage.py says what they
report). Reading in the API server rather than kubelets pushing keeps the kubelets' writes (the
hot path) unchanged and costs nothing until someone reads metrics. A node's
reading is kept RESOLUTION seconds, as metrics-server's scrape interval, so a burst of `top`
or HPA reads costs one collection. The APIService is registered as kind + metrics-server shows
it (service kube-system/metrics-server, Available: Passed).

Only get and list, as metrics-server: label selectors on pods (a PodMetrics carries its pod's
labels), field selectors metadata.name/metadata.namespace; Table output with metrics-server's
columns (Name, CPU, Memory, Window). A pod with no running container has no metrics (404).

Upstream: kubernetes-sigs/metrics-server pkg/api (node.go, pod.go: Get, List, ConvertToTable),
k8s.io/metrics pkg/apis/metrics/v1beta1 (types.go).
"""
from __future__ import annotations

import logging
import weakref
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors, quantity
from ...api.resource_usage import ContainerUsage, PodUsage
from ...utils.clock import rfc3339
from .. import codec
from ..handlers import common
from ..registry.definition import Column, ResourceDefinition, Row
from ..registry.registry import register
from ..request import Request, Response

if TYPE_CHECKING:
    from ...api.resources import ResourceInfo
    from ..server import APIServer

log = logging.getLogger(__name__)

GROUP, VERSION = "metrics.k8s.io", "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
RESOLUTION = 15.0                     # metrics-server's --metric-resolution (seconds)
WINDOW = "15s"
Obj = dict[str, Any]


def columns() -> list[Column]:
    """Upstream: metrics-server's ConvertToTable columns."""
    return [{"name": "Name", "type": "string", "format": "name", "description": "Name of the resource"},
            {"name": "CPU", "type": "string", "format": "", "description": "CPU usage"},
            {"name": "Memory", "type": "string", "format": "", "description": "Memory usage"},
            {"name": "Window", "type": "string", "format": "", "description": "Interval over which metrics were "
                                                                              "aggregated"}]


def _printer(obj: Obj, now: float) -> Row:
    usage = obj.get("usage")
    if usage is None:                 # a PodMetrics: the sum of its containers
        cpu = sum((quantity.parse(c["usage"]["cpu"]).value for c in obj.get("containers") or []), Fraction(0))
        mem = sum((quantity.parse(c["usage"]["memory"]).value for c in obj.get("containers") or []), Fraction(0))
        usage = {"cpu": _cpu(cpu), "memory": _memory(mem)}
    return [obj["metadata"]["name"], usage["cpu"], usage["memory"], obj.get("window", "")], None


# Nothing is stored; a prefix of their own keeps them apart from the core nodes and pods (what
# shares a storage prefix is one resource to admission's equivalence, as to upstream's).
NOT_STORED = "metrics.k8s.io/"
NODE_METRICS = register(ResourceDefinition(
    GROUP, VERSION, "NodeMetrics", "nodes", "", False, "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics",
    verbs=("get", "list"), storage_prefix=NOT_STORED + "nodes", columns=columns, printer=_printer))
POD_METRICS = register(ResourceDefinition(
    GROUP, VERSION, "PodMetrics", "pods", "", True, "io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics",
    verbs=("get", "list"), storage_prefix=NOT_STORED + "pods", columns=columns, printer=_printer))


def _cpu(cores: Fraction) -> str:
    """Nanocores, as metrics-server (resource.NewScaledQuantity(n, -9)): 250m, 1234567n."""
    return str(quantity.Quantity(Fraction(round(cores * 10**9), 10**9)))


def _memory(b: Fraction) -> str:
    """Bytes in BinarySI (resource.NewQuantity(n, BinarySI)): 64Mi, 1234Ki."""
    return str(quantity.Quantity(Fraction(round(b)), quantity.BINARY_SI))


# --- collection: one reading per node per RESOLUTION seconds --------------------------------------

_CACHE: weakref.WeakKeyDictionary[Any, dict[str, tuple[float, Any]]] = weakref.WeakKeyDictionary()
SCRAPE_TIMEOUT = 10.0                 # seconds (metrics-server's --kubelet-request-timeout)


async def _reading(api: APIServer, node: Obj) -> tuple[float, Any] | None:
    """(when, (node total, pods' usage)) of the node's kubelet, or None if it cannot be read
    (metrics-server leaves an unscrapable node out, logging why)."""
    name = node["metadata"]["name"]
    cache = _CACHE.setdefault(api, {})
    now = api.clock.now()
    hit = cache.get(name)
    if hit is not None and now - hit[0] < RESOLUTION:
        return hit
    conn = api.nodes.get(name)
    if conn is not None:
        usage = getattr(conn, "resource_usage", None)
        if usage is None:
            return None
        cache[name] = (now, usage(name))
    else:
        scraped = await _scrape(api, node)
        if scraped is None:
            return None
        cache[name] = (now, scraped)
    return cache[name]


async def _scrape(api: APIServer, node: Obj) -> Any:
    """GET the Summary API of a kubelet in another process, over the connection pods/log uses
    (the node's preferred address and kubelet port, the API server's token, its certificate not
    verified). Upstream: metrics-server's scraper."""
    import asyncio

    import aiohttp

    from ..handlers.podlog import kubelet_port, preferred_node_address
    name = node["metadata"]["name"]
    try:
        host = preferred_node_address(node)
    except errors.StatusError:
        return None
    host = f"[{host}]" if ":" in host else host
    url = f"https://{host}:{kubelet_port(node)}/stats/summary"
    token = next(iter(api.tokens), "")
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False),
                                         timeout=aiohttp.ClientTimeout(total=SCRAPE_TIMEOUT)) as session:
            async with session.get(url, params={"node": name},
                                   headers={"Authorization": f"Bearer {token}"} if token else {}) as resp:
                if resp.status != 200:
                    log.info("Failed to scrape node %s: %s returned %d", name, url, resp.status)
                    return None
                return from_summary(orjson.loads(await resp.read()))
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError, orjson.JSONDecodeError, KeyError, TypeError,
            ValueError, AttributeError) as e:
        log.info("Failed to scrape node %s: %s", name, e)
        return None


def from_summary(doc: Obj) -> tuple[dict[str, Fraction], list[PodUsage]]:
    """A kubelet's Summary API document (kubelet/resource_usage.py summary()) as the readings
    of in-process kubelets are; KeyError/TypeError/ValueError on a malformed one."""
    def usage(s: Obj) -> tuple[Fraction, Fraction]:
        return (Fraction(int(s["cpu"]["usageNanoCores"]), 10**9), Fraction(int(s["memory"]["workingSetBytes"])))
    cpu, mem = usage(doc["node"])
    pods = [PodUsage(str(p["podRef"]["namespace"]), str(p["podRef"]["name"]),
                     tuple(ContainerUsage(str(c["name"]), *usage(c)) for c in p.get("containers") or ()))
            for p in doc.get("pods") or ()]
    return {"cpu": cpu, "memory": mem}, pods


async def _nodes(api: APIServer) -> list[Obj]:
    from ...api.resources import lookup
    nodes = lookup("", "v1", "nodes")
    assert nodes is not None
    kvs, _ = await api.storage.list(nodes.prefix)
    return [kv.obj for kv in kvs]


def _node_metrics(name: str, when: float, total: dict[str, Fraction], labels: dict[str, str]) -> Obj:
    meta: Obj = {"name": name, "creationTimestamp": rfc3339(when)}
    if labels:
        meta["labels"] = labels
    return {"kind": "NodeMetrics", "apiVersion": API_VERSION, "metadata": meta, "timestamp": rfc3339(when),
            "window": WINDOW, "usage": {"cpu": _cpu(total["cpu"]), "memory": _memory(total["memory"])}}


def _pod_metrics(pod: Any, when: float, labels: dict[str, str]) -> Obj:
    meta: Obj = {"name": pod.name, "namespace": pod.namespace, "creationTimestamp": rfc3339(when)}
    if labels:
        meta["labels"] = labels
    return {"kind": "PodMetrics", "apiVersion": API_VERSION, "metadata": meta, "timestamp": rfc3339(when),
            "window": WINDOW, "containers": [{"name": c.name, "usage": {"cpu": _cpu(c.cpu), "memory": _memory(c.memory)}}
                                             for c in pod.containers]}


async def _all_node_metrics(api: APIServer) -> list[Obj]:
    out = []
    for node in await _nodes(api):
        if (reading := await _reading(api, node)) is not None:
            meta = node["metadata"]
            out.append(_node_metrics(meta["name"], reading[0], reading[1][0], meta.get("labels") or {}))
    return out


async def _all_pod_metrics(api: APIServer, namespace: str) -> list[Obj]:
    """Every running pod's metrics (in one namespace, or all), with its pod's labels."""
    from ...api.resources import lookup
    pods = lookup("", "v1", "pods")
    assert pods is not None
    kvs, _ = await api.storage.list(pods.prefix + (f"{namespace}/" if namespace else ""))
    stored = {(kv.obj["metadata"].get("namespace"), kv.obj["metadata"]["name"]): kv.obj for kv in kvs}
    out = []
    for node in await _nodes(api):
        if (reading := await _reading(api, node)) is None:
            continue
        for pu in reading[1][1]:
            pod = stored.get((pu.namespace, pu.name))
            if pod is not None:
                out.append(_pod_metrics(pu, reading[0], pod["metadata"].get("labels") or {}))
    return sorted(out, key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"]))


# --- the handler --------------------------------------------------------------------------------------

async def serve(api: APIServer, req: Request, ri: ResourceInfo, verb: str, ns: str, name: str) -> Response:
    """GET one NodeMetrics/PodMetrics or LIST them (NotFound as metrics-server answers)."""
    items = await (_all_node_metrics(api) if ri.plural == "nodes" else _all_pod_metrics(api, ns))
    if verb == "get":
        found = next((o for o in items if o["metadata"]["name"] == name), None)
        if found is None:
            raise errors.NotFound(GROUP, ri.plural, name)
        return common.object_response(api, req, ri, found, None)
    sel = common.Selectors.from_request(req, ri)
    items = [o for o in items if sel.matches(o)]
    if codec.wants_table(req.headers):
        return common.table_response(api, req, ri, items, None, "")
    body = {"kind": f"{ri.kind}List", "apiVersion": API_VERSION, "metadata": {}, "items": items}
    return Response(200, orjson.dumps(body))


def api_service() -> Obj:
    """v1beta1.metrics.k8s.io as metrics-server's manifest registers it (kind + metrics-server)."""
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": f"{VERSION}.{GROUP}", "labels": {"k8s-app": "metrics-server"}},
            "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 100, "versionPriority": 100,
                     "insecureSkipTLSVerify": True,
                     "service": {"name": "metrics-server", "namespace": "kube-system", "port": 443}}}


AVAILABLE = {"type": "Available", "status": "True", "reason": "Passed", "message": "all checks passed"}
