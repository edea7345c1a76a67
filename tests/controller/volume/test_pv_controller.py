"""The PersistentVolume binder and the simulated local-path provisioner.

Facts from upstream's pkg/controller/volume/persistentvolume/binder_test.go (syncClaim and
syncVolume tables: 1-x unbound claims, 2-x pre-bound claims, 3-x bound claims, 4-x volumes)
and provision_test.go's external provisioning, run against the real API server with the
listers caught up before each sync.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import pytest

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.volume.localpath import PROVISIONER_NAME, LocalPathProvisioner, default_storage_class
from kubeplane.controller.volume.persistentvolume import PersistentVolumeController, PersistentVolumeControllerOptions
from kubeplane.api.volume import (
    ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED, ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER, find_matching_volume,
)
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock


def volume(name: str, size: str = "10Gi", *, modes: list[str] | None = None, claim: Any = None,
           phase: str | None = None, policy: str = "Retain", cls: str = "", annotations: dict[str, str] | None = None,
           labels: dict[str, str] | None = None) -> dict[str, Any]:
    """Upstream: newVolume"""
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": modes or ["ReadWriteOnce"],
                            "persistentVolumeReclaimPolicy": policy, "hostPath": {"path": f"/tmp/{name}"}}
    if cls:
        spec["storageClassName"] = cls
    if claim is not None:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default",
                            "name": claim.metadata.name, "uid": claim.metadata.uid}
    d: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolume",
                         "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
                         "spec": spec}
    if phase:
        d["status"] = {"phase": phase}
    return d


def claim(name: str, size: str = "1Gi", *, volume_name: str = "", cls: str | None = "",
          annotations: dict[str, str] | None = None, selector: dict[str, str] | None = None) -> dict[str, Any]:
    """Upstream: newClaim (storageClassName "" unless given: no default class applies)."""
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    if volume_name:
        spec["volumeName"] = volume_name
    if selector:
        spec["selector"] = {"matchLabels": selector}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}}, "spec": spec}


class Binder:
    def __init__(self, fake: FakeClientset) -> None:
        self.fake = fake
        self.factory = SharedInformerFactory(fake)
        self.recorder = FakeRecorder()
        f = self.factory
        self.ctrl = PersistentVolumeController(
            f.core_v1().persistentvolumes(), f.core_v1().persistentvolumeclaims(), f.storage_v1().storageclasses(),
            f.core_v1().pods(), fake, clock=FakeClock(start=1_700_000_000.0), recorder=self.recorder,
            options=PersistentVolumeControllerOptions(external_provisioners=frozenset({PROVISIONER_NAME})))
        self.provisioner = LocalPathProvisioner(f.core_v1().persistentvolumeclaims(), f.core_v1().persistentvolumes(),
                                                f.storage_v1().storageclasses(), fake, recorder=self.recorder)

    async def seed(self, *objs: dict[str, Any]) -> list[Any]:
        out = await self.fake.seed(*objs)
        await self.settle()
        return out

    async def settle(self) -> None:
        f, core = self.factory, self.fake.core_v1()
        self.fake.recorder.recording = False
        try:
            pairs = [(f.core_v1().persistentvolumes(), await core.persistentvolumes().list()),
                     (f.core_v1().persistentvolumeclaims(), await core.persistentvolumeclaims("default").list()),
                     (f.core_v1().pods(), await core.pods("default").list()),
                     (f.storage_v1().storageclasses(), await self.fake.storage_v1().storageclasses().list())]
        finally:
            self.fake.recorder.recording = True
        for inf, lst in pairs:
            want = {(o.metadata.name, o.metadata.resource_version) for o in lst.items}

            async def caught_up(inf: Any = inf, want: set[tuple[str, str]] = want) -> None:
                while {(o.metadata.name, o.metadata.resource_version) for o in inf.lister().list()} != want:
                    await asyncio.sleep(0)
            await asyncio.wait_for(caught_up(), 10)

    async def sync_claim(self, name: str) -> None:
        await self.ctrl.sync_claim_key(f"default/{name}")
        await self.settle()

    async def sync_volume(self, name: str) -> None:
        await self.ctrl.sync_volume_key(name)
        await self.settle()

    async def get_claim(self, name: str) -> core_v1.PersistentVolumeClaim:
        return self.ctrl.claim_lister.persistentvolumeclaims("default").get(name)

    async def get_volume(self, name: str) -> core_v1.PersistentVolume | None:
        try:
            return self.ctrl.volume_lister.get(name)
        except Exception:
            return None


@pytest.fixture
async def b() -> AsyncIterator[Binder]:
    fake = await FakeClientset.new()
    binder = Binder(fake)
    binder.factory.start()
    await binder.factory.wait_for_cache_sync()
    try:
        yield binder
    finally:
        await binder.factory.shutdown()
        await fake.close()


def _phase(obj: Any) -> str | None:
    return obj.status.phase if obj.status else None


async def test_1_1_unbound_claim_binds_to_matching_volume(b: Binder) -> None:
    await b.seed(volume("volume1-1", phase="Available"))
    [c] = await b.seed(claim("claim1-1"))
    await b.sync_claim("claim1-1")
    v = await b.get_volume("volume1-1")
    assert v.spec.claim_ref.uid == c.metadata.uid and v.metadata.annotations[ANN_BOUND_BY_CONTROLLER] == "yes"
    assert _phase(v) == "Bound"
    got = await b.get_claim("claim1-1")
    assert got.spec.volume_name == "volume1-1"
    assert got.metadata.annotations[ANN_BIND_COMPLETED] == "yes"
    assert got.metadata.annotations[ANN_BOUND_BY_CONTROLLER] == "yes"
    assert (_phase(got), got.status.capacity, got.status.access_modes) == \
        ("Bound", {"storage": "10Gi"}, ["ReadWriteOnce"])


async def test_1_2_no_match_stays_pending_with_event(b: Binder) -> None:
    await b.seed(volume("volume1-2", "1Gi", phase="Available"))
    await b.seed(claim("claim1-2", "10Gi"))
    await b.sync_claim("claim1-2")
    assert _phase(await b.get_claim("claim1-2")) == "Pending"
    assert b.recorder.events == ["Normal FailedBinding no persistent volumes available for this claim and no "
                                 "storage class is set"]


async def test_1_3_smallest_fitting_volume_wins(b: Binder) -> None:
    await b.seed(volume("big", "10Gi", phase="Available"), volume("small", "2Gi", phase="Available"),
                 volume("tiny", "500Mi", phase="Available"), volume("rox", "1Gi", modes=["ReadOnlyMany"],
                                                                    phase="Available"))
    await b.seed(claim("claim1-3", "1Gi"))
    await b.sync_claim("claim1-3")
    assert (await b.get_claim("claim1-3")).spec.volume_name == "small"


async def test_1_4_selector_and_class_must_match(b: Binder) -> None:
    await b.seed(volume("gold", phase="Available", cls="gold"), volume("plain", phase="Available"),
                 volume("labelled", phase="Available", labels={"tier": "fast"}))
    await b.seed(claim("c", selector={"tier": "fast"}))
    await b.sync_claim("c")
    assert (await b.get_claim("c")).spec.volume_name == "labelled"


async def test_2_1_prebound_claim_binds_free_volume(b: Binder) -> None:
    await b.seed(volume("volume2-1", phase="Available"))
    await b.seed(claim("claim2-1", volume_name="volume2-1"))
    await b.sync_claim("claim2-1")
    got = await b.get_claim("claim2-1")
    assert _phase(got) == "Bound" and ANN_BOUND_BY_CONTROLLER not in got.metadata.annotations   # the user's link
    assert _phase(await b.get_volume("volume2-1")) == "Bound"


async def test_2_2_prebound_to_missing_volume_waits(b: Binder) -> None:
    await b.seed(claim("claim2-2", volume_name="nonexisting"))
    await b.sync_claim("claim2-2")
    assert _phase(await b.get_claim("claim2-2")) == "Pending"


async def test_2_3_prebound_to_too_small_volume_is_a_mismatch(b: Binder) -> None:
    await b.seed(volume("volume2-3", "1Mi", phase="Available"))
    await b.seed(claim("claim2-3", volume_name="volume2-3"))
    await b.sync_claim("claim2-3")
    assert _phase(await b.get_claim("claim2-3")) == "Pending"
    assert b.recorder.events == ["Warning VolumeMismatch requested PV is too small"]


async def test_2_4_prebound_to_volume_of_another_claim_waits(b: Binder) -> None:
    [other] = await b.seed(claim("other"))
    await b.seed(volume("volume2-4", phase="Bound", claim=other))
    await b.seed(claim("claim2-4", volume_name="volume2-4"))
    await b.sync_claim("claim2-4")
    assert _phase(await b.get_claim("claim2-4")) == "Pending"
    assert (await b.get_volume("volume2-4")).spec.claim_ref.name == "other"


async def test_3_1_bound_claim_whose_volume_is_gone_is_lost(b: Binder) -> None:
    await b.seed(claim("claim3-1", volume_name="gone", annotations={ANN_BIND_COMPLETED: "yes"}))
    await b.sync_claim("claim3-1")
    assert _phase(await b.get_claim("claim3-1")) == "Lost"
    assert b.recorder.events == ["Warning ClaimLost Bound claim has lost its PersistentVolume. Data on the volume "
                                 "is lost!"]
    await b.sync_claim("claim3-1")
    assert len(b.recorder.events) == 1                 # the event comes with the phase change only


async def test_3_2_bound_claim_without_volume_name_is_lost(b: Binder) -> None:
    await b.seed(claim("claim3-2", annotations={ANN_BIND_COMPLETED: "yes"}))
    await b.sync_claim("claim3-2")
    assert _phase(await b.get_claim("claim3-2")) == "Lost"
    assert b.recorder.events == ["Warning ClaimLost Bound claim has lost reference to PersistentVolume. Data on "
                                 "the volume is lost!"]


async def test_3_3_misbound_claim_is_lost(b: Binder) -> None:
    [other] = await b.seed(claim("other"))
    await b.seed(volume("volume3-3", phase="Bound", claim=other))
    await b.seed(claim("claim3-3", volume_name="volume3-3", annotations={ANN_BIND_COMPLETED: "yes"}))
    await b.sync_claim("claim3-3")
    assert _phase(await b.get_claim("claim3-3")) == "Lost"
    assert b.recorder.events == ["Warning ClaimMisbound Two claims are bound to the same volume, this one is bound "
                                 "incorrectly"]


async def test_3_4_half_bound_claim_is_completed(b: Binder) -> None:
    await b.seed(volume("volume3-4", phase="Available"))
    await b.seed(claim("claim3-4", volume_name="volume3-4", annotations={ANN_BIND_COMPLETED: "yes"}))
    await b.sync_claim("claim3-4")
    assert (await b.get_volume("volume3-4")).spec.claim_ref.name == "claim3-4"
    assert _phase(await b.get_claim("claim3-4")) == "Bound"


async def test_4_1_volume_without_claim_is_available(b: Binder) -> None:
    await b.seed(volume("volume4-1", phase="Pending"))
    await b.sync_volume("volume4-1")
    assert _phase(await b.get_volume("volume4-1")) == "Available"


async def test_4_2_volume_of_deleted_claim_is_released_and_retained(b: Binder) -> None:
    [c] = await b.seed(claim("claim4-2"))
    await b.seed(volume("volume4-2", phase="Bound", claim=c))
    await b.fake.core_v1().persistentvolumeclaims("default").delete("claim4-2")
    await b.settle()
    await b.sync_volume("volume4-2")
    assert _phase(await b.get_volume("volume4-2")) == "Released"


async def test_4_3_released_volume_with_delete_policy_is_deleted(b: Binder) -> None:
    [c] = await b.seed(claim("claim4-3"))
    await b.seed(volume("volume4-3", phase="Bound", claim=c, policy="Delete"))
    await b.fake.core_v1().persistentvolumeclaims("default").delete("claim4-3")
    await b.settle()
    await b.sync_volume("volume4-3")
    assert await b.get_volume("volume4-3") is None


async def test_4_4_externally_provisioned_volume_is_left_to_its_provisioner(b: Binder) -> None:
    [c] = await b.seed(claim("claim4-4"))
    await b.seed(volume("volume4-4", phase="Bound", claim=c, policy="Delete",
                        annotations={ANN_DYNAMICALLY_PROVISIONED: PROVISIONER_NAME}))
    await b.fake.core_v1().persistentvolumeclaims("default").delete("claim4-4")
    await b.settle()
    await b.sync_volume("volume4-4")
    assert _phase(await b.get_volume("volume4-4")) == "Released"
    await b.provisioner.sync_volume("volume4-4")            # the provisioner's loop deletes it
    await b.settle()
    assert await b.get_volume("volume4-4") is None


async def test_4_5_volume_bound_to_claim_is_bound(b: Binder) -> None:
    [c] = await b.seed(claim("claim4-5", volume_name="volume4-5", annotations={ANN_BIND_COMPLETED: "yes"}))
    await b.seed(volume("volume4-5", phase="Available", claim=c))
    await b.sync_volume("volume4-5")
    assert _phase(await b.get_volume("volume4-5")) == "Bound"


async def test_wait_for_first_consumer_then_provisioning(b: Binder) -> None:
    await b.seed(default_storage_class())
    await b.seed(claim("www-web-0", cls="standard"))
    await b.sync_claim("www-web-0")
    assert _phase(await b.get_claim("www-web-0")) == "Pending"
    assert b.recorder.events == ["Normal WaitForFirstConsumer waiting for first consumer to be created before binding"]
    await b.seed({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"},
                  "spec": {"containers": [{"name": "c", "image": "x"}],
                           "volumes": [{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-0"}}]}})
    await b.sync_claim("www-web-0")
    assert b.recorder.events[-1] == "Normal WaitForPodScheduled waiting for pod web-0 to be scheduled"
    # The scheduler picked node-1: the binder hands the claim to the class's provisioner.
    await b.fake.core_v1().persistentvolumeclaims("default").patch(
        "www-web-0", {"metadata": {"annotations": {ANN_SELECTED_NODE: "node-1"}}}, "merge")
    await b.settle()
    await b.sync_claim("www-web-0")
    got = await b.get_claim("www-web-0")
    assert got.metadata.annotations[ANN_STORAGE_PROVISIONER] == PROVISIONER_NAME
    assert got.metadata.annotations["volume.beta.kubernetes.io/storage-provisioner"] == PROVISIONER_NAME
    assert b.recorder.events[-1] == (
        "Normal ExternalProvisioning Waiting for a volume to be created either by the external provisioner "
        "'rancher.io/local-path' or manually by the system administrator. If volume creation is delayed, please "
        "verify that the provisioner is running and correctly registered.")
    await b.provisioner.sync_claim("default/www-web-0")
    await b.settle()
    pv = await b.get_volume(f"pvc-{got.metadata.uid}")
    assert pv is not None and pv.spec.claim_ref.uid == got.metadata.uid
    assert pv.spec.host_path.path == f"/var/local-path-provisioner/pvc-{got.metadata.uid}_default_www-web-0"
    assert pv.spec.node_affinity.required.node_selector_terms[0].match_expressions[0].values == ["node-1"]
    assert (pv.spec.persistent_volume_reclaim_policy, pv.spec.storage_class_name, pv.spec.capacity) == \
        ("Delete", "standard", {"storage": "1Gi"})
    assert b.recorder.events[-2:] == [
        'Normal Provisioning External provisioner is provisioning volume for claim "default/www-web-0"',
        f"Normal ProvisioningSucceeded Successfully provisioned volume pvc-{got.metadata.uid}"]
    await b.sync_volume(pv.metadata.name)
    await b.sync_claim("www-web-0")
    got = await b.get_claim("www-web-0")
    assert (_phase(got), got.spec.volume_name) == ("Bound", pv.metadata.name)
    assert _phase(await b.get_volume(pv.metadata.name)) == "Bound"


async def test_default_storage_class_admission_names_standard(b: Binder) -> None:
    await b.seed(default_storage_class())
    [c] = await b.seed(claim("defaulted", cls=None))
    assert c.spec.storage_class_name == "standard"


def test_find_matching_volume_delay_binding_without_node_takes_only_prebound() -> None:
    c = types.from_dict(claim("c"), core_v1.PersistentVolumeClaim)
    c.metadata.uid = "uid-c"
    free = types.from_dict(volume("free", phase="Available"), core_v1.PersistentVolume)
    pre = types.from_dict(volume("pre", phase="Available"), core_v1.PersistentVolume)
    pre.spec.claim_ref = core_v1.ObjectReference(namespace="default", name="c", uid="uid-c")
    assert find_matching_volume(c, [free], None, frozenset(), True) is None
    assert find_matching_volume(c, [free, pre], None, frozenset(), True) is pre
    assert find_matching_volume(c, [free], None, frozenset(), False) is free



async def test_immediate_class_is_provisioned_at_once_and_local_path_refuses_without_a_node(b: Binder) -> None:
    await b.seed({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "now"},
                  "provisioner": PROVISIONER_NAME, "volumeBindingMode": "Immediate"})
    await b.seed(claim("c", cls="now"))
    await b.sync_claim("c")
    assert (await b.get_claim("c")).metadata.annotations[ANN_STORAGE_PROVISIONER] == PROVISIONER_NAME
    await b.provisioner.sync_claim("default/c")
    assert b.recorder.events[-1] == ('Warning ProvisioningFailed failed to provision volume with StorageClass "now": '
                                     "configuration error, no node was specified")
    assert b.ctrl.volume_lister.list() == []


async def test_deleting_a_claim_syncs_its_volume(b: Binder) -> None:
    [c] = await b.seed(claim("c", volume_name="v", annotations={ANN_BIND_COMPLETED: "yes"}))
    b.ctrl.delete_claim(c)
    assert b.ctrl.volume_queue.len() == 1 and b.ctrl.claim_queue.len() == 1


# --- metrics (upstream: metrics_test.go, and binder_test.go's 12-x operation timestamps) ------------

def _metric(name: str, **labels: str) -> float:
    from prometheus_client import REGISTRY
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_provision_then_bind_is_one_timed_operation_and_the_counts_follow(b: Binder) -> None:
    provisioned = _metric("volume_operation_total_seconds_count", plugin_name=PROVISIONER_NAME,
                          operation_name="provision")
    await b.seed(default_storage_class())
    await b.seed(claim("data", cls="standard", annotations={ANN_SELECTED_NODE: "node-1"}))
    await b.sync_claim("data")                                 # handed to the provisioner: the clock starts
    assert b.ctrl.operation_timestamps.has("default/data")
    assert _metric("pv_collector_unbound_pvc_count", namespace="default", storage_class="standard",
                   volume_attributes_class="") == 1
    await b.provisioner.sync_claim("default/data")
    await b.settle()
    await b.sync_claim("data")                                 # bound: the clock stops
    assert _phase(await b.get_claim("data")) == "Bound"
    assert not b.ctrl.operation_timestamps.has("default/data")
    assert _metric("volume_operation_total_seconds_count", plugin_name=PROVISIONER_NAME,
                   operation_name="provision") == provisioned + 1
    pv = (await b.get_claim("data")).spec.volume_name
    await b.sync_volume(pv)
    assert _metric("pv_collector_bound_pvc_count", namespace="default", storage_class="standard",
                   volume_attributes_class="") == 1
    assert _metric("pv_collector_unbound_pvc_count", namespace="default", storage_class="standard",
                   volume_attributes_class="") == 0
    assert _metric("pv_collector_bound_pv_count", storage_class="standard") == 1
    assert _metric("pv_collector_total_pv_count", plugin_name="kubernetes.io/host-path", volume_mode="Filesystem") == 1


async def test_a_released_volume_deleted_by_its_provisioner_is_a_timed_delete(b: Binder) -> None:
    deleted = _metric("volume_operation_total_seconds_count", plugin_name=PROVISIONER_NAME, operation_name="delete")
    [c] = await b.seed(claim("gone"))
    await b.seed(volume("volume-gone", phase="Bound", claim=c, policy="Delete",
                        annotations={ANN_DYNAMICALLY_PROVISIONED: PROVISIONER_NAME}))
    await b.fake.core_v1().persistentvolumeclaims("default").delete("gone")
    await b.settle()
    await b.sync_volume("volume-gone")
    assert b.ctrl.operation_timestamps.has("volume-gone")
    await b.provisioner.sync_volume("volume-gone")
    await b.settle()
    assert _metric("volume_operation_total_seconds_count", plugin_name=PROVISIONER_NAME,
                   operation_name="delete") == deleted + 1
    assert not b.ctrl.operation_timestamps.has("volume-gone")


def test_an_operation_error_is_counted_and_its_start_kept() -> None:
    """RecordMetric: an error counts in volume_operation_total_errors; the start stays until a
    success; an unknown plugin is "N/A"."""
    from kubeplane.controller.volume.persistentvolume.metrics import OperationStartTimeCache
    clock = FakeClock(start=100.0)
    cache = OperationStartTimeCache(clock)
    errors_before = _metric("volume_operation_total_errors", plugin_name="N/A", operation_name="provision")
    seconds_before = _metric("volume_operation_total_seconds_sum", plugin_name="N/A", operation_name="provision")
    cache.add_if_not_exist("ns/c", "", "provision")
    clock.step(3)
    cache.add_if_not_exist("ns/c", "", "provision")            # the first start is kept
    cache.record("ns/c", RuntimeError("conflict"))
    assert _metric("volume_operation_total_errors", plugin_name="N/A", operation_name="provision") == errors_before + 1
    clock.step(2)
    cache.record("ns/c", None)
    assert _metric("volume_operation_total_seconds_sum", plugin_name="N/A",
                   operation_name="provision") == seconds_before + 5
    assert not cache.has("ns/c")
