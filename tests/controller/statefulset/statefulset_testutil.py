"""A harness for the StatefulSet controller tests: the real API server (FakeClientset), running
informers, the controller's syncs called one at a time, and a hand-driven "kubelet".

Upstream's stateful_set_control_test.go drives a fake pod control the same way: run one
update, then set pods Running/Ready (setPodRunning, setPodReady) or finish their deletion, and
check the invariants after each step. Here every write goes to the real API server and the
listers catch up (settle) before the next sync, as the informers would deliver.
"""
from __future__ import annotations

import asyncio
from typing import Any

from kubeplane.api import types
from kubeplane.api.types import ObjectName, apps_v1, core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.statefulset import StatefulSetController, StatefulSetControllerOptions
from kubeplane.controller.statefulset import stateful_set_utils as ssu
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0
KEY = ObjectName("default", "web")


def sts_dict(replicas: int = 3, *, name: str = "web", image: str = "nginx:1", parallel: bool = False,
             claims: bool = False, **spec: Any) -> dict[str, Any]:
    """A valid apps/v1 StatefulSet (server defaults: RollingUpdate, partition 0, history 10)."""
    body: dict[str, Any] = {
        "replicas": replicas, "serviceName": "nginx", "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "c", "image": image}]}}}
    if parallel:
        body["podManagementPolicy"] = "Parallel"
    if claims:
        body["volumeClaimTemplates"] = [{"metadata": {"name": "www"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "default"},
            "spec": body}


class Harness:
    def __init__(self, fake: FakeClientset, clock: FakeClock, **options: Any) -> None:
        self.fake = fake
        self.clock = clock
        self.factory = SharedInformerFactory(fake)
        self.recorder = FakeRecorder()
        f = self.factory
        self.ssc = StatefulSetController(f.core_v1().pods(), f.apps_v1().statefulsets(),
                                         f.core_v1().persistentvolumeclaims(), f.apps_v1().controllerrevisions(),
                                         fake, clock=clock, recorder=self.recorder,
                                         options=StatefulSetControllerOptions(**options))

    @classmethod
    async def new(cls, **options: Any) -> Harness:
        clock = FakeClock(start=NOW)
        h = cls(await FakeClientset.new(clock=clock), clock, **options)
        h.factory.start()
        await h.factory.wait_for_cache_sync()
        return h

    async def close(self) -> None:
        await self.factory.shutdown()
        await self.fake.close()

    # --- server reads, not recorded ---------------------------------------------------------

    async def _quiet(self, coro: Any) -> Any:
        self.fake.recorder.recording = False
        try:
            return await coro
        finally:
            self.fake.recorder.recording = True

    async def pods(self) -> list[core_v1.Pod]:
        items = (await self._quiet(self.fake.core_v1().pods("default").list())).items
        return sorted(items, key=ssu.get_ordinal)

    async def pod_names(self) -> list[str]:
        return [p.metadata.name for p in await self.pods()]

    async def claims(self) -> list[core_v1.PersistentVolumeClaim]:
        return (await self._quiet(self.fake.core_v1().persistentvolumeclaims("default").list())).items

    async def revisions(self) -> list[apps_v1.ControllerRevision]:
        return (await self._quiet(self.fake.apps_v1().controllerrevisions("default").list())).items

    async def get_set(self, name: str = "web") -> apps_v1.StatefulSet:
        return await self._quiet(self.fake.apps_v1().statefulsets("default").get(name))

    # --- steps -----------------------------------------------------------------------------------

    async def create(self, d: dict[str, Any]) -> apps_v1.StatefulSet:
        [s] = await self.fake.seed(d)
        await self.settle()
        return s

    async def patch_set(self, patch: dict[str, Any], name: str = "web") -> None:
        await self._quiet(self.fake.apps_v1().statefulsets("default").patch(name, patch, "merge"))
        await self.settle()

    async def sync(self, key: ObjectName = KEY) -> None:
        """One sync; the listers catch up afterwards, also when it fails (as informers would)."""
        try:
            await self.ssc.sync_handler(key)
        finally:
            await self.settle()

    async def settle(self) -> None:
        """Wait until every lister holds exactly what the server holds."""
        f = self.factory
        pairs = [(f.core_v1().pods(), self.fake.core_v1().pods("default")),
                 (f.apps_v1().statefulsets(), self.fake.apps_v1().statefulsets("default")),
                 (f.core_v1().persistentvolumeclaims(), self.fake.core_v1().persistentvolumeclaims("default")),
                 (f.apps_v1().controllerrevisions(), self.fake.apps_v1().controllerrevisions("default"))]
        for inf, client in pairs:
            want = {(o.metadata.name, o.metadata.resource_version)
                    for o in (await self._quiet(client.list())).items}

            async def caught_up(inf: Any = inf, want: set[tuple[str, str]] = want) -> None:
                while {(o.metadata.name, o.metadata.resource_version) for o in inf.lister().list()} != want:
                    await asyncio.sleep(0)
            await asyncio.wait_for(caught_up(), 10)

    async def set_pod_status(self, name: str, phase: str, ready: bool | None = None,
                             ready_since: float | None = None) -> None:
        """Upstream: setPodRunning / setPodReady / setPodFailed"""
        pods = self.fake.core_v1().pods("default")
        pod = await self._quiet(pods.get(name))
        d = types.to_dict(pod)
        status: dict[str, Any] = {**(d.get("status") or {}), "phase": phase}
        if ready is not None:
            status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False",
                                     "lastTransitionTime": rfc3339(ready_since or self.clock.now())}]
        d["status"] = status
        await self._quiet(pods.update_status(types.from_dict(d, core_v1.Pod)))

    async def run_and_ready(self, *names: str) -> int:
        """Every named pod (default: every pod not being deleted) Running and Ready; how many changed."""
        changed = 0
        for pod in await self.pods():
            if (not names or pod.metadata.name in names) and pod.metadata.deletion_timestamp is None \
                    and not ssu.is_running_and_ready(pod):
                await self.set_pod_status(pod.metadata.name, "Running", True)
                changed += 1
        await self.settle()
        return changed

    async def delete_pod(self, name: str) -> None:
        await self._quiet(self.fake.core_v1().pods("default").delete(name))
        await self.settle()

    async def converge(self, max_syncs: int = 50) -> int:
        """Sync and make every pod ready until a sync changes nothing; the number of syncs."""
        for i in range(max_syncs):
            before = len(self.fake.actions)
            readied = await self.run_and_ready()
            await self.sync()
            if len(self.fake.actions) == before and not readied:
                return i
        raise AssertionError("StatefulSet did not converge")

    def writes(self, verb: str, resource: str, subresource: str = "") -> list[str]:
        """Names of the recorded writes (creates name their object in the body)."""
        return [a.name or ((a.body or {}).get("metadata") or {}).get("name", "") for a in self.fake.actions
                if (a.verb, a.resource, a.subresource) == (verb, resource, subresource)]
