"""A patch's strict decoding: what the patch itself reports, and the 422 a Strict patch gets.

With fieldValidation Strict or Warn, upstream first decodes the patch strictly (a JSON patch
into []jsonPatchOp: unknown and duplicate op fields, `json patch unknown field "foo"`; a merge
or strategic merge patch into map[string]any: duplicate keys by name only, `duplicate field
"a"`), then the patched object into the typed or custom object (unknown fields by path). Warn
turns the errors of both, in that order, into warnings; Strict answers one Invalid error
naming the patched object (JSON and merge patches) or the patch (strategic merge, Go's %+v):

    422  "" is invalid: patch: Invalid value: "{\"apiVersion\":...}": strict decoding error:
         duplicate field "a", unknown field "spec.b"

Upstream: jsonPatcher.applyJSPatch and applyPatchToCurrentObject, applyPatchToObject
(apiserver pkg/endpoints/handlers/patch.go); the field names as sigs.k8s.io/json's strict
decoder prints them (a map pushes no field name, a struct field does).
"""
from __future__ import annotations

import orjson

from ...api import errors, gojson
from ...api.decode import duplicate_keys
from ._status import go_v

JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
# Upstream: jsonPatchOp's fields (handlers/patch.go).
JSON_PATCH_OP_FIELDS = ("op", "path", "from", "value")


def patch_problems(patch_type: str, body: bytes) -> list[str]:
    """The strict decoding errors of the patch body itself, in document order."""
    dups = duplicate_keys(body)
    if patch_type != JSON_PATCH:
        return [f"duplicate field {errors.go_quote(str(d[-1]))}" for d in dups]
    try:
        ops = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(ops, list):
        return []                       # the patch's own error comes from decoding it
    out: list[str] = []
    for i, op in enumerate(ops):
        if isinstance(op, dict):
            out += [f"json patch unknown field {errors.go_quote(k)}" for k in op if k not in JSON_PATCH_OP_FIELDS]
        for d in dups:
            if d[0] == i and _op_field(d) is not None and d[1] in JSON_PATCH_OP_FIELDS:
                out.append(f"json patch duplicate field {errors.go_quote(str(_op_field(d)))}")
    return out


def _op_field(path: tuple[str | int, ...]) -> str | None:
    """A duplicate inside op i as the decoder names it: the op's field, then (under `value`,
    an interface{}: maps push no name) the duplicate key. None for one not in an op object."""
    if len(path) < 2 or not isinstance(path[1], str):
        return None
    if len(path) == 2:
        return path[1]
    return f"{path[1]}.{path[-1]}"


def strict_patch_error(patch_type: str, body: bytes, patched: bytes, problems: list[str]) -> errors.Invalid:
    """The Invalid error of a Strict patch; `patched` is the patched object's JSON before the
    typed decode dropped anything."""
    if patch_type == STRATEGIC_MERGE_PATCH:
        try:
            value = go_v(orjson.loads(body))
        except orjson.JSONDecodeError:
            value = ""
    else:
        value = gojson.marshal(orjson.loads(patched))
    err = errors.Invalid("", "", "", [errors.invalid("patch", value, "strict decoding error: " + ", ".join(problems))])
    if err.details is not None:
        err.details.pop("kind", None)       # schema.GroupKind{}: Go omits the empty kind
    return err
