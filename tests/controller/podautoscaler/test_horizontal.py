"""The HPA controller: upstream's horizontal_test.go cases as facts (the rules' tables, with the
fake clock), and whole reconciles against the fake clientset (a Deployment's scale subresource,
the pods in the informer's cache, the metrics.k8s.io answer through the fetch_metrics seam)."""
from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from kubeplane.api import labels, types
from kubeplane.api.types import autoscaling_v2, core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.metadata import custom_resources
from kubeplane.client.tools.record.fake import FakeRecorder
from kubeplane.controller.podautoscaler.clients import MetricsAnswer, PodMetricsSnapshot, fetch_metric
from kubeplane.controller.podautoscaler.horizontal import (HorizontalController, NormalizationArg,
                                                           TimestampedRecommendation, TimestampedScaleEvent,
                                                           calculate_scale_down_limit_with_behaviors,
                                                           calculate_scale_up_limit_with_scaling_rules,
                                                           convert_desired_replicas_with_rules)
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0


def rules(*policies: tuple[str, int, int], select: str = "Max", window: int | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"selectPolicy": select,
                         "policies": [{"type": t, "value": v, "periodSeconds": p} for t, v, p in policies]}
    if window is not None:
        r["stabilizationWindowSeconds"] = window
    return r


def events(*changes: tuple[int, float]) -> list[TimestampedScaleEvent]:
    """(replica change, seconds ago)"""
    return [TimestampedScaleEvent(c, NOW - ago) for c, ago in changes]


# --- convertDesiredReplicasWithRules ------------------------------------------------------------------

@pytest.mark.parametrize("current,desired,lo,hi,expected,condition", [
    (5, 7, 3, 8, 7, "DesiredWithinRange"),          # within range
    (5, 3, 2, 8, 3, "DesiredWithinRange"),
    (5, 1, 3, 8, 3, "TooFewReplicas"),              # below min
    (5, 9, 3, 8, 8, "TooManyReplicas"),             # above max
    (2, 20, 1, 30, 4, "ScaleUpLimit"),              # max(2 x 2, 4)
    (5, 20, 1, 30, 10, "ScaleUpLimit"),             # 2 x 5
    (5, 20, 1, 8, 8, "TooManyReplicas"),            # the max is below the rate limit
])
def test_convert_desired_replicas_with_rules(current: int, desired: int, lo: int, hi: int, expected: int,
                                             condition: str) -> None:
    """Upstream: TestConvertDesiredReplicasWithRules"""
    assert convert_desired_replicas_with_rules(current, desired, lo, hi)[:2] == (expected, condition)


# --- the policies' limits (calculateScaleUpLimitWithScalingRules and its scale-down twin) ----------

@pytest.mark.parametrize("name,current,ups,downs,r,expected", [
    ("no events: max of 4 pods and 100%", 5, [], [], rules(("Pods", 4, 60), ("Percent", 100, 60)), 10),
    ("min policy", 5, [], [], rules(("Pods", 4, 60), ("Percent", 100, 60), select="Min"), 9),
    ("events in the period move its start", 5, [(2, 30)], [], rules(("Pods", 4, 60), ("Percent", 100, 60)), 7),
    ("events outside the period do not", 5, [(2, 90)], [], rules(("Pods", 4, 60), ("Percent", 100, 60)), 10),
    ("scale-downs in the period count back", 5, [], [(3, 10)], rules(("Pods", 1, 60)), 9),
    ("percent rounds up", 3, [], [], rules(("Percent", 10, 60)), 4),
    ("disabled", 5, [], [], rules(("Pods", 4, 60), select="Disabled"), 5),
])
def test_scale_up_limit(name: str, current: int, ups: list[tuple[int, float]], downs: list[tuple[int, float]],
                        r: dict[str, Any], expected: int) -> None:
    """Upstream: TestScalingWithRules (scale-up rows) / calculateScaleUpLimitWithScalingRules"""
    assert calculate_scale_up_limit_with_scaling_rules(current, events(*ups), events(*downs), r, NOW) == expected


@pytest.mark.parametrize("name,current,ups,downs,r,expected", [
    ("default 100% per 15s", 10, [], [], rules(("Percent", 100, 15)), 0),
    ("max of pods and percent picks the lower limit", 10, [], [], rules(("Pods", 2, 60), ("Percent", 50, 60)), 5),
    ("min policy picks the higher limit", 10, [], [], rules(("Pods", 2, 60), ("Percent", 50, 60), select="Min"), 8),
    ("a scale-down in the period", 8, [], [(2, 30)], rules(("Pods", 2, 60)), 8),
    ("percent truncates", 7, [], [], rules(("Percent", 50, 60)), 3),
    ("disabled", 10, [], [], rules(("Percent", 100, 15), select="Disabled"), 10),
])
def test_scale_down_limit(name: str, current: int, ups: list[tuple[int, float]], downs: list[tuple[int, float]],
                          r: dict[str, Any], expected: int) -> None:
    """Upstream: TestScalingWithRules (scale-down rows) / calculateScaleDownLimitWithBehaviors"""
    assert calculate_scale_down_limit_with_behaviors(current, events(*ups), events(*downs), r, NOW) == expected


# --- stabilization and normalization with behavior -------------------------------------------------

async def controller() -> tuple[HorizontalController, FakeClientset, FakeClock, FakeRecorder, SharedInformerFactory]:
    clock = FakeClock(NOW)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    hc = HorizontalController(factory.autoscaling_v2().horizontalpodautoscalers(), factory.core_v1().pods(), fake,
                              clock=clock, recorder=recorder)
    return hc, fake, clock, recorder, factory


@pytest.mark.parametrize("name,recs,current,desired,up_window,down_window,expected,reason", [
    ("no history", [], 5, 7, 0, 300, 7, "ScaleUpStabilized"),
    ("scale down held by a higher recent recommendation", [(8, 10)], 5, 3, 0, 300, 5, "ScaleDownStabilized"),
    ("held at the highest recent, not above current", [(4, 10)], 5, 3, 0, 300, 4, "ScaleDownStabilized"),
    ("old recommendations are out of the window", [(8, 400)], 5, 3, 0, 300, 3, "ScaleDownStabilized"),
    ("scale up held by a lower recent recommendation", [(4, 10)], 5, 9, 60, 0, 5, "ScaleUpStabilized"),
    ("up window: the lowest recent above current", [(7, 10)], 5, 9, 60, 0, 7, "ScaleUpStabilized"),
])
async def test_stabilize_recommendation_with_behaviors(name: str, recs: list[tuple[int, float]], current: int,
                                                       desired: int, up_window: int, down_window: int, expected: int,
                                                       reason: str) -> None:
    """Upstream: TestStabilizeRecommendationWithBehaviors"""
    hc, fake, *_ = await controller()
    try:
        hc.recommendations["k"] = [TimestampedRecommendation(r, NOW - ago) for r, ago in recs]
        arg = NormalizationArg("k", {"stabilizationWindowSeconds": up_window},
                               {"stabilizationWindowSeconds": down_window}, 1, 100, current, desired)
        got, why, _ = hc.stabilize_recommendation_with_behaviors(arg)
        assert (got, why) == (expected, reason)
        assert hc.recommendations["k"][-1].recommendation == desired or len(recs) == 1
    finally:
        await fake.close()


@pytest.mark.parametrize("name,current,desired,lo,hi,up,down,ups,downs,expected,limited", [
    ("within range", 5, 7, 1, 10, rules(("Pods", 4, 15)), rules(("Percent", 100, 15)), [], [], 7,
     ("False", "DesiredWithinRange")),
    ("up rate limit", 5, 20, 1, 30, rules(("Pods", 4, 15)), rules(("Percent", 100, 15)), [], [], 9,
     ("True", "ScaleUpLimit")),
    ("max", 5, 20, 1, 8, rules(("Pods", 4, 15)), rules(("Percent", 100, 15)), [], [], 8, ("True", "TooManyReplicas")),
    ("down rate limit", 10, 1, 1, 30, rules(("Pods", 4, 15)), rules(("Pods", 2, 60)), [], [], 8,
     ("True", "ScaleDownLimit")),
    ("min", 10, 1, 3, 30, rules(("Pods", 4, 15)), rules(("Percent", 100, 15)), [], [], 3, ("True", "TooFewReplicas")),
    ("recent scale up used the period's budget", 9, 20, 1, 30, rules(("Pods", 4, 60)), rules(("Percent", 100, 15)),
     [(4, 10)], [], 9, ("True", "ScaleUpLimit")),
    ("scale up disabled", 5, 20, 1, 30, rules(("Pods", 4, 15), select="Disabled"), rules(("Percent", 100, 15)),
     [], [], 5, ("True", "ScaleUpLimit")),
])
async def test_normalize_desired_replicas_with_behavior(name: str, current: int, desired: int, lo: int, hi: int,
                                                        up: dict[str, Any], down: dict[str, Any],
                                                        ups: list[tuple[int, float]], downs: list[tuple[int, float]],
                                                        expected: int, limited: tuple[str, str]) -> None:
    """Upstream: TestNormalizeDesiredReplicasWithBehavior (windows 0: only the rates apply)."""
    hc, fake, *_ = await controller()
    try:
        hc.scale_up_events["k"], hc.scale_down_events["k"] = events(*ups), events(*downs)
        hpa = {"metadata": {"name": "h", "namespace": "default"}, "status": {},
               "spec": {"maxReplicas": hi, "behavior": {"scaleUp": {**up, "stabilizationWindowSeconds": 0},
                                                        "scaleDown": {**down, "stabilizationWindowSeconds": 0}}}}
        assert hc.normalize_desired_replicas_with_behaviors(hpa, "k", current, desired, lo) == expected
        [c] = [c for c in hpa["status"]["conditions"] if c["type"] == "ScalingLimited"]
        assert (c["status"], c["reason"]) == limited
    finally:
        await fake.close()


async def test_legacy_downscale_stabilization_window() -> None:
    """Upstream: TestNormalizeDesiredReplicas — without behavior a scale-down takes the highest
    recommendation of the last 5 minutes, with condition ScaleDownStabilized."""
    hc, fake, clock, *_ = await controller()
    try:
        hpa = {"metadata": {"name": "h"}, "status": {}, "spec": {"maxReplicas": 10}}
        assert hc.normalize_desired_replicas(hpa, "k", 5, 5, 1) == 5
        clock.step(60)
        assert hc.normalize_desired_replicas(hpa, "k", 5, 2, 1) == 5
        [able] = [c for c in hpa["status"]["conditions"] if c["type"] == "AbleToScale"]
        assert able["reason"] == "ScaleDownStabilized"
        clock.step(300)     # the 5 is out of the window, the 2 of a minute later is not
        assert hc.normalize_desired_replicas(hpa, "k", 5, 2, 1) == 2
    finally:
        await fake.close()


# --- whole reconciles ----------------------------------------------------------------------------------

def deployment(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def hpa(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 10,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                         "type": "Utilization", "averageUtilization": 50}}}], **spec}}


def pod(i: int, request: str = "1") -> core_v1.Pod:
    started = rfc3339(NOW - 3600)
    return types.from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"web-{i}", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": request}}}]},
        "status": {"phase": "Running", "startTime": started,
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}]}}, core_v1.Pod)


def usage(*cpu: str) -> PodMetricsSnapshot:
    return PodMetricsSnapshot([{"metadata": {"name": f"web-{i}", "namespace": "default"},
                                "timestamp": rfc3339(NOW), "window": "15s",
                                "containers": [{"name": "c", "usage": {"cpu": c, "memory": "10Mi"}}]}
                               for i, c in enumerate(cpu)])


async def reconcile(hc: HorizontalController, fake: FakeClientset, factory: SharedInformerFactory,
                    snapshot: PodMetricsSnapshot, pods: int) -> autoscaling_v2.HorizontalPodAutoscaler:
    for i in range(pods):
        factory.core_v1().pods().informer().get_indexer().update(pod(i))
    stored = await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")
    factory.autoscaling_v2().horizontalpodautoscalers().informer().get_indexer().update(stored)

    async def fetch(ns: str, sel: str) -> PodMetricsSnapshot:
        assert (ns, sel) == ("default", "app=web")
        return snapshot
    hc.fetch_metrics = fetch
    await hc.reconcile_key("default/web")
    return await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")


def condition(h: Any, type_: str) -> tuple[str, str, str]:
    [c] = [c for c in h.status.conditions if c.type == type_]
    return c.status, c.reason, c.message


async def test_scale_up() -> None:
    """Upstream: TestScaleUp — 3 pods at 1 CPU using 300m, 500m, 700m against 30%: 4 replicas."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 30}}}]))
        h = await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 5
        assert recorder.events == ["Normal SuccessfulRescale New size: 5; reason: cpu resource utilization "
                                   "(percentage of request) above target"]
        assert (h.status.current_replicas, h.status.desired_replicas) == (3, 5)
        assert h.status.last_scale_time == rfc3339(NOW)
        cur = h.status.current_metrics[0].resource.current
        assert (cur.average_utilization, str(cur.average_value)) == (50, "500m")
        assert condition(h, "AbleToScale")[:2] == ("True", "SucceededRescale")
        assert condition(h, "ScalingActive") == ("True", "ValidMetricFound", "the HPA was able to successfully "
                                                 "calculate a replica count from cpu resource utilization "
                                                 "(percentage of request)")
        assert condition(h, "ScalingLimited")[:2] == ("False", "DesiredWithinRange")
    finally:
        await fake.close()


async def test_tolerance() -> None:
    """Upstream: TestTolerance — 1010m of 3 x 1 CPU against 33%: within 10%, nothing written."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 33}}}]))
        fake.clear_actions()
        h = await reconcile(hc, fake, factory, usage("330m", "340m", "340m"), 3)
        assert ("update", "deployments", "scale") not in fake.verbs()
        assert recorder.events == []
        assert (h.status.current_replicas, h.status.desired_replicas) == (3, 3)
        assert condition(h, "AbleToScale")[1] == "ReadyForNewScale"
    finally:
        await fake.close()


async def test_scale_down_with_behavior_and_average_value() -> None:
    """A raw target (AverageValue), behavior with no down window: 4 pods using 100m against
    500m each want 1 replica; scaleDown Pods 2 per 60 s allows 2."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(4), hpa(
            metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue",
                                                                                 "averageValue": "500m"}}}],
            behavior={"scaleDown": {"stabilizationWindowSeconds": 0,
                                    "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}}))
        h = await reconcile(hc, fake, factory, usage("100m", "100m", "100m", "100m"), 4)
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 2
        assert recorder.events == ["Normal SuccessfulRescale New size: 2; reason: All metrics below target"]
        assert condition(h, "ScalingLimited")[:2] == ("True", "ScaleDownLimit")
        assert str(h.status.current_metrics[0].resource.current.average_value) == "100m"
    finally:
        await fake.close()


async def test_missing_metrics_api_and_scale_target() -> None:
    """No metrics: ScalingActive False FailedGetResourceMetric and a Warning event; a missing
    target: AbleToScale False FailedGetScale."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(2), hpa())
        with pytest.raises(RuntimeError, match="failed to compute desired number of replicas"):
            await reconcile(hc, fake, factory, PodMetricsSnapshot([], "the server could not find the requested "
                                                                      "resource"), 2)
        h = await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")
        status, reason, message = condition(h, "ScalingActive")
        assert (status, reason) == ("False", "FailedGetResourceMetric")
        assert message == ("the HPA was unable to compute the replica count: failed to get cpu utilization: unable to "
                           "get metrics for resource cpu: unable to fetch metrics from resource metrics API: the "
                           "server could not find the requested resource")
        assert recorder.events[0].startswith("Warning FailedGetResourceMetric failed to get cpu utilization")
        assert recorder.events[-1].startswith("Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1)")
        await fake.apps_v1().deployments("default").delete("web")
        with pytest.raises(RuntimeError, match="failed to query scale subresource for Deployment/default/web"):
            await reconcile(hc, fake, factory, usage("1"), 0)
        h = await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")
        assert condition(h, "AbleToScale")[:2] == ("False", "FailedGetScale")
    finally:
        await fake.close()


async def test_bounds_before_metrics_and_disabled_at_zero() -> None:
    """Upstream: TestMinReplicas/TestMaxReplicas-like bounds: above max goes to max without
    metrics; a target at 0 replicas is left alone (ScalingDisabled)."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(12), hpa())
        await reconcile(hc, fake, factory, PodMetricsSnapshot([]), 0)
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 10
        assert recorder.events == ["Normal SuccessfulRescale New size: 10; reason: Current number of replicas "
                                   "above Spec.MaxReplicas"]
        await fake.apps_v1().deployments("default").patch("web", {"spec": {"replicas": 0}})
        h = await reconcile(hc, fake, factory, PodMetricsSnapshot([]), 0)
        assert condition(h, "ScalingActive")[:2] == ("False", "ScalingDisabled")
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 0
    finally:
        await fake.close()


async def test_ambiguous_selector() -> None:
    """Upstream: TestMultipleHPAs — two HPAs over the same pods: ScalingActive False
    AmbiguousSelector, nothing scaled; once one is deleted the other scales again."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 30}}}]))
        other = types.from_dict({**hpa(), "metadata": {"name": "other", "namespace": "default"}},
                                autoscaling_v2.HorizontalPodAutoscaler)
        hc.hpa_selectors["default/other"] = labels.parse("app=web")      # what its last sync recorded
        with pytest.raises(RuntimeError, match="controlled by multiple HPAs"):
            await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        h = await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")
        assert condition(h, "ScalingActive") == (
            "False", "AmbiguousSelector",
            "pods by selector app=web are controlled by multiple HPAs: [default/other default/web]")
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 3
        hc.delete_hpa(other)
        await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 5
    finally:
        await fake.close()


async def test_a_custom_resource_with_a_scale_subresource() -> None:
    """The target's /scale found through discovery: a CRD's kind with the scale subresource
    (specReplicasPath, statusReplicasPath, labelSelectorPath) is scaled like a Deployment."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "webapps.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "webapps", "singular": "webapp", "kind": "WebApp"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                              "statusReplicasPath": ".status.replicas",
                                                              "labelSelectorPath": ".status.selector"},
                                                    "status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}})
        for _ in range(2000):               # the CRD controller serves it on the real loop
            if any(ri.plural == "webapps" for ri in await custom_resources(fake.transport)):
                break
            await asyncio.sleep(0.005)
        client = fake.apiextensions_v1().transport
        app = {"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": {"name": "web", "namespace": "default"},
               "spec": {"replicas": 3}}
        r = await client.request("POST", "/apis/example.com/v1/namespaces/default/webapps", None,
                                 orjson.dumps(app))
        assert r.status == 201, r.body
        r = await client.request("PUT", "/apis/example.com/v1/namespaces/default/webapps/web/status", None,
                                 orjson.dumps({**orjson.loads(r.body), "status": {"replicas": 3, "selector": "app=web"}}))
        assert r.status == 200, r.body
        await fake.seed(hpa(scaleTargetRef={"apiVersion": "example.com/v1", "kind": "WebApp", "name": "web"},
                            metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {
                                "type": "Utilization", "averageUtilization": 30}}}]))
        await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        r = await client.request("GET", "/apis/example.com/v1/namespaces/default/webapps/web", None, None)
        assert orjson.loads(r.body)["spec"]["replicas"] == 5
    finally:
        await fake.close()


CPU_30 = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 30}}}]


async def test_scale_up_container() -> None:
    """Upstream: TestScaleUpContainer — a ContainerResource metric names the container; its
    status reports it."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=[{"type": "ContainerResource", "containerResource": {
            "name": "cpu", "container": "c", "target": {"type": "Utilization", "averageUtilization": 30}}}]))
        h = await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 5
        assert recorder.events == ["Normal SuccessfulRescale New size: 5; reason: cpu container resource utilization "
                                   "(percentage of request) above target"]
        m = h.status.current_metrics[0]
        assert (m.type, m.container_resource.container, m.container_resource.current.average_utilization) == \
            ("ContainerResource", "c", 50)
    finally:
        await fake.close()


async def test_upscale_cap() -> None:
    """Upstream: TestUpscaleCap — without behavior a scale-up is capped at max(2 x current, 4):
    3 pods at 300% of a 30% target want 30, get 6, ScalingLimited ScaleUpLimit."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(maxReplicas=100, metrics=CPU_30))
        h = await reconcile(hc, fake, factory, usage("3", "3", "3"), 3)
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 6
        assert condition(h, "ScalingLimited") == (
            "True", "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
    finally:
        await fake.close()


async def test_failed_update_scale() -> None:
    """Upstream: TestConditionFailedUpdateScale — the scale write fails: AbleToScale False
    FailedUpdateScale, a FailedRescale event, the status keeps the current count."""
    from kubeplane.api import errors
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=CPU_30))
        fake.fail_on("update", "deployments", errors.Conflict("apps", "deployments", "web", "some update error"))
        with pytest.raises(RuntimeError, match="failed to rescale Deployment/default/web"):
            await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        h = await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")
        status, reason, message = condition(h, "AbleToScale")
        assert (status, reason) == ("False", "FailedUpdateScale")
        assert message.startswith("the HPA controller was unable to update the target scale: ")
        assert recorder.events[-1].startswith("Warning FailedRescale New size: 5; reason: cpu resource utilization "
                                              "(percentage of request) above target; error: ")
        assert h.status.current_replicas == 3
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 3
    finally:
        await fake.close()


async def test_one_invalid_metric_does_not_block_a_scale_up() -> None:
    """Upstream: TestScaleUpOneMetricInvalid — an unknown metric type next to a valid CPU metric:
    the scale-up happens, ScalingActive stays True, the error is returned all the same."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=[*CPU_30, {"type": "Pods", "pods": {
            "metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]))
        with pytest.raises(RuntimeError, match=r"invalid metrics \(1 invalid out of 2\)"):
            await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        h = await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")
        assert (await fake.apps_v1().deployments("default").get("web")).spec.replicas == 5
        assert condition(h, "ScalingActive")[:2] == ("True", "ValidMetricFound")
        assert "Warning FailedGetPodsMetric" in " ".join(recorder.events)
    finally:
        await fake.close()


async def test_more_replicas_than_spec_no_scale() -> None:
    """Upstream: TestMoreReplicasThanSpecNoScale-like: within tolerance nothing is written,
    and the desired count is the current one."""
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=CPU_30))
        h = await reconcile(hc, fake, factory, usage("300m", "300m", "300m"), 3)
        assert (h.status.current_replicas, h.status.desired_replicas, h.status.last_scale_time) == (3, 3, None)
        assert recorder.events == []
    finally:
        await fake.close()


# --- The HPA's Pods, Object and External metrics (custom.metrics.k8s.io/v1beta2,
# external.metrics.k8s.io/v1beta1): upstream's horizontal_test.go cases TestScaleUpCM,
# TestScaleUpCMObject, TestScaleUpCMExternal, TestScaleDownPerPodCMExternal and the
# FailedGet*Metric conditions, against the fake clientset, with the metrics APIs' answers
# through the fetch_metric seam (and the real client against an API that is not there).


def values(*vs: str, kind: str = "Pod") -> MetricsAnswer:
    return MetricsAnswer([{"describedObject": {"kind": kind, "namespace": "default", "name": f"web-{i}"},
                           "metric": {"name": "qps"}, "timestamp": rfc3339(NOW), "value": v}
                          for i, v in enumerate(vs)])


async def run(metric: dict[str, Any], answer: MetricsAnswer, replicas: int = 3, **spec: Any
              ) -> tuple[Any, Any, Any, list[Any]]:
    hc, fake, clock, recorder, factory = await controller()
    asked: list[Any] = []

    async def fetch(ns: str, spec: dict[str, Any], sel: str) -> MetricsAnswer:
        asked.append((ns, spec["type"], sel))
        return answer
    hc.fetch_metric = fetch
    await fake.seed({**deployment(replicas), "status": {"replicas": replicas}}, hpa(metrics=[metric], **spec))
    try:
        h = await reconcile(hc, fake, factory, PodMetricsSnapshot([]), replicas)
        error = None
    except RuntimeError as e:
        h = await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")
        error = str(e)
    d = await fake.apps_v1().deployments("default").get("web")
    await fake.close()
    return h, d, (recorder.events, error), asked


PODS = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "15"}}}
OBJECT = {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                                                           "name": "front"},
                                       "metric": {"name": "qps"}, "target": {"type": "Value", "value": "15"}}}
EXTERNAL = {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                                             "target": {"type": "Value", "value": "4400m"}}}


async def test_scale_up_pods_metric() -> None:
    """Upstream: TestScaleUpCM — 20, 10, 30 against 15 per pod: 4 replicas."""
    h, d, (events, error), asked = await run(PODS, values("20", "10", "30"))
    assert error is None and d.spec.replicas == 4
    assert asked == [("default", "Pods", "app=web")]
    assert events == ["Normal SuccessfulRescale New size: 4; reason: pods metric qps above target"]
    m = h.status.current_metrics[0]
    assert (m.type, m.pods.metric.name, str(m.pods.current.average_value)) == ("Pods", "qps", "20")
    assert condition(h, "ScalingActive")[1:] == ("ValidMetricFound", "the HPA was able to successfully calculate a "
                                                 "replica count from pods metric qps")


async def test_scale_up_object_metric() -> None:
    """Upstream: TestScaleUpCMObject — the object's 20 against a target of 15 with 3 ready pods: 4."""
    h, d, (events, error), _ = await run(OBJECT, values("20", kind="Ingress"))
    assert error is None and d.spec.replicas == 4
    assert events == ["Normal SuccessfulRescale New size: 4; reason: Ingress metric qps above target"]
    m = h.status.current_metrics[0]
    assert (m.object.described_object.name, str(m.object.current.value)) == ("front", "20")


async def test_scale_up_external_metric() -> None:
    """Upstream: TestScaleUpCMExternal — 8600m against 4400m over 3 ready pods: ceil(1.95 x 3) = 6."""
    h, d, (events, error), _ = await run(EXTERNAL, values("8600m"))
    assert error is None and d.spec.replicas == 6
    assert events[0].startswith("Normal SuccessfulRescale New size: 6; reason: external metric queue(&LabelSelector{")
    assert str(h.status.current_metrics[0].external.current.value) == "8600m"


async def test_scale_down_per_pod_external_metric() -> None:
    """Upstream: TestScaleDownPerPodCMExternal — 8600m over 5 replicas at 2867m per pod: 3."""
    metric = {"type": "External", "external": {"metric": {"name": "queue"},
                                               "target": {"type": "AverageValue", "averageValue": "2867m"}}}
    h, d, _, _ = await run(metric, values("8600m"), replicas=5, behavior={"scaleDown": {
        "stabilizationWindowSeconds": 0, "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}})
    assert d.spec.replicas == 3
    assert str(h.status.current_metrics[0].external.current.average_value) == "1720m"


@pytest.mark.parametrize("metric,reason,event,message", [
    (PODS, "FailedGetPodsMetric",
     "unable to get metric qps: unable to fetch metrics from custom metrics API: the server could not find the "
     "requested resource (get pods.custom.metrics.k8s.io *)",
     "failed to get pods metric value: unable to get metric qps: unable to fetch metrics from custom metrics API: "
     "the server could not find the requested resource (get pods.custom.metrics.k8s.io *)"),
    (OBJECT, "FailedGetObjectMetric",
     "unable to get metric qps: unable to fetch metrics from custom metrics API: the server could not find the "
     "requested resource (get pods.custom.metrics.k8s.io *) on Ingress default/front",
     "failed to get object metric value: unable to get metric qps: unable to fetch metrics from custom metrics "
     "API: the server could not find the requested resource (get pods.custom.metrics.k8s.io *) on Ingress "
     "default/front"),
    (EXTERNAL, "FailedGetExternalMetric",
     "unable to get external metric default/queue/map[matchLabels:map[q:a]]: unable to fetch metrics from external "
     "metrics API: the server could not find the requested resource (get pods.custom.metrics.k8s.io *)", None),
])
async def test_missing_api_sets_failed_get_condition(metric: dict[str, Any], reason: str, event: str,
                                                     message: str | None) -> None:
    err = "the server could not find the requested resource (get pods.custom.metrics.k8s.io *)"
    h, d, (events, error), _ = await run(metric, MetricsAnswer([], err))
    assert d.spec.replicas == 3
    status, why, text = condition(h, "ScalingActive")
    assert (status, why) == ("False", reason)
    assert events[0].split(" ", 2)[:2] == ["Warning", reason]
    assert error is not None and "invalid metrics (1 invalid out of 1), first error is: " in error
    if message is not None:
        assert text == f"the HPA was unable to compute the replica count: {event}"
        assert error.endswith(message)


async def test_the_real_client_reports_an_api_that_is_not_served() -> None:
    """fetch_metric against the fake clientset's server, which serves no custom metrics API."""
    hc, fake, *_ = await controller()
    try:
        transport = fake.core_v1().transport
        answer = await fetch_metric(transport, hc.scale_client, "default", PODS, "app=web")
        assert answer.error == ("the server could not find the requested resource "
                                "(get pods.custom.metrics.k8s.io *)")
        answer = await fetch_metric(transport, hc.scale_client, "default", EXTERNAL, "app=web")
        assert answer.error == ("the server could not find the requested resource "
                                "(get queue.external.metrics.k8s.io)")
    finally:
        await fake.close()


def test_metrics_answer_conversions() -> None:
    """Upstream: rest_metrics_client_test.go — a missing windowSeconds is the default minute; an
    object metric wants exactly one value; empty lists are errors of their own."""
    answer = MetricsAnswer([{"describedObject": {"name": "p"}, "timestamp": rfc3339(NOW), "value": "1500m"},
                            {"describedObject": {"name": "q"}, "timestamp": rfc3339(NOW), "windowSeconds": 30,
                             "value": "2"}])
    pods, ts = answer.get_raw_metric("m", "ns", None, None)
    assert {k: (v.value, v.window) for k, v in pods.items()} == {"p": (1500, 60.0), "q": (2000, 30.0)} and ts == NOW
    with pytest.raises(ValueError, match="returned 2 results when we asked for exactly one"):
        answer.get_object_metric("m", "ns", {}, None)
    assert answer.get_external_metric("m", "ns", None) == ([1500, 2000], NOW)
    with pytest.raises(ValueError, match="^no metrics returned from custom metrics API$"):
        MetricsAnswer([]).get_raw_metric("m", "ns", None, None)
    with pytest.raises(ValueError, match="^no metrics returned from external metrics API$"):
        MetricsAnswer([]).get_external_metric("m", "ns", None)
