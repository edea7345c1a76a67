"""Adapters that let the ReplicaSet controller run ReplicationControllers: RCs are converted to
ReplicaSets on the way in (informer events, lister, index, client reads) and back on the way
out (status writes). The converted ReplicaSet keeps apiVersion v1 and kind
ReplicationController, so events and owner references name the RC.

Upstream: pkg/controller/replication/conversion.go (informerAdapter, conversionLister,
clientsetAdapter, convertRCtoRS, convertRStoRC).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import types
from ...api.types import apps_v1, core_v1
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import ReplicationControllerLister


def convert_rc_to_rs(rc: core_v1.ReplicationController) -> apps_v1.ReplicaSet:
    """spec.selector (a map) becomes matchLabels; the rest carries over. Upstream: convertRCtoRS"""
    d = types.to_dict(rc)
    spec = d.get("spec") or {}
    if "selector" in spec:
        spec["selector"] = {"matchLabels": spec["selector"]} if spec["selector"] is not None else None
    d["spec"] = spec
    return types.from_dict(d, apps_v1.ReplicaSet)


def convert_rs_to_rc(rs: apps_v1.ReplicaSet) -> core_v1.ReplicationController:
    """Upstream: convertRStoRC (the selector of an RC-made RS is matchLabels only)."""
    d = types.to_dict(rs)
    d["apiVersion"], d["kind"] = "v1", "ReplicationController"
    spec = d.get("spec") or {}
    if spec.get("selector") is not None:
        spec["selector"] = spec["selector"].get("matchLabels") or {}
    return types.from_dict(d, core_v1.ReplicationController)


def _convert(obj: Any) -> Any:
    if isinstance(obj, DeletedFinalStateUnknown):
        return DeletedFinalStateUnknown(obj.key, _convert(obj.obj))
    return convert_rc_to_rs(obj) if isinstance(obj, core_v1.ReplicationController) else obj


class _ConversionIndexer:
    """Upstream: the indexer behind informerAdapter (index functions see RCs, callers get RSs)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def get_indexers(self) -> Any:
        return self.inner.get_indexers()

    def add_indexers(self, indexers: Any) -> None:
        self.inner.add_indexers(indexers)

    def by_index(self, name: str, value: str) -> list[apps_v1.ReplicaSet]:
        return [convert_rc_to_rs(rc) for rc in self.inner.by_index(name, value)]


class _ConversionInformer:
    """Upstream: conversionInformer"""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def add_event_handler(self, h: ResourceEventHandlerFuncs) -> Any:
        return self.inner.add_event_handler(ResourceEventHandlerFuncs(
            (lambda obj: h.add_func(_convert(obj))) if h.add_func else None,
            (lambda old, cur: h.update_func(_convert(old), _convert(cur))) if h.update_func else None,
            (lambda obj: h.delete_func(_convert(obj))) if h.delete_func else None))

    def get_indexer(self) -> _ConversionIndexer:
        return _ConversionIndexer(self.inner.get_indexer())

    def has_synced(self) -> bool:
        return bool(self.inner.has_synced())

    async def wait_synced(self) -> None:
        await self.inner.wait_synced()


class _NamespaceLister:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def get(self, name: str) -> apps_v1.ReplicaSet:
        return convert_rc_to_rs(self.inner.get(name))

    def list(self, *args: Any) -> list[apps_v1.ReplicaSet]:
        return [convert_rc_to_rs(rc) for rc in self.inner.list(*args)]


class ConversionLister:
    """Upstream: conversionLister"""

    def __init__(self, inner: ReplicationControllerLister) -> None:
        self.inner = inner

    def replicasets(self, namespace: str) -> _NamespaceLister:
        return _NamespaceLister(self.inner.replicationcontrollers(namespace))

    def list(self, *args: Any) -> list[apps_v1.ReplicaSet]:
        return [convert_rc_to_rs(rc) for rc in self.inner.list(*args)]


class InformerAdapter:
    """An RC informer that looks like a ReplicaSet informer. Upstream: informerAdapter"""

    def __init__(self, rc_informer: ResourceInformer[ReplicationControllerLister]) -> None:
        self.rc_informer = rc_informer

    def informer(self) -> _ConversionInformer:
        return _ConversionInformer(self.rc_informer.informer())

    def lister(self) -> ConversionLister:
        return ConversionLister(self.rc_informer.lister())


class _RSClientAdapter:
    """Upstream: conversionClient — the RS calls the controller makes, on RCs."""

    def __init__(self, rcs: Any) -> None:
        self.rcs = rcs

    async def get(self, name: str) -> apps_v1.ReplicaSet:
        return convert_rc_to_rs(await self.rcs.get(name))

    async def update_status(self, rs: apps_v1.ReplicaSet) -> apps_v1.ReplicaSet:
        return convert_rc_to_rs(await self.rcs.update_status(convert_rs_to_rc(rs)))

    async def update(self, rs: apps_v1.ReplicaSet) -> apps_v1.ReplicaSet:
        return convert_rc_to_rs(await self.rcs.update(convert_rs_to_rc(rs)))


class _AppsAdapter:
    def __init__(self, client: Clientset) -> None:
        self.client = client

    def replicasets(self, namespace: str = "") -> _RSClientAdapter:
        return _RSClientAdapter(self.client.core_v1().replicationcontrollers(namespace))


class ClientsetAdapter:
    """The clientset with apps_v1().replicasets() answering from ReplicationControllers; every
    other group passes through. Upstream: clientsetAdapter"""

    def __init__(self, client: Clientset) -> None:
        self.client = client

    def apps_v1(self) -> _AppsAdapter:
        return _AppsAdapter(self.client)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)
