"""registry/store.update_object: the read -> updated-object function -> update (or create) ->
retry loop that PUT, the patches, server-side apply and the subresource writes share.

Upstream: Store.Update (registry/generic/registry/store.go) with a rest.UpdatedObjectInfo,
and the patcher's retries (maxRetryWhenPatchConflicts, endpoints/handlers/patch.go).
"""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.api.resources import lookup
from kubeplane.apiserver.registry import store
from kubeplane.storage.interface import KeyValue

PODS = lookup("", "v1", "pods")
assert PODS is not None
KEY = PODS.key("default", "p")


class Labeller(store.UpdatedObjectInfo):
    """Sets a label on what is stored; `races` times, another writer gets in first."""

    def __init__(self, api: Any, races: int = 0, retry: bool = True, create: bool = False) -> None:
        self.api, self.races, self.retry, self.create = api, races, retry, create
        self.seen: list[str] = []
        self.warnings: list[str] = []

    async def updated_object(self, kv: KeyValue | None) -> dict[str, Any]:
        if kv is None:
            if not self.create:
                raise errors.NotFound("", "pods", "p")
            return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        self.seen.append(kv.obj["metadata"]["resourceVersion"])
        self.warnings.append(f"attempt {len(self.seen)}")
        if self.races:
            self.races -= 1
            other = copy.deepcopy(kv.obj)
            other["metadata"].setdefault("annotations", {})["other"] = str(len(self.seen))
            await self.api.storage.update(KEY, other, kv.mod_revision)
        new = copy.deepcopy(kv.obj)
        new["metadata"].setdefault("labels", {})["set"] = "yes"
        return new

    def retry_on_conflict(self) -> bool:
        return self.retry


async def test_a_lost_race_is_retried_on_the_newer_object(api) -> None:
    await api.create(api.PODS, api.pod("p"))
    info = Labeller(api, races=2)
    stored, value, created = await store.update_object(api.server, store.WriteOptions(), PODS, "default", "p",
                                                       info, info.warnings)
    assert not created and value is not None
    assert len(info.seen) == 3 and len(set(info.seen)) == 3      # each attempt read a newer object
    assert stored["metadata"]["labels"] == {"set": "yes"} and stored["metadata"]["annotations"] == {"other": "2"}
    assert info.warnings == ["attempt 3"]       # only the attempt that was written reports


async def test_no_retry_when_the_write_pins_its_revision(api) -> None:
    await api.create(api.PODS, api.pod("p"))
    info = Labeller(api, races=1, retry=False)
    with pytest.raises(errors.Conflict) as e:
        await store.update_object(api.server, store.WriteOptions(), PODS, "default", "p", info, [])
    assert e.value.message == f'Operation cannot be fulfilled on pods "p": {errors.OPTIMISTIC_LOCK_MSG}'
    assert len(info.seen) == 1


async def test_a_writer_that_always_wins_ends_in_a_conflict_after_five_attempts(api) -> None:
    await api.create(api.PODS, api.pod("p"))
    info = Labeller(api, races=100)
    with pytest.raises(errors.Conflict):
        await store.update_object(api.server, store.WriteOptions(), PODS, "default", "p", info, [])
    assert len(info.seen) == store.MAX_UPDATE_ATTEMPTS == 5


async def test_nothing_stored_creates_or_is_not_found(api) -> None:
    with pytest.raises(errors.NotFound):
        await store.update_object(api.server, store.WriteOptions(), PODS, "default", "p", Labeller(api), [])
    stored, _, created = await store.update_object(api.server, store.WriteOptions(), PODS, "default", "p",
                                                   Labeller(api, create=True), [])
    assert created and stored["metadata"]["uid"]


async def test_the_new_objects_resource_version_is_a_precondition(api) -> None:
    created = (await api.create(api.PODS, api.pod("p"))).json

    class Stale(Labeller):
        async def updated_object(self, kv: KeyValue | None) -> dict[str, Any]:
            new = await super().updated_object(kv)
            new["metadata"]["resourceVersion"] = "1"
            return new

    with pytest.raises(errors.Conflict):
        await store.update_object(api.server, store.WriteOptions(), PODS, "default", "p", Stale(api, retry=False), [])
    assert (await api.get(f"{api.PODS}/p")).json["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                       "template": {"metadata": {"labels": {"app": "d"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
SCALE_PATH = "/apis/apps/v1/namespaces/default/deployments/d/scale"


@pytest.mark.parametrize("body, status", [
    pytest.param({"spec": {"replicas": 4}}, 200, id="a merge patch: applied again to the newer owner"),
    pytest.param({"metadata": {"resourceVersion": "PINNED"}, "spec": {"replicas": 4}}, 409,
                 id="a patch pinning the resourceVersion: the client's conflict"),
])
async def test_a_scale_patch_that_lost_a_race_with_a_status_write(api, monkeypatch, body, status) -> None:
    """A controller's status write between the read and the write of `kubectl scale` / a PATCH
    of /scale (seen on etcd): upstream's patcher applies the patch again, no 409."""
    from kubeplane.apiserver.handlers import subresources
    created = (await api.create("/apis/apps/v1/namespaces/default/deployments", DEPLOYMENT)).json
    body = json.loads(json.dumps(body).replace("PINNED", created["metadata"]["resourceVersion"]))
    inner, raced = subresources._ScaleUpdate.updated_object, []

    async def racing(self: Any, kv: KeyValue | None) -> Any:
        if not raced and kv is not None:
            raced.append(kv.mod_revision)
            other = copy.deepcopy(kv.obj)
            other["status"] = {"observedGeneration": 1}
            await api.storage.update(kv.key, other, kv.mod_revision)
        return await inner(self, kv)
    monkeypatch.setattr(subresources._ScaleUpdate, "updated_object", racing)
    r = await api.call("PATCH", SCALE_PATH, body=body, headers={"content-type": "application/merge-patch+json"})
    assert r.status == status, r.body
    stored = (await api.get("/apis/apps/v1/namespaces/default/deployments/d")).json
    assert stored["spec"]["replicas"] == (4 if status == 200 else 1)
    assert stored["status"] == {"observedGeneration": 1}
