"""TaintNodesByCondition, with upstream's cases (plugin/pkg/admission/nodetaint/admission_test.go:
Test_nodeTaints)."""
from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.taint_nodes_by_condition import TaintNodesByCondition
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage

NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def node(taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints is not None:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "mynode"}, "spec": spec}


@pytest.mark.parametrize("given, expected", [
    (None, [NOT_READY]),
    ([NOT_READY], [NOT_READY]),
    ([{**NOT_READY, "value": "x"}], [{**NOT_READY, "value": "x"}]),          # MatchTaint ignores the value
    ([UNSCHEDULABLE], [UNSCHEDULABLE, NOT_READY]),
    ([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}],
     [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}, NOT_READY]),
], ids=["notReady-taint-added", "already-tainted", "tainted-with-a-value", "other-taint-kept",
        "noexecute-is-another-taint"])
async def test_node_taints(server: APIServer, given: list[dict[str, Any]] | None,
                           expected: list[dict[str, Any]]) -> None:
    n = node(given)
    await TaintNodesByCondition(server).admit(Attributes(Operation.CREATE, "", "v1", "nodes", "Node", "",
                                                              "mynode", n))
    assert n["spec"]["taints"] == expected


async def test_status_subresource_is_ignored(server: APIServer) -> None:
    n = node()
    a = Attributes(Operation.CREATE, "", "v1", "nodes", "Node", "", "mynode", n, subresource="status")
    await TaintNodesByCondition(server).admit(a)
    assert "taints" not in n["spec"]


async def test_node_create_through_the_api() -> None:
    server = APIServer(new_storage("memory"))
    await server.bootstrap()
    resp = await server.route_trusted(Request.build("POST", "/api/v1/nodes", "", {"content-type": "application/json"},
                                                    orjson.dumps(node())))
    assert resp.status == 201
    assert orjson.loads(resp.body)["spec"]["taints"] == [NOT_READY]
    await server.storage.close()
