"""api.qos against upstream's TestComputePodQOS table (pkg/apis/core/v1/helper/qos/qos_test.go),
with 1.37's defaults: PodLevelResources and PodLevelResourcesFixKubeletQOSClass on."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.qos import compute_pod_qos
from kubeplane.apiserver.registry.core.pod import PodStrategy


def rl(cpu: str = "", memory: str = "", **extra: str) -> dict[str, str]:
    """Upstream: getResourceList (+ addResource for extra names, `_` for `-` and `.`)."""
    out = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    out.update({k.replace("__", ".").replace("_", "-"): v for k, v in extra.items()})
    return out


def c(requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests, "limits": limits}}


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (),
        resources: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if resources is not None:
        spec["resources"] = resources
    return spec


def plr(requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    return {"requests": requests, "limits": limits}


UPSTREAM = [
    pytest.param(pod(c(rl("100m", "100Mi"), rl("100m", "100Mi"))), "Guaranteed", id="guaranteed"),
    pytest.param(pod(c(rl("100m", "100Mi"), rl("100m", "100Mi")), c(rl("100m", "100Mi"), rl("100m", "100Mi"))),
                 "Guaranteed", id="guaranteed-guaranteed"),
    pytest.param(pod(c(rl(), rl()), c(rl(), rl())), "BestEffort", id="best-effort-best-effort"),
    pytest.param(pod(c(rl(), rl())), "BestEffort", id="best-effort"),
    pytest.param(pod(c(rl(), rl()), c(rl("1"), rl("2"))), "Burstable", id="best-effort-burstable"),
    pytest.param(pod(c(rl(), rl()), c(rl("10m", "100Mi"), rl("10m", "100Mi"))), "Burstable",
                 id="best-effort-guaranteed"),
    pytest.param(pod(c(rl("", "100Mi"), rl("", "100Mi"))), "Burstable", id="burstable-cpu-guaranteed-memory"),
    pytest.param(pod(c(rl("100m", "100Mi"), rl())), "Burstable", id="burstable-no-limits"),
    pytest.param(pod(c(rl("1", "100Mi"), rl("2", "100Mi")), c(rl("100m", "100Mi"), rl("100m", "100Mi"))),
                 "Burstable", id="burstable-guaranteed"),
    pytest.param(pod(c(rl("100m", "100Mi"), rl("200m", "200Mi")), c(rl("100m", "100Mi"), rl())), "Burstable",
                 id="burstable-unbounded-but-requests-match-limits"),
    pytest.param(pod(c(rl("10m", "100Mi"), rl("100m", "200Mi"))), "Burstable", id="burstable-1"),
    pytest.param(pod(c(rl("0", "0"), rl("100m", "200Mi"))), "Burstable", id="burstable-2"),
    pytest.param(pod(c(rl("0", "0", hugepages_2Mi="1Gi"), rl("0", "0", hugepages_2Mi="1Gi"))), "BestEffort",
                 id="best-effort-hugepages"),
    pytest.param(pod(c(rl(), rl()), init=(c(rl("10m", "100Mi"), rl("100m", "200Mi")),)), "Burstable",
                 id="init-container"),
    pytest.param(pod(c(rl(), rl()), resources=plr(rl("10m", "100Mi"), rl("10m", "100Mi"))), "Guaranteed",
                 id="guaranteed-with-pod-level-resources"),
    pytest.param(pod(c(rl("3m", "10Mi"), rl("5m", "20Mi")), resources=plr(rl("10m", "100Mi"), rl("10m", "100Mi"))),
                 "Guaranteed", id="guaranteed-with-pod-and-container-level-resources"),
    pytest.param(pod(c(rl(), rl()), resources=plr(rl("10m", "10Mi"), rl("20m", "50Mi"))), "Burstable",
                 id="burstable-with-pod-level-resources"),
    pytest.param(pod(c(rl("5m", "10Mi"), rl("5m", "10Mi")), resources=plr(rl("10m", "10Mi"), rl("20m", "50Mi"))),
                 "Burstable", id="burstable-with-pod-and-container-level-resources"),
    pytest.param(pod(c(rl("5m", "10Mi"), rl()), resources=plr(rl("10m", "10Mi"), rl())), "Burstable",
                 id="burstable-with-pod-and-container-level-requests"),
    pytest.param(pod(c(rl("5m", "10Mi"), rl()), c(rl("5m", "10Mi"), rl("5m", "10Mi")),
                     resources=plr(rl("10m", "10Mi"), rl("5m"))), "Burstable",
                 id="burstable-with-pod-and-container-level-resources-2"),
]


@pytest.mark.parametrize("spec,expected", UPSTREAM)
def test_upstream_table(spec: dict[str, Any], expected: str) -> None:
    assert compute_pod_qos(spec) == expected


@pytest.mark.parametrize("spec,expected", [
    # Quantities compare by value, never by spelling.
    pytest.param(pod(c(rl("1000m", "1Gi"), rl("1", "1024Mi"))), "Guaranteed", id="1000m-equals-1"),
    pytest.param(pod(c(rl("0.5", "1e3"), rl("500m", "1k"))), "Guaranteed", id="decimal-and-exponent"),
    pytest.param(pod(c(rl("1", "1G"), rl("1", "1Gi"))), "Burstable", id="1G-is-not-1Gi"),
    # Requests and limits are summed per resource across containers before comparing.
    pytest.param(pod(c(rl("100m", "1Gi"), rl("300m", "1Gi")), c(rl("300m", "1Gi"), rl("100m", "1Gi"))),
                 "Guaranteed", id="sums-equal-though-containers-differ"),
    # Zero quantities are as good as absent.
    pytest.param(pod(c(rl("0", "0"), rl("0", "0"))), "BestEffort", id="all-zero"),
    pytest.param(pod(c(rl("1", "1Gi"), rl("1", "1Gi")), c(rl("0", "0"), rl("0", "0"))), "Burstable",
                 id="a-zero-limit-container"),
    # Extended resources never count.
    pytest.param(pod(c(rl(nvidia__com_gpu="1"), rl(nvidia__com_gpu="1"))), "BestEffort", id="gpu-only"),
    pytest.param(pod(c(rl("1", "1Gi", nvidia__com_gpu="1"), rl("1", "1Gi", nvidia__com_gpu="2"))), "Guaranteed",
                 id="gpu-ignored-beside-cpu-memory"),
    pytest.param(pod(c(rl("1", "1Gi", ephemeral_storage="1Gi"), rl("1", "1Gi"))), "Guaranteed",
                 id="ephemeral-storage-ignored"),
    # Pod-level resources decide only when they name cpu, memory or hugepages-*.
    pytest.param(pod(c(rl("1", "1Gi"), rl("1", "1Gi")), resources=plr(rl(nvidia__com_gpu="1"), {})),
                 "Guaranteed", id="pod-level-extended-only-ignored"),
    pytest.param(pod(c(rl("1", "1Gi"), rl("1", "1Gi")), resources=plr({}, {})), "Guaranteed",
                 id="pod-level-empty-ignored"),
    pytest.param(pod(c(rl("1", "1Gi"), rl("1", "1Gi")), resources=plr(rl(hugepages_2Mi="2Mi"), {})),
                 "BestEffort", id="pod-level-hugepages-only"),
    # Ephemeral containers cannot have resources and are not looked at.
    pytest.param({**pod(c(rl("1", "1Gi"), rl("1", "1Gi"))), "ephemeralContainers": [c(rl("1"), rl("2"))]},
                 "Guaranteed", id="ephemeral-containers-ignored"),
])
def test_fidelity_cases(spec: dict[str, Any], expected: str) -> None:
    assert compute_pod_qos(spec) == expected


def test_pod_create_records_the_class() -> None:
    p = {"spec": pod(c(rl("1000m", "1Gi"), rl("1", "1024Mi")))}
    PodStrategy().prepare_for_create(p)
    assert p["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
