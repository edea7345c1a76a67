"""Leader election metrics, registered once in prometheus_client's default REGISTRY.

Upstream: client-go tools/leaderelection/metrics.go and component-base
metrics/prometheus/clientgo/leaderelection/metrics.go (names, help, ALPHA stability).
"""
from __future__ import annotations

from prometheus_client import Counter, Gauge

LEADER_GAUGE = Gauge(
    "leader_election_master_status",
    "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
    "master. 'name' is the string used to identify the lease. Please make sure to group by name.", ["name"])
LEADER_SLOWPATH = Counter(
    "leader_election_slowpath",
    "[ALPHA] Total number of slow path exercised in renewing leader leases. 'name' is the string used to "
    "identify the lease. Please make sure to group by name.", ["name"])


def leader_on(name: str) -> None:
    LEADER_GAUGE.labels(name).set(1)


def leader_off(name: str) -> None:
    LEADER_GAUGE.labels(name).set(0)


def slowpath_exercised(name: str) -> None:
    LEADER_SLOWPATH.labels(name).inc()
