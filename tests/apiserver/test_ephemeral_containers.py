"""pods/ephemeralcontainers as upstream serves it (EphemeralContainersREST with
podEphemeralContainersStrategy; ValidatePodEphemeralContainersUpdate's rules and messages)."""
from __future__ import annotations

from typing import Any

import pytest

PODS = "/api/v1/namespaces/default/pods"
EC = f"{PODS}/p/ephemeralcontainers"
SMP = {"content-type": "application/strategic-merge-patch+json"}


def pod(**meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta},
            "spec": {"containers": [{"name": "app", "image": "nginx"}], "volumes": [{"name": "data", "emptyDir": {}}]}}


def debugger(name: str = "debugger-abcde", **fields: Any) -> dict[str, Any]:
    """The container `kubectl debug p --image=busybox --target=app` sends (EphemeralContainer JSON)."""
    return {"name": name, "image": "busybox", "resources": {}, "terminationMessagePolicy": "File",
            "imagePullPolicy": "Always", "stdin": True, "tty": True, "targetContainerName": "app", **fields}


async def add(api, *containers: dict[str, Any]) -> Any:
    return await api.call("PATCH", EC, body={"spec": {"ephemeralContainers": list(containers)}}, headers=SMP)


async def test_kubectl_debug_patch_adds_a_defaulted_container(api) -> None:
    await api.create(PODS, pod())
    r = await add(api, debugger())
    assert r.status == 200, r.json
    assert r.json["kind"] == "Pod"
    assert r.json["spec"]["ephemeralContainers"] == [{**debugger(), "terminationMessagePath": "/dev/termination-log"}]
    stored = (await api.get(f"{PODS}/p")).json
    assert stored["spec"]["ephemeralContainers"] == r.json["spec"]["ephemeralContainers"]
    assert stored["metadata"]["resourceVersion"] == r.json["metadata"]["resourceVersion"]
    assert (await api.get(EC)).json == stored


async def test_only_ephemeral_containers_change(api) -> None:
    await api.create(PODS, pod())
    r = await api.call("PATCH", EC, headers=SMP, body={
        "metadata": {"labels": {"sneaky": "yes"}},
        "spec": {"containers": [{"name": "app", "image": "evil"}], "ephemeralContainers": [debugger()]}})
    assert r.status == 200
    assert "labels" not in r.json["metadata"] and r.json["spec"]["containers"][0]["image"] == "nginx"
    assert [c["name"] for c in r.json["spec"]["ephemeralContainers"]] == ["debugger-abcde"]


async def test_update_adds_and_keeps_existing(api) -> None:
    await api.create(PODS, pod())
    await add(api, debugger("one"))
    body = (await api.get(EC)).json
    body["spec"]["ephemeralContainers"].append(debugger("two"))
    r = await api.call("PUT", EC, body=body)
    assert r.status == 200 and [c["name"] for c in r.json["spec"]["ephemeralContainers"]] == ["one", "two"]


async def test_existing_ones_may_not_be_removed_or_changed(api) -> None:
    await api.create(PODS, pod())
    await add(api, debugger("one"))
    body = (await api.get(EC)).json
    body["spec"]["ephemeralContainers"] = []
    r = await api.call("PUT", EC, body=body)
    assert r.status == 422
    assert r.json["message"] == ('Pod "p" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
                                 'containers "one" may not be removed\n')
    body["spec"]["ephemeralContainers"] = [debugger("one", image="alpine")]
    r = await api.call("PUT", EC, body=body)
    assert r.status == 422
    assert r.json["message"] == ('Pod "p" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
                                 'containers "one" may not be changed')


@pytest.mark.parametrize("fields,field", [
    ({"ports": [{"containerPort": 80}]}, "ports"),
    ({"ports": []}, "ports"),
    ({"resources": {"limits": {"cpu": "1"}}}, "resources"),
    ({"livenessProbe": {"exec": {"command": ["true"]}}}, "livenessProbe"),
    ({"readinessProbe": {"exec": {"command": ["true"]}}}, "readinessProbe"),
    ({"startupProbe": {"exec": {"command": ["true"]}}}, "startupProbe"),
    ({"lifecycle": {"preStop": {"exec": {"command": ["true"]}}}}, "lifecycle"),
    ({"restartPolicy": "Always"}, "restartPolicy"),
    ({"resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}, "resizePolicy"),
])
async def test_workload_fields_are_forbidden(api, fields: dict[str, Any], field: str) -> None:
    await api.create(PODS, pod())
    r = await add(api, debugger(**fields))
    assert r.status == 422, r.json
    causes = [(c["field"], c["message"]) for c in r.json["details"]["causes"]]
    assert (f"spec.ephemeralContainers[0].{field}", "Forbidden: cannot be set for an Ephemeral Container") in causes
    assert "ephemeralContainers" not in (await api.get(f"{PODS}/p")).json["spec"]


async def test_names_targets_and_mounts(api) -> None:
    await api.create(PODS, pod())
    r = await add(api, debugger("app", targetContainerName="nope",
                                volumeMounts=[{"name": "data", "mountPath": "/d", "subPath": "x"}]))
    assert r.status == 422
    assert r.json["message"] == (
        'Pod "p" is invalid: [spec.ephemeralContainers[0].name: Duplicate value: "app", '
        'spec.ephemeralContainers[0].targetContainerName: Not found: "nope", '
        "spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container]")
    r = await add(api, debugger("d", image=""))
    assert r.status == 422 and r.json["details"]["causes"][0]["field"] == "spec.ephemeralContainers[0].image"


async def test_static_pods_have_none(api) -> None:
    await api.create(PODS, pod(annotations={"kubernetes.io/config.mirror": "x"}))
    r = await add(api, debugger())
    assert r.status == 422
    assert r.json["message"] == 'Pod "p" is invalid: : Forbidden: static pods do not support ephemeral containers'


async def test_a_missing_pod_is_a_404_with_details(api) -> None:
    r = await add(api, debugger())
    assert r.status == 404
    assert r.json["details"] == {"name": "p", "kind": "pods"} and r.json["message"] == 'pods "p" not found'


async def test_the_main_resource_cannot_add_them(api) -> None:
    await api.create(PODS, pod())
    r = await api.call("PATCH", f"{PODS}/p", body={"spec": {"ephemeralContainers": [debugger()]}}, headers=SMP)
    assert r.status == 422 and r.json["details"]["causes"][0]["field"] == "spec"


async def test_stale_resource_version_conflicts_and_dry_run_writes_nothing(api) -> None:
    created = (await api.create(PODS, pod())).json
    await add(api, debugger("one"))
    stale = {**created, "spec": {**created["spec"], "ephemeralContainers": [debugger("two")]}}
    r = await api.call("PUT", EC, body=stale)
    assert r.status == 409 and r.json["reason"] == "Conflict"
    r = await api.call("PATCH", EC, {"dryRun": "All"}, body={"spec": {"ephemeralContainers": [debugger("three")]}},
                       headers=SMP)
    # Without $setElementOrder a strategic merge puts the patch's items first, as Go's mergeSortedSlice.
    assert r.status == 200 and [c["name"] for c in r.json["spec"]["ephemeralContainers"]] == ["three", "one"]
    assert [c["name"] for c in (await api.get(EC)).json["spec"]["ephemeralContainers"]] == ["one"]


async def test_apply_is_not_a_supported_patch_type(api) -> None:
    await api.create(PODS, pod())
    r = await api.call("PATCH", EC, {"fieldManager": "m"}, body=pod(),
                       headers={"content-type": "application/apply-patch+yaml"})
    assert r.status == 415


async def test_discovery_lists_the_subresource(api) -> None:
    resources = {r["name"]: r for r in (await api.get("/api/v1")).json["resources"]}
    assert resources["pods/ephemeralcontainers"]["verbs"] == ["get", "patch", "update"]
    assert resources["pods/ephemeralcontainers"]["kind"] == "Pod"
