"""JSON merge patch (RFC 7386 appendix A examples) and JSON patch (RFC 6902) with upstream's
error mapping (endpoints/handlers/patch.go applyJSPatch)."""
from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.apiserver.patch import apply_patch, json_merge_patch, json_patch
from kubeplane.apiserver.patch.merge import merge_patch

DEPLOY = "io.k8s.api.apps.v1.Deployment"


@pytest.mark.parametrize("target,patch,result", [
    pytest.param({"a": "b"}, {"a": "c"}, {"a": "c"}, id="1"),
    pytest.param({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}, id="2"),
    pytest.param({"a": "b"}, {"a": None}, {}, id="3"),
    pytest.param({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}, id="4"),
    pytest.param({"a": ["b"]}, {"a": "c"}, {"a": "c"}, id="5"),
    pytest.param({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}, id="6"),
    pytest.param({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}, id="7"),
    pytest.param({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}, id="8"),
    pytest.param(["a", "b"], ["c", "d"], ["c", "d"], id="9"),
    pytest.param({"a": "b"}, ["c"], ["c"], id="10"),
    pytest.param({"a": "foo"}, None, None, id="11"),
    pytest.param({"a": "foo"}, "bar", "bar", id="12"),
    pytest.param({"e": None}, {"a": 1}, {"e": None, "a": 1}, id="13"),
    pytest.param([1, 2], {"a": "b", "c": None}, {"a": "b"}, id="14"),
    pytest.param({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}, id="15"),
])
def test_rfc7386_examples(target: Any, patch: Any, result: Any) -> None:
    assert merge_patch(target, patch) == result


def test_kubectl_label_merge_patch_keeps_other_labels() -> None:
    d = {"metadata": {"name": "nginx", "labels": {"app": "nginx"}}}
    out = apply_patch("application/merge-patch+json", d, b'{"metadata":{"labels":{"foo":"bar"}}}', DEPLOY)
    assert out["metadata"]["labels"] == {"app": "nginx", "foo": "bar"}
    assert d["metadata"]["labels"] == {"app": "nginx"}


def test_kubectl_scale_merge_patch() -> None:
    out = json_merge_patch({"spec": {"replicas": 1, "paused": True}}, {"spec": {"replicas": 3}})
    assert out == {"spec": {"replicas": 3, "paused": True}}


@pytest.mark.parametrize("body,code", [
    pytest.param(b"null", 400, id="null"),
    pytest.param(b'"x"', 400, id="string"),
    pytest.param(b"{bad", 400, id="malformed"),
    pytest.param(b"[1]", 422, id="array-replaces-object"),
])
def test_merge_patch_errors(body: bytes, code: int) -> None:
    with pytest.raises(errors.StatusError) as ei:
        apply_patch("application/merge-patch+json", {"a": 1}, body, DEPLOY)
    assert ei.value.code == code


def test_rollout_undo_json_patch() -> None:
    """The body `kubectl rollout undo` sends (client-wire.md)."""
    template = {"metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                                         "resources": {}}]}}
    annotations = {"deployment.kubernetes.io/revision": "3", "kubectl.kubernetes.io/last-applied-configuration": "x"}
    body = orjson.dumps([{"op": "replace", "path": "/spec/template", "value": template},
                         {"op": "replace", "path": "/metadata/annotations", "value": annotations}])
    d = {"metadata": {"name": "nginx", "annotations": {"deployment.kubernetes.io/revision": "3"}},
         "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.26"}]}}}}
    out = apply_patch("application/json-patch+json", d, body, DEPLOY)
    assert out["spec"]["template"] == template
    assert out["metadata"]["annotations"] == annotations
    assert out["spec"]["replicas"] == 2
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"


@pytest.mark.parametrize("ops,code,message", [
    pytest.param({"op": "add"}, 400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
                 id="not-a-list"),
    pytest.param([1], 400, "json: cannot unmarshal number into Go value of type jsonpatch.Operation",
                 id="op-not-object"),
    pytest.param([{"op": "test", "path": "/a", "value": 2}], 422,
                 "the server rejected our request due to an error in our request", id="failed-test"),
    pytest.param([{"op": "remove", "path": "/missing"}], 422,
                 "the server rejected our request due to an error in our request", id="missing-path"),
    pytest.param([{"op": "bogus", "path": "/a"}], 422,
                 "the server rejected our request due to an error in our request", id="unknown-op"),
    pytest.param([{"op": "add", "path": "/a"}] * 10001, 413,
                 "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001",
                 id="too-many-ops"),
    pytest.param([{"op": "replace", "path": "", "value": [1]}], 422, None, id="root-not-object"),
])
def test_json_patch_errors(ops: Any, code: int, message: str | None) -> None:
    with pytest.raises(errors.StatusError) as ei:
        json_patch({"a": 1}, ops)
    assert ei.value.code == code
    if message:
        assert ei.value.message == message


def test_json_patch_422_carries_empty_details() -> None:
    """NewGenericServerResponse sets Details to an empty StatusDetails: `"details":{}` on the wire."""
    with pytest.raises(errors.StatusError) as ei:
        json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert ei.value.status()["details"] == {}


def test_json_patch_add_and_test_ok() -> None:
    out = json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 1}, {"op": "add", "path": "/b", "value": [2]}])
    assert out == {"a": 1, "b": [2]}


def test_unknown_patch_type_is_415() -> None:
    with pytest.raises(errors.UnsupportedMediaType) as ei:
        apply_patch("application/xml", {}, b"{}", DEPLOY)
    assert ei.value.code == 415
    assert "application/strategic-merge-patch+json" in ei.value.message
