"""The scale subresource of custom resources: an autoscaling/v1 Scale read from and written to
the paths the CRD names (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`), so
`kubectl scale` and the HorizontalPodAutoscaler work on custom objects.

    GET   /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>/scale  -> the Scale
    PUT   the same with a Scale                                          -> the Scale written
    PATCH the same (JSON or merge patch, applied to the current Scale; or server-side apply)

Ownership of the replicas crosses between the two shapes as upstream's ScaleHandler moves it:
the Scale a write starts from carries, as `spec.replicas`, the entries of the object's managers
that own the specReplicasPath; the write records its manager on the
Scale (Update, or Apply with conflicts: `conflict with "mgr": .spec.replicas`); the result goes
back as the object's entries, subresource "scale", the path at specReplicasPath, and the
replicas taken from a manager that lost them on the Scale. A scale manager new to the object
has no time, as upstream (ToParent takes the times of the parent's entries).

Upstream: ScaleREST, scaleFromCustomResource, scaleUpdatedObjectInfo
(apiextensions-apiserver pkg/registry/customresource/etcd.go), managedfields.ScaleHandler
(apimachinery pkg/util/managedfields/scalehandler.go) and customResourceValidator's
ValidateScaleSpec / ValidateScaleStatus (validator.go). Deviation: every version of the CRD's
group maps to this version's specReplicasPath (upstream maps each to its own).
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
from ..patch.managedfields import Entry, decode_managed_fields, encode_managed_fields
from ..registry import resource_definition, store
from ..request import Request, Response

if TYPE_CHECKING:
    from ..server import APIServer

SCALE_DEFINITION = "io.k8s.api.autoscaling.v1.Scale"
MAX_INT32 = 2**31 - 1
# Upstream: invalidSpecReplicas (the smallest int32) marks a Scale whose owner has no replicas yet.
INVALID_SPEC_REPLICAS = -(2**31)
# No strategic merge patch on custom resources, their Scale included (upstream's crdHandler
# supportedTypes).
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", APPLY_PATCH)
SCALE_API_VERSION = "autoscaling/v1"
# Upstream: replicasPathInScale (scalehandler.go).
REPLICAS_IN_SCALE: tuple[str, ...] = ("f:spec", "f:replicas")
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


# --- managedFields: the Scale's and the object's ---------------------------------------------

def replicas_path(spec_replicas_path: str) -> tuple[str, ...]:
    """The specReplicasPath as a managedFields path: .spec.replicas -> ("f:spec", "f:replicas")."""
    return tuple("f:" + f for f in _split(spec_replicas_path))


def to_subresource(parent: list[Entry], group: str, path: tuple[str, ...]) -> list[Entry]:
    """The object's entries that own the replicas, as the Scale's (autoscaling/v1, spec.replicas).
    Upstream: ScaleHandler.ToSubresource."""
    return [Entry(e.manager, e.operation, SCALE_API_VERSION, e.time, e.subresource, {REPLICAS_IN_SCALE})
            for e in parent if _in_group(e.api_version, group) and path in e.fields]


def _in_group(api_version: str, group: str) -> bool:
    """Whether an entry's apiVersion is one of the group's ("v1" for the core group's
    ReplicationControllers)."""
    return api_version.startswith(group + "/") if group else "/" not in api_version


def to_parent(parent: list[Entry], scale: list[Entry], group_version: str, path: tuple[str, ...]) -> list[Entry]:
    """The object's entries after a Scale write: entries of other apiVersions dropped; one that
    owned the replicas and lost them on the Scale loses the path (the entry goes if nothing is
    left); a Scale manager the object does not know gets the path, without a time (upstream
    reads the parent's times). Upstream: ScaleHandler.ToParent."""
    group = group_version.split("/", 1)[0] if "/" in group_version else ""     # "v1": the core group
    on_scale = {e.identity(): e for e in scale}
    times = {e.identity(): e.time for e in parent}
    out: list[Entry] = []
    for e in parent:
        if not _in_group(e.api_version, group):
            continue
        if path not in e.fields:
            out.append(e)
        elif e.identity() in on_scale:
            out.append(e)
            del on_scale[e.identity()]
        elif rest := e.fields - {path}:
            out.append(Entry(e.manager, e.operation, e.api_version, e.time, e.subresource, rest))
    for ident, e in on_scale.items():
        if REPLICAS_IN_SCALE not in e.fields:
            continue
        back = Entry(e.manager, e.operation, group_version, times.get(ident), e.subresource, {path})
        # An updater's Scale entry (autoscaling/v1) comes back as the same identity as its
        # entry on the object, whose replicas it just lost: one entry (upstream writes two).
        same = next((o for o in out if o.identity() == back.identity()), None)
        if same is not None:
            same.fields = same.fields | {path}
        else:
            out.append(back)
    return out


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
    applied = True          # the object's managedFields come from the Scale's (to_parent), not the store

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
        parent, path = decode_managed_fields(cr), replicas_path(paths.spec_replicas)
        encode_managed_fields(old_scale, to_subresource(parent, ri.group, path))
        scale = self.scale
        del self.warnings[:]
        if self.patch_type == APPLY_PATCH:
            scale = self._applied(old_scale)
        elif scale is None:
            scale = apply_patch(self.patch_type, old_scale, self.req.body, SCALE_DEFINITION)
            common.check_patched_fields(self.req, _SCALE_INFO, scale, self.warnings)
        if self.patch_type != APPLY_PATCH:
            record_update(self.api, self.opts, old_scale, scale, bool(parent))
        attrs = store.attributes(self.opts, ri, admission.UPDATE, self.ns, name, scale, old_scale,
                                 "scale", "Scale")
        await self.api.admission.admit(attrs)
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if replicas == INVALID_SPEC_REPLICAS:
            raise errors.BadRequest(f"the spec replicas field {errors.go_quote(paths.spec_replicas)} cannot be empty")
        await self.api.admission.validate(attrs)
        _set_nested(cr, paths.spec_replicas, replicas)
        encode_managed_fields(cr, to_parent(parent, decode_managed_fields(scale), ri.api_version, path))
        if rv := (scale.get("metadata") or {}).get("resourceVersion"):
            cr["metadata"]["resourceVersion"] = rv      # the Scale's precondition is the object's
        return cr

    def _applied(self, old_scale: Obj) -> Obj:
        """Server-side apply of the request's Scale configuration to the current Scale."""
        from ..handlers import common
        from ..patch import server_side_apply
        config, found = codec.decode_object(self.req.headers, self.req.body, _SCALE_INFO,
                                            common.field_validation(self.req), prune_unknown=False)
        self.warnings.extend(found)
        objects.check_type_meta(config, _SCALE_INFO)
        return server_side_apply(old_scale, config, SCALE_DEFINITION, manager=self.req.query.get("fieldManager", ""),
                                 force=self.req.flag("force"), api_version=SCALE_API_VERSION, now=self.api.now(),
                                 subresource="scale")


def record_update(api: APIServer, opts: store.WriteOptions, old_scale: Obj, scale: Obj, tracked: bool) -> None:
    """A Scale write's Update entry on the Scale (subresource "scale"), recorded as the store
    records one on an object (store.record_managed_fields: a named fieldManager, or an object
    already tracked); for custom resources' and built-in workloads' /scale alike."""
    from ..patch import update_managed_fields
    manager = opts.field_manager or (store.manager_from_user_agent(opts.user_agent) if tracked else "")
    if not manager:
        return
    scale.setdefault("apiVersion", SCALE_API_VERSION)
    scale.setdefault("kind", "Scale")
    update_managed_fields(old_scale, scale, manager=manager, operation="Update", api_version=SCALE_API_VERSION,
                          now=api.now(), subresource="scale")


_SCALE_INFO = ResourceInfo("autoscaling", "v1", "Scale", "scale", "scale", True, SCALE_DEFINITION)
