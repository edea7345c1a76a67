"""The in-process Event writer (registry/core/event_writer.py) answers every Event POST as the
generic request path (InProcessTransport.request -> APIServer.route_trusted) answers it: same
status, same body (but the random uid and the name-derived fields), same stored object, same
request metrics; and the event sink uses it only over an unwrapped in-process transport."""
from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from kubeplane.api import types
from kubeplane.api.types import core_v1, meta_v1
from kubeplane.apiserver import metrics
from kubeplane.apiserver.authentication.user import APISERVER
from kubeplane.apiserver.authorization import modes
from kubeplane.apiserver.authorization.rbac.reconcile import ensure_objects
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.registry.core import event_writer
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.tools.record.event import EventSinkImpl
from kubeplane.client.transport import RateLimitedTransport
from kubeplane.cmd import identities
from kubeplane.storage.memory import MemoryStorage
from kubeplane.utils.clock import FakeClock

NODE = "system:node:node-1"


async def _server() -> APIServer:
    mode_list = ("Node", "RBAC")
    api = APIServer(MemoryStorage(), clock=FakeClock(1_600_000_000.0),
                    options=ServerRunOptions(authorization_modes=mode_list))
    await api.bootstrap()
    await ensure_objects(api, identities.kubeadm_policy(modes.has_node_authorizer(mode_list)))
    await modes.synced(api)
    admin = InProcessTransport(api, APISERVER)
    for ns in ("ns1", "gone"):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        assert (await admin.request("POST", "/api/v1/namespaces", None, body)).status == 201
    assert (await admin.request("DELETE", "/api/v1/namespaces/gone")).status == 200    # Terminating: no namespace controller runs
    return api


def _event(name: str, ns: str, **overrides: Any) -> dict[str, Any]:
    ev = {"metadata": {"name": name, "namespace": ns},
          "involvedObject": {"kind": "Pod", "namespace": ns, "name": "web", "uid": "u1", "apiVersion": "v1",
                             "fieldPath": "spec.containers{web}"},
          "reason": "Started", "message": "Started container web", "source": {"component": "kubelet",
                                                                                "host": "node-1"},
          "firstTimestamp": "2020-09-13T12:26:40Z", "lastTimestamp": "2020-09-13T12:26:40Z", "count": 1,
          "type": "Normal", "reportingComponent": "kubelet", "reportingInstance": "node-1"}
    ev.update(overrides)
    return ev


def _events_metrics() -> dict[tuple[str, ...], dict[int, int]]:
    return {k: dict(s.codes) for k, s in metrics._requests.items() if "events" in k}


def _normal(body: bytes) -> Any:
    obj = orjson.loads(body)
    meta = obj.get("metadata") or {}
    meta.pop("uid", None)
    return obj


CASES = [
    pytest.param(NODE, "ns1", _event("e1", "ns1"), 201, id="created"),
    pytest.param(NODE, "ns1", _event("e1", "ns1", apiVersion="v1", kind="Event"), 201, id="with-type-meta"),
    pytest.param(NODE, "ns1", _event("e1", "ns1", kind="Pod", apiVersion="v1"), 400, id="wrong-kind"),
    pytest.param(NODE, "missing", _event("e1", "missing"), 404, id="no-namespace"),
    pytest.param(NODE, "gone", _event("e1", "gone"), 403, id="terminating-namespace"),
    pytest.param("system:serviceaccount:ns1:nobody", "ns1", _event("e1", "ns1"), 403, id="forbidden"),
    pytest.param(NODE, "ns1", _event("e1", "other"), 400, id="namespace-mismatch"),
    pytest.param(NODE, "ns1", _event("e1", "ns1", involvedObject={"kind": "Pod", "namespace": "x", "name": "w"}),
                 422, id="invalid"),
    pytest.param(NODE, "ns1", _event("e1", "ns1", metadata={"namespace": "ns1", "generateName": "web."}),
                 201, id="generated-name"),
]


@pytest.mark.parametrize(("user", "ns", "obj", "status"), CASES)
async def test_the_writer_answers_as_the_generic_path(user: str, ns: str, obj: dict[str, Any], status: int) -> None:
    assert event_writer.checks_hold()
    answers = []
    for fast in (False, True):
        api = await _server()
        transport = InProcessTransport(api, user, user_agent="kubelet")
        before = _events_metrics()
        body = copy.deepcopy(obj)
        if fast:
            resp, stored_obj = await transport.event_writer().create_returning(ns, body)
            if stored_obj is not None:          # what the body encodes, and what the sink converts
                assert orjson.loads(resp.body) == stored_obj
                assert types.from_dict(stored_obj, core_v1.Event) == types.decode(resp.body, core_v1.Event)
            else:
                assert resp.status != 201
        else:
            resp = await transport.request("POST", f"/api/v1/namespaces/{ns}/events", {"fieldValidation": "Ignore"},
                                           body)
        after = _events_metrics()
        counted = {k: {c: n - before.get(k, {}).get(c, 0) for c, n in v.items()} for k, v in after.items()}
        counted = {k: {c: n for c, n in v.items() if n} for k, v in counted.items()}
        stored = [kv.obj for kv in (await api.storage.list("/events/"))[0]] if status == 201 else []
        for s in stored:
            s["metadata"].pop("uid", None)
        answers.append((resp.status, _normal(resp.body), {k: v for k, v in counted.items() if v}, stored))
    generic, fast_ = answers
    assert generic[0] == status
    if obj["metadata"].get("generateName"):         # a random suffix each time
        for a in answers:
            a[1]["metadata"].pop("name")
            for s in a[3]:
                s["metadata"].pop("name")
    assert fast_ == generic


async def test_an_audited_server_and_an_event_without_namespace_take_the_generic_path() -> None:
    api = await _server()
    writer = InProcessTransport(api, NODE, user_agent="kubelet").event_writer()
    resp = await writer.create("", _event("e1", ""))
    assert resp.status == 404                        # POST /api/v1/namespaces//events: no such route

    class Context:
        def add_annotation(self, key: str, value: str) -> None:
            pass

    class Audit:
        async def serve(self, req: Any, info: Any) -> Any:
            req.audit = Context()
            self.seen = req.path
            return await api.route_trusted(req, info)
    api.audit = audit = Audit()                      # type: ignore[assignment]
    try:
        resp = await writer.create("ns1", _event("e2", "ns1"))
    finally:
        api.audit = None
    assert resp.status == 201 and audit.seen == "/api/v1/namespaces/ns1/events"


async def test_the_sink_writes_through_the_writer_only_over_a_bare_in_process_transport() -> None:
    api = await _server()
    bare = InProcessTransport(api, NODE, user_agent="kubelet")
    assert EventSinkImpl(Clientset(bare))._writer is not None
    paced = RateLimitedTransport(InProcessTransport(api, NODE), 10, 10)
    assert EventSinkImpl(Clientset(paced))._writer is None     # its requests stay paced

    ev = core_v1.Event(metadata=meta_v1.ObjectMeta(name="web.1", namespace="ns1"),
                       involved_object=core_v1.ObjectReference(kind="Pod", namespace="ns1", name="web"),
                       reason="Started", message="m", type="Normal", count=1,
                       source=core_v1.EventSource(component="kubelet", host="node-1"))
    got = await EventSinkImpl(Clientset(bare)).create(ev)
    assert got.metadata.resource_version and got.metadata.uid and got.reason == "Started"
    admin = Clientset(InProcessTransport(api, APISERVER))
    assert got == await admin.core_v1().events("ns1").get("web.1")      # the server's copy
    from kubeplane.api import errors
    with pytest.raises(errors.AlreadyExists):
        await EventSinkImpl(Clientset(bare)).create(ev)


async def test_the_writers_request_info_is_the_parsed_one() -> None:
    from kubeplane.apiserver.request import Request, parse_request_info
    api = await _server()
    writer = InProcessTransport(api, NODE).event_writer()
    for ns in ("ns1", "kube-system"):
        req = Request("POST", f"/api/v1/namespaces/{ns}/events", {"fieldValidation": "Ignore"}, {})
        assert writer._info(ns) == (req.path, parse_request_info(req))
