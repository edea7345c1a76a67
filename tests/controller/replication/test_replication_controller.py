"""The ReplicationController manager: the ReplicaSet controller over RCs through the conversion
adapters (upstream's replication_controller_test.go cases on the real API in-process)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import ObjectName, core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.replication import ReplicationManager
from kubeplane.controller.replication.conversion import convert_rc_to_rs, convert_rs_to_rc
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

KEY = ObjectName("default", "foobar")
LABELS = {"foo": "bar"}


def rc_dict(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "foobar", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": LABELS,
                     "template": {"metadata": {"labels": LABELS},
                                  "spec": {"containers": [{"name": "c", "image": "foo/bar"}]}}}}


@pytest.fixture
async def env() -> Any:
    clock = FakeClock(start=1_700_000_000.0)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder(include_object=True)
    rm = ReplicationManager(factory.core_v1().pods(), factory.core_v1().replicationcontrollers(), fake, clock=clock,
                            recorder=recorder)
    return fake, factory, rm, recorder


async def add_rc(fake: FakeClientset, factory: SharedInformerFactory, replicas: int) -> core_v1.ReplicationController:
    [rc] = await fake.seed(rc_dict(replicas))
    factory.core_v1().replicationcontrollers().informer().get_indexer().add(rc)
    return rc


def test_conversion_round_trip() -> None:
    """convertRCtoRS / convertRStoRC: the map selector becomes matchLabels and back."""
    rc = types.from_dict(rc_dict(3), core_v1.ReplicationController)
    rs = convert_rc_to_rs(rc)
    assert rs.spec.selector.match_labels == LABELS and rs.spec.replicas == 3
    assert (rs.api_version, rs.kind) == ("v1", "ReplicationController")
    assert types.to_dict(convert_rs_to_rc(rs)) == types.to_dict(rc)


async def test_sync_creates_pods_owned_by_the_rc(env: Any) -> None:
    """TestSyncReplicationControllerCreates: pods with an RC controller ref, events on the RC,
    and the status written to the RC."""
    fake, factory, rm, recorder = env
    rc = await add_rc(fake, factory, 2)
    await rm.sync_replica_set(KEY)
    assert fake.verbs() == [("create", "pods", "")] * 2 + [("update", "replicationcontrollers", "status")]
    pods = (await fake.core_v1().pods("default").list()).items
    assert len(pods) == 2
    for p in pods:
        [ref] = p.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller) == ("v1", "ReplicationController",
                                                                                   "foobar", rc.metadata.uid, True)
    assert all("involvedObject{kind=ReplicationController,apiVersion=v1}" in e for e in recorder.events)
    stored = await fake.core_v1().replicationcontrollers("default").get("foobar")
    assert stored.status.observed_generation == 1 and stored.spec.selector == LABELS


async def test_sync_deletes_extra_pods(env: Any) -> None:
    """TestSyncReplicationControllerDeletes: scaled down, the RC's surplus pods go."""
    fake, factory, rm, _ = env
    await add_rc(fake, factory, 3)
    await rm.sync_replica_set(KEY)
    for p in (await fake.core_v1().pods("default").list()).items:
        factory.core_v1().pods().informer().get_indexer().add(p)
        rm.add_pod(p)
    rc = await fake.core_v1().replicationcontrollers("default").get("foobar")
    d = types.to_dict(rc)
    d["spec"]["replicas"] = 1
    rc = await fake.core_v1().replicationcontrollers("default").update(types.from_dict(d, core_v1.ReplicationController))
    factory.core_v1().replicationcontrollers().informer().get_indexer().update(rc)
    fake.clear_actions()
    await rm.sync_replica_set(KEY)
    assert fake.verbs() == [("delete", "pods", "")] * 2 + [("update", "replicationcontrollers", "status")]


async def test_pod_events_resolve_to_the_rc(env: Any) -> None:
    """The pod handlers find their RC by controller ref (kind ReplicationController)."""
    fake, factory, rm, _ = env
    await add_rc(fake, factory, 1)
    await rm.sync_replica_set(KEY)
    [p] = (await fake.core_v1().pods("default").list()).items
    rm.queue.forget(KEY)
    rm.add_pod(p)
    assert rm.queue.len() == 1
    assert rm.expectations.satisfied_expectations("default/foobar")
