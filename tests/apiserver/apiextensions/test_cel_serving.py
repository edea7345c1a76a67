"""CRD validation rules through the API: the CRD write refused with upstream's compile and
cost errors, and an update of a custom object whose failing value is unchanged answered with a
warning (CRDValidationRatcheting).

Upstream: apiextensions-apiserver test/integration/ratcheting_test.go and validation of
x-kubernetes-validations in pkg/apis/apiextensions/validation.
"""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.apiserver.apiextensions.celvalidation import typedenv

from .test_crd_controller import CRDS, MERGE, crd_manifest, established, served, until  # noqa: F401  (its fixture)

pytest.importorskip("cel_expr_python")
BASE = "/apis/example.com/v1/namespaces/default/foos"


@pytest.fixture
def crd_api(served: Any) -> Any:  # noqa: F811  (the imported fixture)
    return served


def crd(spec_rules: list[dict[str, Any]] | None = None, **spec_schema: Any) -> dict[str, Any]:
    m = crd_manifest()
    spec: dict[str, Any] = {"type": "object", "properties": {"size": {"type": "integer"}, **spec_schema}}
    if spec_rules:
        spec["x-kubernetes-validations"] = spec_rules
    m["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec
    return m


def warnings(r: Any) -> list[str]:
    return [v for k, v in r.headers if k == "warning"]


async def test_unchanged_failing_values_ratchet_with_a_warning(crd_api: Any) -> None:
    api = crd_api
    assert (await api.create(CRDS, crd())).status == 201
    await established(api, "foos.example.com")
    r = await api.create(BASE, {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "a"},
                                "spec": {"size": 20}})
    assert r.status == 201, r.json
    # the rule comes after the object: the object now breaks it
    current = (await api.get(f"{CRDS}/foos.example.com")).json
    ruled = copy.deepcopy(current)
    ruled["spec"] = crd([{"rule": "self.size < 10", "message": "size must be below 10"}])["spec"]
    r = await api.call("PUT", f"{CRDS}/foos.example.com", body=ruled)
    assert r.status == 200, r.json

    async def patched() -> Any:
        r = await api.call("PATCH", f"{BASE}/a", body={"metadata": {"labels": {"x": "y"}}}, headers=MERGE)
        return r if warnings(r) else None
    r = await until(patched, "the rule served")      # once the controller serves the new schema
    assert r.status == 200, r.json
    assert warnings(r) == ['299 - "spec: Invalid value: size must be below 10"']
    r = await api.call("PATCH", f"{BASE}/a", body={"spec": {"size": 30}}, headers=MERGE)
    assert r.status == 422
    assert r.json["message"] == 'Foo.example.com "a" is invalid: spec: Invalid value: size must be below 10'
    r = await api.call("PATCH", f"{BASE}/a", body={"spec": {"size": 3}}, headers=MERGE)
    assert r.status == 200 and warnings(r) == []


@pytest.mark.skipif(not typedenv.available(), reason="typed CRD rules need protobuf")
async def test_crd_write_refused_for_an_undefined_field(crd_api: Any) -> None:
    r = await crd_api.create(CRDS, crd([{"rule": "self.sise < 10"}]))
    assert r.status == 422
    assert r.json["message"] == (
        'CustomResourceDefinition.apiextensions.k8s.io "foos.example.com" is invalid: '
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        '{"Rule":"self.sise \\u003c 10","Message":"","MessageExpression":"","Reason":null,"FieldPath":"",'
        '"OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:5: undefined field \'sise\'\n'
        " | self.sise < 10\n | ....^")


async def test_crd_write_refused_over_the_cost_limits(crd_api: Any) -> None:
    r = await crd_api.create(CRDS, crd([{"rule": "self.names.all(x, self.names.all(y, x != y || x == y))"}],
                                       names={"type": "array", "items": {"type": "string"}}))
    assert r.status == 422
    rule = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert [(c["reason"], c["field"]) for c in r.json["details"]["causes"]] == [
        ("FieldValueForbidden", rule), ("FieldValueForbidden", rule),
        ("FieldValueForbidden", "spec.validation.openAPIV3Schema")]
    bounded = crd([{"rule": "self.names.all(x, self.names.all(y, x != y || x == y))"}],
                  names={"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}})
    assert (await crd_api.create(CRDS, bounded)).status == 201
