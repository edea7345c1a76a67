"""VolumeBinding: claims decide where a pod may go, and PreBind binds WaitForFirstConsumer claims.

Facts from upstream's pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go
(PreFilter: "pod has no volumes" skips, "PVC does not exist", "unbound immediate PVC",
Filter: "bound volume's node affinity", "WFFC with a provisioner", "no matching PV and no
provisioner") and binder_test.go's PreBind annotation.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.scheduler.framework.interface import Code, CycleState
from kubeplane.scheduler.framework.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT, ERR_REASON_NODE_CONFLICT, ERR_UNBOUND_IMMEDIATE, VolumeBinding,
)
from kubeplane.testing.fake import FakeClientset

from ...helpers import make_node, make_pod, node_info


class Handle:
    def __init__(self, factory: SharedInformerFactory, fake: FakeClientset) -> None:
        self.informer_factory = factory
        self.fake = fake

    def client_set(self) -> FakeClientset:
        return self.fake


def _add(factory: SharedInformerFactory, obj: dict[str, Any]) -> None:
    kind = obj["kind"]
    if kind == "PersistentVolumeClaim":
        inf, typ = factory.core_v1().persistentvolumeclaims(), core_v1.PersistentVolumeClaim
    elif kind == "PersistentVolume":
        inf, typ = factory.core_v1().persistentvolumes(), core_v1.PersistentVolume
    else:
        from kubeplane.api.types import storage_v1
        inf, typ = factory.storage_v1().storageclasses(), storage_v1.StorageClass
    inf.informer().get_indexer().add(types.from_dict(obj, typ))


def claim(name: str, *, cls: str = "wffc", volume: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                            "storageClassName": cls}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}


def pv(name: str, *, node: str | None = None, cls: str = "wffc", claim_name: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                            "storageClassName": cls, "hostPath": {"path": "/x"}}
    if node:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    if claim_name:
        spec["claimRef"] = {"namespace": "default", "name": claim_name, "uid": f"uid-{claim_name}"}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec,
            "status": {"phase": "Bound" if claim_name else "Available"}}


def sc(name: str, mode: str, provisioner: str = "kubernetes.io/no-provisioner") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode}


def pod_with(*claims: str) -> Any:
    return make_pod("p", spec={"volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]})


def host(name: str) -> Any:
    return node_info(make_node(name, labels={"kubernetes.io/hostname": name}))


async def _plugin(*objs: dict[str, Any]) -> tuple[VolumeBinding, FakeClientset]:
    fake = await FakeClientset.new()
    factory = SharedInformerFactory(fake)
    for o in objs:
        _add(factory, o)
    return VolumeBinding(Handle(factory, fake)), fake


async def test_pod_without_claims_is_skipped() -> None:
    pl, _ = await _plugin()
    _, status = pl.pre_filter(CycleState(), make_pod("p"), [])
    assert status is not None and status.code == Code.SKIP


async def test_missing_claim_is_unresolvable() -> None:
    pl, _ = await _plugin()
    _, status = pl.pre_filter(CycleState(), pod_with("data"), [])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ['persistentvolumeclaim "data" not found']


async def test_unbound_immediate_claim_is_unresolvable() -> None:
    pl, _ = await _plugin(sc("immediate", "Immediate"), claim("data", cls="immediate"))
    _, status = pl.pre_filter(CycleState(), pod_with("data"), [])
    assert status.reasons == [ERR_UNBOUND_IMMEDIATE]


async def test_bound_claim_follows_its_volumes_node_affinity() -> None:
    pl, _ = await _plugin(sc("wffc", "WaitForFirstConsumer"), claim("data", volume="pv1"),
                          pv("pv1", node="node-a", claim_name="data"))
    state = CycleState()
    assert pl.pre_filter(state, pod_with("data"), [])[1] is None
    assert pl.filter(state, pod_with("data"), host("node-a")) is None
    assert pl.filter(state, pod_with("data"), host("node-b")).reasons == [ERR_REASON_NODE_CONFLICT]


async def test_wffc_claim_needs_a_local_volume_or_a_provisioner() -> None:
    pl, _ = await _plugin(sc("wffc", "WaitForFirstConsumer"), claim("data"), pv("local-a", node="node-a"))
    state = CycleState()
    assert pl.pre_filter(state, pod_with("data"), [])[1] is None
    assert pl.filter(state, pod_with("data"), host("node-a")) is None
    assert pl.filter(state, pod_with("data"), host("node-b")).reasons == [ERR_REASON_BIND_CONFLICT]
    pl2, _ = await _plugin(sc("wffc", "WaitForFirstConsumer", "rancher.io/local-path"), claim("data"))
    state = CycleState()
    assert pl2.pre_filter(state, pod_with("data"), [])[1] is None
    assert pl2.filter(state, pod_with("data"), host("node-b")) is None


async def test_pre_bind_annotates_selected_node_for_provisioning() -> None:
    fake = await FakeClientset.new()
    [stored] = await fake.seed(claim("data"))
    factory = SharedInformerFactory(fake)
    _add(factory, sc("wffc", "WaitForFirstConsumer", "rancher.io/local-path"))
    factory.core_v1().persistentvolumeclaims().informer().get_indexer().add(stored)
    pl = VolumeBinding(Handle(factory, fake))
    state = CycleState()
    pod = pod_with("data")
    assert pl.pre_filter(state, pod, [])[1] is None and pl.filter(state, pod, host("node-b")) is None

    # The binder finishes the binding; the lister sees it (here: by hand) and PreBind returns.
    bound = types.from_dict(types.to_dict(stored), core_v1.PersistentVolumeClaim)
    bound.spec.volume_name = "pvc-x"
    bound.metadata.annotations = {"pv.kubernetes.io/bind-completed": "yes"}
    factory.core_v1().persistentvolumeclaims().informer().get_indexer().update(bound)
    assert await pl.pre_bind(state, pod, "node-b") is None
    got = await fake.core_v1().persistentvolumeclaims("default").get("data")
    assert got.metadata.annotations["volume.kubernetes.io/selected-node"] == "node-b"


async def test_pre_bind_claims_a_static_local_volume() -> None:
    fake = await FakeClientset.new()
    [stored_claim] = await fake.seed(claim("data"))
    [stored_pv] = await fake.seed(pv("local-a", node="node-a"))
    factory = SharedInformerFactory(fake)
    _add(factory, sc("wffc", "WaitForFirstConsumer"))
    bound = types.from_dict(types.to_dict(stored_claim), core_v1.PersistentVolumeClaim)
    bound.spec.volume_name = "local-a"
    bound.metadata.annotations = {"pv.kubernetes.io/bind-completed": "yes"}
    factory.core_v1().persistentvolumeclaims().informer().get_indexer().add(stored_claim)
    factory.core_v1().persistentvolumes().informer().get_indexer().add(stored_pv)
    pl = VolumeBinding(Handle(factory, fake))
    state = CycleState()
    pod = pod_with("data")
    assert pl.pre_filter(state, pod, [])[1] is None and pl.filter(state, pod, host("node-a")) is None
    factory.core_v1().persistentvolumeclaims().informer().get_indexer().update(bound)
    assert await pl.pre_bind(state, pod, "node-a") is None
    got = await fake.core_v1().persistentvolumes().get("local-a")
    assert got.spec.claim_ref.name == "data" and got.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
