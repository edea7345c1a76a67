"""What the HPA reads and writes besides HPAs: the target's scale subresource and the pods'
resource metrics (metrics.k8s.io), both through the API server.

The replica calculator is synchronous (plain arithmetic over listers), while reading metrics is
I/O: the controller fetches a selector's PodMetrics once per sync (fetch_pod_metrics) and hands
the calculator a PodMetricsSnapshot, a MetricsClient over that answer.

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
from .metrics.interfaces import PodMetricsInfo, get_container_metrics, get_pod_metrics

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
