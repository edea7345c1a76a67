"""OpenAPI for custom resources, in process: a served CRD version's schema is published (v3 per
group-version, and in /openapi/v2) as upstream's builder names and describes it, and a changed
CRD changes the document (and its hash) at once."""
from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest

from kubeplane.apiserver import openapi, openapi_v2
from kubeplane.testing.fake import FakeClientset

GROUP = "docs.example.com"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"crontabs.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "description": "CronTab runs a command on a schedule.",
                 "properties": {"spec": {"type": "object", "description": "The desired schedule.",
                                         "properties": {"cronSpec": {"type": "string",
                                                                     "description": "When to run."}}}}}}}]}}


async def eventually(check: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def v3() -> dict[str, Any] | None:
    doc = openapi.openapi_document(f"apis/{GROUP}/v1")
    return orjson.loads(doc) if doc else None


@pytest.fixture
async def cs() -> AsyncIterator[FakeClientset]:
    cs = await FakeClientset.new()
    await cs.seed(CRD)
    await eventually(v3, "the group-version's document")
    try:
        yield cs
    finally:
        await cs.close()


async def test_v3_document_as_upstream_builder(cs: FakeClientset) -> None:
    doc = v3()
    assert doc is not None
    schemas = doc["components"]["schemas"]
    obj, lst = schemas["com.example.docs.v1.CronTab"], schemas["com.example.docs.v1.CronTabList"]
    assert obj["description"] == "CronTab runs a command on a schedule."
    assert obj["properties"]["spec"]["properties"]["cronSpec"] == {"type": "string", "description": "When to run."}
    assert obj["properties"]["apiVersion"]["description"].startswith("APIVersion defines the versioned schema")
    assert obj["properties"]["kind"]["description"].startswith("Kind is a string value representing the REST")
    assert obj["properties"]["metadata"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
        "description": "Standard object's metadata. More info: "
                       "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}
    assert lst["description"] == "CronTabList is a list of CronTab"
    assert lst["properties"]["items"] == {
        "type": "array", "items": {"$ref": "#/components/schemas/com.example.docs.v1.CronTab"},
        "description": "List of crontabs. More info: "
                       "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"}
    assert lst["x-kubernetes-group-version-kind"] == [{"group": GROUP, "kind": "CronTabList", "version": "v1"}]
    assert not [k for k in schemas if k.startswith("custom.")]
    assert f"apis/{GROUP}/v1" in openapi.openapi_index()["paths"]


async def test_v2_document_names(cs: FakeClientset) -> None:
    doc = openapi_v2.build_document()
    defs = doc["definitions"]
    assert defs["com.example.docs.v1.CronTab"]["properties"]["spec"]["description"] == "The desired schedule."
    assert not [k for k in defs if k.startswith("custom.")]
    assert list(defs) == sorted(defs)
    body = orjson.dumps(doc["paths"])
    assert b"#/definitions/com.example.docs.v1.CronTab" in body and b"#/definitions/custom." not in body


async def test_a_changed_crd_changes_the_document_at_once(cs: FakeClientset) -> None:
    before = openapi.openapi_hash(f"apis/{GROUP}/v1")
    changed = copy.deepcopy(CRD)
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tz"] = {
        "type": "string", "description": "The time zone."}
    await cs.apiextensions_v1().customresourcedefinitions().patch(
        f"crontabs.{GROUP}", {"spec": {"versions": changed["spec"]["versions"]}}, "merge")

    def has_tz() -> bool:
        doc = v3()
        spec = doc["components"]["schemas"]["com.example.docs.v1.CronTab"]["properties"]["spec"] if doc else {}
        return "tz" in spec.get("properties", {})
    await eventually(has_tz, "the new field in the document")
    assert openapi.openapi_hash(f"apis/{GROUP}/v1") != before
