"""Subresources: scale (autoscaling/v1 Scale), pods/binding (and the legacy bindings
collection), namespaces/finalize.

`/status` is served by the generic update/patch with the status strategy (rest.py).
Upstream: pkg/registry/apps/deployment/storage/storage.go (ScaleREST),
pkg/registry/core/pod/storage/storage.go (BindingREST), pkg/registry/core/namespace (FinalizeREST).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from ...api import errors, labels
from ...api.resources import ResourceInfo, lookup
from ...storage.interface import KeyValue
from .. import admission, codec, objects
from ..apiextensions.scale import REPLICAS_IN_SCALE, record_update, to_parent, to_subresource
from ..objects import Obj, storage_errors
from ..patch.managedfields import decode_managed_fields, encode_managed_fields
from ..registry import store
from ..registry.core.pod import set_pod_condition
from ..request import Request, Response
from . import common, rest

if TYPE_CHECKING:
    from ..server import APIServer

SCALE_INFO = ResourceInfo("autoscaling", "v1", "Scale", "scale", "scale", True, "io.k8s.api.autoscaling.v1.Scale")


def to_scale(obj: Obj) -> Obj:
    """Upstream: scaleFromDeployment / scaleFromReplicaSet / scaleFromStatefulSet / scaleFromRC."""
    meta = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector")
    if obj.get("kind") == "ReplicationController" and selector:   # a plain map: SelectorFromSet
        selector = {"matchLabels": selector}
    return {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                     if k in meta},
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                   "selector": labels.selector_string(selector) if selector else ""},
    }


async def _current(api: APIServer, ri: ResourceInfo, ns: str, name: str) -> Any:
    kv = await api.storage.get(ri.key(ns, name))
    if kv is None:
        raise errors.NotFound(ri.group, ri.plural, name)
    return kv


async def get_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    kv = await _current(api, ri, ns, name)
    return Response(200, orjson.dumps(to_scale(kv.obj)))


BINDING = "io.k8s.api.core.v1.Binding"
NAMESPACE = "io.k8s.api.core.v1.Namespace"


async def update_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    scale, _ = codec.decode_typed(req.headers, req.body, SCALE_INFO.definition, "Scale", "v1",
                                  common.field_validation(req))
    return await _write_scale(api, req, ri, ns, name, _ScaleUpdate(api, req, ri, ns, name, scale))


async def patch_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str) -> Response:
    patch_type = codec.media_type(req.headers)
    if patch_type not in rest.PATCH_TYPES[:3]:
        raise errors.UnsupportedMediaType(patch_type, list(rest.PATCH_TYPES[:3]))
    return await _write_scale(api, req, ri, ns, name, _ScaleUpdate(api, req, ri, ns, name, None, patch_type))


async def _write_scale(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str,
                       info: _ScaleUpdate) -> Response:
    stored, _, _ = await store.update_object(api, info.opts, ri, ns, name, info, [])
    return Response(200, orjson.dumps(to_scale(stored)))


class _ScaleUpdate(store.UpdatedObjectInfo):
    """The owner with the Scale's spec.replicas (a spec change: generation bumps); the Scale
    is the request's body, or its patch applied to the owner's current Scale.

    Admission sees the Scale (UPDATE of <plural>/scale), not the owner, as upstream's ScaleREST
    (scaleUpdatedObjectInfo, pkg/registry/apps/deployment/storage/storage.go). Ownership of
    the replicas moves as upstream's ScaleHandler moves it (the custom resources' own, in
    apiextensions/scale.py): the write is recorded on the Scale and comes back to the owner as
    an entry of subresource "scale" (`kubectl scale` then `kubectl apply --server-side`:
    `conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas`)."""
    __slots__ = ("api", "req", "ri", "ns", "name", "scale", "patch_type", "opts")
    admit = False
    applied = True          # the owner's managedFields come from the Scale's (to_parent), not the store

    def __init__(self, api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str, scale: Obj | None,
                 patch_type: str = "") -> None:
        self.api, self.req, self.ri, self.ns, self.name = api, req, ri, ns, name
        self.scale, self.patch_type, self.opts = scale, patch_type, common.write_options(req)

    async def updated_object(self, kv: KeyValue | None) -> Obj:
        api, ri, name = self.api, self.ri, self.name
        if kv is None:      # upstream reports the owner missing on the scale resource
            raise errors.NotFound(ri.group, f"{ri.plural}/scale", name)
        parent = decode_managed_fields(kv.obj)
        old_scale = to_scale(kv.obj)
        encode_managed_fields(old_scale, to_subresource(parent, ri.group, REPLICAS_IN_SCALE))
        scale = self.scale
        if scale is None:
            from ..patch import apply_patch
            scale = apply_patch(self.patch_type, old_scale, self.req.body, SCALE_INFO.definition)
            common.check_patched_fields(self.req, SCALE_INFO, scale, [])
        record_update(self.api, self.opts, old_scale, scale, bool(parent))
        attrs = store.attributes(self.opts, ri, admission.UPDATE, self.ns, name, scale, to_scale(kv.obj),
                                 "scale", "Scale")
        await api.admission.admit(attrs)
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise errors.BadRequest("Scale in version \"v1\" cannot be handled as a Scale: spec.replicas must be an integer")
        if replicas < 0:
            raise errors.Invalid("autoscaling", "Scale", name, [
                errors.invalid("spec.replicas", replicas, "must be greater than or equal to 0")])
        uid = (scale.get("metadata") or {}).get("uid")
        if uid and uid != kv.obj["metadata"].get("uid"):
            raise errors.Conflict(ri.group, f"{ri.plural}/scale", name, f"Precondition failed: UID in precondition: "
                                  f"{uid}, UID in object meta: {kv.obj['metadata'].get('uid')}")
        await api.admission.validate(attrs)
        new = objects.mutable_copy(kv)
        new.setdefault("spec", {})["replicas"] = replicas
        encode_managed_fields(new, to_parent(parent, decode_managed_fields(scale), ri.api_version, REPLICAS_IN_SCALE))
        if rv := (scale.get("metadata") or {}).get("resourceVersion"):
            new["metadata"]["resourceVersion"] = rv      # the Scale's precondition is the owner's
        return new

    def retry_on_conflict(self) -> bool:
        """A patch lost to another writer (a controller's status write) is applied again to the
        newer owner, as upstream's patcher does for /scale, unless the Scale pins a resourceVersion."""
        if self.scale is not None:
            return not (self.scale.get("metadata") or {}).get("resourceVersion")
        return not common.patch_pins_revision(self.req, self.patch_type)


async def create_binding(api: APIServer, req: Request, ri: ResourceInfo, ns: str, name: str,
                         subresource: str = "binding", *, legacy: ResourceInfo | None = None) -> Response:
    """Upstream: BindingREST.Create -> assignPod -> setPodHostAndAnnotations.

    The binding's uid/resourceVersion are preconditions on the pod (a Conflict on pods); a pod
    being deleted, already bound, or still gated cannot be bound (a Conflict on pods/binding).
    `legacy`: a POST to the bindings collection (ri is still pods'): the Binding names the pod,
    and admission sees a create of bindings. Upstream: LegacyBindingREST.Create.
    (`subresource`: always pods/binding; the router's handler signature, subresource_rest.Serve.)
    """
    warnings: list[str] = []
    if req.obj is not None:         # the in-process scheduler's binding: trusted, see Request.obj
        binding = req.obj
    else:
        binding, warnings = codec.decode_typed(req.headers, req.body, BINDING, "Binding", "v1",
                                               common.field_validation(req))
    meta = binding.get("metadata") or {}
    if legacy is not None:
        name = _legacy_binding_name(binding, ns, legacy)
    if meta.get("name", "") != name:
        raise errors.BadRequest("name in URL does not match name in Binding object")
    opts = common.write_options(req)
    attrs = (store.attributes(opts, legacy, admission.CREATE, ns, name, binding) if legacy is not None else
             store.attributes(opts, ri, admission.CREATE, ns, name, binding, None, "binding", "Binding"))
    await api.admission.admit(attrs)
    target = binding.get("target") or {}
    errs = []
    if target.get("kind") and target["kind"] != "Node":
        errs.append(errors.not_supported("target.kind", target["kind"], ["Node", "<empty>"]))
    if not target.get("name"):
        errs.append(errors.required("target.name"))
    if errs:
        raise errors.Invalid("", "Binding", name, errs)
    await api.admission.validate(attrs)
    kv = await _current(api, ri, ns, name)
    pod = _binding_copy(kv.obj)
    pmeta = pod["metadata"]
    if meta.get("uid") and meta["uid"] != pmeta.get("uid"):
        raise errors.Conflict("", "pods", name, f"Precondition failed: UID in precondition: {meta['uid']}, "
                              f"UID in object meta: {pmeta.get('uid')}")
    if meta.get("resourceVersion") and meta["resourceVersion"] != pmeta.get("resourceVersion"):
        raise errors.Conflict("", "pods", name, "Precondition failed: ResourceVersion in precondition: "
                              f"{meta['resourceVersion']}, ResourceVersion in object meta: {pmeta.get('resourceVersion')}")
    spec = pod["spec"]
    why = None
    if pmeta.get("deletionTimestamp"):
        why = f"pod {name} is being deleted, cannot be assigned to a host"
    elif spec.get("nodeName"):
        why = f'pod {name} is already assigned to node "{spec["nodeName"]}"'
    elif spec.get("schedulingGates"):
        why = f"pod {name} has non-empty .spec.schedulingGates"
    if why:
        raise errors.Conflict("", "pods/binding", name, why)
    spec["nodeName"] = target["name"]
    if meta.get("annotations"):
        pmeta["annotations"] = {**(pmeta.get("annotations") or {}), **meta["annotations"]}
    set_pod_condition(pod, "PodScheduled", "True", api.now())
    if not opts.dry_run:
        with storage_errors(ri, name):
            await api.storage.update(kv.key, pod, kv.mod_revision)
    return Response(201, orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                       "status": "Success", "code": 201}),
                    headers=common.warning_headers(warnings) if warnings else [])


def _legacy_binding_name(binding: Obj, ns: str, legacy: ResourceInfo) -> str:
    """The pod a POST to the bindings collection binds: the Binding's own name, once its
    namespace is the URL's (createHandler's EnsureObjectNamespaceMatchesRequestNamespace)."""
    if not isinstance(binding.get("metadata"), dict):
        binding["metadata"] = {}
    objects.check_namespace_matches(binding, ns, legacy)
    return str(binding["metadata"].get("name") or "")


def _binding_copy(stored: Obj) -> Obj:
    """A copy of a stored pod that a binding may write: fresh dicts (and conditions list) on
    the paths it changes — metadata, spec, status — sharing everything below them with the
    stored pod, which nothing changes. A deep copy decodes the whole pod for three keys."""
    pod = dict(stored)
    pod["metadata"] = dict(stored["metadata"])
    pod["spec"] = dict(stored.get("spec") or {})
    status = pod["status"] = dict(stored.get("status") or {})
    if isinstance(status.get("conditions"), list):
        status["conditions"] = list(status["conditions"])
    return pod


async def finalize_namespace(api: APIServer, req: Request, ri: ResourceInfo, name: str) -> Response:
    """Upstream: FinalizeREST.Update, the namespace store's Update with the finalize strategy
    (status kept, ValidateNamespaceFinalizeUpdate: the definition's validate_subresource_update);
    the last finalizer going away completes a pending deletion (ShouldDeleteNamespaceDuringUpdate).
    Deviation kept: only spec.finalizers is taken from the body (upstream takes its metadata too)."""
    body, _ = codec.decode_typed(req.headers, req.body, NAMESPACE, "Namespace", "v1", common.field_validation(req))
    finalizers = (body.get("spec") or {}).get("finalizers") or []
    stored, value, _ = await store.update_object(api, common.write_options(req), ri, "", name,
                                                 _Finalize(ri, name, finalizers), [])
    return common.object_response(api, req, ri, stored, value)


class _Finalize(store.UpdatedObjectInfo):
    """The stored namespace with the request's spec.finalizers."""
    __slots__ = ("ri", "name", "finalizers")
    subresource = "finalize"

    def __init__(self, ri: ResourceInfo, name: str, finalizers: list[str]) -> None:
        self.ri, self.name, self.finalizers = ri, name, finalizers

    async def updated_object(self, kv: KeyValue | None) -> Obj:
        if kv is None:
            raise errors.NotFound(self.ri.group, self.ri.plural, self.name)
        new = objects.mutable_copy(kv)
        new.setdefault("spec", {})["finalizers"] = self.finalizers
        if not self.finalizers:
            del new["spec"]["finalizers"]
        return new


def namespaces_info() -> ResourceInfo:
    ri = lookup("", "v1", "namespaces")
    assert ri is not None
    return ri


def pods_info() -> ResourceInfo:
    ri = lookup("", "v1", "pods")
    assert ri is not None
    return ri
