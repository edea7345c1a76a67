"""The scale subresource of custom resources: an autoscaling/v1 Scale read from and written to
the paths the CRD names (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`), so
`kubectl scale` and the HorizontalPodAutoscaler work on custom objects.

    GET   /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>/scale  -> the Scale
    PUT   the same with a Scale                                          -> the Scale written
    PATCH the same (JSON or merge patch, applied to the current Scale)

Upstream: ScaleREST, scaleFromCustomResource, scaleUpdatedObjectInfo
(apiextensions-apiserver pkg/registry/customresource/etcd.go) and customResourceValidator's
ValidateScaleSpec / ValidateScaleStatus (validator.go). Deviation: the Scale's managedFields
are not mapped onto the parent's (upstream's managedfields.ScaleHandler).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors
from ...api.errors import FieldError
from ...api.resources import ResourceInfo, Subresource
from ...storage.interface import KeyValue
from .. import admission, codec, objects
from ..objects import Obj
from ..patch._status import go_type, go_v        # Go's %v and type names, as the patch errors print them
from ..registry import resource_definition, store
from ..request import Request, Response

if TYPE_CHECKING:
    from ..server import APIServer

SCALE_DEFINITION = "io.k8s.api.autoscaling.v1.Scale"
MAX_INT32 = 2**31 - 1
# Upstream: invalidSpecReplicas (the smallest int32) marks a Scale whose owner has no replicas yet.
INVALID_SPEC_REPLICAS = -(2**31)
# No strategic merge patch on custom resources, their Scale included (upstream's crdHandler
# supportedTypes); deviation: no server-side apply of a Scale either.
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json")
# The subresource on a custom resource's definition (handlers/subresource_rest.py "customscale").
CUSTOM_SCALE = Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1", handler="customscale")


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """A CRD version's subresources.scale: where the replicas and the selector live."""
    spec_replicas: str
    status_replicas: str
    label_selector: str = ""

    @classmethod
    def from_crd(cls, scale: Any) -> ScalePaths | None:
        if not isinstance(scale, dict):
            return None
        return cls(str(scale.get("specReplicasPath") or ""), str(scale.get("statusReplicasPath") or ""),
                   str(scale.get("labelSelectorPath") or ""))


def _split(path: str) -> list[str]:
    """Upstream: splitReplicasPath — the path split at dots, the leading dot ignored."""
    return path.removeprefix(".").split(".")


class AccessorError(ValueError):
    pass


def _nested(obj: Obj, fields: list[str], want: type, want_go: str) -> tuple[Any, bool]:
    """Upstream: unstructured.NestedInt64 / NestedString — (value, found); an accessor error
    for a value of another type (or a non-map on the way)."""
    cur: Any = obj
    for i, f in enumerate(fields):
        if not isinstance(cur, dict):
            raise AccessorError(f".{'.'.join(fields[:i])} accessor error: {go_v(cur)} is of the type "
                                f"{go_type(cur)}, expected map[string]interface{{}}")
        if f not in cur:
            return None, False
        cur = cur[f]
    if not isinstance(cur, want) or isinstance(cur, bool):
        raise AccessorError(f".{'.'.join(fields)} accessor error: {go_v(cur)} is of the type "
                            f"{go_type(cur)}, expected {want_go}")
    return cur, True


def _int64(obj: Obj, path: str) -> tuple[int, bool]:
    v, found = _nested(obj, _split(path), int, "int64")
    return (int(v), True) if found else (0, False)


def _string(obj: Obj, path: str) -> str:
    v, found = _nested(obj, _split(path), str, "string")
    return str(v) if found else ""


def _int32(n: int) -> int:
    """Go's int32(n): wraps around."""
    return (n + 2**31) % 2**32 - 2**31


def scale_from_custom_resource(cr: Obj, paths: ScalePaths) -> tuple[Obj, bool]:
    """Upstream: scaleFromCustomResource — the Scale, and whether the spec replicas were found.
    Raises AccessorError for a value of the wrong type at one of the paths."""
    spec, found = _int64(cr, paths.spec_replicas)
    status, _ = _int64(cr, paths.status_replicas)
    selector = _string(cr, paths.label_selector) if paths.label_selector else ""
    meta = cr.get("metadata") or {}
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if meta.get(k)},
        "spec": {"replicas": _int32(spec)} if _int32(spec) else {},
        "status": {"replicas": _int32(status), **({"selector": selector} if selector else {})},
    }, found


def _set_nested(obj: Obj, path: str, value: int) -> None:
    """Upstream: unstructured.SetNestedField — missing maps are created on the way."""
    fields = _split(path)
    cur = obj
    for i, f in enumerate(fields[:-1]):
        nxt = cur.get(f)
        if nxt is None:
            nxt = cur[f] = {}
        elif not isinstance(nxt, dict):
            raise errors.InternalError(f"value cannot be set because .{'.'.join(fields[:i + 1])} "
                                       "is not a map[string]interface{}")
        cur = nxt
    cur[fields[-1]] = value


# --- validation (the custom resource's strategy) ---------------------------------------------

def validate_scale_spec(obj: Obj, paths: ScalePaths | None) -> list[FieldError]:
    """Upstream: customResourceValidator.ValidateScaleSpec."""
    if paths is None:
        return []
    return _replicas_errors(obj, paths.spec_replicas)


def validate_scale_status(obj: Obj, paths: ScalePaths | None) -> list[FieldError]:
    """Upstream: customResourceValidator.ValidateScaleStatus."""
    if paths is None:
        return []
    errs = _replicas_errors(obj, paths.status_replicas)
    if paths.label_selector:
        try:
            _string(obj, paths.label_selector)
        except AccessorError as e:
            errs.append(errors.invalid(paths.label_selector, "", str(e)))
    return errs


def _replicas_errors(obj: Obj, path: str) -> list[FieldError]:
    try:
        n, _ = _int64(obj, path)
    except AccessorError as e:
        return [errors.invalid(path, 0, str(e))]
    if n < 0:
        return [errors.invalid(path, n, "should be a non-negative integer")]
    if n > MAX_INT32:
        return [errors.invalid(path, n, f"should be less than or equal to {MAX_INT32}")]
    return []


# --- the REST handlers -----------------------------------------------------------------------

def _paths(ri: ResourceInfo) -> ScalePaths:
    paths = getattr(resource_definition(ri).strategy, "scale", None)
    if paths is None:       # not a custom resource with a scale subresource: the router's 404
        raise errors.StatusError(404, "NotFound", "the server could not find the requested resource")
    return paths


def _scale_or_error(cr: Obj, paths: ScalePaths, err: Callable[[str], errors.StatusError]) -> tuple[Obj, bool]:
    try:
        return scale_from_custom_resource(cr, paths)
    except AccessorError as e:
        raise err(str(e)) from None


async def get_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str = "") -> Response:
    """Upstream: ScaleREST.Get — a custom object without spec replicas has no Scale (a 500,
    as upstream answers)."""
    from ..handlers import common
    paths = _paths(ri)
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound(ri.group, ri.plural, name)
    kv = await common.served_kv(ri, kv)             # the version's paths read its own form
    scale, found = _scale_or_error(kv.obj, paths, errors.InternalError)
    if not found:
        raise errors.InternalError(f"the spec replicas field {errors.go_quote(paths.spec_replicas)} does not exist")
    return Response(200, orjson.dumps(scale))


async def update_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str = "") -> Response:
    from ..handlers import common
    scale, warnings = codec.decode_typed(req.headers, req.body, SCALE_DEFINITION, "Scale", "v1",
                                         common.field_validation(req))
    return await _write(api, req, ri, ns, name, _CustomScaleUpdate(api, req, ri, ns, name, _paths(ri), scale), warnings)


async def patch_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, sub: str = "") -> Response:
    from ..handlers import common
    patch_type = codec.media_type(req.headers)
    if patch_type not in PATCH_TYPES:
        raise errors.UnsupportedMediaType(patch_type, list(PATCH_TYPES))
    if len(req.body) > codec.MAX_BODY:
        raise errors.RequestEntityTooLarge()
    info = _CustomScaleUpdate(api, req, ri, ns, name, _paths(ri), None, patch_type)
    common.field_validation(req)            # a bad directive is a 400 before anything is read
    return await _write(api, req, ri, ns, name, info, info.warnings)


async def _write(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, info: _CustomScaleUpdate,
                 warnings: list[str]) -> Response:
    from ..handlers import common
    stored, _, _ = await store.update_object(api, info.opts, ri, ns, name, info, warnings)
    scale, _ = _scale_or_error(stored, info.paths, errors.BadRequest)
    return Response(200, orjson.dumps(scale), headers=common.warning_headers(warnings))


class _CustomScaleUpdate(store.UpdatedObjectInfo):
    """The custom object with the Scale's spec.replicas at specReplicasPath; the Scale is the
    request's body, or its patch applied to the object's current Scale (whose replicas are
    INVALID_SPEC_REPLICAS when the object has none: a patch must set them).

    Admission sees the Scale (UPDATE of <plural>/scale), as upstream's ScaleREST.
    Upstream: scaleUpdatedObjectInfo.UpdatedObject (etcd.go)."""
    __slots__ = ("api", "req", "ri", "ns", "name", "paths", "scale", "patch_type", "opts", "warnings")
    admit = False

    def __init__(self, api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, paths: ScalePaths,
                 scale: Obj | None, patch_type: str = "") -> None:
        from ..handlers import common
        self.api, self.req, self.ri, self.ns, self.name, self.paths = api, req, ri, ns, name, paths
        self.scale, self.patch_type, self.opts = scale, patch_type, common.write_options(req)
        self.warnings: list[str] = []

    async def updated_object(self, kv: KeyValue | None) -> Obj:
        from ..handlers import common
        from ..patch import apply_patch
        ri, name, paths = self.ri, self.name, self.paths
        if kv is None:
            raise errors.NotFound(ri.group, ri.plural, name)
        cr = objects.mutable_copy(kv)
        old_scale, found = _scale_or_error(cr, paths, errors.BadRequest)
        if not found:
            old_scale["spec"] = {"replicas": INVALID_SPEC_REPLICAS}
        scale = self.scale
        if scale is None:
            scale = apply_patch(self.patch_type, old_scale, self.req.body, SCALE_DEFINITION)
            del self.warnings[:]
            common.check_patched_fields(self.req, _SCALE_INFO, scale, self.warnings)
        attrs = store.attributes(self.opts, ri, admission.Operation.UPDATE, self.ns, name, scale, old_scale,
                                 "scale", "Scale")
        await self.api.admission.admit(attrs)
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if replicas == INVALID_SPEC_REPLICAS:
            raise errors.BadRequest(f"the spec replicas field {errors.go_quote(paths.spec_replicas)} cannot be empty")
        await self.api.admission.validate(attrs)
        _set_nested(cr, paths.spec_replicas, replicas)
        if rv := (scale.get("metadata") or {}).get("resourceVersion"):
            cr["metadata"]["resourceVersion"] = rv      # the Scale's precondition is the object's
        return cr


_SCALE_INFO = ResourceInfo("autoscaling", "v1", "Scale", "scale", "scale", True, SCALE_DEFINITION)
