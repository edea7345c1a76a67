"""The PersistentVolume binder's metrics, registered once in prometheus_client's default REGISTRY.

    pv_collector_total_pv_count{plugin_name, volume_mode}                          gauge
    pv_collector_bound_pv_count{storage_class}                                     gauge
    pv_collector_unbound_pv_count{storage_class}                                   gauge
    pv_collector_bound_pvc_count{namespace, storage_class, volume_attributes_class}   gauge
    pv_collector_unbound_pvc_count{namespace, storage_class, volume_attributes_class} gauge
    volume_operation_total_seconds{plugin_name, operation_name}    histogram 0.1 s .. 600 s
    volume_operation_total_errors{plugin_name, operation_name}     counter (no _total suffix upstream)

The counts are computed from the controller's informer caches when /metrics is scraped, as
upstream's pvAndPVCCountCollector (nothing is kept per object). An operation's end-to-end time
runs from when the controller hands a claim to its external provisioner ("provision") or a
released volume to it ("delete") until the claim is bound or the volume gone. Upstream:
pkg/controller/volume/persistentvolume/metrics/metrics.go, pkg/volume/util/metrics.go
(storageOperationEndToEndLatencyMetric). retroactive_storageclass_total is not here: the binder
does not assign a default class to existing claims.
"""
from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import Histogram
from prometheus_client.core import REGISTRY, GaugeMetricFamily
from prometheus_client.registry import Collector

from ....utils.clock import Clock
from ....utils.plain_counter import PlainCounterVec

if TYPE_CHECKING:
    from ....api.types import core_v1

PLUGIN_NAME_NOT_AVAILABLE = "N/A"
PROVISION, DELETE = "provision", "delete"

VOLUME_OPERATION_TOTAL_SECONDS = Histogram(
    "volume_operation_total_seconds", "[ALPHA] Storage operation end to end duration in seconds",
    ["plugin_name", "operation_name"], buckets=[.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600])
VOLUME_OPERATION_TOTAL_ERRORS = PlainCounterVec(
    "volume_operation_total_errors", "[ALPHA] Total volume operation errors", ("plugin_name", "operation_name"))


def pv_plugin_name(pv: core_v1.PersistentVolume) -> str:
    """The in-tree plugin that would handle the volume. Upstream: getPVPluginName"""
    spec = pv.spec
    if spec is None:
        return PLUGIN_NAME_NOT_AVAILABLE
    if spec.csi is not None:
        return f"kubernetes.io/csi:{spec.csi.driver}"     # GetFullQualifiedPluginNameForVolume
    for field, name in (("host_path", "kubernetes.io/host-path"), ("local", "kubernetes.io/local-volume"),
                        ("nfs", "kubernetes.io/nfs"), ("iscsi", "kubernetes.io/iscsi"), ("fc", "kubernetes.io/fc")):
        if getattr(spec, field, None) is not None:
            return name
    return PLUGIN_NAME_NOT_AVAILABLE


class PVAndPVCCountCollector(Collector):
    """Upstream: pvAndPVCCountCollector (the listers of the newest controller of the process)."""

    def __init__(self) -> None:
        self.volume_lister: Any = None
        self.claim_lister: Any = None

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if self.volume_lister is None:
            return
        total: Tally[tuple[str, str]] = Tally()
        bound: Tally[tuple[str]] = Tally()
        unbound: Tally[tuple[str]] = Tally()
        for pv in self.volume_lister.list():
            total[(pv_plugin_name(pv), (pv.spec.volume_mode if pv.spec else None) or "Filesystem")] += 1
            phase = pv.status.phase if pv.status else None
            (bound if phase == "Bound" else unbound)[((pv.spec.storage_class_name if pv.spec else None) or "",)] += 1
        claims_bound: Tally[tuple[str, str, str]] = Tally()
        claims_unbound: Tally[tuple[str, str, str]] = Tally()
        for pvc in self.claim_lister.list():
            key = (pvc.metadata.namespace or "", (pvc.spec.storage_class_name if pvc.spec else None) or "",
                   (pvc.spec.volume_attributes_class_name if pvc.spec else None) or "")
            (claims_bound if (pvc.status.phase if pvc.status else None) == "Bound" else claims_unbound)[key] += 1
        yield _gauge("pv_collector_total_pv_count", "Gauge measuring total number of persistent volumes",
                     ["plugin_name", "volume_mode"], total)
        yield _gauge("pv_collector_bound_pv_count", "Gauge measuring number of persistent volume currently bound",
                     ["storage_class"], bound)
        yield _gauge("pv_collector_unbound_pv_count", "Gauge measuring number of persistent volume currently unbound",
                     ["storage_class"], unbound)
        labels = ["namespace", "storage_class", "volume_attributes_class"]
        yield _gauge("pv_collector_bound_pvc_count",
                     "Gauge measuring number of persistent volume claim currently bound", labels, claims_bound)
        yield _gauge("pv_collector_unbound_pvc_count",
                     "Gauge measuring number of persistent volume claim currently unbound", labels, claims_unbound)


def _gauge(name: str, documentation: str, labels: list[str], counts: Tally[Any]) -> GaugeMetricFamily:
    g = GaugeMetricFamily(name, f"[ALPHA] {documentation}", labels=labels)
    for values, n in counts.items():
        g.add_metric(list(values), n)
    return g


COLLECTOR = PVAndPVCCountCollector()
REGISTRY.register(COLLECTOR)


def register(volume_lister: Any, claim_lister: Any) -> None:
    """Upstream: metrics.Register (here: the collector reads these listers from now on)."""
    COLLECTOR.volume_lister, COLLECTOR.claim_lister = volume_lister, claim_lister


class OperationStartTimeCache:
    """When each provision/delete began, by claim key or volume name. Upstream: OperationStartTimeCache"""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.cache: dict[str, tuple[str, str, float]] = {}

    def add_if_not_exist(self, key: str, plugin_name: str, operation: str) -> None:
        self.cache.setdefault(key, (plugin_name, operation, self.clock.monotonic()))

    def delete(self, key: str) -> None:
        self.cache.pop(key, None)

    def has(self, key: str) -> bool:
        return key in self.cache

    def record(self, key: str, err: BaseException | None) -> None:
        """An error counts (the start kept: the operation goes on); success observes the time
        and forgets it. Upstream: RecordMetric"""
        entry = self.cache.get(key)
        if entry is None:
            return
        plugin, operation, start = entry
        plugin = plugin or PLUGIN_NAME_NOT_AVAILABLE
        if err is not None:
            VOLUME_OPERATION_TOTAL_ERRORS.inc(plugin, operation)
            return
        VOLUME_OPERATION_TOTAL_SECONDS.labels(plugin, operation).observe(self.clock.monotonic() - start)
        del self.cache[key]
