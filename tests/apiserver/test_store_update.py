"""registry/store.update_object: the read -> updated-object function -> update (or create) ->
retry loop that PUT, the patches, server-side apply and the subresource writes share.

Upstream: Store.Update (registry/generic/registry/store.go) with a rest.UpdatedObjectInfo,
and the patcher's retries (maxRetryWhenPatchConflicts, endpoints/handlers/patch.go).
"""
from __future__ import annotations

import copy
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
