"""Validation of a write to pods/ephemeralcontainers (what `kubectl debug` sends).

Upstream: ValidatePodEphemeralContainersUpdate and validateEphemeralContainers
(pkg/apis/core/validation/validation.go). Ephemeral containers may only be added: an existing
one can be neither removed nor changed; each is a container without the fields a workload
relies on (ports, resources, probes, lifecycle, resize and restart policies), named uniquely
across all of the pod's containers, targeting (optionally) a regular or init container, and
mounting no subPath. Static (mirror) pods have none.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import core
from . import meta as m

Obj = dict[str, Any]
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
CANNOT_BE_SET = "cannot be set for an Ephemeral Container"
# The fields of EphemeralContainerCommon outside upstream's allowedEphemeralContainerFields,
# in struct order (validateFieldAllowList walks the struct): set means not Go's zero value.
FORBIDDEN_FIELDS = ("ports", "resources", "resizePolicy", "restartPolicy", "restartPolicyRules",
                    "livenessProbe", "readinessProbe", "startupProbe", "lifecycle")
SPEC_PATH = "spec.ephemeralContainers"


def validate_pod_ephemeral_containers_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePodEphemeralContainersUpdate. new and old differ only in
    spec.ephemeralContainers (and the metadata the strategy keeps from new).

    The message for a changed container is upstream's first line only: Go appends a cmp.Diff
    of the two containers, which cannot be reproduced byte for byte.
    """
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += core._validate_pod_metadata_and_spec(new)
    spec = new.get("spec") or {}
    errs += validate_ephemeral_containers(spec.get("ephemeralContainers") or [], spec)
    if MIRROR_POD_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [errors.forbidden("", "static pods do not support ephemeral containers")]
    by_name = {c.get("name"): c for c in spec.get("ephemeralContainers") or []}
    for o in (old.get("spec") or {}).get("ephemeralContainers") or []:
        name = o.get("name", "")
        if name not in by_name:
            errs.append(errors.forbidden(SPEC_PATH, f"existing ephemeral containers {errors.go_quote(name)} "
                                                    "may not be removed\n"))
        elif not m.semantic_equal(o, by_name[name]):
            errs.append(errors.forbidden(SPEC_PATH, f"existing ephemeral containers {errors.go_quote(name)} "
                                                    "may not be changed"))
    return errs


def validate_ephemeral_containers(ecs: list[Obj], spec: Obj) -> list[FieldError]:
    """Upstream: validateEphemeralContainers (called from ValidatePodSpec)."""
    errs: list[FieldError] = []
    others = {c.get("name", "") for key in ("containers", "initContainers") for c in spec.get(key) or []}
    all_names = set(others)
    volumes = {v.get("name", "") for v in spec.get("volumes") or []}
    for i, ec in enumerate(ecs):
        path = f"{SPEC_PATH}[{i}]"
        errs += core.validate_container_common(ec, volumes, path)
        image = ec.get("image") or ""
        if image != image.strip():                     # validateContainerOnlyForPod
            errs.append(errors.invalid(path + ".image", image, "must not have leading or trailing whitespace"))
        name = ec.get("name", "")
        if name in all_names:
            errs.append(errors.duplicate(path + ".name", name))
        else:
            all_names.add(name)
        target = ec.get("targetContainerName")
        if target and target not in others:
            errs.append(errors.not_found(path + ".targetContainerName", target))
        errs += [errors.forbidden(f"{path}.{key}", CANNOT_BE_SET) for key in FORBIDDEN_FIELDS
                 if _is_set(key, ec.get(key))]
        for j, vm in enumerate(ec.get("volumeMounts") or []):
            for key in ("subPath", "subPathExpr"):
                if vm.get(key):
                    errs.append(errors.forbidden(f"{path}.volumeMounts[{j}].{key}", CANNOT_BE_SET))
    return errs


def _is_set(key: str, value: Any) -> bool:
    """Whether the field is not Go's zero value: a pointer (probes, lifecycle, restartPolicy),
    slice or map that is there at all (`ports: []` decodes to a non-nil slice); `resources`, a
    struct, only when one of its fields is (`resources: {}` is zero, and kubectl sends it)."""
    if key == "resources":
        return isinstance(value, dict) and any(v is not None for v in value.values())
    return value is not None
