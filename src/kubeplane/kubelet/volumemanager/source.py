"""What the kubelet's volumes are made of, read from the API server as the pod's node.

    src = APIVolumeSource(clientset_for, clock)
    node_src = src.for_node("node-0")                # a projection.VolumeSource
    handle = src.watch("node-0", "ConfigMap", "ns", "cfg", on_change)    # ... handle.stop()

Reads go out as the node (system:node:<name>), which the Node authorizer lets read only the
ConfigMaps, Secrets, claims and volumes of its own pods and mint tokens for their service
accounts. Changes are followed with one watch per referenced object (a reflector listing and
watching with fieldSelector metadata.name=<name>, which the Node authorizer allows), shared by
every pod of the node that references it: the kubelet's default Watch change-detection strategy,
never a poll of the API per pod.

Upstream: the watch-based configmap/secret managers (pkg/kubelet/util/manager/
watch_based_manager.go: objectCache, one reflector per object with a name field selector) and
the token manager's GetServiceAccountToken (pkg/kubelet/token).
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import json
import logging
from collections.abc import Callable
from typing import Any

from ...api import errors
from ...api.types import core_v1
from ...client.rest import ResourceClient, raise_for_status
from ...client.tools.cache.shared_informer import SharedIndexInformer
from ...utils.clock import REAL_CLOCK, Clock
from .projection import Token, VolumeError

log = logging.getLogger(__name__)

PLURALS = {"ConfigMap": "configmaps", "Secret": "secrets"}


class _NamedListerWatcher:
    """A resource client's list and watch narrowed to one object by name."""

    def __init__(self, rc: ResourceClient[Any], name: str) -> None:
        self.rc, self.selector = rc, f"metadata.name={name}"

    async def list(self, *, resource_version: str = "") -> Any:
        return await self.rc.list(field_selector=self.selector, resource_version=resource_version)

    def watch(self, *, resource_version: str = "", allow_watch_bookmarks: bool = False,
              timeout_seconds: int | None = None) -> Any:
        return self.rc.watch(resource_version=resource_version, field_selector=self.selector,
                             allow_watch_bookmarks=allow_watch_bookmarks, timeout_seconds=timeout_seconds)


class _ObjectWatch:
    """One object's reflector and the callbacks of the volumes that use it."""

    def __init__(self, informer: SharedIndexInformer) -> None:
        self.informer = informer
        self.callbacks: list[Callable[[], None]] = []
        self.task: asyncio.Task[None] | None = None


class WatchHandle:
    def __init__(self, owner: APIVolumeSource, key: tuple[str, str, str, str], cb: Callable[[], None]) -> None:
        self.owner, self.key, self.cb = owner, key, cb

    def stop(self) -> None:
        self.owner._unwatch(self.key, self.cb)


class APIVolumeSource:
    """Reads, tokens and change watches for every node of the kubelet (see the module docstring)."""

    def __init__(self, clientset_for: Callable[[str], Any], clock: Clock = REAL_CLOCK) -> None:
        self.clientset_for = clientset_for
        self.clock = clock
        self._watches: dict[tuple[str, str, str, str], _ObjectWatch] = {}
        # (kind, namespace, name) -> the resourceVersion a volume was last written from: a watch
        # whose first list finds another one (changed between the read and the watch) fires.
        self.read_versions: dict[tuple[str, str, str], str] = {}

    def for_node(self, node: str) -> NodeVolumeSource:
        return NodeVolumeSource(self.clientset_for(node), self.clock, self.read_versions)

    def watch(self, node: str, kind: str, namespace: str, name: str, on_change: Callable[[], None]) -> WatchHandle:
        """Call on_change whenever the object changes (not for what it was when first seen)."""
        key = (node, kind, namespace, name)
        w = self._watches.get(key)
        if w is None:
            rc = getattr(self.clientset_for(node).core_v1(), PLURALS[kind])(namespace)
            informer = SharedIndexInformer(_NamedListerWatcher(rc, name), name=f"{PLURALS[kind]}/{namespace}/{name}",
                                           clock=self.clock)
            w = self._watches[key] = _ObjectWatch(informer)
            informer.add_event_handler(_Changes(w, self.read_versions.get((kind, namespace, name))))
            w.task = asyncio.ensure_future(informer.run())
        w.callbacks.append(on_change)
        return WatchHandle(self, key, on_change)

    def _unwatch(self, key: tuple[str, str, str, str], cb: Callable[[], None]) -> None:
        w = self._watches.get(key)
        if w is None:
            return
        with contextlib.suppress(ValueError):
            w.callbacks.remove(cb)
        if not w.callbacks:
            del self._watches[key]
            if not any(k[1:] == key[1:] for k in self._watches):
                self.read_versions.pop(key[1:], None)
            if w.task is not None:
                w.task.cancel()

    def close(self) -> None:
        for w in self._watches.values():
            if w.task is not None:
                w.task.cancel()
        self._watches.clear()


class _Changes:
    """An object watch's event handler: every change but the first sight (the volume was set
    up from what the API had then) and resyncs."""

    def __init__(self, w: _ObjectWatch, read_version: str | None) -> None:
        self.w, self.read_version = w, read_version

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if not is_in_initial_list or obj.metadata.resource_version != self.read_version:
            self.fire()
        self.stop_if_immutable(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if old.metadata.resource_version != new.metadata.resource_version:
            self.fire()
        self.stop_if_immutable(new)

    def stop_if_immutable(self, obj: Any) -> None:
        """An immutable object cannot change again (only be deleted and re-created, which a
        pod using it does not follow either): its watch ends. Upstream: the watch-based
        manager stops the reflector of an immutable object."""
        if getattr(obj, "immutable", None) and self.w.task is not None:
            self.w.task.cancel()
            self.w.task = None

    def on_delete(self, obj: Any) -> None:
        self.fire()

    def fire(self) -> None:
        for cb in list(self.w.callbacks):
            try:
                cb()
            except Exception:
                log.exception("volume change callback failed")


class NodeVolumeSource:
    """projection.VolumeSource (and claims) through one node's clientset."""

    def __init__(self, clientset: Any, clock: Clock = REAL_CLOCK,
                 read_versions: dict[tuple[str, str, str], str] | None = None) -> None:
        self.cs, self.clock = clientset, clock
        self.read_versions = read_versions if read_versions is not None else {}

    async def configmap(self, namespace: str, name: str) -> core_v1.ConfigMap | None:
        cm: core_v1.ConfigMap | None = await self._get("ConfigMap", namespace, name)
        return cm

    async def secret(self, namespace: str, name: str) -> core_v1.Secret | None:
        sec: core_v1.Secret | None = await self._get("Secret", namespace, name)
        return sec

    async def _get(self, kind: str, namespace: str, name: str) -> Any:
        try:
            obj = await getattr(self.cs.core_v1(), PLURALS[kind])(namespace).get(name)
        except errors.NotFound:
            self.read_versions[(kind, namespace, name)] = ""
            return None
        self.read_versions[(kind, namespace, name)] = obj.metadata.resource_version or ""
        return obj

    async def claim_path(self, namespace: str, claim: str) -> str:
        """The directory behind a bound claim's volume (hostPath or local). Raises
        VolumeError-worthy LookupError with upstream's message otherwise."""
        try:
            pvc = await self.cs.core_v1().persistentvolumeclaims(namespace).get(claim)
        except errors.NotFound as err:
            raise LookupError(f"error processing PVC {namespace}/{claim}: failed to fetch PVC from API server: "
                              f"{err}") from None
        vname = pvc.spec.volume_name if pvc.spec is not None else None
        if not vname or (pvc.status is not None and pvc.status.phase != "Bound"):
            raise LookupError(f"error processing PVC {namespace}/{claim}: PVC is not bound")
        pv = await self.cs.core_v1().persistentvolumes().get(vname)
        spec = pv.spec
        if spec is not None and spec.host_path is not None:
            return spec.host_path.path or ""
        if spec is not None and spec.local is not None:
            return spec.local.path or ""
        raise LookupError(f"volume {vname} of claim {namespace}/{claim} is neither hostPath nor local: "
                          "the process runtime mounts only directories")

    async def token(self, pod: core_v1.Pod, audience: str, expiration_seconds: int) -> Token:
        """A TokenRequest for the pod's service account, bound to the pod. Upstream: the
        projected volume's getServiceAccountToken through the token manager."""
        m = pod.metadata
        sa = (pod.spec.service_account_name if pod.spec else None) or "default"
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"audiences": [audience] if audience else None, "expirationSeconds": expiration_seconds,
                         "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": m.name, "uid": m.uid}}}
        if not audience:
            del body["spec"]["audiences"]            # type: ignore[attr-defined]
        rc = self.cs.core_v1().serviceaccounts(m.namespace)
        resp = await rc.transport.request("POST", f"{rc.path}/{sa}/token", None, json.dumps(body).encode())
        raise_for_status(resp)
        tr = json.loads(resp.body)
        status, spec = tr.get("status") or {}, tr.get("spec") or {}
        exp = dt.datetime.fromisoformat(status["expirationTimestamp"].replace("Z", "+00:00")).timestamp()
        return Token(status["token"], exp, int(spec.get("expirationSeconds") or expiration_seconds))


class LookupVolumeSource:
    """projection.VolumeSource over the process runtime's plain look-up (string data only; no
    tokens): for a runtime used without a kubelet, e.g. in tests."""

    def __init__(self, lookup: Callable[[str, str, str], Any]) -> None:
        self.lookup = lookup

    async def configmap(self, namespace: str, name: str) -> core_v1.ConfigMap | None:
        data = await self.lookup("ConfigMap", namespace, name)
        return None if data is None else core_v1.ConfigMap(data=dict(data))

    async def secret(self, namespace: str, name: str) -> core_v1.Secret | None:
        data = await self.lookup("Secret", namespace, name)
        if data is None:
            return None
        return core_v1.Secret(data={k: base64.b64encode(v.encode()).decode() for k, v in data.items()})

    async def token(self, pod: core_v1.Pod, audience: str, expiration_seconds: int) -> Token:
        raise VolumeError("no API server to request a service account token from")
