"""Real kubectl against `kubeplane up --nodes 0`: OpenAPI v3 for custom resources.

A served CRD version's schema is published at /openapi/v3/apis/<group>/<version> as upstream's
builder does (components named with the group reversed, TypeMeta and metadata descriptions),
at once and again whenever the CRD changes, so `kubectl explain` shows the kind's fields and
descriptions, and `kubectl apply` asks for strict field validation.
"""
from __future__ import annotations

import copy
import json
import re

import pytest

from .cluster import Cluster, eventually

GROUP = "docs.example.com"
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": f"crontabs.{GROUP}"},
       "spec": {"group": GROUP, "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "description": "CronTab runs a command on a schedule.",
                    "properties": {"spec": {
                        "type": "object", "description": "The desired schedule.",
                        "required": ["cronSpec"],
                        "properties": {
                            "cronSpec": {"type": "string", "description": "When to run, in cron syntax."},
                            "replicas": {"type": "integer", "format": "int32", "minimum": 1,
                                         "description": "How many copies run at once."}}}}}}}]}}


@pytest.fixture(scope="module", autouse=True)
def crontabs_crd(cluster: Cluster) -> None:
    cluster.apply_yaml(CRD)
    cluster.kubectl("wait", "--for=condition=Established", f"crd/crontabs.{GROUP}", "--timeout=20s")


def _fields(text: str) -> dict[str, str]:
    """FIELDS of `kubectl explain`: name -> type ("<string>", "<Object>", ...)."""
    return dict(re.findall(r"^  (\S+)\t(<[^>]+>)", text, re.M))


def test_explain_shows_the_kind_and_its_fields(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "crontab").stdout
    assert re.search(r"^GROUP:\s+docs.example.com$", out, re.M), out
    assert re.search(r"^KIND:\s+CronTab$", out, re.M) and re.search(r"^VERSION:\s+v1$", out, re.M)
    assert "CronTab runs a command on a schedule." in out
    assert _fields(out) == {"apiVersion": "<string>", "kind": "<string>", "metadata": "<ObjectMeta>",
                            "spec": "<Object>"}
    assert "APIVersion defines the versioned schema of this representation of an object." in out
    assert "Standard object's metadata." in out

    spec = cluster.kubectl("explain", "crontab.spec").stdout
    assert "The desired schedule." in spec
    assert _fields(spec) == {"cronSpec": "<string>", "replicas": "<integer>"}
    assert re.search(r"^  cronSpec\t<string> -required-$", spec, re.M), spec
    assert "When to run, in cron syntax." in spec and "How many copies run at once." in spec

    field = cluster.kubectl("explain", "crontabs.spec.replicas").stdout
    assert re.search(r"^FIELD:\s+replicas <integer>$", field, re.M), field
    # metadata resolves to the shared ObjectMeta
    assert "ownerReferences" in cluster.kubectl("explain", "crontab.metadata").stdout


def test_the_document_uses_upstream_names(cluster: Cluster) -> None:
    index = json.loads(cluster.kubectl("get", "--raw", "/openapi/v3").stdout)
    assert f"apis/{GROUP}/v1" in index["paths"]
    doc = json.loads(cluster.kubectl("get", "--raw", f"/openapi/v3/apis/{GROUP}/v1").stdout)
    schemas = doc["components"]["schemas"]
    obj, lst = schemas["com.example.docs.v1.CronTab"], schemas["com.example.docs.v1.CronTabList"]
    assert obj["x-kubernetes-group-version-kind"] == [{"group": GROUP, "kind": "CronTab", "version": "v1"}]
    assert obj["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert lst["description"] == "CronTabList is a list of CronTab"
    assert lst["properties"]["items"]["items"] == {"$ref": "#/components/schemas/com.example.docs.v1.CronTab"}
    assert not [k for k in schemas if k.startswith("custom.")]

    v2 = json.loads(cluster.kubectl("get", "--raw", "/openapi/v2").stdout)
    assert v2["definitions"]["com.example.docs.v1.CronTab"]["x-kubernetes-group-version-kind"] == [
        {"group": GROUP, "kind": "CronTab", "version": "v1"}]
    assert not [k for k in v2["definitions"] if k.startswith("custom.")]
    get = v2["paths"][f"/apis/{GROUP}/v1/namespaces/{{namespace}}/crontabs/{{name}}"]["get"]
    assert get["responses"]["200"]["schema"] == {"$ref": "#/definitions/com.example.docs.v1.CronTab"}


def test_explain_follows_a_changed_crd_at_once(cluster: Cluster) -> None:
    changed = copy.deepcopy(CRD)
    props = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    props["timezone"] = {"type": "string", "description": "The zone the schedule is read in."}
    cluster.apply_yaml(changed)

    def explained() -> str:
        out = cluster.kubectl("explain", "crontab.spec").stdout
        return out if "timezone" in _fields(out) else ""
    out = eventually(explained, "kubectl explain to show the new field")
    assert "The zone the schedule is read in." in out


def test_apply_validates_strictly(cluster: Cluster) -> None:
    """kubectl finds the kind's PATCH operation with a fieldValidation parameter, so it asks for
    Strict: an unknown top-level field is refused, not dropped."""
    bad = {"apiVersion": f"{GROUP}/v1", "kind": "CronTab", "metadata": {"name": "bad", "namespace": "default"},
           "spec": {"cronSpec": "* * * * *"}, "bogus": 1}
    res = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert res.returncode != 0 and 'unknown field "bogus"' in res.stderr, res.stderr
    ok = {**bad}
    ok.pop("bogus")
    assert "crontab.docs.example.com/bad created" in cluster.kubectl("apply", "-f", "-", input=json.dumps(ok)).stdout
