"""ObjectMeta, label, annotation and label-selector validation.

Upstream: k8s.io/apimachinery/pkg/api/validation/objectmeta.go,
pkg/apis/meta/v1/validation/validation.go, and the core wrappers in
pkg/apis/core/validation (ValidateObjectMeta adds the kube finalizer-name rule).
Paths are Go field.Path strings: Child -> ".x", Index -> "[i]", Key -> "[k]" (unquoted).
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from .memo import remember_valid
from .names import NameFn, is_dns1123_label, is_qualified_name, is_valid_label_value

Obj = dict[str, Any]

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * (1 << 10)  # 262144 bytes
STANDARD_FINALIZERS = {"kubernetes", "orphan", "foregroundDeletion"}


def nonnegative(value: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateNonnegativeField. A missing value is Go's zero, hence valid."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return [errors.invalid(path, value, IS_NEGATIVE)]
    return []


def semantic_equal(a: Any, b: Any) -> bool:
    """Upstream: equality.Semantic.DeepEqual on decoded JSON: null, absent, "", [] and {} are alike.

    Go decodes an absent field and an empty one to the same zero value, so
    `matchLabels: {}` equals no matchLabels at all.
    """
    return _norm(a) == _norm(b)


def _norm(v: Any) -> Any:
    if isinstance(v, dict):
        out = {k: _norm(x) for k, x in v.items()}
        return {k: x for k, x in out.items() if x not in (None, "", [], {})}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateImmutableField"""
    if new is old or new == old:        # equal values are semantically equal too
        return []
    return [] if semantic_equal(new, old) else [errors.invalid(path, new, FIELD_IMMUTABLE)]


# --- labels, annotations, selectors --------------------------------------------------------------


def validate_label_name(key: str, path: str) -> list[FieldError]:
    return [errors.invalid(path, key, m) for m in is_qualified_name(key)]


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateLabels (errors are reported at the map's path, keyed by nothing)."""
    errs: list[FieldError] = []
    for k, v in (labels or {}).items():
        errs += validate_label_name(k, path)
        errs += [errors.invalid(path, v, m) for m in is_valid_label_value(str(v))]
    return errs


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateAnnotations (keys are qualified names, case-insensitively; total ≤ 256 KiB)."""
    annotations = annotations or {}
    errs = [errors.invalid(path, k, m) for k in annotations for m in is_qualified_name(k.lower())]
    size = sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(errors.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def selector_value(sel: Any) -> Any:
    """A *metav1.LabelSelector as a bad value: its JSON in the struct's field order
    (matchLabels, matchExpressions; a requirement's key, operator, values), empty fields omitted
    and the matchLabels map sorted, as Go's json.Marshal writes it."""
    if not isinstance(sel, dict):
        return sel
    out: dict[str, Any] = {}
    if sel.get("matchLabels"):
        out["matchLabels"] = dict(sorted(sel["matchLabels"].items())) if isinstance(sel["matchLabels"], dict) \
            else sel["matchLabels"]
    if sel.get("matchExpressions"):
        out["matchExpressions"] = [
            {k: r[k] for k in ("key", "operator", "values") if k in r and (k != "values" or r[k])}
            if isinstance(r, dict) else r for r in sel["matchExpressions"]]
    return errors.JSONValue(out)


def validate_label_selector(sel: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateLabelSelector with AllowInvalidLabelValueInSelector=false (strict)."""
    if not isinstance(sel, dict):
        return []
    errs = validate_labels(sel.get("matchLabels"), path + ".matchLabels")
    for i, req in enumerate(sel.get("matchExpressions") or []):
        errs += validate_label_selector_requirement(req, f"{path}.matchExpressions[{i}]")
    return errs


def validate_label_selector_requirement(req: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateLabelSelectorRequirement"""
    errs: list[FieldError] = []
    op, values = req.get("operator", ""), req.get("values") or []
    if op in ("In", "NotIn"):
        if not values:
            errs.append(errors.required(path + ".values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(errors.forbidden(path + ".values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    else:
        errs.append(errors.invalid(path + ".operator", op, "not a valid selector operator"))
    errs += validate_label_name(req.get("key", ""), path + ".key")
    for i, v in enumerate(values):
        errs += [errors.invalid(f"{path}.values[{i}]", v, m) for m in is_valid_label_value(str(v))]
    return errs


def selector_convertible(sel: Any) -> bool:
    """Whether metav1.LabelSelectorAsSelector succeeds (labels.NewRequirement accepts every term)."""
    if sel is None:
        return True
    for k, v in (sel.get("matchLabels") or {}).items():
        if is_qualified_name(k) or is_valid_label_value(str(v)):
            return False
    for req in sel.get("matchExpressions") or []:
        op, values = req.get("operator"), req.get("values") or []
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
        if (op in ("In", "NotIn")) != bool(values) or is_qualified_name(req.get("key", "")):
            return False
        if any(is_valid_label_value(str(v)) for v in values):
            return False
    return True


def selector_matches(sel: Any, labels: Any) -> bool:
    """labels.Selector.Matches for a convertible selector: nil matches nothing, {} everything."""
    if sel is None:
        return False
    labels = labels or {}
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    for req in sel.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        present = key in labels
        ok = {"In": present and labels.get(key) in values, "NotIn": not present or labels.get(key) not in values,
              "Exists": present, "DoesNotExist": not present}[op]
        if not ok:
            return False
    return True


def selector_is_empty(sel: Any) -> bool:
    """labels.Selector.Empty: a non-nil selector with no terms (it selects everything)."""
    return isinstance(sel, dict) and not sel.get("matchLabels") and not sel.get("matchExpressions")


# --- ObjectMeta ----------------------------------------------------------------------------------


def validate_object_meta(meta: Obj, namespaced: bool, name_fn: NameFn, path: str = "metadata") -> list[FieldError]:
    """Upstream: ValidateObjectMeta (core flavour: apimachinery's, plus kube finalizer names)."""
    errs: list[FieldError] = []
    generate_name = meta.get("generateName") or ""
    if generate_name:
        errs += [errors.invalid(path + ".generateName", generate_name, m) for m in name_fn(generate_name, True)]
    name = meta.get("name") or ""
    if not name:
        errs.append(errors.required(path + ".name", "name or generateName is required"))
    else:
        errs += [errors.invalid(path + ".name", name, m) for m in name_fn(name, False)]
    return errs + _validate_meta_common(meta, namespaced, path)


def _validate_meta_common(meta: Obj, namespaced: bool, path: str) -> list[FieldError]:
    """Upstream: validateObjectMetaAccessorWithOptsCommon"""
    errs: list[FieldError] = []
    ns = meta.get("namespace") or ""
    if namespaced:
        if not ns:
            errs.append(errors.required(path + ".namespace"))
        else:
            errs += [errors.invalid(path + ".namespace", ns, m) for m in is_dns1123_label(ns)]
    elif ns:
        errs.append(errors.forbidden(path + ".namespace", "not allowed on this type"))
    errs += nonnegative(meta.get("generation"), path + ".generation")
    return errs + _validate_meta_maps(meta, path)


def _validate_meta_maps(meta: Obj, path: str, old: Obj | None = None) -> list[FieldError]:
    """Labels, annotations, ownerReferences, finalizers, managedFields: shared by create and update.

    On update a field equal to the stored one is skipped: it passed these same checks when it
    was written, so they cannot fail now (a kubelet's status patch leaves all five alone).
    """
    if old is None:
        labels, annotations, refs = meta.get("labels"), meta.get("annotations"), meta.get("ownerReferences")
        finalizers, managed = meta.get("finalizers"), meta.get("managedFields")
        if labels is None and annotations is None and refs is None and finalizers is None and managed is None:
            return []       # none of the five (most Events): nothing to check, not even the memo's key
        return _validate_new_meta_maps(labels, annotations, refs, finalizers, managed, path)

    # (written out, no closure: a status write passes here with all five unchanged, mostly the
    # stored values themselves)
    get, old_get = meta.get, old.get
    errs: list[FieldError] = []
    if (v := get("labels")) is not (o := old_get("labels")) and v != o:
        errs += validate_labels(v, path + ".labels")
    if (v := get("annotations")) is not (o := old_get("annotations")) and v != o:
        errs += validate_annotations(v, path + ".annotations")
    if (v := get("ownerReferences")) is not (o := old_get("ownerReferences")) and v != o:
        errs += validate_owner_references(v or [], path + ".ownerReferences")
    if (v := get("finalizers")) is not (o := old_get("finalizers")) and v != o:
        errs += validate_finalizers(v or [], path + ".finalizers")
    if (v := get("managedFields")) is not (o := old_get("managedFields")) and v != o:
        errs += _validate_managed_fields(v or [], path + ".managedFields")
    return errs


@remember_valid
def _validate_new_meta_maps(labels: Any, annotations: Any, owner_refs: Any, finalizers: Any, managed_fields: Any,
                            path: str) -> list[FieldError]:
    """_validate_meta_maps of a new object: every one of the five, remembered when valid (the
    pods of one ReplicaSet share labels and ownerReference; most Events have none of them)."""
    errs = validate_labels(labels, path + ".labels")
    errs += validate_annotations(annotations, path + ".annotations")
    errs += validate_owner_references(owner_refs or [], path + ".ownerReferences")
    errs += validate_finalizers(finalizers or [], path + ".finalizers")
    return errs + _validate_managed_fields(managed_fields or [], path + ".managedFields")


def validate_owner_references(refs: list[Obj], path: str) -> list[FieldError]:
    """Upstream: ValidateOwnerReferences (required fields, core/v1 Event banned, one controller)."""
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        errs += _validate_owner_reference(ref, path)
        if ref.get("controller"):
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                errs.append(errors.invalid(path, refs, "Only one reference can have Controller set to true. "
                                           f'Found "true" in references for {first_controller} and {current}'))
            else:
                first_controller = current
    return errs


def _validate_owner_reference(ref: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    api_version = ref.get("apiVersion") or ""
    version = api_version.rsplit("/", 1)[-1] if api_version.count("/") <= 1 else ""
    if not version:
        errs.append(errors.invalid(path + ".apiVersion", api_version, "version must not be empty"))
    for key in ("kind", "name", "uid"):
        if not ref.get(key):
            errs.append(errors.invalid(f"{path}.{key}", ref.get(key) or "", "must not be empty"))
    if api_version == "v1" and ref.get("kind") == "Event":
        errs.append(errors.invalid(path, ref, "/v1, Kind=Event is disallowed from being an owner"))
    return errs


def validate_finalizers(finalizers: list[str], path: str) -> list[FieldError]:
    """Upstream: ValidateFinalizers + core's validateKubeFinalizerName (reported once per name)."""
    errs: list[FieldError] = []
    for i, f in enumerate(finalizers):
        msgs = is_qualified_name(f)
        errs += [errors.invalid(path, f, m) for m in msgs]
        if not msgs and "/" not in f and f not in STANDARD_FINALIZERS:
            errs.append(errors.invalid(f"{path}[{i}]", f, "name is neither a standard finalizer name nor is it fully qualified"))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(errors.invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


def _validate_managed_fields(entries: list[Obj], path: str) -> list[FieldError]:
    """Upstream: ValidateManagedFields (operation and fieldsType only)."""
    errs: list[FieldError] = []
    for i, e in enumerate(entries):
        if e.get("operation") not in ("Apply", "Update"):
            errs.append(errors.invalid(f"{path}[{i}].operation", e.get("operation", ""), "must be `Apply` or `Update`"))
        if e.get("fieldsType") and e["fieldsType"] != "FieldsV1":
            errs.append(errors.invalid(f"{path}[{i}].fieldsType", e["fieldsType"], "must be `FieldsV1`"))
    return errs


def validate_object_meta_update(new: Obj, old: Obj, path: str = "metadata") -> list[FieldError]:
    """Upstream: ValidateObjectMetaAccessorUpdate.

    The caller must have filled metadata.resourceVersion for an unconditional update
    (upstream's store copies the stored one in before validating).
    """
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        extra = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if extra:
            errs.append(errors.forbidden(path + ".finalizers", "no new finalizers can be added if the object is "
                                         f"being deleted, found new finalizers []string{{{', '.join(errors.go_quote(f) for f in extra)}}}"))
    if not new.get("resourceVersion"):
        errs.append(errors.invalid(path + ".resourceVersion", new.get("resourceVersion") or "", "must be specified for an update"))
    if (new.get("generation") or 0) < (old.get("generation") or 0):
        errs.append(errors.invalid(path + ".generation", new.get("generation") or 0, "must not be decremented"))
    for key in _IMMUTABLE_META:
        value, old_value = new.get(key), old.get(key)
        if value is not old_value and value != old_value:       # (the path only for a change)
            errs += immutable(value, old_value, f"{path}.{key}")
    return errs + _validate_meta_maps(new, path, old)


_IMMUTABLE_META = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")
