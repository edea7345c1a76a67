"""JSON patch (RFC 6902) through the `jsonpatch` library, as `kubectl rollout undo` sends it.

Error mapping follows applyJSPatch (endpoints/handlers/patch.go):
  * a body that does not decode as a list of operation objects -> 400 BadRequest with the
    decoder's text ("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  * more than 10000 operations -> 413 RequestEntityTooLarge;
  * `copy` operations adding more than 3 MiB in all (each copy counts the JSON size of what
    it copies) -> 422, as upstream bounds them (JSONPatchMaxCopyBytes, json-patch's
    AccumulatedCopySizeLimit): 30 copies of a list into itself would otherwise double it 30
    times;
  * any failure while applying (unknown op, bad path, missing member, failed `test`) -> 422
    via NewGenericServerResponse, whose message is the generic "the server rejected our
    request due to an error in our request" (kubectl prints "The request is invalid: ...").
"""
from __future__ import annotations

import copy
from typing import Any

import jsonpatch as _jsonpatch
import jsonpointer
import orjson

from kubeplane.api import errors

from ._status import go_json_kind, unprocessable
from .merge import not_an_object

MAX_JSON_PATCH_OPERATIONS = 10000
# kube-apiserver's JSONPatchMaxCopyBytes (server/config.go): twice etcd's 1.5 MiB request limit.
MAX_COPY_BYTES = 3 * 1024 * 1024


def json_patch(original: dict[str, Any], ops: Any) -> dict[str, Any]:
    """Apply decoded RFC 6902 operations to original (not modified); returns the new object."""
    validate_json_patch(ops)
    doc: Any = copy.deepcopy(original)
    copied = 0
    try:
        for op in ops:                  # one at a time: each copy is weighed before it is made
            if op.get("op") == "copy":
                copied += _copy_size(doc, op.get("from"))
                if copied > MAX_COPY_BYTES:
                    raise unprocessable("Unable to complete the copy, the accumulated size increase of copy is "
                                        f"{copied}, exceeding the limit {MAX_COPY_BYTES}")
            doc = _jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
        result = doc
    except (_jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError,
            IndexError, ValueError) as e:
        raise unprocessable(str(e)) from None
    if not isinstance(result, dict):
        raise not_an_object(result)
    return result


def _copy_size(doc: Any, pointer: Any) -> int:
    """The JSON size of what a copy from `pointer` adds (0 when it resolves to nothing: the
    operation then fails as json-patch reports it)."""
    try:
        return len(orjson.dumps(jsonpointer.resolve_pointer(doc, pointer)))
    except (jsonpointer.JsonPointerException, TypeError, KeyError, IndexError, ValueError, orjson.JSONEncodeError):
        return 0


def validate_json_patch(ops: Any) -> None:
    """Reject bodies that jsonpatch.DecodePatch could not decode, and oversized patches."""
    if not isinstance(ops, list):
        raise errors.BadRequest(f"json: cannot unmarshal {go_json_kind(ops)} into Go value of type jsonpatch.Patch")
    for op in ops:
        if not isinstance(op, dict):
            raise errors.BadRequest(
                f"json: cannot unmarshal {go_json_kind(op)} into Go value of type jsonpatch.Operation")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise errors.RequestEntityTooLarge(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}")
