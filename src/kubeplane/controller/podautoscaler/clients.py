"""What the HPA reads and writes besides HPAs: the target's scale subresource, the pods'
resource metrics (metrics.k8s.io), and the custom and external metrics (custom.metrics.k8s.io/
v1beta2, external.metrics.k8s.io/v1beta1, aggregated APIs an adapter serves), all through the
API server.

The replica calculator is synchronous (plain arithmetic over listers), while reading metrics is
I/O: the controller fetches a selector's PodMetrics once per sync (fetch_pod_metrics), and each
Pods/Object/External metric's answer before computing it (fetch_metric), and hands the
calculator a MetricsClient over those answers (Combined).

Upstream: pkg/controller/podautoscaler/metrics/client.go (resourceMetricsClient.GetResourceMetric),
client-go scale (ScalesGetter over a RESTMapper).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson

from ...api import errors
from ...api.resources import served_resources
from ...client.rest import raise_for_status
from ...utils.clock import parse_rfc3339
from .metrics.interfaces import PodMetric, PodMetricsInfo, get_container_metrics, get_pod_metrics

METRICS_PATH = "/apis/metrics.k8s.io/v1beta1"
_ZERO_TIME = -62135596800.0


@dataclass(frozen=True, slots=True)
class PodMetricsSnapshot:
    """A MetricsClient over one metrics.k8s.io PodMetrics list (or the error fetching it).
    Upstream: resourceMetricsClient.GetResourceMetric"""

    items: list[dict[str, Any]]
    error: str = ""

    def get_resource_metric(self, resource: str, namespace: str, selector: Any, container: str
                            ) -> tuple[PodMetricsInfo, float]:
        if self.error:
            raise ValueError(f"unable to fetch metrics from resource metrics API: {self.error}")
        if not self.items:
            raise ValueError("no metrics returned from resource metrics API")
        if container:
            try:
                res = get_container_metrics(self.items, resource, container)
            except ValueError as e:
                raise ValueError(f"failed to get container metrics: {e}") from None
        else:
            res = get_pod_metrics(self.items, resource)
        ts = self.items[0].get("timestamp")
        return res, parse_rfc3339(ts) if ts else _ZERO_TIME

    def get_raw_metric(self, *args: Any) -> tuple[PodMetricsInfo, float]:
        raise ValueError("no custom metrics API (custom.metrics.k8s.io) is registered")

    def get_object_metric(self, *args: Any) -> tuple[int, float]:
        raise ValueError("no custom metrics API (custom.metrics.k8s.io) is registered")

    def get_external_metric(self, *args: Any) -> tuple[list[int], float]:
        raise ValueError("no external metrics API (external.metrics.k8s.io) is registered")


async def fetch_pod_metrics(transport: Any, namespace: str, selector: str) -> PodMetricsSnapshot:
    """GET the PodMetrics of the namespace's pods matching selector; errors become the snapshot's."""
    try:
        resp = await transport.request("GET", f"{METRICS_PATH}/namespaces/{quote(namespace, safe='')}/pods",
                                       {"labelSelector": selector} if selector else None, None, "application/json")
        raise_for_status(resp)
    except errors.StatusError as e:
        return PodMetricsSnapshot([], e.message or str(e))
    except OSError as e:
        return PodMetricsSnapshot([], str(e))
    return PodMetricsSnapshot(list(orjson.loads(resp.body).get("items") or []))


class ScaleClient:
    """Get and update `<resource>/scale` of a scale target named by apiVersion and kind.
    Built-in kinds map through the served resources; any other kind (a custom resource) through
    the API server's discovery of its group/version. Upstream: scale.ScalesGetter + RESTMapper"""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self._mapping: dict[tuple[str, str], tuple[str, str]] = {}     # (apiVersion, kind) -> (base path, plural)

    async def resource_for(self, api_version: str, kind: str) -> tuple[str, str]:
        """(the group-version's base path, the plural); ValueError as upstream's RESTMapper's."""
        key = (api_version, kind)
        if key in self._mapping:
            return self._mapping[key]
        group, _, version = api_version.rpartition("/")
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        plural = next((r.plural for r in served_resources() if (r.group, r.version, r.kind) == (group, version, kind)),
                      None) or await self._discover(base, kind)
        if plural is None:
            raise ValueError(f'no matches for kind "{kind}" in version "{api_version}"')
        self._mapping[key] = (base, plural)
        return base, plural

    async def _discover(self, base: str, kind: str) -> str | None:
        resp = await self.transport.request("GET", base, None, None, "application/json")
        if resp.status != 200:
            return None
        for r in orjson.loads(resp.body).get("resources") or []:
            if r.get("kind") == kind and "/" not in r.get("name", ""):
                return str(r["name"])
        return None

    async def get(self, namespace: str, api_version: str, kind: str, name: str) -> dict[str, Any]:
        base, plural = await self.resource_for(api_version, kind)
        resp = await self.transport.request("GET", f"{base}/namespaces/{namespace}/{plural}/{name}/scale",
                                            None, None, "application/json")
        raise_for_status(resp)
        return dict(orjson.loads(resp.body))

    async def update(self, namespace: str, api_version: str, kind: str, scale: dict[str, Any]) -> dict[str, Any]:
        base, plural = await self.resource_for(api_version, kind)
        name = scale["metadata"]["name"]
        resp = await self.transport.request("PUT", f"{base}/namespaces/{namespace}/{plural}/{name}/scale",
                                            None, orjson.dumps(scale), "application/json")
        raise_for_status(resp)
        return dict(orjson.loads(resp.body))


# --- custom.metrics.k8s.io and external.metrics.k8s.io ---------------------------------------------

CUSTOM_METRICS_PATH = "/apis/custom.metrics.k8s.io/v1beta2"
EXTERNAL_METRICS_PATH = "/apis/external.metrics.k8s.io/v1beta1"
DEFAULT_METRIC_WINDOW = 60.0          # upstream: metricServerDefaultMetricWindow
# client-go's words for an answer that is not a Status (an aggregated API that is missing or down).
_GENERIC = {404: "the server could not find the requested resource",
            503: "the server is currently unable to handle the request",
            401: "Unauthorized", 403: "Forbidden", 429: "Too many requests", 504: "Timeout"}


@dataclass(frozen=True, slots=True)
class MetricsAnswer:
    """What one custom or external metrics request answered (its MetricValueList or
    ExternalMetricValueList items), or the client's error; it answers the replica calculator's
    synchronous calls. Upstream: customMetricsClient, externalMetricsClient (client.go)"""

    items: list[dict[str, Any]]
    error: str = ""

    def get_raw_metric(self, metric_name: str, namespace: str, selector: Any, metric_selector: Any
                       ) -> tuple[PodMetricsInfo, float]:
        """Upstream: customMetricsClient.GetRawMetric"""
        if self.error:
            raise ValueError(f"unable to fetch metrics from custom metrics API: {self.error}")
        if not self.items:
            raise ValueError("no metrics returned from custom metrics API")
        res: PodMetricsInfo = {}
        for m in self.items:
            window = m.get("windowSeconds")
            res[(m.get("describedObject") or {}).get("name", "")] = PodMetric(
                _milli(m.get("value")), _time(m.get("timestamp")), float(window) if window is not None
                else DEFAULT_METRIC_WINDOW)
        return res, _time(self.items[0].get("timestamp"))

    def get_object_metric(self, metric_name: str, namespace: str, object_ref: Any, metric_selector: Any
                          ) -> tuple[int, float]:
        """Upstream: customMetricsClient.GetObjectMetric (the client wants exactly one value)."""
        if self.error:
            raise ValueError(f"unable to fetch metrics from custom metrics API: {self.error}")
        if len(self.items) != 1:
            raise ValueError("unable to fetch metrics from custom metrics API: the custom metrics API server "
                             f"returned {len(self.items)} results when we asked for exactly one")
        return _milli(self.items[0].get("value")), _time(self.items[0].get("timestamp"))

    def get_external_metric(self, metric_name: str, namespace: str, selector: Any) -> tuple[list[int], float]:
        """Upstream: externalMetricsClient.GetExternalMetric"""
        if self.error:
            raise ValueError(f"unable to fetch metrics from external metrics API: {self.error}")
        if not self.items:
            raise ValueError("no metrics returned from external metrics API")
        return [_milli(m.get("value")) for m in self.items], _time(self.items[0].get("timestamp"))


@dataclass(frozen=True, slots=True)
class Combined:
    """The calculator's MetricsClient for one metric: resource metrics from the PodMetrics
    snapshot, the others from this metric's answer. Upstream: restMetricsClient"""

    resources: PodMetricsSnapshot
    answer: MetricsAnswer

    def get_resource_metric(self, *args: Any) -> tuple[PodMetricsInfo, float]:
        return self.resources.get_resource_metric(*args)

    def get_raw_metric(self, *args: Any) -> tuple[PodMetricsInfo, float]:
        return self.answer.get_raw_metric(*args)

    def get_object_metric(self, *args: Any) -> tuple[int, float]:
        return self.answer.get_object_metric(*args)

    def get_external_metric(self, *args: Any) -> tuple[list[int], float]:
        return self.answer.get_external_metric(*args)


def metric_selector_string(selector: dict[str, Any] | None) -> str:
    """A metric's LabelSelector as a query string (labels.Everything() when unset)."""
    from ...api.labels import selector_string
    return selector_string(selector) if selector else ""


async def fetch_metric(transport: Any, scale_client: ScaleClient, namespace: str, spec: dict[str, Any],
                       pod_selector: str) -> MetricsAnswer:
    """GET what a Pods, Object or External metric needs:
    - Pods: custom.metrics.k8s.io .../namespaces/<ns>/pods/*/<metric>?labelSelector=<pods>;
    - Object: .../namespaces/<ns>/<resource>.<group>/<name>/<metric> (a Namespace:
      .../namespaces/<ns>/metrics/<metric>);
    - External: external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>?labelSelector=<metric's>.
    Upstream: k8s.io/metrics pkg/client/custom_metrics (GetForObjects, GetForObject),
    pkg/client/external_metrics (List)."""
    kind = spec.get("type", "")
    source = spec.get(kind.lower()) or {}
    metric = source.get("metric") or {}
    name = quote(str(metric.get("name", "")), safe="")
    ns = quote(namespace, safe="")
    query: dict[str, str] = {}
    if kind == "External":
        path, described = f"{EXTERNAL_METRICS_PATH}/namespaces/{ns}/{name}", f"{name}.external.metrics.k8s.io"
        if sel := metric_selector_string(metric.get("selector")):
            query["labelSelector"] = sel
    else:
        if sel := metric_selector_string(metric.get("selector")):
            query["metricLabelSelector"] = sel
        if kind == "Pods":
            path, described = f"{CUSTOM_METRICS_PATH}/namespaces/{ns}/pods/*/{name}", "pods.custom.metrics.k8s.io *"
            if pod_selector:
                query["labelSelector"] = pod_selector
        else:
            ref = source.get("describedObject") or {}
            api_version, obj_kind = ref.get("apiVersion", ""), ref.get("kind", "")
            if obj_kind == "Namespace" and api_version in ("v1", ""):
                path = f"{CUSTOM_METRICS_PATH}/namespaces/{ns}/metrics/{name}"
                described = f"namespaces.custom.metrics.k8s.io {namespace}"
            else:
                try:
                    _, plural = await scale_client.resource_for(api_version, obj_kind)
                except ValueError as e:
                    return MetricsAnswer([], str(e))
                group = api_version.rpartition("/")[0]
                resource = f"{plural}.{group}" if group else plural
                obj = quote(str(ref.get("name", "")), safe="")
                path = f"{CUSTOM_METRICS_PATH}/namespaces/{ns}/{resource}/{obj}/{name}"
                described = f"{resource}.custom.metrics.k8s.io {ref.get('name', '')}"
    try:
        resp = await transport.request("GET", path, query or None, None, "application/json")
    except OSError as e:
        return MetricsAnswer([], str(e))
    if resp.status >= 300:
        return MetricsAnswer([], _client_error(resp, described))
    try:
        body = orjson.loads(resp.body)
        return MetricsAnswer(list(body.get("items") or []))
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return MetricsAnswer([], "unable to decode the metrics API's answer")


def _client_error(resp: Any, described: str) -> str:
    """client-go's error text: a Status's message, or its generic words for the code with what
    was asked ("the server is currently unable to handle the request (get pods.custom.metrics.k8s.io *)")."""
    try:
        st = orjson.loads(resp.body)
    except orjson.JSONDecodeError:
        st = None
    unexpected = isinstance(st, dict) and any(c.get("reason") == "UnexpectedServerResponse"
                                              for c in (st.get("details") or {}).get("causes") or [])
    if isinstance(st, dict) and st.get("kind") == "Status" and st.get("message") and not unexpected:
        return str(st["message"])
    generic = _GENERIC.get(resp.status, f"an error on the server ({resp.body.decode(errors='replace')[:200]!r}) "
                                        "has prevented the request from succeeding")
    return f"{generic} (get {described})"


def _milli(value: Any) -> int:
    from ...api import quantity
    try:
        return quantity.milli_value(str(value))
    except (errors.StatusError, ValueError, TypeError):
        return 0


def _time(ts: Any) -> float:
    return parse_rfc3339(ts) if isinstance(ts, str) and ts else _ZERO_TIME
