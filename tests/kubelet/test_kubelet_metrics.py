"""The kubelet's metrics, scraped from prometheus_client's registry as /metrics serves them, while
a kubelet runs pods on the fake clock (a real in-process API server behind the fake clientset).

Counters and histograms are the process's (upstream's package-level metrics), so each test
compares a scrape taken before with one taken after; gauges and prober series belong to the
live kubelets, and each test's kubelet is the only one running.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubeplane.api.types import core_v1, from_dict
from kubeplane.kubelet import metrics
from kubeplane.kubelet.metrics import PROBES_REGISTRY
from kubeplane.kubelet.pod_startup_latency_tracker import PodStartupLatencyTracker
from kubeplane.kubelet.runtime.sim.lifecycle import Delay, Stage, load_profile
from kubeplane.utils.clock import FakeClock, rfc3339

from kubelet_testutil import advance

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(registry: CollectorRegistry = REGISTRY) -> Samples:
    """Every sample of the registry's text exposition, parsed back."""
    out: Samples = {}
    for fam in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, metric: str, **labels: str) -> float:
    return samples.get((metric, tuple(sorted(labels.items()))), 0.0)


def delta(before: Samples, after: Samples, metric: str, **labels: str) -> float:
    return value(after, metric, **labels) - value(before, metric, **labels)


def pulls_take(seconds: float) -> list[Stage]:
    """The default profile with every delay removed but the image pull's, fixed at `seconds`."""
    return [replace(s, delay=Delay(duration_ms=int(seconds * 1000)) if s.name == "container-pulled" else Delay())
            for s in load_profile("default")]


def pod(name: str, **container: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "nginx", "image": "nginx", **container}]}}


async def test_a_started_pod_is_counted_and_its_start_timed_once(make_env: Any) -> None:
    env = await make_env(pulls_take(2.0))
    before = scrape()
    await env.create_pod({"metadata": {"name": "web"},
                          "spec": {"initContainers": [{"name": "setup", "image": "busybox"}],
                                   "containers": [{"name": "nginx", "image": "nginx"}]}})
    await advance(env.clock, 6)
    assert (await env.pod("web")).status.phase == "Running"
    after = scrape()
    assert delta(before, after, "kubelet_started_pods_total") == 1
    assert delta(before, after, "kubelet_started_pods_errors_total") == 0
    assert delta(before, after, "kubelet_started_containers_total", container_type="container") == 1
    assert delta(before, after, "kubelet_started_containers_total", container_type="init_container") == 1
    assert delta(before, after, "kubelet_pod_worker_duration_seconds_count", operation_type="create") == 1
    # seen at t, init container pulled at t+2, app container pulled (and Running) at t+4
    assert delta(before, after, "kubelet_pod_start_duration_seconds_count") == 1
    assert delta(before, after, "kubelet_pod_start_duration_seconds_sum") == pytest.approx(4.0)
    assert delta(before, after, "kubelet_pod_start_duration_seconds_bucket", le="3.0") == 0
    assert delta(before, after, "kubelet_pod_start_duration_seconds_bucket", le="4.0") == 1
    # created at t (the fake clock starts on a whole second), every container running on the watch at t+4
    for name in ("kubelet_pod_start_sli_duration_seconds", "kubelet_pod_start_total_duration_seconds"):
        assert delta(before, after, f"{name}_count", first_with_network="true") == 1
        assert delta(before, after, f"{name}_sum", first_with_network="true") == pytest.approx(4.0)

    await env.create_pod(pod("second"))
    await advance(env.clock, 4)
    again = scrape()
    assert delta(before, again, "kubelet_started_pods_total") == 2
    assert delta(before, again, "kubelet_pod_start_duration_seconds_count") == 2       # once per pod
    assert delta(after, again, "kubelet_pod_start_sli_duration_seconds_count", first_with_network="") == 1
    assert delta(after, again, "kubelet_pod_start_sli_duration_seconds_count", first_with_network="true") == 0
    assert env.kubelet.startup.pods == {}          # both pods measured: nothing kept


async def test_running_gauges_follow_the_pods_of_every_node(make_env: Any) -> None:
    env = await make_env("default", nodes=2, zero=True)
    s = scrape()
    assert value(s, "kubelet_node_name", node="node-0") == 1 and value(s, "kubelet_node_name", node="node-1") == 1
    assert value(s, "kubelet_running_pods") == 0
    await env.create_pod(pod("a"))
    b = pod("b")
    b["spec"]["nodeName"] = "node-1"
    await env.create_pod(b)
    await advance(env.clock, 2)
    s = scrape()
    assert value(s, "kubelet_running_pods") == 2                          # summed over the process's nodes
    assert value(s, "kubelet_running_containers", container_state="running") == 2

    await env.cs.core_v1().pods("default").delete("a")
    await advance(env.clock, 5)
    s = scrape()
    assert value(s, "kubelet_running_pods") == 1
    assert value(s, "kubelet_running_containers", container_state="running") == 1
    assert ("kubelet_running_containers", (("container_state", "created"),)) not in s    # never seen


async def test_a_gone_pods_last_sync_is_timed_as_terminated(make_env: Any) -> None:
    env = await make_env("default", zero=True)
    await env.create_pod(pod("web"))
    await advance(env.clock, 2)
    before = scrape()
    await env.cs.core_v1().pods("default").delete("web")
    await advance(env.clock, 5)
    after = scrape()
    assert delta(before, after, "kubelet_pod_worker_duration_seconds_count", operation_type="terminated") == 1
    assert delta(before, after, "kubelet_pod_worker_duration_seconds_count", operation_type="update") >= 1
    assert delta(before, after, "kubelet_pod_worker_duration_seconds_count", operation_type="create") == 0


async def test_probe_series_count_by_result_and_go_with_the_pod(make_env: Any) -> None:
    env = await make_env("default", zero=True)
    await env.create_pod(pod("web", readinessProbe={"exec": {"command": ["true"]}, "periodSeconds": 10}))
    await advance(env.clock, 25)                      # probes at 0, 10 and 20 s
    uid = (await env.pod("web")).metadata.uid
    labels = {"probe_type": "Readiness", "container": "nginx", "pod": "web", "namespace": "default"}
    for registry in (REGISTRY, PROBES_REGISTRY):
        s = scrape(registry)
        assert value(s, "prober_probe_total", result="successful", pod_uid=uid, **labels) == 3
        assert value(s, "prober_probe_duration_seconds_count", **labels) == 3
        assert ("prober_probe_total", tuple(sorted({**labels, "result": "failed", "pod_uid": uid}.items()))) not in s
    assert {name for name, _ in scrape(PROBES_REGISTRY)} <= {
        "prober_probe_total", "prober_probe_duration_seconds_bucket", "prober_probe_duration_seconds_count",
        "prober_probe_duration_seconds_sum"}

    await env.cs.core_v1().pods("default").delete("web")
    await advance(env.clock, 5)
    assert not any(dict(labels_).get("pod_uid") == uid for _, labels_ in scrape())
    assert not any(dict(labels_).get("pod") == "web" for name, labels_ in scrape() if name.startswith("prober_"))


async def test_failed_probes_are_counted_without_a_duration(make_env: Any) -> None:
    env = await make_env("failing-readiness", zero=True)
    await env.create_pod(pod("web", readinessProbe={"exec": {"command": ["false"]}, "periodSeconds": 10}))
    await advance(env.clock, 15)
    uid = (await env.pod("web")).metadata.uid
    labels = {"probe_type": "Readiness", "container": "nginx", "pod": "web", "namespace": "default"}
    s = scrape()
    assert value(s, "prober_probe_total", result="failed", pod_uid=uid, **labels) == 2
    assert value(s, "prober_probe_duration_seconds_count", **labels) == 0      # upstream times success, unknown


# --- the tracker alone ----------------------------------------------------------------------


def typed_pod(uid: str, *, created: float, start_time: float | None = None, running_since: float | None = None,
              phase: str = "Pending", host_network: bool = False) -> core_v1.Pod:
    status: dict[str, Any] = {"phase": phase}
    if start_time is not None:
        status["startTime"] = rfc3339(start_time)
    if running_since is not None:
        status["containerStatuses"] = [{"name": "c", "state": {"running": {"startedAt": rfc3339(running_since)}}}]
    return from_dict({"metadata": {"name": uid, "namespace": "default", "uid": uid,
                                   "creationTimestamp": rfc3339(created)},
                      "spec": {"nodeName": "node-0", "hostNetwork": host_network,
                               "containers": [{"name": "c", "image": "x"}]},
                      "status": status}, core_v1.Pod)


def wire_status(running_since: float) -> dict[str, Any]:
    return {"phase": "Running",
            "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": rfc3339(running_since)}}}]}


def sums() -> dict[str, float]:
    """The tracker's histograms' sums and counts, read from the metrics module (no kubelet
    need have run, which the scrape waits for)."""
    out = {"start_sum": metrics.pod_start_duration.sum, "start_count": metrics.pod_start_duration.count()}
    for name, by_label in (("sli", metrics.pod_start_sli_duration), ("total", metrics.pod_start_total_duration)):
        for label in ("true", ""):
            h = by_label.get(label)
            out[f"{name}_{label}_sum"], out[f"{name}_{label}_count"] = (h.sum, h.count()) if h else (0.0, 0)
    return out


def test_image_pulls_are_left_out_of_the_sli_and_kept_in_the_total() -> None:
    clock = FakeClock()
    t0 = clock.now()
    tracker = PodStartupLatencyTracker(clock)
    before = sums()
    tracker.pod_seen(typed_pod("a", created=t0 - 1))       # created 1 s before the kubelet saw it
    clock.step(1)
    tracker.record_image_started_pulling("a")             # pulling from t0+1 ...
    clock.step(2)
    tracker.record_image_finished_pulling("a")            # ... to t0+3
    clock.step(1)
    tracker.record_running("a", wire_status(t0 + 4))    # Running at t0+4
    clock.step(1)
    tracker.observed_pod_on_watch(typed_pod("a", created=t0 - 1, start_time=t0, running_since=t0 + 4))
    after = sums()
    assert after["start_sum"] - before["start_sum"] == pytest.approx(4.0)          # seen -> Running
    assert after["total_true_sum"] - before["total_true_sum"] == pytest.approx(6.0)   # created -> watched running
    assert after["sli_true_sum"] - before["sli_true_sum"] == pytest.approx(4.0)       # less 2 s of pulling
    assert tracker.pods == {}                                                 # both recorded: forgotten


def test_pods_already_started_or_on_the_host_network_are_tracked_as_upstream() -> None:
    clock = FakeClock()
    t0 = clock.now()
    tracker = PodStartupLatencyTracker(clock)
    tracker.pod_seen(typed_pod("restarted", created=t0 - 60, start_time=t0 - 50, running_since=t0 - 50,
                               phase="Running"))
    assert "restarted" not in tracker.pods                 # running before this kubelet saw it

    before = sums()
    tracker.pod_seen(typed_pod("host", created=t0, host_network=True))
    tracker.record_running("host", wire_status(t0))
    tracker.observed_pod_on_watch(typed_pod("host", created=t0, start_time=t0, running_since=t0, host_network=True))
    after = sums()
    assert after["sli__count"] - before["sli__count"] == 1
    assert after["sli_true_count"] == before["sli_true_count"]
    assert "node-0" not in tracker.first_network_pod_seen  # a hostNetwork pod is not the first with network

    tracker.pod_seen(typed_pod("failed", created=t0))
    tracker.observed_pod_on_watch(typed_pod("failed", created=t0, phase="Failed"))
    assert "failed" not in tracker.pods                    # terminal: nothing to measure
