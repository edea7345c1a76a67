"""pods/resize as upstream serves it (podResizeStrategy + ValidatePodResize; the cases of
validation_test.go's TestValidatePodResize and strategy_test.go's TestPodResizePrepareForUpdate)."""
from __future__ import annotations

import copy

from typing import Any

import pytest

PODS = "/api/v1/namespaces/default/pods"
RESIZE = f"{PODS}/p/resize"
SMP = {"content-type": "application/strategic-merge-patch+json"}
MERGE = {"content-type": "application/merge-patch+json"}


def resources(cpu: str = "", mem: str = "", cpu_lim: str = "", mem_lim: str = "", **other: str) -> dict[str, Any]:
    req = {k: v for k, v in (("cpu", cpu), ("memory", mem)) if v}
    lim = {k: v for k, v in (("cpu", cpu_lim), ("memory", mem_lim)) if v}
    for k, v in other.items():
        lim[k.replace("_", "-")] = v
    r: dict[str, Any] = {}
    if req:
        r["requests"] = req
    if lim:
        r["limits"] = lim
    return r


def pod(res: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": res}], **spec}}


def patch(res: dict[str, Any], name: str = "c") -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "resources": res}]}}


async def resize(api, res: dict[str, Any], name: str = "c") -> Any:
    return await api.call("PATCH", RESIZE, body=patch(res, name), headers=SMP)


async def test_kubectl_patch_resizes_and_bumps_generation(api) -> None:
    await api.create(PODS, pod(resources("100m", "100Mi", "200m", "200Mi")))
    r = await resize(api, resources("150m", "100Mi", "300m", "200Mi"))
    assert r.status == 200, r.json
    assert r.json["kind"] == "Pod"
    assert r.json["spec"]["containers"][0]["resources"] == resources("150m", "100Mi", "300m", "200Mi")
    assert r.json["metadata"]["generation"] == 2          # 1 at create upstream, + 1
    stored = (await api.get(f"{PODS}/p")).json
    assert stored["spec"] == r.json["spec"] and stored["metadata"]["resourceVersion"] == r.json["metadata"]["resourceVersion"]
    assert (await api.get(RESIZE)).json == stored
    r = await resize(api, resources("200m", "100Mi", "300m", "200Mi"))
    assert r.json["metadata"]["generation"] == 3


async def test_a_no_op_resize_keeps_generation_and_revision(api) -> None:
    created = (await api.create(PODS, pod(resources("100m", cpu_lim="200m")))).json
    r = await resize(api, resources("100m", cpu_lim="200m"))
    assert r.status == 200
    assert r.json["metadata"]["generation"] == 1 == created["metadata"]["generation"]
    assert r.json["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_only_resources_and_resize_policy_change(api) -> None:
    await api.create(PODS, pod(resources("100m", cpu_lim="200m")))
    r = await api.call("PATCH", RESIZE, headers=SMP, body={
        "metadata": {"labels": {"sneaky": "yes"}},
        "spec": {"activeDeadlineSeconds": 5, "containers": [{
            "name": "c", "image": "evil", "resources": resources("150m", cpu_lim="200m"),
            "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]}]}})
    assert r.status == 200, r.json
    c = r.json["spec"]["containers"][0]
    assert c["image"] == "nginx" and "labels" not in r.json["metadata"]
    assert "activeDeadlineSeconds" not in r.json["spec"]
    assert c["resources"]["requests"]["cpu"] == "150m"
    assert c["resizePolicy"] == [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]


async def test_put_through_resize(api) -> None:
    await api.create(PODS, pod(resources("100m", cpu_lim="200m")))
    body = (await api.get(RESIZE)).json
    body["spec"]["containers"][0]["resources"] = resources("120m", cpu_lim="200m")
    r = await api.call("PUT", RESIZE, body=body)
    assert r.status == 200 and r.json["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "120m"


async def test_main_resource_still_refuses_resources(api) -> None:
    await api.create(PODS, pod(resources("100m", cpu_lim="200m")))
    r = await api.call("PATCH", f"{PODS}/p", body=patch(resources("150m", cpu_lim="200m")), headers=SMP)
    assert r.status == 422
    assert "pod updates may not change fields other than" in r.json["message"]


@pytest.mark.parametrize("old,new,message", [
    pytest.param(resources("100m", "100Mi", "100m", "100Mi"), resources("100m", "100Mi", "200m", "100Mi"),
                 'spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing',
                 id="guaranteed-to-burstable"),
    pytest.param(resources("100m", "100Mi"), {"requests": {"cpu": "100m"}},
                 "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed",
                 id="remove-a-request"),
    pytest.param(resources("100m", "1Gi", cpu_lim="200m", mem_lim="1Gi"), resources("100m", "1Gi", cpu_lim="200m"),
                 "spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed",
                 id="remove-a-limit"),
    pytest.param(resources("100m", cpu_lim="200m", ephemeral_storage="1Gi"),
                 resources("100m", cpu_lim="200m", ephemeral_storage="2Gi"),
                 "spec: Forbidden: only cpu and memory resources are mutable", id="storage-limit"),
])
async def test_validation(api, old: dict[str, Any], new: dict[str, Any], message: str) -> None:
    await api.create(PODS, pod(old))
    r = await api.call("PUT", RESIZE, body={**pod(new), "metadata": (await api.get(RESIZE)).json["metadata"]})
    assert r.status == 422, r.json
    assert r.json["message"] == f'Pod "p" is invalid: {message}'


async def test_memory_limit_may_decrease(api) -> None:
    """Upstream allows it since 1.34 (the kubelet checks usage first)."""
    await api.create(PODS, pod(resources("100m", "100Mi", cpu_lim="200m", mem_lim="1Gi")))
    r = await resize(api, resources("100m", "100Mi", cpu_lim="200m", mem_lim="500Mi"))
    assert r.status == 200, r.json


async def test_adding_limits_where_there_were_none(api) -> None:
    """dropCPUMemoryResourcesFromContainer: no old list, nothing to compare (a QoS change is
    what refuses most such resizes)."""
    await api.create(PODS, pod(resources("100m", "100Mi")))
    r = await resize(api, resources("100m", "100Mi", cpu_lim="500m"))
    assert r.status == 200, r.json


async def test_containers_may_not_be_added_renamed_or_reordered(api) -> None:
    await api.create(PODS, pod(resources("100m")))
    body = (await api.get(RESIZE)).json
    body["spec"]["containers"].append({"name": "d", "image": "nginx"})
    r = await api.call("PUT", RESIZE, body=body)
    assert r.status == 422
    assert r.json["message"].endswith("spec.containers: Forbidden: containers may not be added or removed on resize")
    body["spec"]["containers"] = [{**body["spec"]["containers"][0], "name": "renamed"}]
    r = await api.call("PUT", RESIZE, body=body)
    assert r.status == 422
    assert r.json["message"].endswith(
        "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize")


@pytest.mark.parametrize("meta,spec,message", [
    ({"annotations": {"kubernetes.io/config.mirror": "x"}}, {}, ": Forbidden: static pods cannot be resized"),
    ({}, {"os": {"name": "windows"}}, ": Forbidden: windows pods cannot be resized"),
    ({}, {"resources": {"requests": {"cpu": "1"}}}, ": Forbidden: pods with pod-level resources cannot be resized"),
])
async def test_pods_that_cannot_be_resized(api, meta: dict[str, Any], spec: dict[str, Any], message: str) -> None:
    p = pod(resources("100m", cpu_lim="200m"), **spec)
    p["metadata"].update(meta)
    r = await api.create(PODS, p)
    assert r.status == 201, r.json
    r = await resize(api, resources("150m", cpu_lim="200m"))
    assert r.status == 422
    assert r.json["message"] == f'Pod "p" is invalid: {message}'


async def test_node_without_resize_support(api) -> None:
    """A running container whose status has no resources: the kubelet is too old to resize."""
    await api.create(PODS, pod(resources("100m", cpu_lim="200m")))
    status = {"status": {"containerStatuses": [{"name": "c", "image": "nginx", "imageID": "", "ready": True,
                                                "restartCount": 0, "state": {"running": {}}}]}}
    assert (await api.call("PATCH", f"{PODS}/p/status", body=status, headers=MERGE)).status == 200
    r = await resize(api, resources("150m", cpu_lim="200m"))
    assert r.status == 422
    assert r.json["message"] == 'Pod "p" is invalid: spec: Forbidden: Pod running on node without support for resize'


async def test_sidecar_may_be_resized_plain_init_container_not(api) -> None:
    init = [{"name": "side", "image": "nginx", "restartPolicy": "Always", "resources": resources("100m", cpu_lim="200m")},
            {"name": "init", "image": "busybox", "resources": resources("100m", cpu_lim="200m")}]
    await api.create(PODS, pod(resources("100m", cpu_lim="200m"), initContainers=init))
    body = (await api.get(RESIZE)).json
    body["spec"]["initContainers"][0]["resources"] = resources("150m", cpu_lim="200m")
    r = await api.call("PUT", RESIZE, body=body)
    assert r.status == 200, r.json
    body = r.json
    body["spec"]["initContainers"][1]["resources"] = resources("150m", cpu_lim="200m")
    r = await api.call("PUT", RESIZE, body=body)
    assert r.status == 422
    assert r.json["message"] == 'Pod "p" is invalid: spec: Forbidden: resources for non-sidecar init containers are immutable'


async def test_unsupported_patch_type_and_missing_pod(api) -> None:
    r = await api.call("PATCH", RESIZE, body=patch(resources("1")), headers=SMP)
    assert r.status == 404 and r.json["message"] == 'pods "p" not found'
    await api.create(PODS, pod(resources("100m")))
    r = await api.call("PATCH", RESIZE, body="{}", headers={"content-type": "text/plain"})
    assert r.status == 415


async def test_status_write_keeps_observed_generation(api) -> None:
    """preserveOldObservedGeneration: a status write without it keeps the old value (the pod's
    and each condition's, by type)."""
    await api.create(PODS, pod(resources("100m", cpu_lim="200m")))
    await resize(api, resources("150m", cpu_lim="200m"))
    status = {"status": {"observedGeneration": 2,
                         "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 2}]}}
    r = await api.call("PATCH", f"{PODS}/p/status", body=status, headers=MERGE)
    assert r.status == 200, r.json
    body = r.json
    del body["status"]["observedGeneration"]
    del body["status"]["conditions"][0]["observedGeneration"]
    r = await api.call("PUT", f"{PODS}/p/status", body=body)
    assert r.status == 200, r.json
    assert r.json["status"]["observedGeneration"] == 2
    assert r.json["status"]["conditions"][0]["observedGeneration"] == 2


@pytest.mark.parametrize("old,new,want", [
    # no old condition has one: the conditions stay as sent (the kubelet's writes)
    ({"observedGeneration": 2, "conditions": [{"type": "Ready"}, {"type": "Initialized", "observedGeneration": 0}]},
     {"conditions": [{"type": "Ready"}]},
     {"observedGeneration": 2, "conditions": [{"type": "Ready"}]}),
    # by type, in order; a condition that has its own keeps it, a type not in old gets none
    ({"observedGeneration": 3, "conditions": [{"type": "Ready", "observedGeneration": 2},
                                              {"type": "X", "observedGeneration": 1},
                                              {"type": "X", "observedGeneration": 3}]},
     {"observedGeneration": 4, "conditions": [{"type": "X"}, {"type": "Ready", "observedGeneration": 4},
                                              {"type": "X"}, {"type": "X"}, {"type": "New"}]},
     {"observedGeneration": 4, "conditions": [{"type": "X", "observedGeneration": 1},
                                              {"type": "Ready", "observedGeneration": 4},
                                              {"type": "X", "observedGeneration": 3}, {"type": "X"}, {"type": "New"}]}),
])
def test_preserve_old_observed_generation(old, new, want) -> None:
    from kubeplane.apiserver.registry.core.pod import preserve_old_observed_generation
    sent = new.get("conditions")
    before = copy.deepcopy(sent)
    preserve_old_observed_generation(new, old)
    assert new == want
    # The conditions sent are not changed in place (an in-process patch's, which its writer
    # keeps: the kubelet's status manager hands its patches over uncopied): a copy is changed.
    assert sent == before
