"""DELETE answers the object where upstream's store sets ReturnDeletedObject, a Status elsewhere,
and both OpenAPI documents say so, derived from the resource definitions.

UPSTREAM_OBJECT is the list of single-object DELETE operations whose 200 answer upstream's
1.37 OpenAPI types as the object (read off the kubernetes 37.0.2 Python client, generated from
that document): every other served resource's DELETE answers a Status.
"""
from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubeplane.api import resources as res
from kubeplane.apiserver import openapi, openapi_v2

NOW = "2023-11-14T22:13:20Z"          # the fake clock's start
PVS = "/api/v1/persistentvolumes"

UPSTREAM_OBJECT = {
    ("", "persistentvolumes"), ("", "persistentvolumeclaims"), ("", "pods"), ("", "podtemplates"),
    ("", "resourcequotas"), ("", "services"), ("", "serviceaccounts"),
    ("storage.k8s.io", "csidrivers"), ("storage.k8s.io", "csinodes"), ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "volumeattachments"), ("storage.k8s.io", "volumeattributesclasses"),
    ("resource.k8s.io", "deviceclasses"), ("resource.k8s.io", "resourceclaims"),
    ("resource.k8s.io", "resourceclaimtemplates"), ("resource.k8s.io", "resourceslices"),
}


def _delete_refs_v2() -> dict[tuple[str, str], str]:
    doc = orjson.loads(openapi_v2.served().json)
    out = {}
    for r in res.RESOURCES:
        if "delete" not in r.verbs:
            continue
        prefix = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
        path = f"{prefix}/namespaces/{{namespace}}/{r.plural}/{{name}}" if r.namespaced else f"{prefix}/{r.plural}/{{name}}"
        out[(r.group, r.plural)] = doc["paths"][path]["delete"]["responses"]["200"]["schema"]["$ref"]
    return out


def test_openapi_v2_delete_answers_match_upstream() -> None:
    refs = _delete_refs_v2()
    assert UPSTREAM_OBJECT <= set(refs), UPSTREAM_OBJECT - set(refs)
    for (group, plural), ref in refs.items():
        if (group, plural) in UPSTREAM_OBJECT:
            assert not ref.endswith("meta.v1.Status"), (group, plural, ref)
        else:
            assert ref == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status", (group, plural, ref)
    # the namespace REST answers the object but its OpenAPI says Status (no MayReturnFullObjectDeleter)
    assert refs[("", "namespaces")].endswith("meta.v1.Status")
    assert refs[("", "persistentvolumes")] == "#/definitions/io.k8s.api.core.v1.PersistentVolume"


def _v3_delete(doc_path: str, path: str) -> dict[str, Any]:
    raw = openapi.openapi_document(doc_path)
    assert raw is not None
    return orjson.loads(raw)["paths"][path]["delete"]["responses"]


@pytest.mark.parametrize(("doc_path", "path", "schema"), [
    ("api/v1", "/api/v1/persistentvolumes/{name}", "io.k8s.api.core.v1.PersistentVolume"),
    ("api/v1", "/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}",
     "io.k8s.api.core.v1.PersistentVolumeClaim"),
    ("api/v1", "/api/v1/namespaces/{name}", "io.k8s.apimachinery.pkg.apis.meta.v1.Status"),
    ("api/v1", "/api/v1/namespaces/{namespace}/configmaps/{name}", "io.k8s.apimachinery.pkg.apis.meta.v1.Status"),
    ("apis/storage.k8s.io/v1", "/apis/storage.k8s.io/v1/storageclasses/{name}", "io.k8s.api.storage.v1.StorageClass"),
    ("apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
     "io.k8s.apimachinery.pkg.apis.meta.v1.Status"),
])
def test_openapi_v3_delete_answers(doc_path: str, path: str, schema: str) -> None:
    responses = _v3_delete(doc_path, path)
    for code in ("200", "202"):
        ref = responses[code]["content"]["application/json"]["schema"]["$ref"]
        assert ref == f"#/components/schemas/{schema}"


def pv(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, **meta},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/tmp/pv"}}}


async def test_delete_of_a_persistent_volume_answers_it(api) -> None:
    assert (await api.create(PVS, pv("gone"))).status == 201
    r = await api.call("DELETE", f"{PVS}/gone")
    assert r.status == 200, r.json
    assert r.json["kind"] == "PersistentVolume" and r.json["metadata"]["name"] == "gone"


async def test_delete_held_by_a_finalizer_answers_the_marked_object(api) -> None:
    assert (await api.create(PVS, pv("held", finalizers=["example.com/hold"]))).status == 201
    r = await api.call("DELETE", f"{PVS}/held")
    assert r.status == 200, r.json
    assert r.json["kind"] == "PersistentVolume"
    assert r.json["metadata"]["deletionTimestamp"] == NOW
    assert (await api.get(f"{PVS}/held")).json["metadata"]["deletionTimestamp"] == NOW


async def test_delete_of_a_config_map_answers_a_status(api) -> None:
    await api.create(api.CMS, api.configmap("c"))
    r = await api.call("DELETE", f"{api.CMS}/c")
    assert r.status == 200
    assert r.json["kind"] == "Status" and r.json["status"] == "Success"
