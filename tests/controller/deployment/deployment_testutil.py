"""Builders and a fixture for the Deployment controller tests.

Mirrors the helpers of upstream's deployment_controller_test.go / sync_test.go (newDeployment,
rs, newRSWithStatus, newReplicaSet, fixture with preloaded listers and expected actions), on
top of FakeClientset, which is the real API server on memory storage.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubeplane.api import types
from kubeplane.api.types import ObjectName, apps_v1, core_v1, meta_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller import controller_utils as cu
from kubeplane.controller.deployment import DeploymentController
from kubeplane.controller.deployment.util import deployment_util as du
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0          # the fake clock's start: 2023-11-14T22:13:20Z
RS_KIND = cu.GroupVersionKind("apps", "v1", "ReplicaSet")


def new_deployment(name: str, replicas: int, revision_history_limit: int | None = None,
                   max_surge: int | str | None = None, max_unavailable: int | str | None = None,
                   selector: dict[str, str] | None = None, *, uid: str | None = None) -> apps_v1.Deployment:
    """Upstream: newDeployment — RollingUpdate with maxSurge/maxUnavailable 0 unless given."""
    selector = dict(selector or {})
    return apps_v1.Deployment(
        metadata=meta_v1.ObjectMeta(name=name, namespace="default", uid=uid or f"uid-{name}", annotations={}),
        spec=apps_v1.DeploymentSpec(
            replicas=replicas, revision_history_limit=revision_history_limit,
            selector=meta_v1.LabelSelector(match_labels=selector),
            strategy=apps_v1.DeploymentStrategy(type="RollingUpdate", rolling_update=apps_v1.RollingUpdateDeployment(
                max_surge=0 if max_surge is None else max_surge,
                max_unavailable=0 if max_unavailable is None else max_unavailable)),
            template=core_v1.PodTemplateSpec(metadata=meta_v1.ObjectMeta(labels=dict(selector)),
                                             spec=core_v1.PodSpec(containers=[core_v1.Container(image="foo/bar")]))))


def rs(name: str, replicas: int, selector: dict[str, str] | None, timestamp: float | None, *,
       available: int | None = None) -> apps_v1.ReplicaSet:
    """Upstream: rs (sync_test.go) — status.availableReplicas equals replicas unless given."""
    return apps_v1.ReplicaSet(
        metadata=meta_v1.ObjectMeta(name=name, namespace="default", uid=f"uid-{name}",
                                    creation_timestamp=rfc3339(timestamp) if timestamp is not None else None),
        spec=apps_v1.ReplicaSetSpec(replicas=replicas, selector=meta_v1.LabelSelector(match_labels=selector),
                                    template=core_v1.PodTemplateSpec()),
        status=apps_v1.ReplicaSetStatus(available_replicas=replicas if available is None else available))


def new_rs_with_status(name: str, spec_replicas: int, status_replicas: int,
                       selector: dict[str, str] | None) -> apps_v1.ReplicaSet:
    """Upstream: newRSWithStatus"""
    r = rs(name, spec_replicas, selector, None)
    r.status = apps_v1.ReplicaSetStatus(replicas=status_replicas)
    return r


def new_replica_set(d: apps_v1.Deployment, name: str, replicas: int) -> apps_v1.ReplicaSet:
    """Upstream: newReplicaSet — d's template and selector, controlled by d."""
    return apps_v1.ReplicaSet(
        metadata=meta_v1.ObjectMeta(name=name, namespace="default", uid=f"uid-{name}",
                                    labels=dict(d.spec.selector.match_labels or {}),
                                    owner_references=[cu.new_controller_ref(d, cu.GroupVersionKind(
                                        "apps", "v1", "Deployment"))]),
        spec=apps_v1.ReplicaSetSpec(replicas=replicas, selector=d.spec.selector.deep_copy(),
                                    template=d.spec.template.deep_copy()))


def deployment_dict(name: str = "foo", replicas: int = 1, *, image: str = "foo/bar", **spec: Any) -> dict[str, Any]:
    """A valid apps/v1 Deployment for the API server (defaults 25%/25%, 600 s, 10)."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"foo": "bar"}},
                     "template": {"metadata": {"labels": {"foo": "bar"}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}, **spec}}


def owned_rs_dict(d: apps_v1.Deployment, name: str, replicas: int, *, template: dict[str, Any] | None = None,
                  annotations: dict[str, str] | None = None, status: dict[str, Any] | None = None,
                  labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A ReplicaSet dict controlled by d, with d's template unless given."""
    t = template if template is not None else types.to_dict(d.spec.template)
    meta: dict[str, Any] = {"name": name, "namespace": "default",
                            "labels": labels if labels is not None else dict(d.spec.selector.match_labels or {}),
                            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                 "name": d.metadata.name, "uid": d.metadata.uid,
                                                 "controller": True, "blockOwnerDeletion": True}]}
    if annotations:
        meta["annotations"] = annotations
    out: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta,
                           "spec": {"replicas": replicas, "selector": types.to_dict(d.spec.selector), "template": t}}
    if status:
        out["status"] = status
    return out


def rs_status(replicas: int, available: int | None = None, ready: int | None = None) -> dict[str, Any]:
    available = replicas if available is None else available
    ready = available if ready is None else ready
    return {"replicas": replicas, "readyReplicas": ready, "availableReplicas": available, "observedGeneration": 1}


@dataclass
class Fixture:
    """Listers filled by hand (informers not running); the real API server behind the client.

    Upstream: fixture (deployment_controller_test.go): preload, run one sync, compare actions.
    """

    fake: FakeClientset
    clock: FakeClock
    factory: SharedInformerFactory
    dc: DeploymentController
    recorder: FakeRecorder
    expected: list[tuple[str, str, str]] = field(default_factory=list)

    async def seed(self, *objs: Any, cache: bool = True) -> list[Any]:
        """Store objects on the server (not recorded) and, by default, in the listers."""
        stored = await self.fake.seed(*objs)
        if cache:
            for obj in stored:
                self.add_to_cache(obj)
        return stored

    def add_to_cache(self, obj: Any) -> None:
        """Put a copy in the lister, as an informer would deliver its own object: the test's
        object stays the test's to change (the cache mutation detector watches the copy)."""
        inf = {"Deployment": self.factory.apps_v1().deployments(), "ReplicaSet": self.factory.apps_v1().replicasets(),
               "Pod": self.factory.core_v1().pods()}[obj.kind]
        inf.informer().get_indexer().add(obj.deep_copy())

    async def refresh(self) -> None:
        """Reload every Deployment and ReplicaSet from the server into the listers (what the
        informers would deliver after the sync's writes)."""
        for lister_inf, client in ((self.factory.apps_v1().deployments(), self.fake.apps_v1().deployments("default")),
                                   (self.factory.apps_v1().replicasets(), self.fake.apps_v1().replicasets("default"))):
            indexer = lister_inf.informer().get_indexer()
            self.fake.recorder.recording = False
            try:
                items = (await client.list()).items
            finally:
                self.fake.recorder.recording = True
            for old in list(indexer.list()):
                indexer.delete(old)
            for obj in items:
                indexer.add(obj)

    def expect(self, verb: str, resource: str, subresource: str = "") -> None:
        self.expected.append((verb, resource, subresource))

    async def run(self, name: str = "foo") -> None:
        """One sync; the recorded writes must equal the expected ones. Upstream: fixture.run"""
        await self.dc.sync_handler(ObjectName("default", name))
        assert self.fake.verbs() == self.expected

    def writes(self, verb: str, resource: str, subresource: str = "") -> list[dict[str, Any]]:
        return [a.body for a in self.fake.actions
                if (a.verb, a.resource, a.subresource) == (verb, resource, subresource)]

    async def get_deployment(self, name: str = "foo") -> apps_v1.Deployment:
        self.fake.recorder.recording = False
        try:
            return await self.fake.apps_v1().deployments("default").get(name)
        finally:
            self.fake.recorder.recording = True

    async def list_rss(self) -> list[apps_v1.ReplicaSet]:
        self.fake.recorder.recording = False
        try:
            return (await self.fake.apps_v1().replicasets("default").list()).items
        finally:
            self.fake.recorder.recording = True


async def new_fixture(**options: Any) -> Fixture:
    from kubeplane.controller.deployment import DeploymentControllerOptions
    clock = FakeClock(start=NOW)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    dc = DeploymentController(factory.apps_v1().deployments(), factory.apps_v1().replicasets(),
                              factory.core_v1().pods(), fake, clock=clock, recorder=recorder,
                              options=DeploymentControllerOptions(**options))
    return Fixture(fake, clock, factory, dc, recorder)


def queued(dc: DeploymentController) -> list[ObjectName]:
    """Drain the ready part of the queue (not the delayed one)."""
    out = []
    while dc.queue.len():
        key = dc.queue._queue.popleft()
        dc.queue._dirty.discard(key)
        out.append(key)
    return out


def hash_of(rs_name: str, d_name: str = "foo") -> str:
    assert rs_name.startswith(d_name + "-")
    return rs_name[len(d_name) + 1:]


__all__ = ["NOW", "Fixture", "deployment_dict", "du", "hash_of", "new_deployment", "new_fixture", "new_replica_set",
           "new_rs_with_status", "owned_rs_dict", "queued", "rs", "rs_status"]


# --- in-process cluster: API server + informers + ReplicaSet and Deployment controllers -----------

import asyncio  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

from kubeplane.client.tools.cache import ResourceEventHandlerFuncs  # noqa: E402


class Cluster:
    """FakeClientset's API server, one informer factory, both controllers and a pod "kubelet"
    that marks every new pod Running and Ready through /status (as upstream's integration
    tests do). Real clock: informers and workqueues run for real, nothing sleeps in tests."""

    def __init__(self, fake: FakeClientset, workers: int = 5) -> None:
        from kubeplane.controller.replicaset import ReplicaSetController
        self.fake = fake
        self.factory = SharedInformerFactory(fake)
        self.recorder = FakeRecorder()
        self.rsc = ReplicaSetController(self.factory.apps_v1().replicasets(), self.factory.core_v1().pods(), fake,
                                        recorder=FakeRecorder())
        self.dc = DeploymentController(self.factory.apps_v1().deployments(), self.factory.apps_v1().replicasets(),
                                       self.factory.core_v1().pods(), fake, recorder=self.recorder)
        self.workers = workers
        self.to_ready: asyncio.Queue[core_v1.Pod] = asyncio.Queue()
        self.ready_enabled = True
        self.sync_count = 0
        self.sync_seconds = 0.0
        self.observers: list[Callable[[], None]] = []
        self.changed = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        inner = self.dc.sync_handler

        async def timed_sync(key: ObjectName) -> None:
            t0 = time.perf_counter()
            try:
                await inner(key)
            finally:
                self.sync_seconds += time.perf_counter() - t0
                self.sync_count += 1
        self.dc.sync_handler = timed_sync
        self.factory.core_v1().pods().informer().add_event_handler(ResourceEventHandlerFuncs(
            self._on_pod, lambda old, new: self._on_pod(new)))
        notify = ResourceEventHandlerFuncs(self._notify, lambda old, new: self._notify(new), self._notify)
        self.factory.apps_v1().replicasets().informer().add_event_handler(notify)
        self.factory.apps_v1().deployments().informer().add_event_handler(notify)

    def _on_pod(self, pod: core_v1.Pod) -> None:
        if self.ready_enabled and pod.metadata.deletion_timestamp is None and \
                not any(c.type == "Ready" for c in (pod.status.conditions or []) if pod.status):
            self.to_ready.put_nowait(pod)

    def _notify(self, _obj: Any) -> None:
        for check in self.observers:
            check()
        self.changed.set()

    async def _kubelet(self) -> None:
        pods = self.fake.core_v1().pods("default")
        while True:
            pod = await self.to_ready.get()
            p = pod.deep_copy()
            p.status = p.status or core_v1.PodStatus()
            p.status.phase = "Running"
            p.status.conditions = [core_v1.PodCondition(type="Ready", status="True",
                                                        last_transition_time=rfc3339(time.time()))]
            try:
                await pods.update_status(p)
            except Exception:          # deleted meanwhile, or a stale copy: a newer event follows
                pass

    async def start(self) -> None:
        self.factory.start()
        self._tasks = [asyncio.create_task(self.rsc.run(self.workers)), asyncio.create_task(self.dc.run(self.workers)),
                       *(asyncio.create_task(self._kubelet()) for _ in range(4))]
        await self.factory.wait_for_cache_sync()

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.factory.shutdown()

    def deployment(self, name: str = "foo") -> apps_v1.Deployment | None:
        try:
            return self.factory.apps_v1().deployments().lister().deployments("default").get(name)
        except Exception:
            return None

    def replica_sets(self) -> list[apps_v1.ReplicaSet]:
        return self.factory.apps_v1().replicasets().lister().replicasets("default").list()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
        """Wait (on informer events, not polling sleeps) until predicate holds."""
        async def loop() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(loop(), timeout)

    def rolled_out(self, name: str = "foo", image: str | None = None) -> bool:
        """What `kubectl rollout status` waits for, plus Progressing=NewReplicaSetAvailable."""
        d = self.deployment(name)
        if d is None or d.status is None:
            return False
        s, want = d.status, d.spec.replicas
        progressing = du.get_deployment_condition(s, "Progressing")
        return (s.observed_generation or 0) >= (d.metadata.generation or 0) and (s.updated_replicas or 0) == want \
            and (s.replicas or 0) == want and (s.available_replicas or 0) == want \
            and progressing is not None and progressing.reason == du.NEW_RS_AVAILABLE_REASON \
            and (image is None or d.spec.template.spec.containers[0].image == image)
