"""api.pod_resources: pod-level resource defaults (SetDefaults_Pod with PodLevelResources on) and
Quantity.String() of their sums."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.registry.scheme import set_defaults
from kubeplane.api.pod_resources import aggregate_container
from kubeplane.api.qos import compute_pod_qos
from kubeplane.api.quantity import parse


@pytest.mark.parametrize("text,expected", [
    ("150m", "150m"), ("1.5", "1500m"), ("0.1", "100m"), ("1000", "1k"), ("10", "10"), ("12345678", "12345678"),
    ("100M", "100M"), ("1e3", "1e3"), ("1.5e3", "1500"), ("2Gi", "2Gi"), ("1024", "1024"), ("1Ki", "1Ki"),
    ("1536", "1536"), ("0.5Gi", "512Mi"), ("512Ki", "512Ki"), ("1.5Ki", "1536"), ("0", "0"), ("1n", "1n"),
    ("1.5n", "2n"), ("-1500m", "-1500m"), ("3E", "3E"),
])
def test_format_quantity_as_go_writes_it(text: str, expected: str) -> None:
    assert str(parse(text)) == expected


def test_sums_keep_the_first_terms_format() -> None:
    spec = {"containers": [{"resources": {"requests": {"memory": "1Gi", "cpu": "100m"}}},
                           {"resources": {"requests": {"memory": "512Mi", "cpu": "0.2"}}}]}
    agg = {k: str(q) for k, q in aggregate_container(spec, "requests").items()}
    assert agg == {"cpu": "300m", "memory": "1536Mi"}


def test_init_containers_and_sidecars() -> None:
    # Regular 100m; sidecar 50m (runs alongside); init 400m runs after the sidecar started: 450m.
    spec = {"containers": [{"resources": {"requests": {"cpu": "100m"}}}],
            "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                               {"resources": {"requests": {"cpu": "400m"}}}]}
    assert str(aggregate_container(spec, "requests")["cpu"]) == "450m"
    spec["initContainers"][1]["resources"]["requests"]["cpu"] = "100m"       # 150m < 100m + 50m
    assert str(aggregate_container(spec, "requests")["cpu"]) == "150m"


def pod(resources: dict[str, Any], *containers: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"resources": resources,
                     "containers": list(containers) or [{"name": "c", "image": "nginx"}]}}


def c(**resources: Any) -> dict[str, Any]:
    return {"name": "c", "image": "nginx", "resources": resources}


def test_limits_only_default_the_requests_and_make_a_guaranteed_pod() -> None:
    p = pod({"limits": {"cpu": "1", "memory": "1Gi"}})
    set_defaults(p)
    assert p["spec"]["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"},
                                      "requests": {"cpu": "1", "memory": "1Gi"}}
    assert compute_pod_qos(p["spec"]) == "Guaranteed"


def test_container_requests_are_the_default_when_present() -> None:
    p = pod({"limits": {"cpu": "1", "memory": "1Gi"}},
            c(requests={"cpu": "100m"}), {**c(requests={"cpu": "200m"}), "name": "d"})
    set_defaults(p)
    assert p["spec"]["resources"]["requests"] == {"cpu": "300m", "memory": "1Gi"}
    assert compute_pod_qos(p["spec"]) == "Burstable"


def test_requests_only_default_limits_when_every_container_has_one() -> None:
    p = pod({"requests": {"cpu": "1"}}, c(limits={"cpu": "2", "memory": "1Gi"}))
    set_defaults(p)       # the container's requests default to its limits first
    assert p["spec"]["resources"]["limits"] == {"cpu": "2", "memory": "1Gi"}
    assert p["spec"]["resources"]["requests"] == {"cpu": "1"}
    p = pod({"requests": {"cpu": "1"}}, c(limits={"cpu": "2"}), {**c(), "name": "d"})
    set_defaults(p)
    assert "limits" not in p["spec"]["resources"]


def test_hugepages_limits_default_from_the_containers() -> None:
    p = pod({"limits": {"cpu": "1"}}, c(limits={"hugepages-2Mi": "4Mi", "memory": "1Gi"}))
    set_defaults(p)
    assert p["spec"]["resources"]["limits"] == {"cpu": "1", "hugepages-2Mi": "4Mi"}
    assert p["spec"]["resources"]["requests"] == {"cpu": "1", "hugepages-2Mi": "4Mi", "memory": "1Gi"}


def test_no_pod_level_resources_no_change_and_idempotent() -> None:
    p = pod({}, c(limits={"cpu": "1"}))
    set_defaults(p)
    assert p["spec"]["resources"] == {}
    p = pod({"limits": {"memory": "1Gi"}}, c(requests={"memory": "64Mi"}))
    set_defaults(p)
    once = p["spec"]["resources"]
    set_defaults(p)
    assert p["spec"]["resources"] == once == {"limits": {"memory": "1Gi"}, "requests": {"memory": "64Mi"}}
