"""The kubelet's Prometheus metrics, with upstream's names, labels, help texts and buckets.

    kubelet_node_name{node}                                    1 for each node of the process
    kubelet_running_pods                                       pods with a ready sandbox
    kubelet_running_containers{container_state}                created | running | exited
    kubelet_started_pods_total, kubelet_started_pods_errors_total      sandboxes created (failed)
    kubelet_started_containers_total{container_type}           container | init_container
    kubelet_pod_worker_duration_seconds{operation_type}        create | update | sync | terminated
    kubelet_pod_start_duration_seconds                         first seen -> phase Running
    kubelet_pod_start_sli_duration_seconds{first_with_network}     created -> all containers
    kubelet_pod_start_total_duration_seconds{first_with_network}   started, seen on the watch
    prober_probe_total{probe_type, result, container, pod, namespace, pod_uid}
    prober_probe_duration_seconds{probe_type, container, pod, namespace}

**Many nodes, one process.** Upstream runs one kubelet per node and every series above is that
node's; here one kubelet process hosts N nodes (and a test process may run several Kubelets).
The names and labels stay upstream's, and a series covers every node of the process, as if
the N kubelets' scrapes were summed: kubelet_node_name has one series per node (value 1, as
upstream's), the gauges count over all of the process's pods, the counters and histograms add
up what every node did. A pod's series (prober_*) are per pod, as upstream's, whatever its
node. The one per-node notion kept apart is first_with_network="true": each node's first pod
with pod networking gets it, as on N separate kubelets. A per-node label would change
upstream's label sets and multiply every series by N (1,000 nodes), so there is none.

**Cardinality.** Operation types, container types and states are fixed sets. prober_* carry a
pod's labels, as upstream: a series lives while the pod has probe workers and goes with the
pod (upstream deletes a worker's series when it stops), so at most (probed containers) x
(probe types) x (3 results) series exist. A stopped kubelet's series go with it.

**Costs.** The hooks run on the kubelet's hot paths (every sync, status and watch event of
thousands of pods), so, as apiserver/metrics.py and the workqueues do, they keep plain numbers
(an attribute increment, a bisect into a list: ~0.1-0.3 us against ~0.6 us for
prometheus_client's Histogram.observe and ~6 us for labels()), and collectors turn them into
metric families when /metrics is scraped. The gauges cost nothing between scrapes: they are
counted from the runtime at scrape time (upstream's PLEG sets them on every relist).

Upstream: pkg/kubelet/metrics/metrics.go; pkg/kubelet/prober/prober_manager.go (ProberResults,
ProberDuration) and worker.go (their labels, and Delete when a worker stops).
"""
from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

from .runtime import CREATED, EXITED, PROBE_FAILURE, PROBE_SUCCESS, RUNNING, SANDBOX_READY, Runtime

DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)     # prometheus.DefBuckets
# Upstream: podStartupDurationBuckets, round numbers from 0.5 s to an hour.
POD_START_BUCKETS = (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200,
                     1800, 2700, 3600)

# operation_type values: upstream's SyncPodType strings, and "terminated" for a pod's last sync.
CREATE, UPDATE, SYNC, TERMINATED = "create", "update", "sync", "terminated"
CONTAINER, INIT_CONTAINER = "container", "init_container"       # container_type values
# Runtime states -> upstream's kubecontainer.ContainerState. Creating (pulling, creating) and
# Waiting (a failed pull) are attempts with no container in the runtime yet.
CONTAINER_STATES = {CREATED: "created", RUNNING: "running", EXITED: "exited"}
PROBE_TYPES = {"readiness": "Readiness", "liveness": "Liveness", "startup": "Startup"}   # probeType.String()


_LE: dict[tuple[float, ...], tuple[str, ...]] = {}     # bounds -> their "le" labels, "+Inf" last


class Histogram:
    """Bucket counts (not cumulative; the last one is +Inf) and a sum, for one series."""

    __slots__ = ("bounds", "counts", "le", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        le = _LE.get(bounds)
        if le is None:
            le = _LE[bounds] = (*(floatToGoString(b) for b in bounds), "+Inf")
        self.le = le

    def observe(self, v: float) -> None:
        self.counts[bisect_left(self.bounds, v)] += 1     # first bound >= v: Prometheus' "le"
        self.sum += v

    def count(self) -> int:
        return sum(self.counts)

    def merge(self, other: Histogram) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts)]
        self.sum += other.sum

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative, "+Inf" last: what HistogramMetricFamily.add_metric takes."""
        out: list[tuple[str, float]] = []
        total = 0
        for le, n in zip(self.le, self.counts):
            total += n
            out.append((le, total))
        return out


class Counters:
    """The process's kubelet counters (upstream's package-level metric variables)."""

    __slots__ = ("started_containers", "started_init_containers", "started_pods", "started_pods_errors")

    def __init__(self) -> None:
        self.started_pods = 0               # StartedPodsTotal: sandbox creations asked of the runtime
        self.started_pods_errors = 0        # StartedPodsErrorsTotal: those the runtime refused
        self.started_containers = 0         # StartedContainersTotal{container_type="container"}
        self.started_init_containers = 0    # ... {container_type="init_container"}


COUNTERS = Counters()
pod_worker_duration: dict[str, Histogram] = {}                 # operation_type -> histogram
pod_start_duration = Histogram(POD_START_BUCKETS)
pod_start_sli_duration: dict[str, Histogram] = {}              # first_with_network -> histogram
pod_start_total_duration: dict[str, Histogram] = {}


def observe_pod_worker(operation: str, seconds: float) -> None:
    """Upstream: PodWorkerDuration.WithLabelValues(updateType).Observe (podWorkerLoop)."""
    h = pod_worker_duration.get(operation)
    if h is None:
        h = pod_worker_duration[operation] = Histogram(DEF_BUCKETS)
    h.observe(seconds)


def observe_pod_start_sli(first_with_network: bool, sli: float, total: float) -> None:
    """Upstream: PodStartSLIDuration and PodStartTotalDuration (ObservedPodOnWatch)."""
    label = "true" if first_with_network else ""
    for by_label, v in ((pod_start_sli_duration, sli), (pod_start_total_duration, total)):
        h = by_label.get(label)
        if h is None:
            h = by_label[label] = Histogram(POD_START_BUCKETS)
        h.observe(v)


class ProbeSeries:
    """One probe worker's series: results by kind, and the duration of successful and unknown
    probes (upstream observes no duration for a failure). Kept by the prober manager per
    (pod uid, container, probe type) while the pod has probes, dropped with the pod.
    """

    __slots__ = ("duration", "labels", "results")

    def __init__(self, probe_type: str, container: str, pod: str, namespace: str, pod_uid: str) -> None:
        self.labels = (PROBE_TYPES.get(probe_type, "UNKNOWN"), container, pod, namespace, pod_uid)
        self.results = [0, 0, 0]            # successful, failed, unknown
        self.duration = Histogram(DEF_BUCKETS)

    def record(self, result: str, seconds: float) -> None:
        """Upstream: the switch on the result in worker.doProbe."""
        if result == PROBE_SUCCESS:
            self.results[0] += 1
            self.duration.observe(seconds)
        elif result == PROBE_FAILURE:
            self.results[1] += 1
        else:
            self.results[2] += 1
            self.duration.observe(seconds)


class Host(Protocol):
    """What the collectors read from a running kubelet (a Kubelet is one)."""

    node_names: list[str]
    runtime: Runtime

    @property
    def probe_series(self) -> Iterable[ProbeSeries]:
        """The live probe workers' series."""


_kubelets: weakref.WeakSet[Any] = weakref.WeakSet()
_ran = False                        # a kubelet has run in this process: its families are served
_seen_states: set[str] = set()      # container states reported once are reported (0) ever after


def register(kl: Host) -> None:
    """A kubelet starts: its nodes, pods and probes are scraped from now on."""
    global _ran
    _ran = True
    _kubelets.add(kl)


def unregister(kl: Host) -> None:
    _kubelets.discard(kl)


class KubeletCollector:
    """The kubelet_* families, built when the registry is scraped."""

    def collect(self) -> Iterator[Any]:
        if not _ran:
            return                  # no kubelet in this process (a scheduler, `up --nodes 0`)
        kubelets = list(_kubelets)
        node_name = GaugeMetricFamily("kubelet_node_name", "[ALPHA] The node's name. The count is always 1.",
                                      labels=["node"])
        for kl in kubelets:
            for name in kl.node_names:
                node_name.add_metric([name], 1)
        yield node_name
        yield from _running(kubelets)
        yield from _started()
        yield from _durations()


def _running(kubelets: list[Host]) -> Iterator[Any]:
    """Upstream: updateRunningPodAndContainerMetrics (generic PLEG), over the runtimes' pods."""
    pods, states = 0, dict.fromkeys(_seen_states, 0)
    for kl in kubelets:
        rt = kl.runtime
        for uid in rt.list_pods():
            st = rt.pod_status(uid)
            if st is None:
                continue
            if st.sandbox is not None and st.sandbox.state == SANDBOX_READY:
                pods += 1
            for c in st.containers:
                state = CONTAINER_STATES.get(c.state)
                if state is not None:
                    states[state] = states.get(state, 0) + 1
    _seen_states.update(states)
    yield GaugeMetricFamily("kubelet_running_pods", "[ALPHA] Number of pods that have a running pod sandbox",
                            value=pods)
    running = GaugeMetricFamily("kubelet_running_containers", "[ALPHA] Number of containers currently running",
                                labels=["container_state"])
    for state, n in sorted(states.items()):
        running.add_metric([state], n)
    yield running


def _started() -> Iterator[Any]:
    c = COUNTERS
    yield CounterMetricFamily("kubelet_started_pods", "[ALPHA] Cumulative number of pods started",
                              value=c.started_pods)
    yield CounterMetricFamily("kubelet_started_pods_errors", "[ALPHA] Cumulative number of errors when starting pods",
                              value=c.started_pods_errors)
    containers = CounterMetricFamily("kubelet_started_containers", "[ALPHA] Cumulative number of containers started",
                                     labels=["container_type"])
    for label, n in ((CONTAINER, c.started_containers), (INIT_CONTAINER, c.started_init_containers)):
        if n:
            containers.add_metric([label], n)
    yield containers


def _durations() -> Iterator[Any]:
    worker = HistogramMetricFamily(
        "kubelet_pod_worker_duration_seconds",
        "[ALPHA] Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
        labels=["operation_type"])
    for op, h in sorted(pod_worker_duration.items()):
        worker.add_metric([op], h.buckets(), h.sum)
    yield worker
    start = HistogramMetricFamily(
        "kubelet_pod_start_duration_seconds",
        "[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run")
    start.add_metric([], pod_start_duration.buckets(), pod_start_duration.sum)
    yield start
    for name, help_, by_label in (
            ("kubelet_pod_start_sli_duration_seconds",
             "[ALPHA] Duration in seconds to start a pod, excluding time to pull images and run init containers, "
             "measured from pod creation timestamp to when all its containers are reported as started and observed "
             "via watch", pod_start_sli_duration),
            ("kubelet_pod_start_total_duration_seconds",
             "[ALPHA] Duration in seconds to start a pod since creation, including time to pull images and run init "
             "containers, measured from pod creation timestamp to when all its containers are reported as started "
             "and observed via watch", pod_start_total_duration)):
        fam = HistogramMetricFamily(name, help_, labels=["first_with_network"])
        for label, h in sorted(by_label.items()):
            fam.add_metric([label], h.buckets(), h.sum)
        yield fam


class ProberCollector:
    """prober_probe_total and prober_probe_duration_seconds of every live probe worker.

    The duration has no pod_uid label (upstream's labels): two pods of one name (a pod
    recreated under the same name) share its series, so they are merged here.
    """

    def collect(self) -> Iterator[Any]:
        total = CounterMetricFamily(
            "prober_probe_total",
            "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
            labels=["probe_type", "result", "container", "pod", "namespace", "pod_uid"])
        durations: dict[tuple[str, ...], Histogram] = {}
        for kl in list(_kubelets):
            for s in list(kl.probe_series):
                probe_type, container, pod, namespace, uid = s.labels
                for result, n in zip(("successful", "failed", "unknown"), s.results):
                    if n:
                        total.add_metric([probe_type, result, container, pod, namespace, uid], n)
                if s.results[0] or s.results[2]:
                    key = s.labels[:4]
                    seen = durations.get(key)
                    if seen is None:
                        durations[key] = s.duration
                    else:                          # a copy: the series' own histogram stays as it is
                        merged = durations[key] = Histogram(DEF_BUCKETS)
                        merged.merge(seen)
                        merged.merge(s.duration)
        duration = HistogramMetricFamily("prober_probe_duration_seconds",
                                         "[ALPHA] Duration in seconds for a probe response.",
                                         labels=["probe_type", "container", "pod", "namespace"])
        for key, h in durations.items():
            duration.add_metric(list(key), h.buckets(), h.sum)
        if total.samples:
            yield total
        if duration.samples:
            yield duration


PROBER_COLLECTOR = ProberCollector()
REGISTRY.register(KubeletCollector())
REGISTRY.register(PROBER_COLLECTOR)
# What the kubelet serves at /metrics/probes: the prober families alone (upstream: a registry
# holding ProberResults and ProberDuration, server.go).
PROBES_REGISTRY = CollectorRegistry(auto_describe=False)
PROBES_REGISTRY.register(PROBER_COLLECTOR)
