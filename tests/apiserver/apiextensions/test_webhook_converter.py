"""The conversion webhook's review and the checks of its answer, from upstream's tables.

Upstream: TestRestoreObjectMeta, TestGetObjectsToConvert, TestCreateConversionReviewObjects,
TestGetConvertedObjectsFromResponse (apiextensions-apiserver pkg/apiserver/conversion/
webhook_converter_test.go) and crConverter.ConvertToVersion's version checks (converter.go).
"""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.apiserver.apiextensions.conversion.converter import ConversionError, CRConverter
from kubeplane.apiserver.apiextensions.conversion.webhook_converter import (
    WebhookError, converted_objects_from_response, create_conversion_review, gvk_string, objects_to_convert,
    restore_object_meta, validate_converted_object)

def m(**meta: Any) -> dict[str, Any]:
    return {"metadata": meta, "spec": {}}


RESTORE = [
    ("no converted metadata", m(), {"spec": {}}, {"spec": {}}, True),
    ("invalid converted metadata", m(), {"metadata": ["foo"]}, {"metadata": ["foo"]}, True),
    ("no original metadata", {"spec": {}}, m(), m(), False),
    ("invalid original metadata", {"metadata": ["foo"]}, m(), {"metadata": ["foo"], "spec": {}}, True),
    ("changed label, annotations and non-label",
     m(foo="bar", labels={"a": "A", "b": "B"}, annotations={"a": "1", "b": "2"}),
     m(foo="abc", labels={"a": "AA", "b": "B"}, annotations={"a": "1", "b": "22"}),
     m(foo="bar", labels={"a": "AA", "b": "B"}, annotations={"a": "1", "b": "22"}), False),
    ("added labels and annotations", m(foo="bar"),
     m(foo="abc", labels={"a": "AA", "b": "B"}, annotations={"a": "1", "b": "22"}),
     m(foo="bar", labels={"a": "AA", "b": "B"}, annotations={"a": "1", "b": "22"}), False),
    ("added labels and annotations, with nil before", m(foo="bar", labels=None, annotations=None),
     m(foo="abc", labels={"a": "AA", "b": "B"}, annotations={"a": "1", "b": "22"}),
     m(foo="bar", labels={"a": "AA", "b": "B"}, annotations={"a": "1", "b": "22"}), False),
    ("removed labels and annotations",
     m(foo="bar", labels={"a": "AA", "b": "B"}, annotations={"a": "1", "b": "22"}), m(foo="abc"), m(foo="bar"), False),
    ("nil'ed labels and annotations",
     m(foo="bar", labels={"a": "AA", "b": "B"}, annotations={"a": "1", "b": "22"}),
     m(foo="abc", labels=None, annotations=None), m(foo="bar"), False),
    ("non-string label and annotation values", m(foo="bar"),
     m(foo="abc", labels={"a": None, "b": "B"}, annotations={"a": None, "b": "22"}), m(foo="bar"), True),
    ("invalid label key", {"metadata": {}}, {"metadata": {"labels": {"some/non-qualified/label": "x"}}},
     {"metadata": {}}, True),
    ("invalid label value", {"metadata": {}}, {"metadata": {"labels": {"foo": "üäö"}}}, {"metadata": {}}, True),
    ("too big label value", {"metadata": {}}, {"metadata": {"labels": {"foo": "x" * 64}}}, {"metadata": {}}, True),
    ("too big annotation value", {"metadata": {}},
     {"metadata": {"annotations": {"foo": "x" * (256 * 1024 + 1)}}}, {"metadata": {}}, True),
]


@pytest.mark.parametrize(("original", "converted", "expected", "fails"), [r[1:] for r in RESTORE],
                         ids=[r[0] for r in RESTORE])
def test_restore_object_meta(original: Any, converted: Any, expected: Any, fails: bool) -> None:
    converted = copy.deepcopy(converted)
    if fails:
        with pytest.raises(WebhookError):
            restore_object_meta(original, converted)
    else:
        restore_object_meta(original, converted)
    assert converted == expected        # on errors too: what upstream leaves behind


def test_restore_object_meta_messages() -> None:
    def fail(original: Any, converted: Any) -> str:
        with pytest.raises(WebhookError) as e:
            restore_object_meta(original, converted)
        return str(e.value)
    assert fail(m(), {"spec": {}}) == "missing metadata in converted object"
    assert fail(m(), {"metadata": ["foo"]}) == "invalid metadata of type []interface {} in converted object"
    assert fail(m(), {"metadata": {"labels": {"a": None}}}) == \
        "metadata.labels[a] must be a string, but is <nil> in converted object"
    assert fail(m(), {"metadata": {"labels": ["x"]}}) == \
        "invalid metadata.labels of type []interface {} in converted object"
    assert fail(m(), {"metadata": {"labels": {"foo": "üäö"}}}).startswith(
        'metadata.labels: Invalid value: "üäö": a valid label must be')


V1 = {"apiVersion": "foo/v1", "kind": "Widget", "metadata": {"name": "myv1"}}
V2 = {"apiVersion": "foo/v2", "kind": "Widget", "metadata": {"name": "myv2"}}
V3 = {"apiVersion": "foo/v3", "kind": "Widget", "metadata": {"name": "myv3"}}


@pytest.mark.parametrize(("objs", "expected"), [
    pytest.param([], [], id="empty list"),
    pytest.param([V1], [], id="one-item list, in desired version"),
    pytest.param([V2], [V2], id="one-item list, not in desired version"),
    pytest.param([V1, V1, V1], [], id="multi-item list, in desired version"),
    pytest.param([V1, V2, V3], [V2, V3], id="multi-item list, mixed versions"),
])
def test_get_objects_to_convert(objs: list[Any], expected: list[Any]) -> None:
    assert [objs[i] for i in objects_to_convert(objs, "foo/v1")] == expected


@pytest.mark.parametrize(("versions", "expected"), [
    pytest.param(["vx"], None, id="no supported versions"),
    pytest.param(["v1", "v1beta1", "v2"], "apiextensions.k8s.io/v1", id="v1"),
    pytest.param(["v1beta1", "v1", "v2"], "apiextensions.k8s.io/v1beta1", id="v1beta1"),
])
def test_create_conversion_review(versions: list[str], expected: str | None) -> None:
    objects = [{"apiVersion": "foo/v2", "Kind": "Widget"}]
    if expected is None:
        with pytest.raises(WebhookError, match="no supported conversion review versions"):
            create_conversion_review(versions, objects, "foo/v1", "uid")
        return
    assert create_conversion_review(versions, objects, "foo/v1", "uid") == {
        "kind": "ConversionReview", "apiVersion": expected,
        "request": {"uid": "uid", "desiredAPIVersion": "foo/v1", "objects": objects},
        "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}}}


V1REVIEW = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}
SUCCESS = {"status": "Success"}


@pytest.mark.parametrize(("version", "response", "objects", "error"), [
    pytest.param("v1", None, None, "unrecognized response type", id="nil response"),
    pytest.param("v1beta1", {"response": {"result": SUCCESS}}, [], None, id="minimal valid v1beta1"),
    pytest.param("v1beta1", {"response": {"result": SUCCESS, "convertedObjects": [V1]}}, [V1], None,
                 id="valid v1beta1 with objects"),
    pytest.param("v1beta1", {"response": {"result": {"status": ""}}}, None,
                 "response.result.status was '', not 'Success'", id="error v1beta1, empty status"),
    pytest.param("v1beta1", {"response": {"result": {"status": "Failure"}}}, None,
                 "response.result.status was 'Failure', not 'Success'", id="error v1beta1, failure status"),
    pytest.param("v1beta1", {"response": {"result": {"status": "Failure", "message": "some failure message"}}},
                 None, "some failure message", id="error v1beta1, custom status"),
    pytest.param("v1beta1", {}, None, "no response provided", id="invalid v1beta1, no response"),
    pytest.param("v1", {**V1REVIEW, "response": {"uid": "uid", "result": SUCCESS}}, [], None,
                 id="minimal valid v1"),
    pytest.param("v1", {**V1REVIEW, "response": {"uid": "uid", "result": SUCCESS, "convertedObjects": [V1]}},
                 [V1], None, id="valid v1 with objects"),
    pytest.param("v1", {**V1REVIEW, "response": {"result": SUCCESS}}, None, 'expected response.uid="uid"',
                 id="invalid v1, no uid"),
    pytest.param("v1", {"kind": "ConversionReview", "response": {"uid": "uid", "result": SUCCESS}}, None,
                 "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview",
                 id="invalid v1, no apiVersion"),
    pytest.param("v1", {"apiVersion": "apiextensions.k8s.io/v1", "response": {"uid": "uid", "result": SUCCESS}},
                 None, "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview",
                 id="invalid v1, no kind"),
    pytest.param("v1", {**V1REVIEW, "apiVersion": "apiextensions.k8s.io/v2", "response": {"uid": "uid"}}, None,
                 "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview",
                 id="invalid v1, mismatched apiVersion"),
    pytest.param("v1", {**V1REVIEW, "kind": "ConversionReview2", "response": {"uid": "uid"}}, None,
                 "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview",
                 id="invalid v1, mismatched kind"),
    pytest.param("v1", {**V1REVIEW, "response": {"uid": "uid", "result": {"status": ""}}}, None,
                 "response.result.status was '', not 'Success'", id="error v1, empty status"),
    pytest.param("v1", {**V1REVIEW, "response": {"uid": "uid", "result": {"status": "Failure"}}}, None,
                 "response.result.status was 'Failure', not 'Success'", id="error v1, failure status"),
    pytest.param("v1", {**V1REVIEW, "response": {"uid": "uid", "result": {"status": "Failure",
                                                                           "message": "some failure message"}}},
                 None, "some failure message", id="error v1, custom status"),
    pytest.param("v1", V1REVIEW, None, "no response provided", id="invalid v1, no response"),
    pytest.param("v1", {**V1REVIEW, "response": {"uid": "uid", "result": SUCCESS, "convertedObjects": "x"}}, None,
                 "json: cannot unmarshal string into Go struct field ConversionResponse.response.convertedObjects "
                 "of type []runtime.RawExtension", id="convertedObjects of the wrong type"),
])
def test_get_converted_objects_from_response(version: str, response: Any, objects: Any, error: str | None) -> None:
    if error is None:
        assert converted_objects_from_response(version, "uid", response) == objects
        return
    with pytest.raises(WebhookError) as e:
        converted_objects_from_response(version, "uid", response)
    assert error in str(e.value)


def test_the_v1_answer_names_what_it_got() -> None:
    with pytest.raises(WebhookError) as e:
        converted_objects_from_response("v1", "uid", {"kind": "ConversionReview", "response": {}})
    assert str(e.value) == ("expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
                            "got /, Kind=ConversionReview")


def test_validate_converted_object() -> None:
    base = {"kind": "Foo", "metadata": {"name": "a", "namespace": "ns", "uid": "u"}}
    validate_converted_object(base, copy.deepcopy(base))
    for change, message in ((("kind", "Bar"), "must have the same kind: Foo != Bar"),
                            (("name", "b"), "must have the same name: a != b"),
                            (("namespace", "other"), "must have the same namespace: ns != other"),
                            (("uid", "v"), "must have the same UID: u != v")):
        bad = copy.deepcopy(base)
        if change[0] == "kind":
            bad["kind"] = change[1]
        else:
            bad["metadata"][change[0]] = change[1]
        with pytest.raises(WebhookError, match=message):
            validate_converted_object(base, bad)


def test_gvk_strings_are_gos() -> None:
    assert gvk_string("example.com/v1", "Foo") == "example.com/v1, Kind=Foo"
    assert gvk_string(None, "Foo") == "/, Kind=Foo"


# --- crConverter: the versions it converts between -----------------------------------------

async def test_the_none_strategy_rewrites_the_api_version() -> None:
    c = CRConverter("foo", {"v1", "v2"})
    objs = await c.convert([dict(V1), dict(V1)], "v2", "WidgetList")
    assert [o["apiVersion"] for o in objs] == ["foo/v2", "foo/v2"]
    assert objs[0]["metadata"] == {"name": "myv1"}


@pytest.mark.parametrize(("objs", "to", "list_kind", "message"), [
    pytest.param([V1], "v9", "", "request to convert CR to an invalid group/version: foo/v9", id="to"),
    pytest.param([V3], "v1", "", "request to convert CR from an invalid group/version: foo/v3", id="from"),
    pytest.param([{**V1, "apiVersion": "bar/v1"}], "v1", "", "request to convert CR from an invalid group/version: "
                 "bar/v1", id="another group"),
    pytest.param([V1, V3], "v1", "WidgetList", "request to convert CR list failed, list index 1 has invalid "
                 "group/version: foo/v3", id="a list item"),
])
async def test_invalid_versions_are_refused(objs: list[Any], to: str, list_kind: str, message: str) -> None:
    with pytest.raises(ConversionError) as e:
        await CRConverter("foo", {"v1", "v2"}).convert(copy.deepcopy(objs), to, list_kind)
    assert (e.value.code, e.value.reason, e.value.message) == (500, "", message)
    assert "reason" not in e.value.status()
