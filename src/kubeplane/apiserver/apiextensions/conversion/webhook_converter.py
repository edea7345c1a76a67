"""The Webhook conversion strategy: a ConversionReview posted to the CRD's webhook.

    review = {"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
              "request": {"uid": ..., "desiredAPIVersion": "example.com/v2", "objects": [...]},
              "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}}}

The review's version is the first of the CRD's conversionReviewVersions this server speaks (v1,
v1beta1). Objects already in the desired version are not sent; nothing to send, no call. The
answer is checked as upstream checks it: for v1 its apiVersion/kind and uid, then
`result.status` Success, as many objects as were sent, each in the desired group/version and
of the same kind, with the same name, namespace and uid. The original metadata is then put
back, except labels and annotations, which the webhook may change (validated as upstream).

Every failure is an error whose text is upstream's (`conversion webhook for example.com/v2,
Kind=Foo failed: ...`); the server answers it as a 500 without a reason, as upstream's
ErrorToAPIStatus does for an error that is no API status.

The HTTPS client is the admission webhooks' (admission/webhook/client.py: url or service
reference, caBundle); upstream gives conversion webhooks no credentials of their own
(NewDefaultAuthenticationInfoResolver("")) and an absolute timeout of 30 s
(util/webhook/client.go defaultRequestTimeout).

Upstream: webhookConverter, getObjectsToConvert, createConversionReviewObjects,
getConvertedObjectsFromResponse, validateConvertedObject, restoreObjectMeta
(apiextensions-apiserver pkg/apiserver/conversion/webhook_converter.go).
"""
from __future__ import annotations

import base64
import binascii
import copy
import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson

from ....api.errors import aggregate
from ....api.validation import meta
from . import metrics

if TYPE_CHECKING:
    from ...admission.webhook.client import ClientManager

Obj = dict[str, Any]

REVIEW_GROUP = "apiextensions.k8s.io"
REVIEW_VERSIONS = ("v1", "v1beta1")         # what this server speaks
REQUEST_TIMEOUT = 30.0                      # upstream: defaultRequestTimeout


class WebhookError(Exception):
    """The conversion failed; str() is upstream's error text."""


class _Failed(WebhookError):
    """A failure and the failure_type its metric records ("unobserved": none, as upstream)."""

    def __init__(self, message: str, failure_type: str) -> None:
        super().__init__(message)
        self.failure_type = failure_type


def gvk_string(api_version: Any, kind: Any) -> str:
    """Go's schema.GroupVersionKind.String(): "example.com/v1, Kind=Foo" ("/, Kind=X" when empty)."""
    av = api_version if isinstance(api_version, str) else ""
    group, _, version = av.rpartition("/") if "/" in av else ("", "", av)
    return f"{group}/{version}, Kind={kind if isinstance(kind, str) else ''}"


def gv_string(api_version: Any) -> str:
    """Go's schema.GroupVersion.String() of a parsed apiVersion ("v1" for the core group)."""
    return api_version if isinstance(api_version, str) else ""


def objects_to_convert(objs: list[Obj], api_version: str) -> list[int]:
    """The indexes of the objects not already in api_version. Upstream: getObjectsToConvert"""
    return [i for i, o in enumerate(objs) if o.get("apiVersion") != api_version]


def create_conversion_review(review_versions: list[str], objects: list[Obj], api_version: str, uid: str) -> Obj:
    """The review for the first supported version of review_versions; raises WebhookError
    when none is supported. Upstream: createConversionReviewObjects"""
    for version in review_versions:
        if version in REVIEW_VERSIONS:
            return {"kind": "ConversionReview", "apiVersion": f"{REVIEW_GROUP}/{version}",
                    "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objects},
                    "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}}}
    raise WebhookError("no supported conversion review versions")


def converted_objects_from_response(review_version: str, expected_uid: str, response: Any) -> list[Any]:
    """The convertedObjects of a webhook's answer, or WebhookError when it is malformed or not
    a success. v1beta1 answers are not checked for apiVersion/kind or uid (upstream kept them
    unchecked for compatibility). Upstream: getConvertedObjectsFromResponse"""
    if not isinstance(response, dict):
        raise WebhookError(f"unrecognized response type: {type(response).__name__}")
    if review_version == "v1":
        got = gvk_string(response.get("apiVersion"), response.get("kind"))
        if (response.get("apiVersion"), response.get("kind")) != (f"{REVIEW_GROUP}/v1", "ConversionReview"):
            raise WebhookError(f"expected webhook response of {REVIEW_GROUP}/v1, Kind=ConversionReview, got {got}")
    resp = response.get("response")
    if resp is None:
        raise WebhookError("no response provided")
    _check_types(resp)
    if review_version == "v1" and (uid := resp.get("uid") or "") != expected_uid:
        raise WebhookError(f"expected response.uid={_go_q(expected_uid)}, got {_go_q(uid)}")
    result = resp.get("result") or {}
    if result.get("status") != "Success":
        if message := result.get("message"):
            raise WebhookError(message)
        raise WebhookError(f"response.result.status was '{result.get('status') or ''}', not 'Success'")
    return list(resp.get("convertedObjects") or [])


def _check_types(resp: Any) -> None:
    """What decoding the answer into upstream's typed ConversionResponse refuses (json's
    UnmarshalTypeError, as the rest client reports it)."""
    def type_error(value: Any, fld: str, go_type: str) -> WebhookError:
        return WebhookError(f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                            f"ConversionResponse.response.{fld} of type {go_type}")
    if not isinstance(resp, dict):
        raise WebhookError(f"json: cannot unmarshal {_json_kind(resp)} into Go struct field "
                           "ConversionReview.response of type v1.ConversionResponse")
    if not isinstance(resp.get("uid", ""), (str, type(None))):
        raise type_error(resp["uid"], "uid", "types.UID")
    if not isinstance(resp.get("convertedObjects", []), (list, type(None))):
        raise type_error(resp["convertedObjects"], "convertedObjects", "[]runtime.RawExtension")
    result = resp.get("result", {})
    if not isinstance(result, (dict, type(None))):
        raise type_error(result, "result", "v1.Status")
    for fld in ("status", "message"):
        value = (result or {}).get(fld, "")
        if not isinstance(value, (str, type(None))):
            raise type_error(value, f"result.{fld}", "string")


def _json_kind(v: Any) -> str:
    """encoding/json's name of a JSON value's kind in an UnmarshalTypeError."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object" if isinstance(v, dict) else "null"


def _go_q(s: str) -> str:
    return orjson.dumps(s).decode()


def raw_extension_object(raw: Any) -> Obj:
    """A converted object as upstream's unstructured.UnmarshalJSON takes it: a JSON object with
    a kind. Upstream: getRawExtensionObject"""
    if not isinstance(raw, dict):
        raise WebhookError(f"json: cannot unmarshal {_json_kind(raw)} into Go value of type map[string]interface {{}}")
    if not isinstance(raw.get("kind"), str) or not raw["kind"]:
        raise WebhookError(f"Object 'Kind' is missing in '{orjson.dumps(raw).decode()}'")
    return raw


def validate_converted_object(original: Obj, converted: Obj) -> None:
    """The kind, name, namespace and uid may not change. Upstream: validateConvertedObject"""
    if (e := original.get("kind")) != (a := converted.get("kind")):
        raise WebhookError(f"must have the same kind: {e} != {a}")
    om, cm = _meta(original), _meta(converted)
    for fld, label in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        if (e := om.get(fld) or "") != (a := cm.get(fld) or ""):
            raise WebhookError(f"must have the same {label}: {e} != {a}")


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def restore_object_meta(original: Obj, converted: Obj) -> None:
    """Put original's metadata back into converted, keeping converted's labels and annotations
    (checked as upstream validates them when they changed). Upstream: restoreObjectMeta"""
    if "metadata" not in converted:
        raise WebhookError("missing metadata in converted object")
    response_meta = converted["metadata"]
    if not isinstance(response_meta, dict):
        raise WebhookError(f"invalid metadata of type {_go_type(response_meta)} in converted object")
    converted["metadata"] = copy.deepcopy(original["metadata"]) if "metadata" in original else {}
    restored = converted["metadata"]
    if not isinstance(restored, dict):
        raise WebhookError(f"invalid metadata of type {_go_type(restored)} in input object")
    for fld in ("labels", "annotations"):
        response_field = response_meta.get(fld)
        if response_field is None:
            restored.pop(fld, None)
            continue
        if not isinstance(response_field, dict):
            raise WebhookError(f"invalid metadata.{fld} of type {_go_type(response_field)} in converted object")
        original_field = restored.get(fld)
        if original_field is not None and not isinstance(original_field, dict):
            raise WebhookError(f"invalid metadata.{fld} of type {_go_type(original_field)} in original object")
        original_field = original_field or {}
        changed = len(original_field) != len(response_field)
        for k, v in response_field.items():
            if not isinstance(v, str):
                raise WebhookError(f"metadata.{fld}[{k}] must be a string, but is {_go_type(v)} in converted object")
            changed = changed or original_field.get(k) != v
        if changed:
            errs = meta.validate_labels(response_field, "metadata.labels") if fld == "labels" else \
                meta.validate_annotations(response_field, "metadata.annotation")
            if errs:
                raise WebhookError(aggregate(errs))
        restored[fld] = response_field


def _go_type(v: Any) -> str:
    """Go's %T of a decoded JSON value."""
    if v is None:
        return "<nil>"
    return {bool: "bool", int: "int64", float: "float64", str: "string", list: "[]interface {}",
            dict: "map[string]interface {}"}.get(type(v), type(v).__name__)


class WebhookConverter:
    """Converts by asking the CRD's webhook. Upstream: webhookConverter.Convert"""

    def __init__(self, crd_name: str, client_config: Obj, review_versions: list[str],
                 clients: ClientManager) -> None:
        self.name = crd_name
        self.client_config = webhook_client_config(client_config)
        self.review_versions = list(review_versions)
        self.clients = clients

    async def convert(self, objs: list[Obj], to_gv: str, in_gvk: str, is_list: bool) -> list[Obj]:
        """objs converted to to_gv (those already there as they are); in_gvk names the input in
        errors (the list's GVK for a list). Raises WebhookError with upstream's whole text."""
        started = time.perf_counter()
        failure = metrics.CALL_FAILURE
        try:
            out = await self._convert(objs, to_gv, in_gvk, is_list)
        except _Failed as e:
            failure = e.failure_type
            raise WebhookError(str(e)) from None
        else:
            failure = ""
            return out
        finally:
            if failure != "unobserved":
                metrics.observe_webhook(time.perf_counter() - started, failure)

    async def _convert(self, objs: list[Obj], to_gv: str, in_gvk: str, is_list: bool) -> list[Obj]:
        todo = objects_to_convert(objs, to_gv)
        uid = str(uuid.uuid4())
        sending = [objs[i] for i in todo]
        try:
            review = create_conversion_review(self.review_versions, sending, to_gv, uid)
        except WebhookError as e:
            raise _Failed(str(e), "unobserved") from None
        if not todo:
            return objs
        from ...admission.webhook.client import CallError, ClientConfigError   # not at start: see its docstring
        try:
            answer = await self.clients.post(self.client_config, orjson.dumps(review), REQUEST_TIMEOUT)
        except (CallError, ClientConfigError) as e:
            cause = e.message if isinstance(e, CallError) else str(e)
            raise _Failed(f"conversion webhook for {in_gvk} failed: {cause}", metrics.CALL_FAILURE) from None
        review_version = review["apiVersion"].rpartition("/")[2]
        try:
            converted = converted_objects_from_response(review_version, uid, answer)
        except WebhookError as e:
            raise _Failed(f"conversion webhook for {in_gvk} failed: {e}", metrics.MALFORMED_RESPONSE_FAILURE) from None
        if len(converted) != len(sending):
            raise _Failed(f"conversion webhook for {in_gvk} returned {len(converted)} objects, expected {len(sending)}",
                          metrics.PARTIAL_RESPONSE_FAILURE)
        out = list(objs)
        for index, (i, raw) in enumerate(zip(todo, converted)):
            try:
                out[i] = self._checked(objs[i], raw, to_gv, in_gvk, index if is_list else None)
            except WebhookError as e:
                raise _Failed(str(e), metrics.INVALID_CONVERTED_OBJECT_FAILURE) from None
        return out

    def _checked(self, original: Obj, raw: Any, to_gv: str, in_gvk: str, index: int | None) -> Obj:
        """One converted object, checked and with its metadata restored (index: its place in
        the review of a list, None for a single object: upstream words the two differently)."""
        what = f"conversion webhook for {in_gvk} returned invalid"
        at = f" converted object at index {index}" if index is not None else " object at index 0"
        try:
            converted = raw_extension_object(raw)
        except WebhookError as e:
            if index is None:
                raise
            raise WebhookError(f"{what}{at}: {e}") from None
        if (got := gv_string(converted.get("apiVersion"))) != to_gv:
            raise WebhookError(f"{what}{at}: invalid groupVersion (expected {to_gv}, received {got})")
        if (e_kind := original.get("kind")) != (a_kind := converted.get("kind")):
            raise WebhookError(f"{what}{at}: invalid kind (expected {e_kind}, received {a_kind})")
        converted = copy.deepcopy(converted)
        try:
            validate_converted_object(original, converted)
        except WebhookError as e:
            raise WebhookError(f"{what}{at if index is not None else ' object'}: {e}") from None
        try:
            restore_object_meta(original, converted)
        except WebhookError as e:
            where = f" in object at index {index}" if index is not None else ""
            raise WebhookError(f"conversion webhook for {in_gvk} returned invalid metadata{where}: {e}") from None
        return converted


def webhook_client_config(cc: Obj) -> Obj:
    """The clientConfig as the admission client takes it; a whitespace-only caBundle counts as
    none. Upstream: webhookClientConfigForCRD"""
    out = dict(cc)
    bundle = out.get("caBundle")
    if isinstance(bundle, str) and bundle:
        try:
            blank = not base64.b64decode(bundle, validate=True).strip()
        except (binascii.Error, ValueError):
            blank = False
        if blank:
            out.pop("caBundle")
    return out
