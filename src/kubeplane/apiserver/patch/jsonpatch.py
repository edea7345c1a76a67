"""JSON patch (RFC 6902) through the `jsonpatch` library, as `kubectl rollout undo` sends it.

Error mapping follows applyJSPatch (endpoints/handlers/patch.go):
  * a body that does not decode as a list of operation objects -> 400 BadRequest with the
    decoder's text ("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  * more than 10000 operations -> 413 RequestEntityTooLarge;
  * any failure while applying (unknown op, bad path, missing member, failed `test`) -> 422
    via NewGenericServerResponse, whose message is the generic "the server rejected our
    request due to an error in our request" (kubectl prints "The request is invalid: ...").
"""
from __future__ import annotations

from typing import Any

import jsonpatch as _jsonpatch
import jsonpointer

from kubeplane.api import errors

from ._status import go_json_kind, unprocessable
from .merge import not_an_object

MAX_JSON_PATCH_OPERATIONS = 10000


def json_patch(original: dict[str, Any], ops: Any) -> dict[str, Any]:
    """Apply decoded RFC 6902 operations to original (not modified); returns the new object."""
    validate_json_patch(ops)
    try:
        result = _jsonpatch.JsonPatch(ops).apply(original, in_place=False)
    except (_jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError,
            IndexError, ValueError) as e:
        raise unprocessable(str(e)) from None
    if not isinstance(result, dict):
        raise not_an_object(result)
    return result


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
