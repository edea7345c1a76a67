"""The EndpointSlice mirroring controller's metrics, registered once in the default REGISTRY.

    endpoint_slice_mirroring_controller_endpoints_added_per_sync      histogram 2 .. 32768
    endpoint_slice_mirroring_controller_endpoints_updated_per_sync    histogram 2 .. 32768
    endpoint_slice_mirroring_controller_endpoints_removed_per_sync    histogram 2 .. 32768
    endpoint_slice_mirroring_controller_addresses_skipped_per_sync    histogram 2 .. 32768
    endpoint_slice_mirroring_controller_endpoints_sync_duration       histogram 1 ms .. 16 s
    endpoint_slice_mirroring_controller_endpoints_desired             gauge
    endpoint_slice_mirroring_controller_num_endpoint_slices           gauge
    endpoint_slice_mirroring_controller_desired_endpoint_slices       gauge
    endpoint_slice_mirroring_controller_changes{operation}            counter (create | update | delete)

The gauges are kept per Endpoints and port set by the EndpointSlice controller's `Cache`
(without its placeholder slice). Upstream: pkg/controller/endpointslicemirroring/metrics
(metrics.go, cache.go; all ALPHA).
"""
from __future__ import annotations

from prometheus_client import Histogram

from ..endpointslice.metrics import PER_SYNC_BUCKETS, Metrics

SUBSYSTEM = "endpoint_slice_mirroring_controller"

MIRRORING = Metrics(SUBSYSTEM, "Endpoints", "ALPHA", "[ALPHA] Number of EndpointSlice changes")
ENDPOINTS_UPDATED_PER_SYNC = Histogram(
    f"{SUBSYSTEM}_endpoints_updated_per_sync", "[ALPHA] Number of endpoints updated on each Endpoints sync",
    buckets=PER_SYNC_BUCKETS)
ADDRESSES_SKIPPED_PER_SYNC = Histogram(
    f"{SUBSYSTEM}_addresses_skipped_per_sync",
    "[ALPHA] Number of addresses skipped on each Endpoints sync due to being invalid or exceeding "
    "MaxEndpointsPerSubset", buckets=PER_SYNC_BUCKETS)
ENDPOINTS_SYNC_DURATION = Histogram(
    f"{SUBSYSTEM}_endpoints_sync_duration", "[ALPHA] Duration of syncEndpoints() in seconds",
    buckets=[0.001 * 2 ** i for i in range(15)])           # ExponentialBuckets(0.001, 2, 15)
