"""A fake clientset for controller tests: a real in-process API server that records actions.

Upstream's fake clientset keeps objects in a tracker and records every call; ours goes one
step further toward the real thing — objects go through the real API server (defaulting,
validation, resourceVersions, subresource rules) on memory storage — and still records each
call as an `Action` so tests can assert exactly which API calls a sync made:

    fake = await FakeClientset.new(clock=fake_clock)
    await fake.seed(deployment, replica_set)          # stored without recording
    await controller.sync_handler(key)
    assert fake.verbs() == [("create", "replicasets", ""), ("update", "deployments", "status")]

`fail_on(verb, resource)` makes matching calls answer with an error, to test failure paths.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator

import orjson

from ..api import errors, types
from ..api.resources import for_kind
from ..apiserver.apiextensions.controller import start_controller as start_crd_controller
from ..apiserver import enablement
from ..apiserver.inprocess import InProcessTransport
from ..apiserver.options import ServerRunOptions
from ..apiserver.request import Request, parse_request_info
from ..apiserver.server import APIServer
from ..client.clientset import Clientset
from ..client.metadata import MetadataClient
from ..client.rest import ResourceClient
from ..client.transport import RawResponse
from ..storage import new_storage
from ..utils.clock import REAL_CLOCK, Clock

_VERB_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True, slots=True)
class Action:
    verb: str                  # get, list, watch, create, update, patch, delete
    resource: str              # plural
    subresource: str
    namespace: str
    name: str
    body: Any = None           # decoded request body (dict) for writes


@dataclass
class _Failure:
    verb: str
    resource: str
    error: errors.StatusError
    remaining: int = -1         # -1: every time


class RecordingTransport(InProcessTransport):
    # Bodies go as JSON bytes, as over HTTP, so the server decodes and type-checks every
    # write and patch the code under test makes (in production the in-process transport
    # hands typed objects over as dicts and skips those checks).
    accepts_objects = False

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.actions: list[Action] = []
        self.recording = True
        self.failures: list[_Failure] = []

    def _record(self, method: str, path: str, query: dict[str, str] | None,
                body: bytes | dict[str, Any] | None) -> Action:
        req = Request(method, path, dict(query or {}), {})
        info = parse_request_info(req)
        verb = info.verb if method in ("GET", "DELETE") else _VERB_BY_METHOD.get(method, method.lower())
        decoded: Any = body if isinstance(body, dict) else None
        if isinstance(body, bytes) and body:
            try:
                decoded = orjson.loads(body)
            except orjson.JSONDecodeError:
                decoded = body
        action = Action(verb, info.resource, info.subresource, info.namespace, info.name, decoded)
        if self.recording:
            self.actions.append(action)
        return action

    def _failure(self, action: Action) -> errors.StatusError | None:
        for f in self.failures:
            if f.verb == action.verb and f.resource == action.resource and f.remaining != 0:
                f.remaining -= 1 if f.remaining > 0 else 0
                return f.error
        return None

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | dict[str, Any] | None = None,
                      content_type: str = "application/json") -> RawResponse:
        action = self._record(method, path, query, body)
        err = self._failure(action)
        if err is not None:
            return RawResponse(err.code, orjson.dumps(err.status()))
        return await super().request(method, path, query, body, content_type)

    async def stream(self, path: str, query: dict[str, str]) -> AsyncIterator[bytes]:
        self._record("GET", path, query, None)
        async for line in super().stream(path, query):
            yield line


# A server with no controller-manager beside it leaves out the admission plugins that need one
# (upstream's fake clientset runs no admission at all): ServiceAccount would refuse every pod, as
# nothing creates the "default" service account; TaintNodesByCondition's not-ready taint would
# stay on every node, as only the node lifecycle controller removes it.
WITHOUT_CONTROLLER_MANAGER = ServerRunOptions(
    disable_admission_plugins=frozenset({"ServiceAccount", "TaintNodesByCondition"}))


class FakeClientset(Clientset):
    api: APIServer

    @classmethod
    async def new(cls, *, clock: Clock = REAL_CLOCK) -> FakeClientset:
        api = APIServer(new_storage("memory"), clock=clock, options=WITHOUT_CONTROLLER_MANAGER)
        await api.bootstrap()
        cs = cls(RecordingTransport(api))
        cs.api = api
        # CRDs are served as by `kubeplane up`: names accepted, Established, their kinds registered.
        cs._tasks = await start_crd_controller(api)
        return cs

    def __init__(self, transport: RecordingTransport) -> None:
        super().__init__(transport)
        self.recorder = transport
        self._tasks: list[Any] = []

    async def close(self) -> None:
        """Stop the CRD controller and stop serving the kinds of the CRDs it served (the
        registry is the process's: a test that created CRDs closes its fake so that later
        tests do not see its kinds)."""
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        controller = getattr(self.api, "crd_controller", None)
        if controller is not None:
            controller.unserve_all()

    @property
    def actions(self) -> list[Action]:
        return self.recorder.actions

    def verbs(self, *, include_reads: bool = False) -> list[tuple[str, str, str]]:
        """(verb, resource, subresource) of each recorded call; reads (get/list/watch) left out by default."""
        return [(a.verb, a.resource, a.subresource) for a in self.actions
                if include_reads or a.verb not in ("get", "list", "watch")]

    def clear_actions(self) -> None:
        self.recorder.actions.clear()

    def fail_on(self, verb: str, resource: str, error: errors.StatusError, times: int = -1) -> None:
        """Answer matching calls with error (times=-1: always)."""
        self.recorder.failures.append(_Failure(verb, resource, error, times))

    async def seed(self, *objs: Any) -> list[Any]:
        """Store objects through the API (creates, not recorded); returns what the server stored."""
        out = []
        self.recorder.recording = False
        try:
            for obj in objs:
                d = obj if isinstance(obj, dict) else types.to_dict(obj)
                group = d["apiVersion"].rpartition("/")[0]
                ri = for_kind(group, d["kind"])
                custom = ri is None
                if custom:          # a CRD's kind (served version): objects come back as metadata
                    ri = next((r for r in enablement.resources() if (r.group, r.kind) == (group, d["kind"])), None)
                assert ri is not None, d["kind"]
                ns = (d.get("metadata") or {}).get("namespace") or ("default" if ri.namespaced else "")
                client: ResourceClient[Any] = (MetadataClient(self.transport, ri, ns) if custom
                                               else ResourceClient(self.transport, ri, ns))
                stored = await client.create(d)
                if d.get("status") and not custom:
                    status_obj = types.to_dict(stored)
                    status_obj["status"] = {**(status_obj.get("status") or {}), **d["status"]}
                    stored = await client.update_status(types.from_dict(status_obj, client.type))
                out.append(stored)
        finally:
            self.recorder.recording = True
        return out
