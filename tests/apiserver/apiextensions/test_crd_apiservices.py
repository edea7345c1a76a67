"""The Local APIService of each group-version a CRD serves (upstream's crdregistration and
autoregister controllers): created with upstream's priorities and the sync-managed label,
Available True (Local), removed when the last CRD serving it goes; a user's APIService of the
same name and the built-in group-versions' onstart ones are left alone."""
from __future__ import annotations

from typing import Any

from kubeplane.apiserver.apiextensions.apiservices import api_service, desired_group_versions

from .test_crd_controller import CRDS, MERGE, crd_manifest, established, served, until  # noqa: F401

APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"


def test_desired_group_versions_are_the_served_ones_outside_built_in_groups() -> None:
    a = crd_manifest(versions=("v1", "v2"))
    a["spec"]["versions"][1]["served"] = False
    b = crd_manifest("bars", "Bar", versions=("v1beta1",))
    builtin = crd_manifest("probes", "Probe", group="networking.k8s.io")
    assert desired_group_versions([a, b, builtin]) == {("example.com", "v1"), ("example.com", "v1beta1")}
    assert api_service("example.com", "v1") == {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.example.com", "labels": {"kube-aggregator.kubernetes.io/automanaged": "true"}},
        "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100}}


async def test_a_crd_group_version_has_a_local_api_service_while_served(served: Any) -> None:  # noqa: F811
    api = served
    assert (await api.create(CRDS, crd_manifest(versions=("v1", "v2")))).status == 201
    assert (await api.create(CRDS, crd_manifest("bars", "Bar"))).status == 201
    await established(api, "foos.example.com")

    async def available(name: str) -> Any:
        r = await api.get(f"{APISERVICES}/{name}")
        conds = (r.json.get("status") or {}).get("conditions") or [] if r.status == 200 else []
        return r.json if any(c["type"] == "Available" and c["status"] == "True" for c in conds) else None
    svc = await until(lambda: available("v1.example.com"), "v1.example.com available")
    assert svc["spec"] == {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
                           "versionPriority": 100}
    assert [(c["reason"], c["message"]) for c in svc["status"]["conditions"]] == [
        ("Local", "Local APIServices are always available")]
    await until(lambda: available("v2.example.com"), "v2.example.com available")

    table = await api.call("GET", APISERVICES, headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    rows = {r["cells"][0]: r["cells"][1:3] for r in table.json["rows"]}
    assert rows["v1.example.com"] == ["Local", "True"] and rows["v1.apps"] == ["Local", "True"]

    # v2 no longer served: its APIService goes; v1 stays while bars still serve it
    r = await api.call("PATCH", f"{CRDS}/foos.example.com", body=[
        {"op": "replace", "path": "/spec/versions/1/served", "value": False}],
        headers={"content-type": "application/json-patch+json"})
    assert r.status == 200, r.json

    async def gone(name: str) -> bool:
        return (await api.get(f"{APISERVICES}/{name}")).status == 404
    await until(lambda: gone("v2.example.com"), "v2.example.com removed")
    assert (await api.call("DELETE", f"{CRDS}/foos.example.com")).status == 200
    await until(lambda: gone_crd(api, "foos.example.com"), "foos deleted")
    assert await available("v1.example.com")
    assert (await api.call("DELETE", f"{CRDS}/bars.example.com")).status == 200
    await until(lambda: gone("v1.example.com"), "v1.example.com removed with the last CRD")
    assert (await api.get(f"{APISERVICES}/v1.apps")).status == 200


async def test_a_users_api_service_of_the_same_name_is_left_alone(served: Any) -> None:  # noqa: F811
    api = served
    mine = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.example.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 5, "versionPriority": 5}}
    assert (await api.create(APISERVICES, mine)).status == 201
    assert (await api.create(CRDS, crd_manifest())).status == 201
    await established(api, "foos.example.com")
    assert (await api.call("DELETE", f"{CRDS}/foos.example.com")).status == 200
    await until(lambda: gone_crd(api, "foos.example.com"), "foos deleted")
    r = await api.get(f"{APISERVICES}/v1.example.com")
    assert r.status == 200 and r.json["spec"]["groupPriorityMinimum"] == 5


async def gone_crd(api: Any, name: str) -> bool:
    return (await api.get(f"{CRDS}/{name}")).status == 404
