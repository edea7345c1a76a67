"""selectableFields: field selectors on custom objects, and their validation on the CRD.

    field_selectors(version, namespaced)   label -> getter, for the version's ResourceDefinition
    validate_selectable_fields(version, path)  the CRD's field errors (api/validation/apiextensions.py
                                           calls it through SELECTABLE_FIELDS_VALIDATOR)

Upstream: crConverter.ConvertFieldLabel (apiextensions-apiserver pkg/apiserver/conversion/
converter.go), customResourceStrategy.selectableFields (pkg/registry/customresource/
strategy.go) and ValidateCustomResourceSelectableFields (pkg/apis/apiextensions/validation/
validation.go), as of 1.37 (the CustomResourceFieldSelectors feature is GA).
"""
from __future__ import annotations

from typing import Any

from ...api import errors
from ...api.errors import FieldError
from ...api.labels import FieldGetter
from ...api.validation import apiextensions as crd_validation

Obj = dict[str, Any]
MAX_SELECTABLE_FIELDS = 8
_ALLOWED_TYPES = ("string", "boolean", "integer")


def _dict(v: Any) -> Obj:
    return v if isinstance(v, dict) else {}


def field_selectors(v: Obj, namespaced: bool) -> dict[str, FieldGetter]:
    """metadata.name, metadata.namespace (namespaced kinds only) and the version's
    selectableFields, by their jsonPath without the leading dot; a value selects as Go's
    fmt.Sprint prints it ("" when absent); any other label is "field label not supported"."""
    out: dict[str, FieldGetter] = {"metadata.name": _getter("metadata.name")}
    if namespaced:
        out["metadata.namespace"] = _getter("metadata.namespace")
    for sf in v.get("selectableFields") or []:
        path = str(_dict(sf).get("jsonPath", ""))
        if path:
            out[path.removeprefix(".")] = _getter(path)
    return out


def _getter(path: str) -> FieldGetter:
    keys = path.removeprefix(".").split(".")

    def get(obj: Obj) -> str:
        cur: Any = obj
        for k in keys:
            if not isinstance(cur, dict) or k not in cur:
                return ""
            cur = cur[k]
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)
    return get


def validate_selectable_fields(v: Obj, path: str) -> list[FieldError]:
    """Upstream: the selectableFields part of validateCustomResourceDefinitionVersion, and
    ValidateCustomResourceSelectableFields. Deviation: more than 8 fields are refused on
    update too (upstream lets an unchanged list that long stay)."""
    fields = v.get("selectableFields")
    if not isinstance(fields, list) or not fields:
        return []
    # The schema package costs ~0.25 s to import: only a CRD with selectableFields needs it here.
    from .schema.fieldpath import valid_field_path
    from .schema.structural import structural_from
    fpath = path + ".selectableFields"
    root = _dict(v.get("schema")).get("openAPIV3Schema")
    if not isinstance(root, dict):
        # (sic: upstream's message says "not included")
        return [errors.invalid(fpath, "", "may only be set when `version.schema.openAPIV3Schema` is not included")]
    s = structural_from(root)
    errs: list[FieldError] = []
    if s.conversion_errors:
        errs.append(errors.invalid(path + ".schema.openAPIV3Schema", "", s.conversion_errors[0]))
    unique: set[str] = set()
    for i, sf in enumerate(fields):
        ip = f"{fpath}[{i}].jsonPath"
        jp = _dict(sf).get("jsonPath")
        if not isinstance(jp, str) or not jp:
            errs.append(errors.required(ip))
            continue
        try:
            found_path, found = valid_field_path(jp, s, allow_array_notation=False)
        except ValueError as e:
            errs.append(errors.invalid(ip, jp, f"is an invalid path: {e}"))
            continue
        if found_path.split(".", 1)[0].split("[", 1)[0] == "metadata":
            errs.append(errors.invalid(ip, jp, "must not point to fields in metadata"))
        if found is None or found.type not in _ALLOWED_TYPES:
            errs.append(errors.invalid(ip, jp, "must point to a field of type string, boolean or integer. "
                                               "Enum string fields and strings with formats are allowed."))
        if found_path in unique:
            errs.append(errors.duplicate(ip, jp))
        unique.add(found_path)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        errs.append(errors.too_many(fpath, len(unique), MAX_SELECTABLE_FIELDS))
    return errs


crd_validation.SELECTABLE_FIELDS_VALIDATOR = validate_selectable_fields
