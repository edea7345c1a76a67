"""TaintEvictionController.pod_updated: which pod events are queued (upstream PodUpdated: all
adds and deletes; an update only when the node or the tolerations changed, the tolerations
compared as helper.Semantic.DeepEqual does, nil and empty alike)."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeplane.api.types import core_v1, from_dict
from kubeplane.client.util.workqueue import Queue, QueueOptions
from kubeplane.controller.nodelifecycle import tainteviction as te


def pod(node: str | None = "n1", tolerations: list[dict[str, Any]] | None = None, rv: str = "1") -> core_v1.Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return from_dict({"metadata": {"name": "p", "namespace": "ns", "resourceVersion": rv}, "spec": spec},
                     core_v1.Pod)


T300 = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
T60 = {**T300, "tolerationSeconds": 60}
U300 = {**T300, "key": "node.kubernetes.io/unreachable"}


@pytest.mark.parametrize("old,new,queued", [
    (None, pod(), True),                                          # add
    (pod(), None, True),                                          # delete
    (pod(rv="1"), pod(rv="2"), False),                            # status only
    (pod(tolerations=None), pod(tolerations=[]), False),          # nil and empty alike
    (pod(tolerations=[T300, U300]), pod(tolerations=[T300, U300]), False),
    (pod(tolerations=[T300]), pod(tolerations=[T300, U300]), True),
    (pod(tolerations=[T300]), pod(tolerations=[T60]), True),      # tolerationSeconds compared by value
    (pod(node=None), pod(node="n1"), True),                       # bound
    (pod(node="n1", tolerations=[T300]), pod(node="n2", tolerations=[T300]), True),
])
async def test_pod_updated_queues(old: Any, new: Any, queued: bool) -> None:
    c = object.__new__(te.TaintEvictionController)
    c.pod_update_queue = Queue(QueueOptions(name="t"))
    c._wake = asyncio.Event()
    c.pod_updated(old, new)
    assert (c.pod_update_queue.len() == 1) is queued
    assert c._wake.is_set() is queued
