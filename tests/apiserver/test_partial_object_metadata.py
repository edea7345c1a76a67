"""Metadata-only answers: `Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`
as client-go's metadata client (metadata informers, the garbage collector's, controller-runtime's
metadata-only watches) asks for them.

Upstream: doTransformObject, asPartialObjectMetadata, asPartialObjectMetadataList
(apiserver endpoints/handlers/response.go); the table is TestGetPartialObjectMetadata's
(endpoints/apiserver_test.go), on ConfigMaps.
"""
from __future__ import annotations

import pytest

CMS = "/api/v1/namespaces/default/configmaps"
CM = "application/json;as=PartialObjectMetadata;v={v};g=meta.k8s.io"
CML = "application/json;as=PartialObjectMetadataList;v={v};g=meta.k8s.io"
# client-go's metadata client (k8s.io/client-go/metadata): protobuf first, then JSON, then plain
CLIENT_GO_LIST = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")


@pytest.fixture
async def two(api):
    for name in ("foo1", "foo2"):
        body = {"metadata": {"name": name, "labels": {"l": name}, "annotations": {"a": "b"}}, "data": {"k": "v"}}
        assert (await api.create(CMS, body)).status == 201
    return api


@pytest.mark.parametrize(("is_list", "accept", "kind"), [
    (False, CM.format(v="v1alpha1") + ", application/json", "v1/ConfigMap"),
    (False, CM.format(v="v1beta1") + ", application/json", "meta.k8s.io/v1beta1/PartialObjectMetadata"),
    # the preferred (first) version wins
    (False, CM.format(v="v1beta1") + ", " + CM.format(v="v1") + ", application/json",
     "meta.k8s.io/v1beta1/PartialObjectMetadata"),
    (False, CM.format(v="v1") + ", " + CM.format(v="v1beta1") + ", application/json",
     "meta.k8s.io/v1/PartialObjectMetadata"),
    (False, CM.format(v="v1"), "meta.k8s.io/v1/PartialObjectMetadata"),
    (True, CM.format(v="v1alpha1") + ", application/json", "v1/ConfigMapList"),
    (True, CML.format(v="v1beta1") + ", application/json", "meta.k8s.io/v1beta1/PartialObjectMetadataList"),
    (True, CLIENT_GO_LIST, "meta.k8s.io/v1/PartialObjectMetadataList"),
    (True, "application/json;as=Table;v=v1;g=meta.k8s.io, " + CML.format(v="v1"), "meta.k8s.io/v1/Table"),
])
async def test_get_partial_object_metadata(two, is_list: bool, accept: str, kind: str) -> None:
    r = await two.call("GET", CMS if is_list else f"{CMS}/foo1", headers={"Accept": accept})
    assert r.status == 200, r.json
    assert f"{r.json['apiVersion']}/{r.json['kind']}" == kind


@pytest.mark.parametrize(("is_list", "accept", "message"), [
    (True, CM.format(v="v1beta1"),
     "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"),
    (False, CML.format(v="v1beta1"),
     "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"),
])
async def test_the_wrong_one_is_not_acceptable(two, is_list: bool, accept: str, message: str) -> None:
    r = await two.call("GET", CMS if is_list else f"{CMS}/foo1", headers={"Accept": accept})
    assert r.status == 406
    assert r.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": message, "reason": "NotAcceptable", "code": 406}


async def test_the_metadata_is_the_whole_object_meta(two) -> None:
    full = (await two.get(f"{CMS}/foo1")).json
    r = await two.call("GET", f"{CMS}/foo1", headers={"Accept": CM.format(v="v1")})
    assert r.json == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": full["metadata"]}


async def test_list_keeps_its_list_meta_and_pages(two) -> None:
    r = await two.call("GET", CMS, {"limit": "1"}, headers={"Accept": CLIENT_GO_LIST})
    body = r.json
    assert body["kind"] == "PartialObjectMetadataList" and body["apiVersion"] == "meta.k8s.io/v1"
    assert set(body["metadata"]) == {"resourceVersion", "continue", "remainingItemCount"}
    assert body["metadata"]["remainingItemCount"] == 1
    assert [i["kind"] for i in body["items"]] == ["PartialObjectMetadata"]
    assert set(body["items"][0]) == {"kind", "apiVersion", "metadata"}


async def test_writes_answer_metadata_too(two) -> None:
    r = await two.call("PATCH", f"{CMS}/foo1", body={"data": {"k": "w"}},
                       headers={"content-type": "application/merge-patch+json", "Accept": CM.format(v="v1")})
    assert r.status == 200
    assert r.json["kind"] == "PartialObjectMetadata" and "data" not in r.json


async def test_watch_events_are_partial_object_metadata(two) -> None:
    w = await two.open_watch(CMS, {"resourceVersion": "0"}, headers={"Accept": CM.format(v="v1")})
    assert w.status == 200
    seen = await w.events(2)
    await w.close()
    assert {e["object"]["kind"] for e in seen} == {"PartialObjectMetadata"}
    assert all("data" not in e["object"] for e in seen)
