"""The EndpointSlice controller's metrics, registered once in prometheus_client's default REGISTRY.

    endpoint_slice_controller_endpoints_added_per_sync        histogram 2 .. 32768
    endpoint_slice_controller_endpoints_removed_per_sync      histogram 2 .. 32768
    endpoint_slice_controller_endpoints_desired               gauge
    endpoint_slice_controller_num_endpoint_slices             gauge
    endpoint_slice_controller_desired_endpoint_slices         gauge
    endpoint_slice_controller_changes{operation}              counter (create | update | delete)
    endpoint_slice_controller_changes_total{operation}        counter (its successor, same values)
    endpoint_slice_controller_endpointslices_changed_per_sync{topology, traffic_distribution}
    endpoint_slice_controller_syncs{result}                   counter (success | stale | error)
    endpoint_slice_controller_services_count_by_traffic_distribution{traffic_distribution}

The three gauges are kept by `Cache`, per Service and port set, as upstream's metrics cache:
desired slices are what a perfect packing of each port set's endpoints would need (at least one
placeholder overall). Recorded once per Service sync, never per pod.

Upstream: k8s.io/endpointslice metrics/metrics.go and metrics/cache.go (names, help, buckets).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Gauge, Histogram

from ...utils.plain_counter import PlainCounterVec

SUBSYSTEM = "endpoint_slice_controller"
PER_SYNC_BUCKETS = [2.0 * 2 ** i for i in range(15)]          # ExponentialBuckets(2, 2, 15)
# Upstream: prometheus.DefBuckets (no buckets given)
_DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]


class Metrics:
    """One controller's per-sync and gauge series (the mirroring controller has its own set,
    at ALPHA, with the same names under its subsystem)."""

    def __init__(self, subsystem: str, what: str, stability: str, changes_help: str) -> None:
        p, s = f"{subsystem}_", f"[{stability}] "
        self.endpoints_added_per_sync = Histogram(
            p + "endpoints_added_per_sync", f"{s}Number of endpoints added on each {what} sync",
            buckets=PER_SYNC_BUCKETS)
        self.endpoints_removed_per_sync = Histogram(
            p + "endpoints_removed_per_sync", f"{s}Number of endpoints removed on each {what} sync",
            buckets=PER_SYNC_BUCKETS)
        self.endpoints_desired = Gauge(p + "endpoints_desired", s + "Number of endpoints desired")
        self.num_endpoint_slices = Gauge(p + "num_endpoint_slices", s + "Number of EndpointSlices")
        self.desired_endpoint_slices = Gauge(
            p + "desired_endpoint_slices", s + "Number of EndpointSlices that would exist with perfect endpoint "
                                               "allocation")
        self.changes = PlainCounterVec(p + "changes", changes_help, ("operation",))


# `changes` is deprecated from 1.38.0 on (for changes_total): a 1.37 help text does not say so yet.
ENDPOINT_SLICE = Metrics(SUBSYSTEM, "Service", "BETA", "[ALPHA] Number of EndpointSlice changes")
CHANGES_TOTAL = PlainCounterVec(f"{SUBSYSTEM}_changes_total", "[ALPHA] Number of EndpointSlice changes",
                                ("operation",))
ENDPOINT_SLICES_CHANGED_PER_SYNC = Histogram(
    f"{SUBSYSTEM}_endpointslices_changed_per_sync", "[ALPHA] Number of EndpointSlices changed on each Service sync",
    ["topology", "traffic_distribution"], buckets=_DEFAULT_BUCKETS)
SYNCS = PlainCounterVec(f"{SUBSYSTEM}_syncs", "[ALPHA] Number of EndpointSlice syncs", ("result",))
SERVICES_COUNT_BY_TRAFFIC_DISTRIBUTION = Gauge(
    f"{SUBSYSTEM}_services_count_by_traffic_distribution",
    "[BETA] Number of Services using some specific trafficDistribution", ["traffic_distribution"])

CREATE, UPDATE, DELETE = "create", "update", "delete"


def slice_changed(operation: str) -> None:
    """Upstream: EndpointSliceChanges and EndpointSliceChangesTotal, both counted."""
    ENDPOINT_SLICE.changes.inc(operation)
    CHANGES_TOTAL.inc(operation)


def track_sync(err: BaseException | None, stale: type[BaseException]) -> None:
    """Upstream: trackSync (the controller's handleErr)."""
    SYNCS.inc("success" if err is None else "stale" if isinstance(err, stale) else "error")


@dataclass(frozen=True)
class EfficiencyInfo:
    """Upstream: EfficiencyInfo — one port set's desired endpoints and the slices it will have."""
    endpoints: int
    slices: int


def num_desired_slices(num_endpoints: int, max_endpoints_per_slice: int) -> int:
    """Upstream: numDesiredSlices"""
    if num_endpoints == 0:
        return 0
    if num_endpoints <= max_endpoints_per_slice:
        return 1
    return math.ceil(num_endpoints / max_endpoints_per_slice)


@dataclass
class ServicePortCache:
    """Upstream: ServicePortCache"""
    items: dict[Any, EfficiencyInfo] = field(default_factory=dict)

    def set(self, port_map_key: Any, info: EfficiencyInfo) -> None:
        self.items[port_map_key] = info

    def totals(self, max_endpoints_per_slice: int, placeholder: bool = True) -> tuple[int, int, int]:
        """(actual slices, desired slices, endpoints); a Service always has a placeholder (a
        mirrored Endpoints has none: upstream's EndpointPortCache)."""
        actual = sum(i.slices for i in self.items.values())
        desired = sum(num_desired_slices(i.endpoints, max_endpoints_per_slice) for i in self.items.values())
        endpoints = sum(i.endpoints for i in self.items.values())
        return actual, max(desired, 1) if placeholder else desired, endpoints


class Cache:
    """The cluster-wide totals behind the gauges, kept per Service. Upstream: metrics.Cache"""

    def __init__(self, max_endpoints_per_slice: int, metrics: Metrics = ENDPOINT_SLICE, *,
                 mirroring: bool = False) -> None:
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.metrics = metrics
        self.placeholder = self.traffic_distribution = not mirroring
        self.num_endpoints = self.num_slices_actual = self.num_slices_desired = 0
        self.cache: dict[tuple[str, str], ServicePortCache] = {}
        self.services_by_traffic_distribution: dict[str, set[tuple[str, str]]] = {}

    def update_service_port_cache(self, service: tuple[str, str], sp: ServicePortCache) -> None:
        prev = self.cache.get(service)
        p_actual, p_desired, p_eps = prev.totals(self.max_endpoints_per_slice, self.placeholder) if prev else (0, 0, 0)
        actual, desired, eps = sp.totals(self.max_endpoints_per_slice, self.placeholder)
        self.num_endpoints += eps - p_eps
        self.num_slices_actual += actual - p_actual
        self.num_slices_desired += desired - p_desired
        self.cache[service] = sp
        self.update_metrics()

    def update_traffic_distribution_for_service(self, service: tuple[str, str], value: str | None) -> None:
        """Upstream: UpdateTrafficDistributionForService"""
        for services in self.services_by_traffic_distribution.values():
            services.discard(service)
        if value:
            self.services_by_traffic_distribution.setdefault(value, set()).add(service)
        self.update_metrics()

    def delete_service(self, service: tuple[str, str]) -> None:
        """Upstream: DeleteService"""
        prev = self.cache.pop(service, None)
        if prev is not None:
            actual, desired, eps = prev.totals(self.max_endpoints_per_slice, self.placeholder)
            self.num_endpoints -= eps
            self.num_slices_actual -= actual
            self.num_slices_desired -= desired
        for services in self.services_by_traffic_distribution.values():
            services.discard(service)
        self.update_metrics()

    def update_metrics(self) -> None:
        self.metrics.num_endpoint_slices.set(self.num_slices_actual)
        self.metrics.desired_endpoint_slices.set(self.num_slices_desired)
        self.metrics.endpoints_desired.set(self.num_endpoints)
        if self.traffic_distribution:
            for value, services in self.services_by_traffic_distribution.items():
                SERVICES_COUNT_BY_TRAFFIC_DISTRIBUTION.labels(value).set(len(services))
