"""PATCH bodies: JSON patch, JSON merge patch, strategic merge patch and server-side apply.

`apply_patch` is the one entry point the API server calls for the three classic patch types;
server-side apply needs the field manager and goes through `server_side_apply`, and every
other write records ownership with `update_managed_fields`.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors

from ._status import decode_json
from .apply import ApplyConflict, server_side_apply
from .jsonpatch import json_patch
from .managedfields import update_managed_fields
from .merge import json_merge_patch
from .strategic import strategic_merge_patch

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML = "application/apply-patch+yaml"

# The order upstream lists them in the 415 message (PatchResource's patchTypes).
PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH_YAML]

__all__ = [
    "APPLY_PATCH_YAML",
    "JSON_PATCH",
    "MERGE_PATCH",
    "PATCH_TYPES",
    "STRATEGIC_MERGE_PATCH",
    "ApplyConflict",
    "apply_patch",
    "json_merge_patch",
    "json_patch",
    "server_side_apply",
    "strategic_merge_patch",
    "update_managed_fields",
]


def apply_patch(patch_type: str, original: dict[str, Any], patch_body: bytes | dict[str, Any],
                def_name: str) -> dict[str, Any]:
    """Apply a PATCH body of `patch_type` (Content-Type without parameters) to original; the
    body may come already decoded (an in-process client's dict).

    Returns the patched object; original is not modified. Errors are StatusErrors:
    malformed bodies 400, patches that cannot apply 422 (or 400 where upstream leaks a
    plain error as a 500), unknown or apply content types 415.
    """
    patch_type = patch_type.split(";", 1)[0].strip()
    if patch_type not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        raise errors.UnsupportedMediaType(patch_type, PATCH_TYPES)
    try:
        patch = patch_body if isinstance(patch_body, dict) else decode_json(patch_body)
    except ValueError as e:
        prefix = "" if patch_type == STRATEGIC_MERGE_PATCH else "error decoding patch: "
        raise errors.BadRequest(prefix + str(e)) from None
    try:
        if patch_type == JSON_PATCH:
            return json_patch(original, patch)
        if patch_type == MERGE_PATCH:
            return json_merge_patch(original, patch)
        return _strategic(original, patch, def_name)
    except RecursionError:      # nesting deeper than the merge walks go (Go's decoder: 10000)
        raise errors.BadRequest("error decoding patch: exceeded max depth") from None


def _strategic(original: dict[str, Any], patch: Any, def_name: str) -> dict[str, Any]:
    """strategicPatchObject: the body must decode into a map; JSON null is an empty patch."""
    if patch is None:
        return strategic_merge_patch(original, {}, def_name)
    if not isinstance(patch, dict):
        from ._status import go_json_kind

        raise errors.BadRequest(
            f"json: cannot unmarshal {go_json_kind(patch)} into Go value of type map[string]interface {{}}")
    return strategic_merge_patch(original, patch, def_name)
