"""The HPA controller's metrics (upstream: horizontal_test.go's monitor expectations), as deltas
of the default registry after whole reconciles against the fake clientset."""
from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from kubeplane.api import labels, types
from kubeplane.controller.podautoscaler.clients import PodMetricsSnapshot

from test_horizontal import controller, deployment, hpa, reconcile, usage

P = "horizontal_pod_autoscaler_controller_"


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(P + name, labels) or 0.0


def reconciliations(action: str, error: str) -> float:
    return value("reconciliations_total", action=action, error=error)


def computations(action: str, error: str, metric_type: str = "Resource") -> float:
    return value("metric_computation_total", action=action, error=error, metric_type=metric_type)


async def test_a_scale_up_is_counted_once_per_reconciliation_and_per_metric() -> None:
    up, comp = reconciliations("scale_up", "none"), computations("scale_up", "none")
    seconds = value("reconciliation_duration_seconds_count", action="scale_up", error="none")
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 30}}}]))
        await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
    finally:
        await fake.close()
    assert reconciliations("scale_up", "none") == up + 1
    assert value("reconciliation_duration_seconds_count", action="scale_up", error="none") == seconds + 1
    # the HPA's status said 0 current replicas before its first reconcile: a proposal of 5 is up
    assert computations("scale_up", "none") == comp + 1
    assert value("metric_computation_duration_seconds_count", action="scale_up", error="none",
                 metric_type="Resource") >= 1


async def test_within_tolerance_is_none() -> None:
    none = reconciliations("none", "none")
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 33}}}]))
        await reconcile(hc, fake, factory, usage("330m", "340m", "340m"), 3)
    finally:
        await fake.close()
    assert reconciliations("none", "none") == none + 1


async def test_a_metrics_api_failure_is_internal() -> None:
    internal, comp = reconciliations("none", "internal"), computations("none", "internal")
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(2), hpa())
        with pytest.raises(RuntimeError):
            await reconcile(hc, fake, factory, PodMetricsSnapshot([], "the server could not find the requested "
                                                                      "resource"), 2)
    finally:
        await fake.close()
    assert reconciliations("none", "internal") == internal + 1
    assert computations("none", "internal") == comp + 1


async def test_an_ambiguous_selector_and_an_unknown_metric_type_are_spec_errors() -> None:
    spec, comp = reconciliations("none", "spec"), computations("none", "spec", "Bogus")
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa())
        hc.hpa_selectors["default/other"] = labels.parse("app=web")      # another HPA over the same pods
        with pytest.raises(RuntimeError, match="controlled by multiple HPAs"):
            await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        assert reconciliations("none", "spec") == spec + 1
        # the API server rejects an unknown metric type; the controller still calls it a spec error
        h = types.to_dict(await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web"))
        _, _, _, err = hc.compute_replicas_for_metric(None, h, {"type": "Bogus"}, 3, labels.parse("app=web"),
                                                      usage(), {})
        assert err == 'unknown metric source type "Bogus"'
        assert computations("none", "spec", "Bogus") == comp + 1
    finally:
        await fake.close()


async def test_the_hpa_count_and_desired_replicas_gauges() -> None:
    hc, fake, clock, recorder, factory = await controller()
    try:
        await fake.seed(deployment(3), hpa(metrics=[{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 30}}}]))
        stored = await fake.autoscaling_v2().horizontalpodautoscalers("default").get("web")
        before = value("num_horizontal_pod_autoscalers")
        hc.add_hpa(stored)
        hc.add_hpa(stored)                                       # a relist: counted once
        assert value("num_horizontal_pod_autoscalers") == before + 1
        await reconcile(hc, fake, factory, usage("300m", "500m", "700m"), 3)
        assert value("desired_replicas", namespace="default", hpa_name="web") == 5
        hc.delete_hpa(stored)
        assert value("num_horizontal_pod_autoscalers") == before
        assert REGISTRY.get_sample_value(P + "desired_replicas", {"namespace": "default", "hpa_name": "web"}) is None
    finally:
        await fake.close()
