"""A ReplicaSet whose pods a quota refuses: upstream's FailedCreate event and ReplicaFailure
condition carry the admission plugin's message (e2e "should surface a failure condition on a
common issue like exceeded quota"). The refusal comes from the real ResourceQuota plugin in the
fake clientset's API server, with a quota written into its storage."""
from __future__ import annotations

import re

import pytest

from kubeplane.api import errors
from kubeplane.api.types import ObjectName
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.replicaset import ReplicaSetController
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

KEY = ObjectName("default", "web")
MESSAGE = (r'pods "web-[a-z0-9]{5}" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, '
           r'used: requests.cpu=1, limited: requests.cpu=1')


async def test_quota_refusal_sets_replica_failure_with_upstream_message() -> None:
    clock = FakeClock(start=1_700_000_000.0)
    fake = await FakeClientset.new(clock=clock)
    await fake.api.storage.create("/registry/resourcequotas/default/compute", {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute", "namespace": "default"},
        "spec": {"hard": {"requests.cpu": "1"}},
        "status": {"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "0"}}})
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    rsc = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), fake, clock=clock,
                               recorder=recorder)
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}
    [rs] = await fake.seed({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}}})
    factory.apps_v1().replicasets().informer().get_indexer().add(rs)       # the lister, preloaded

    with pytest.raises(errors.Forbidden) as e:     # the sync reports the failed create to its worker
        await rsc.sync_replica_set(KEY)
    assert re.fullmatch(MESSAGE, str(e.value)), str(e.value)

    created = [a for a in fake.actions if a.verb == "create" and a.resource == "pods"]
    assert len(created) == 3                       # slow start: 1, then 2 (the second of which is refused)
    assert sum(ev.startswith("Normal SuccessfulCreate") for ev in recorder.events) == 2
    [failed] = [ev for ev in recorder.events if ev.startswith("Warning FailedCreate")]
    assert re.fullmatch("Warning FailedCreate Error creating: " + MESSAGE, failed), failed
    status = [a.body["status"] for a in fake.actions if a.subresource == "status"][-1]
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("ReplicaFailure", "True", "FailedCreate")
    assert re.fullmatch(MESSAGE, cond["message"]), cond["message"]
    kv = await fake.api.storage.get("/registry/resourcequotas/default/compute")
    assert kv.obj["status"]["used"] == {"requests.cpu": "1"}
