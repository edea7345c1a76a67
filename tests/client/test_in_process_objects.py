"""The in-process transport hands typed writes and dict patches to the server already decoded;
what gets stored is what the same request as JSON bytes stores."""
from __future__ import annotations

from typing import Any

import orjson

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

POD = {"metadata": {"name": "web", "labels": {"app": "web"}},
       "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}}


class Spy(InProcessTransport):
    def __init__(self, api: APIServer, *, objects: bool) -> None:
        super().__init__(api)
        self.accepts_objects = objects
        self.seen: list[Request] = []

    def _request(self, *args: Any) -> Request:
        req = super()._request(*args)
        self.seen.append(req)
        return req


def comparable(obj: Any) -> dict[str, Any]:
    d = orjson.loads(types.encode(obj))
    for f in ("uid", "creationTimestamp", "resourceVersion"):
        d["metadata"].pop(f)
    return d


async def run(objects: bool) -> tuple[Spy, dict[str, Any]]:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    spy = Spy(api, objects=objects)
    pods = Clientset(spy).core_v1().pods("default")
    await pods.create(types.from_dict(POD, core_v1.Pod))
    patched = await pods.patch("web", {"status": {"phase": "Running", "podIP": "10.0.0.1"}}, subresource="status")
    return spy, comparable(patched)


async def test_typed_create_and_patch_go_as_dicts_and_store_the_same() -> None:
    spy, as_objects = await run(objects=True)
    assert [(r.method, r.obj is not None, r.body) for r in spy.seen] == [("POST", True, b""), ("PATCH", True, b"")]
    spy, as_bytes = await run(objects=False)
    assert all(r.obj is None and r.body for r in spy.seen)
    assert as_objects == as_bytes and as_objects["status"]["phase"] == "Running"
    assert as_objects["status"]["qosClass"] == "Burstable"          # server-side prepare still ran


async def test_the_server_keeps_no_reference_to_the_callers_patch() -> None:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    pods = Clientset(InProcessTransport(api)).core_v1().pods("default")
    await pods.create(types.from_dict(POD, core_v1.Pod))
    conditions = [{"type": "Ready", "status": "True"}]
    await pods.patch("web", {"status": {"conditions": conditions}}, "merge", subresource="status")
    conditions[0]["status"] = "False"                 # the caller reuses its dict
    kv = await api.storage.get("/registry/pods/default/web")
    assert kv is not None and kv.obj["status"]["conditions"][0]["status"] == "True"


async def test_patch_raw_answers_the_patched_object_undecoded() -> None:
    """patch_raw makes the same request as patch (in process: the patch as a dict, copied) and
    answers the response's bytes, what patch decodes; the server stores the same."""
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    spy = Spy(api, objects=True)
    pods = Clientset(spy).core_v1().pods("default")
    await pods.create(types.from_dict(POD, core_v1.Pod))
    conditions = [{"type": "Ready", "status": "True"}]
    raw = await pods.patch_raw("web", {"status": {"phase": "Running", "conditions": conditions}}, "merge",
                               subresource="status")
    conditions[0]["status"] = "False"                 # the caller reuses its dict
    assert isinstance(raw, bytes) and spy.seen[-1].obj is not None and spy.seen[-1].method == "PATCH"
    kv = await api.storage.get("/registry/pods/default/web")
    assert kv is not None and orjson.loads(raw) == kv.obj
    assert kv.obj["status"]["phase"] == "Running" and kv.obj["status"]["conditions"][0]["status"] == "True"
    assert comparable(types.decode(raw, core_v1.Pod)) == comparable(await pods.get("web"))
