"""The ReplicaSet controller's claimed pods kept from sync to sync (claimed_pods.ClaimedPods).

The pod cache here changes only through the informer (its handlers see every change, as in
`up`), and after every sync the test checks the status written against upstream's full pass:
calculate_status over every pod the ReplicaSet controls whose labels match, as the cache holds
them once the controller's own writes came back.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import apps_v1, core_v1
from kubeplane.controller import controller_utils as cu
from kubeplane.controller.replicaset import replica_set_utils as rsu

from kubeplane.client.tools.cache import DeletedFinalStateUnknown

from test_replica_set import KEY, LABELS, Fixture, new_fixture, pod_dict, queued, rs_dict


class Fed:
    """A Fixture whose pod cache is fed through the informer, as a running informer feeds it."""

    def __init__(self, f: Fixture) -> None:
        self.f = f
        self.inf = f.factory.core_v1().pods().informer()
        self.inf._synced.set()            # the informer delivers every change to the handlers
        self.pods = f.fake.core_v1().pods("default")

    async def reflect(self) -> None:
        """Bring the cache to the API's pods (what the watch would deliver), through the handlers."""
        live = {p.metadata.name: p for p in (await self.pods.list()).items}
        for pod in self.inf.get_indexer().list():
            if pod.metadata.name not in live:
                self.inf.delete(pod)
        for name, pod in live.items():
            cached = self.inf.get_indexer().get_by_key(f"default/{name}")
            if cached is None or cached.metadata.resource_version != pod.metadata.resource_version:
                self.inf.update(pod)

    async def add(self, d: dict[str, Any]) -> core_v1.Pod:
        [pod] = await self.f.fake.seed({k: v for k, v in d.items() if k != "status"})
        merged = types.to_dict(pod)
        merged["status"] = {**merged.get("status", {}), **d.get("status", {})}
        await self.pods.update_status(types.from_dict(merged, core_v1.Pod))
        await self.reflect()
        return await self.pods.get(pod.metadata.name)

    async def sync(self) -> apps_v1.ReplicaSetStatus:
        """Sync, check the status written against upstream's full pass over the cache as the
        sync found it, and let our writes come back."""
        rs = self.f.factory.apps_v1().replicasets().informer().get_indexer().get_by_key(str(KEY))
        want = self.full_pass(rs)
        await self.f.rsc.sync_replica_set(KEY)
        got = (await self.f.fake.apps_v1().replicasets("default").get("foobar")).status
        assert (got.replicas, got.fully_labeled_replicas, got.ready_replicas, got.available_replicas,
                got.terminating_replicas) == (want.replicas, want.fully_labeled_replicas, want.ready_replicas,
                                              want.available_replicas, want.terminating_replicas)
        await self.reflect()
        await self.f.refresh_rs()
        return got

    def full_pass(self, rs: apps_v1.ReplicaSet) -> apps_v1.ReplicaSetStatus:
        """Upstream's status: every active pod rs controls or may adopt whose labels match."""
        def matches(p: core_v1.Pod) -> bool:
            return bool(p.metadata.labels) and LABELS.items() <= p.metadata.labels.items()
        pods = self.inf.get_indexer().list()
        mine = [p for p in pods if matches(p) and (cu.is_controlled_by(p, rs) or cu.get_controller_of(p) is None
                                                   and rs.metadata.deletion_timestamp is None)]
        terminating = [p for p in cu.filter_terminating_pods(mine) if cu.is_controlled_by(p, rs)]
        return rsu.calculate_status(rs, cu.filter_active_pods(mine), terminating, None, self.f.clock.now())


async def started(replicas: int, **rs: Any) -> tuple[Fed, apps_v1.ReplicaSet]:
    f = await new_fixture()
    fed = Fed(f)
    owner = await f.add_rs(rs_dict(replicas, **rs))
    for i in range(replicas):
        await fed.add(pod_dict(f"p{i}", owner, ready=True, ready_since=f.clock.now()))
    await fed.sync()                                # the first sync: a full pass
    assert f.rsc.claimed[str(KEY)].valid
    return fed, owner


def pod_verbs(f: Fixture) -> list[tuple[str, str]]:
    return [(a.verb, a.name) for a in f.fake.actions if a.resource == "pods" and a.verb in ("create", "patch", "delete")]


async def test_adopts_an_orphan_created_after_the_first_sync() -> None:
    fed, rs = await started(2)
    f = fed.f
    await f.fake.apps_v1().replicasets("default").patch("foobar", {"spec": {"replicas": 3}}, "merge")
    await f.refresh_rs()
    await fed.add(pod_dict("orphan", None, ready=True))
    f.fake.clear_actions()
    claimed = f.rsc.claimed[str(KEY)]
    assert claimed.dirty == {"default/orphan"}              # noted by the add handler
    st = await fed.sync()
    assert cu.is_controlled_by(await fed.pods.get("orphan"), rs)
    assert pod_verbs(f) == [("patch", "orphan")]             # adopted, nothing created
    assert st.replicas == 3


async def test_an_adopted_orphan_deleted_before_its_adoption_came_back() -> None:
    """The cache still holds the orphan when it goes (a relist's tombstone): the RS that
    adopted it drops it and is woken, though upstream's deletePod ignores orphans."""
    fed, rs = await started(2)
    f = fed.f
    await f.fake.apps_v1().replicasets("default").patch("foobar", {"spec": {"replicas": 3}}, "merge")
    await f.refresh_rs()
    orphan = await fed.add(pod_dict("orphan", None, ready=True))
    await f.rsc.sync_replica_set(KEY)                      # adopts it (the patch not reflected yet)
    claimed = f.rsc.claimed[str(KEY)]
    assert "default/orphan" in claimed.active
    queued(f.rsc)
    fed.inf.delete(DeletedFinalStateUnknown("default/orphan", orphan))
    assert claimed.dirty == {"default/orphan"} and queued(f.rsc) == [KEY]
    await fed.pods.delete("orphan", grace_period_seconds=0)
    st = await fed.sync()
    assert st.replicas == 2


async def test_releases_a_pod_whose_labels_changed() -> None:
    fed, rs = await started(2)
    fed.f.fake.clear_actions()
    p0 = (await fed.pods.get("p0")).deep_copy()
    p0.metadata.labels = {"foo": "other"}
    await fed.pods.update(p0)
    await fed.reflect()
    st = await fed.sync()
    assert pod_verbs(fed.f)[0] == ("patch", "p0")
    assert not (await fed.pods.get("p0")).metadata.owner_references          # released
    assert ("create", "") in [(v, n or "") for v, n in pod_verbs(fed.f)]     # and replaced
    assert st.replicas == 1
    st = await fed.sync()
    assert st.replicas == 2


async def test_an_orphan_relabelled_to_match_later_is_adopted() -> None:
    fed, rs = await started(1)
    await fed.add(pod_dict("stray", None, labels={"foo": "other"}))
    await fed.sync()
    assert not (await fed.pods.get("stray")).metadata.owner_references        # does not match
    await fed.f.fake.apps_v1().replicasets("default").patch("foobar", {"spec": {"replicas": 2}}, "merge")
    await fed.f.refresh_rs()
    stray = (await fed.pods.get("stray")).deep_copy()
    stray.metadata.labels = dict(LABELS)
    await fed.pods.update(stray)
    await fed.reflect()
    st = await fed.sync()
    assert cu.is_controlled_by(await fed.pods.get("stray"), rs)
    assert st.replicas == 2


async def test_changes_between_syncs_counted_as_a_full_pass() -> None:
    """Ready flips, deletions (graceful: terminating), a pod taken over by another controller,
    and availability after minReadySeconds: each sync only looks at the changed pods, and the
    status matches upstream's full pass (checked in Fed.sync)."""
    fed, rs = await started(4, min_ready=10)
    f = fed.f
    p1 = (await fed.pods.get("p1")).deep_copy()
    p1.status.conditions = [core_v1.PodCondition(type="Ready", status="False")]
    await fed.pods.update_status(p1)
    await fed.reflect()
    st = await fed.sync()
    assert (st.ready_replicas, st.available_replicas) == (3, 0)
    assert f.rsc.claimed[str(KEY)].dirty == set()
    f.clock.step(11)
    st = await fed.sync()
    assert st.available_replicas == 3                        # Ready for more than minReadySeconds
    # a graceful delete: the pod stays, terminating, until its kubelet removes it
    going = (await fed.pods.get("p2")).deep_copy()
    going.metadata.deletion_timestamp = types_now(f)
    going.metadata.resource_version = "999998"              # as the watch would deliver it
    fed.inf.update(going)
    st = await fed.sync()
    assert st.terminating_replicas == 1
    # someone else's now: the owner reference points elsewhere
    p3 = (await fed.pods.get("p3")).deep_copy()
    p3.metadata.owner_references[0].uid = "someone-else"
    p3.metadata.owner_references[0].name = "other"
    p3.metadata.resource_version = "999999"
    fed.inf.update(p3)
    await f.rsc.sync_replica_set(KEY)
    assert "default/p3" not in f.rsc.claimed[str(KEY)].active


async def test_a_claim_error_makes_the_next_sync_a_full_pass() -> None:
    fed, rs = await started(1)
    await fed.add(pod_dict("orphan", None))
    f = fed.f
    f.rsc.pod_control = cu.FakePodControl()
    f.rsc.pod_control.err = RuntimeError("patch refused")
    try:
        await f.rsc.sync_replica_set(KEY)
    except Exception:
        pass
    claimed = f.rsc.claimed[str(KEY)]
    assert not claimed.valid


async def test_hand_filled_cache_gets_a_full_pass_each_sync() -> None:
    """Before the pod informer has synced (a cache filled by hand, as the table tests fill it),
    no state is kept: every sync is upstream's full pass."""
    f = await new_fixture()
    rs = await f.add_rs(rs_dict(1))
    await f.add_pods(pod_dict("a", rs))
    await f.rsc.sync_replica_set(KEY)
    assert str(KEY) not in f.rsc.claimed


def types_now(f: Fixture) -> str:
    from kubeplane.utils.clock import rfc3339
    return rfc3339(f.clock.now())


@pytest.mark.parametrize("seed", [2, 17, 23])
async def test_random_changes_match_a_full_pass_at_every_sync(seed: int) -> None:
    """A seeded random walk of pod changes through the informer (new owned pods and orphans,
    relabels, Ready flips, graceful and immediate deletes, owner changes, time passing), with
    a sync after each step: every status written equals upstream's full pass (Fed.sync), and
    the kept pods are the ones a fresh full pass claims. (Seed 2 found an adopted orphan
    deleted before its adoption came back: ReplicaSetController._orphan_deleted.)"""
    rnd = random.Random(seed)
    fed, rs = await started(6, min_ready=5)
    f = fed.f
    for step in range(80):
        live = (await fed.pods.list()).items
        op = rnd.choice(["orphan", "relabel", "ready", "delete", "graceful", "owner", "time", "scale"])
        p = rnd.choice(live).deep_copy() if live else None
        if op == "orphan":
            await fed.add(pod_dict(f"o{step}", None, ready=rnd.random() < 0.5, ready_since=f.clock.now(),
                                   labels=dict(LABELS) if rnd.random() < 0.7 else {"foo": "other"}))
        elif op == "relabel" and p is not None:
            p.metadata.labels = dict(LABELS) if p.metadata.labels != LABELS else {"foo": "other"}
            await fed.pods.update(p)
        elif op == "ready" and p is not None and p.metadata.deletion_timestamp is None:
            ready = not any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or ())
            p.status.conditions = [core_v1.PodCondition(type="Ready", status="True" if ready else "False",
                                                        last_transition_time=types_now(f))]
            await fed.pods.update_status(p)
        elif op == "delete" and p is not None:
            await fed.pods.delete(p.metadata.name, grace_period_seconds=0)
        elif op == "graceful" and p is not None and not p.spec.node_name:
            await f.fake.core_v1().pods("default").bind(p.metadata.name, "node-1", uid=p.metadata.uid)
            await fed.pods.delete(p.metadata.name)       # on a node: stays, terminating
        elif op == "owner" and p is not None and p.metadata.owner_references:
            p.metadata.owner_references = None           # orphaned by hand: adopted again or not
            await fed.pods.update(p)
        elif op == "time":
            f.clock.step(rnd.choice([1, 3, 6]))
        elif op == "scale":
            await f.fake.apps_v1().replicasets("default").patch(
                "foobar", {"spec": {"replicas": rnd.randint(3, 8)}}, "merge")
            await f.refresh_rs()
        await fed.reflect()
        await fed.sync()
        assert f.rsc.claimed[str(KEY)].valid, step          # no full pass was needed
    for _ in range(3):                                         # settle: our own writes come back
        await fed.sync()
    rs_now = f.factory.apps_v1().replicasets().informer().get_indexer().get_by_key(str(KEY))
    mine = {cu.pod_key(p) for p in fed.inf.get_indexer().list()
            if cu.is_controlled_by(p, rs_now) and cu.is_pod_active(p)
            and p.metadata.labels and LABELS.items() <= p.metadata.labels.items()}
    assert set(f.rsc.claimed[str(KEY)].active) == mine
