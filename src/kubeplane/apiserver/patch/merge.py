"""JSON merge patch (RFC 7386), as `kubectl label` and `kubectl scale` send it.

Upstream uses evanphx/json-patch's MergePatch (endpoints/handlers/patch.go, applyJSPatch).
Objects merge recursively, `null` removes a key, and anything that is not an object (lists
included) replaces the target wholesale: `{"metadata":{"labels":{"foo":"bar"}}}` adds one
label and keeps the others.
"""
from __future__ import annotations

from typing import Any

import orjson

from kubeplane.api import errors

from ._status import go_json_kind

ERR_BAD_JSON_PATCH = "Invalid JSON Patch"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 MergePatch(Target, Patch), section 2 pseudo-code; the inputs are not modified."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        elif isinstance(value, dict):
            result[name] = merge_patch(result.get(name), value)
        else:                   # what merge_patch(_, value) answers, without the call
            result[name] = value
    return result


def json_merge_patch(original: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a decoded merge patch to an object, with upstream's error mapping.

    * a JSON null or a scalar patch -> 400 "Invalid JSON Patch" (ErrBadJSONPatch);
    * a list patch replaces the object, which then cannot decode into the kind: 422 Invalid
      on field "patch", as applyPatchToCurrentObject reports a failed decode.
    """
    if patch is None or not isinstance(patch, (dict, list)):
        raise errors.BadRequest(ERR_BAD_JSON_PATCH)
    result = merge_patch(original, patch)
    if not isinstance(result, dict):
        raise not_an_object(result)
    return result


def not_an_object(result: Any) -> errors.Invalid:
    """The 422 upstream returns when a patched document is not a JSON object."""
    detail = f"json: cannot unmarshal {go_json_kind(result)} into Go value of type map[string]interface {{}}"
    return errors.Invalid("", "", "", [errors.invalid("patch", _short(result), detail)])


def _short(value: Any) -> str:
    return orjson.dumps(value).decode()
