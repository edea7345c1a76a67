"""The Priority admission plugin, with upstream's cases
(plugin/pkg/admission/priority/admission_test.go: TestPriorityClassAdmission, TestDefaultPriority,
TestPodAdmission) on a memory store."""
from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.priority import Priority
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer

NS = "namespace"


def pc(name: str, value: int, global_default: bool = False, policy: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": name}, "value": value, "globalDefault": global_default}
    if policy:
        out["preemptionPolicy"] = policy
    return out


DEFAULT_CLASS1 = pc("default1", 1000, True)
DEFAULT_CLASS2 = pc("default2", 2000, True)
NON_DEFAULT_CLASS1 = pc("nondefault1", 2000)
NON_PREEMPTING = pc("nopreemptionpolicy", 2000, policy="Never")
PREEMPTING = pc("preemptionpolicy", 2000, policy="PreemptLowerPriority")


def pod(name: str = "pod-w-priorityclass", class_name: str = "", **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"containers": [{"name": "container", "image": "image"}], **spec}
    if class_name:
        s["priorityClassName"] = class_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": s}


async def add(server: APIServer, *classes: dict[str, Any]) -> None:
    """Store the classes (replacing a system class the server bootstrapped under that name)."""
    for c in classes:
        key = f"/registry/priorityclasses/{c['metadata']['name']}"
        if await server.storage.get(key) is not None:
            await server.storage.delete(key)
        await server.storage.create(key, c)


def pod_attrs(obj: Any, op: Operation = Operation.CREATE, old: Any = None, subresource: str = "") -> Attributes:
    return Attributes(op, "", "v1", "pods", "Pod", NS, obj["metadata"]["name"], obj, old_obj=old,
                      subresource=subresource)


def pc_attrs(obj: Any, op: Operation = Operation.CREATE) -> Attributes:
    return Attributes(op, "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", "",
                      obj["metadata"]["name"], obj)


async def admit(server: APIServer, a: Attributes) -> None:
    p = Priority(server)
    await p.admit(a)
    await p.validate(a)


@pytest.mark.parametrize("existing, new, op, message", [
    ([], DEFAULT_CLASS1, Operation.CREATE, None),
    ([DEFAULT_CLASS1], DEFAULT_CLASS2, Operation.CREATE,
     'priorityclasses.scheduling.k8s.io "default2" is forbidden: PriorityClass default1 is already marked as '
     'default. Only one default can exist'),
    ([DEFAULT_CLASS1], pc("default1", 1000, True), Operation.UPDATE, None),
    ([DEFAULT_CLASS1, NON_DEFAULT_CLASS1], pc("nondefault1", 2000, True), Operation.UPDATE,
     'priorityclasses.scheduling.k8s.io "nondefault1" is forbidden: PriorityClass default1 is already marked as '
     'default. Only one default can exist'),
    ([DEFAULT_CLASS1], NON_DEFAULT_CLASS1, Operation.CREATE, None),
], ids=["one-default-class", "more-than-one-default-class", "update-the-default", "change-to-default-while-one-exists",
        "a-non-default-class"])
async def test_priority_class_admission(server: APIServer, existing: list[dict[str, Any]], new: dict[str, Any],
                                        op: Operation, message: str | None) -> None:
    await add(server, *existing)
    if message is None:
        await admit(server, pc_attrs(new, op))
        return
    with pytest.raises(errors.StatusError) as e:
        await admit(server, pc_attrs(new, op))
    assert e.value.code == 403 and e.value.message == message


@pytest.mark.parametrize("classes, name, value, policy", [
    ([], "", 0, "PreemptLowerPriority"),
    ([NON_DEFAULT_CLASS1], "", 0, "PreemptLowerPriority"),
    ([DEFAULT_CLASS1], "default1", 1000, "PreemptLowerPriority"),
    ([DEFAULT_CLASS2, DEFAULT_CLASS1], "default1", 1000, "PreemptLowerPriority"),    # the lowest of two defaults
    ([pc("default-np", 500, True, "Never")], "default-np", 500, "Never"),
], ids=["no-class", "no-default-class", "one-default", "two-defaults-the-lowest", "default-preemption-policy"])
async def test_default_priority(server: APIServer, classes: list[dict[str, Any]], name: str, value: int,
                                policy: str) -> None:
    await add(server, *classes)
    p = pod()
    await admit(server, pod_attrs(p))
    assert p["spec"].get("priorityClassName", "") == name
    assert p["spec"]["priority"] == value and p["spec"]["preemptionPolicy"] == policy


@pytest.mark.parametrize("classes, p, priority, policy, message", [
    ([DEFAULT_CLASS1], pod(class_name="default1"), 1000, "PreemptLowerPriority", None),
    ([DEFAULT_CLASS1], pod(), 1000, "PreemptLowerPriority", None),
    ([DEFAULT_CLASS1], pod(class_name="nonexistent"), None, None,
     'pods "pod-w-priorityclass" is forbidden: no PriorityClass with name nonexistent was found'),
    ([], pod(), 0, "PreemptLowerPriority", None),
    ([DEFAULT_CLASS1], pod(class_name="default1", priority=1000), 1000, "PreemptLowerPriority", None),
    ([DEFAULT_CLASS1], pod(class_name="default1", priority=2000), None, None,
     'pods "pod-w-priorityclass" is forbidden: the integer value of priority (2000) must not be provided in pod '
     'spec; priority admission controller computed 1000 from the given PriorityClass name'),
    ([], pod(class_name="system-cluster-critical"), 2000000000, "PreemptLowerPriority", None),
    ([], pod(class_name="system-node-critical"), 2000001000, "PreemptLowerPriority", None),
    ([pc("system-node-critical", 2000001000, policy="Never")], pod(class_name="system-node-critical"),
     2000001000, "Never", None),
    ([NON_PREEMPTING], pod(class_name="nopreemptionpolicy"), 2000, "Never", None),
    ([PREEMPTING], pod(class_name="preemptionpolicy"), 2000, "PreemptLowerPriority", None),
    ([NON_PREEMPTING], pod(class_name="nopreemptionpolicy", preemptionPolicy="PreemptLowerPriority"), None, None,
     'pods "pod-w-priorityclass" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must '
     'not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name'),
    ([NON_PREEMPTING], pod(class_name="nopreemptionpolicy", preemptionPolicy="Never"), 2000, "Never", None),
    ([NON_DEFAULT_CLASS1], pod(class_name="nondefault1"), 2000, "PreemptLowerPriority", None),
], ids=["with-class", "default-class", "nonexistent-class", "no-class-no-default", "same-priority-given",
        "different-priority-given", "system-cluster-critical", "system-node-critical", "stored-system-class-wins",
        "class-never-preempts", "class-preempts", "different-policy-given", "same-policy-given",
        "stored-class-policy-defaulted"])
async def test_pod_admission(server: APIServer, classes: list[dict[str, Any]], p: dict[str, Any],
                             priority: int | None, policy: str | None, message: str | None) -> None:
    await add(server, *classes)
    if message is not None:
        with pytest.raises(errors.StatusError) as e:
            await admit(server, pod_attrs(p))
        assert e.value.code == 403 and e.value.message == message
        return
    await admit(server, pod_attrs(p))
    assert p["spec"]["priority"] == priority and p["spec"]["preemptionPolicy"] == policy


async def test_pod_update_keeps_the_values_set_at_create(server: APIServer) -> None:
    await add(server, DEFAULT_CLASS1)
    old = pod(class_name="default1", priority=1000, preemptionPolicy="PreemptLowerPriority")
    new = pod(class_name="default1")
    await admit(server, pod_attrs(new, Operation.UPDATE, old=old))
    assert new["spec"]["priority"] == 1000 and new["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


@pytest.mark.parametrize("subresource", ["status", "binding"])
async def test_subresources_are_ignored(server: APIServer, subresource: str) -> None:
    p = pod(class_name="nonexistent")
    await admit(server, pod_attrs(p, subresource=subresource))
    assert "priority" not in p["spec"]


async def test_pod_create_through_the_api(server: APIServer) -> None:
    await add(server, DEFAULT_CLASS1)
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    resp = await server.route_trusted(Request.build("POST", "/api/v1/namespaces/default/pods", "",
                                                    {"content-type": "application/json"}, orjson.dumps(body)))
    stored = orjson.loads(resp.body)
    assert resp.status == 201, stored
    assert (stored["spec"]["priorityClassName"], stored["spec"]["priority"], stored["spec"]["preemptionPolicy"]) == \
        ("default1", 1000, "PreemptLowerPriority")
