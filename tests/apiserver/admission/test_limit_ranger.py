"""The LimitRanger admission plugin, with upstream's cases
(plugin/pkg/admission/limitranger/admission_test.go) on a memory store."""
from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.limit_ranger import LimitRanger
from kubeplane.api.quantity import Quantity
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer

NS = "test"


def rl(cpu: str = "", memory: str = "") -> dict[str, str]:
    return {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}


def req(requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    return {k: v for k, v in (("requests", requests), ("limits", limits)) if v}


def limit_range(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "abc", "namespace": NS},
            "spec": {"limits": list(items)}}


def item(type_: str, min: dict[str, str] | None = None, max: dict[str, str] | None = None,
         default: dict[str, str] | None = None, default_request: dict[str, str] | None = None,
         ratio: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_}
    for k, v in (("min", min), ("max", max), ("default", default), ("defaultRequest", default_request),
                 ("maxLimitRequestRatio", ratio)):
        if v:
            out[k] = v
    return out


def valid_limit_range() -> dict[str, Any]:
    return limit_range(item("Pod", min=rl("50m", "2Mi"), max=rl("200m", "4Gi")),
                       item("Container", min=rl("25m", "1Mi"), max=rl("100m", "2Gi"),
                            default=rl("75m", "10Mi"), default_request=rl("50m", "5Mi")))


def valid_pod(name: str, n: int, resources: dict[str, Any], *init: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"foo-{i}", "image": f"foo:V{i}", "resources": dict(resources)}
                                           for i in range(n)]}
    if init:
        spec["initContainers"] = [{"name": f"foo-{i}", "image": f"foo:V{i}", "resources": dict(r)}
                                  for i, r in enumerate(init)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


async def store(server: APIServer, lr: dict[str, Any], name: str = "abc") -> None:
    lr = {**lr, "metadata": {"name": name, "namespace": NS}}
    await server.storage.create(f"/registry/limitranges/{NS}/{name}", lr)


def attrs(obj: Any, op: Operation = Operation.CREATE, kind: str = "Pod", resource: str = "pods",
          subresource: str = "", old: Any = None) -> Attributes:
    return Attributes(op, "", "v1", resource, kind, NS, (obj or {}).get("metadata", {}).get("name", ""), obj,
                      old_obj=old, subresource=subresource)


async def admit(server: APIServer, a: Attributes) -> None:
    p = LimitRanger(server)
    await p.admit(a)
    await p.validate(a)


def test_quantity_strings() -> None:
    """Quantity.String as upstream prints it in the messages."""
    cases = {"50m": "50m", "0.5": "500m", "1000m": "1", "2": "2", "1000": "1k", "1500000": "1500k",
             "1Gi": "1Gi", "1024Mi": "1Gi", "1536Mi": "1536Mi", "512": "512", "1.5e6": "1500e3", "0": "0",
             "100Mi": "100Mi", "1G": "1G", "0.1m": "100u"}
    assert {k: str(Quantity.parse(k)) for k in cases} == cases


def test_default_container_resource_requirements() -> None:
    from kubeplane.apiserver.admission.plugins.limit_ranger import pod_mutate_limit_func, set_defaults_limit_range
    pod = valid_pod("empty-resources", 1, {})
    pod_mutate_limit_func(set_defaults_limit_range(valid_limit_range()), pod)
    assert pod["spec"]["containers"][0]["resources"] == {"requests": rl("50m", "5Mi"), "limits": rl("75m", "10Mi")}


@pytest.mark.parametrize("pod, expected, annotation", [
    (valid_pod("empty-resources", 1, {}), {"requests": rl("50m", "5Mi"), "limits": rl("75m", "10Mi")},
     "LimitRanger plugin set: cpu, memory request for container foo-0; cpu, memory limit for container foo-0"),
    (valid_pod("limit-memory", 1, req(rl("", "512Mi"), {}), req(rl("", "512Mi"), {})),
     {"requests": rl("50m", "512Mi"), "limits": rl("75m", "10Mi")},
     "LimitRanger plugin set: cpu request for container foo-0; cpu, memory limit for container foo-0; "
     "cpu request for init container foo-0; cpu, memory limit for init container foo-0"),
    (valid_pod("limit-memory", 1, req(rl("100m", "512Mi"), rl("200m", "1G")),
               req(rl("200m", "1G"), rl("400m", "2G"))),
     req(rl("100m", "512Mi"), rl("200m", "1G")), None),
], ids=["no-resources", "some-resources", "all-resources"])
def test_merge_pod_resource_requirements(pod: dict[str, Any], expected: dict[str, Any], annotation: str | None) -> None:
    from kubeplane.apiserver.admission.plugins.limit_ranger import pod_mutate_limit_func, set_defaults_limit_range
    init_before = [dict(c["resources"]) for c in pod["spec"].get("initContainers", ())]
    pod_mutate_limit_func(set_defaults_limit_range(valid_limit_range()), pod)
    assert pod["spec"]["containers"][0]["resources"] == expected
    if annotation is None:
        assert [c["resources"] for c in pod["spec"].get("initContainers", ())] == init_before
        assert "annotations" not in pod["metadata"]
    else:
        assert pod["metadata"]["annotations"] == {"kubernetes.io/limit-ranger": annotation}


SUCCESS = [
    ("ctr-min-cpu-request", valid_pod("p", 1, req(rl("100m"), {})), item("Container", min=rl("50m"))),
    ("ctr-min-cpu-request-limit", valid_pod("p", 1, req(rl("100m"), rl("200m"))), item("Container", min=rl("50m"))),
    ("ctr-min-memory-request", valid_pod("p", 1, req(rl("", "60Mi"), {})), item("Container", min=rl("", "50Mi"))),
    ("ctr-min-memory-request-limit", valid_pod("p", 1, req(rl("", "60Mi"), rl("", "100Mi"))),
     item("Container", min=rl("", "50Mi"))),
    ("ctr-max-cpu-request-limit", valid_pod("p", 1, req(rl("500m"), rl("1"))), item("Container", max=rl("2"))),
    ("ctr-max-cpu-limit", valid_pod("p", 1, req({}, rl("1"))), item("Container", max=rl("2"))),
    ("ctr-max-mem-request-limit", valid_pod("p", 1, req(rl("", "250Mi"), rl("", "500Mi"))),
     item("Container", max=rl("", "1Gi"))),
    ("ctr-max-cpu-ratio", valid_pod("p", 1, req(rl("500m"), rl("750m"))), item("Container", ratio=rl("1.5"))),
    ("ctr-max-mem-limit", valid_pod("p", 1, req({}, rl("", "500Mi"))), item("Container", max=rl("", "1Gi"))),
    ("pod-min-cpu-request", valid_pod("p", 2, req(rl("75m"), {})), item("Pod", min=rl("100m"))),
    ("pod-min-cpu-request-limit", valid_pod("p", 2, req(rl("75m"), rl("200m"))), item("Pod", min=rl("100m"))),
    ("pod-min-memory-request", valid_pod("p", 2, req(rl("", "60Mi"), {})), item("Pod", min=rl("", "100Mi"))),
    ("pod-min-memory-request-limit", valid_pod("p", 2, req(rl("", "60Mi"), rl("", "100Mi"))),
     item("Pod", min=rl("", "100Mi"))),
    ("pod-init-min-memory-request", valid_pod("p", 2, req(rl("", "60Mi"), {}), req(rl("", "100Mi"), {})),
     item("Pod", min=rl("", "100Mi"))),
    ("pod-init-min-memory-request-limit", valid_pod("p", 2, req(rl("", "60Mi"), rl("", "100Mi")),
                                                    req(rl("", "80Mi"), rl("", "100Mi"))),
     item("Pod", min=rl("", "100Mi"))),
    ("pod-max-cpu-request-limit", valid_pod("p", 2, req(rl("500m"), rl("1"))), item("Pod", max=rl("2"))),
    ("pod-max-cpu-limit", valid_pod("p", 2, req({}, rl("1"))), item("Pod", max=rl("2"))),
    ("pod-init-max-cpu-request-limit", valid_pod("p", 2, req(rl("500m"), rl("1")), req(rl("1"), rl("2")),
                                                 req(rl("1"), rl("1"))), item("Pod", max=rl("2"))),
    ("pod-max-mem-ratio", valid_pod("p", 3, req(rl("", "250Mi"), rl("", "500Mi"))), item("Pod", ratio=rl("", "2"))),
    ("pod-sidecar-counted-once", {**valid_pod("p", 1, req(rl("500m"), {})), "spec": {
        "containers": [{"name": "c", "resources": req(rl("500m"), {})}],
        "initContainers": [{"name": "s", "restartPolicy": "Always", "resources": req(rl("500m"), {})},
                           {"name": "i", "resources": req(rl("1"), {})}]}},
     item("Pod", min=rl("1500m"))),
    ("pod-level-resources-override", {**valid_pod("p", 1, req(rl("10m"), {})), "spec": {
        "resources": {"requests": rl("200m")}, "containers": [{"name": "c", "resources": req(rl("10m"), {})}]}},
     item("Pod", min=rl("100m"))),
]


@pytest.mark.parametrize("pod, lr_item", [(p, i) for _, p, i in SUCCESS], ids=[n for n, _, _ in SUCCESS])
async def test_pod_limit_func_success(server: APIServer, pod: dict[str, Any], lr_item: dict[str, Any]) -> None:
    await store(server, limit_range(lr_item))
    await admit(server, attrs(pod))


ERRORS = [
    ("ctr-min-cpu-request", valid_pod("p", 1, req(rl("40m"), {})), item("Container", min=rl("50m")),
     "minimum cpu usage per Container is 50m, but request is 40m"),
    ("ctr-min-cpu-request-limit", valid_pod("p", 1, req(rl("40m"), rl("200m"))), item("Container", min=rl("50m")),
     "minimum cpu usage per Container is 50m, but request is 40m"),
    ("ctr-min-memory-limit-below", valid_pod("p", 1, req(rl("", "60Mi"), rl("", "40Mi"))),
     item("Container", min=rl("", "50Mi")), "minimum memory usage per Container is 50Mi, but limit is 40Mi"),
    ("ctr-max-cpu-request-limit", valid_pod("p", 1, req(rl("2500m"), rl("2500m"))), item("Container", max=rl("2")),
     "maximum cpu usage per Container is 2, but limit is 2500m"),
    ("ctr-max-cpu-request-default-limit", valid_pod("p", 1, req(rl("2500m"), {})), item("Container", max=rl("2")),
     "maximum cpu usage per Container is 2, but request is 2500m"),
    ("ctr-max-cpu-ratio", valid_pod("p", 1, req(rl("1250m"), rl("2500m"))), item("Container", ratio=rl("1.5")),
     "cpu max limit to request ratio per Container is 1500m, but provided ratio is 2.000000"),
    ("ctr-max-cpu-ratio-no-request", valid_pod("p", 1, req({}, rl("2500m"))), item("Container", ratio=rl("1.5")),
     "cpu max limit to request ratio per Container is 1500m, but no request is specified or request is 0"),
    ("pod-max-mem-no-limit", valid_pod("p", 1, req(rl("", "250Mi"), {})), item("Pod", max=rl("", "1Gi")),
     "maximum memory usage per Pod is 1Gi.  No limit is specified"),
    ("pod-min-cpu-request", valid_pod("p", 1, req(rl("75m"), {})), item("Pod", min=rl("100m")),
     "minimum cpu usage per Pod is 100m, but request is 75m"),
    ("pod-min-memory-no-request", valid_pod("p", 2, req({}, rl("", "100Mi"))), item("Pod", min=rl("", "100Mi")),
     "minimum memory usage per Pod is 100Mi.  No request is specified"),
    ("pod-init-max-cpu-limit", valid_pod("p", 2, req({}, rl("1")), req({}, rl("1500m")), req({}, rl("3"))),
     item("Pod", max=rl("2")), "maximum cpu usage per Pod is 2, but limit is 3"),
    ("pod-max-cpu-request-limit", valid_pod("p", 3, req(rl("500m"), rl("1"))), item("Pod", max=rl("2")),
     "maximum cpu usage per Pod is 2, but limit is 3"),
    ("pod-max-mem-ratio", valid_pod("p", 3, req(rl("", "250Mi"), rl("", "750Mi"))), item("Pod", ratio=rl("", "1.5")),
     "memory max limit to request ratio per Pod is 1500m, but provided ratio is 3.000000"),
    ("two-errors", valid_pod("p", 1, req(rl("10m", "1Mi"), rl("10m", "1Mi"))),
     item("Container", min=rl("50m", "50Mi")),
     "[minimum cpu usage per Container is 50m, but request is 10m, "
     "minimum memory usage per Container is 50Mi, but request is 1Mi]"),
]


@pytest.mark.parametrize("pod, lr_item, message", [(p, i, m) for _, p, i, m in ERRORS], ids=[n for n, *_ in ERRORS])
async def test_pod_limit_func_errors(server: APIServer, pod: dict[str, Any], lr_item: dict[str, Any],
                                     message: str) -> None:
    await store(server, limit_range(lr_item))
    with pytest.raises(errors.StatusError) as e:
        await admit(server, attrs(pod))
    assert e.value.code == 403
    assert e.value.message == f'pods "p" is forbidden: {message}'


async def test_limit_ranger_admit_pod(server: APIServer) -> None:
    await store(server, valid_limit_range())
    pod = valid_pod("pod-with-no-limits", 1, {}, {})
    await admit(server, attrs(pod))
    assert pod["spec"]["containers"][0]["resources"] == {"requests": rl("50m", "5Mi"), "limits": rl("75m", "10Mi")}
    assert pod["spec"]["initContainers"][0]["resources"] == pod["spec"]["containers"][0]["resources"]
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"].startswith("LimitRanger plugin set: ")


@pytest.mark.parametrize("op, subresource", [(Operation.UPDATE, ""), (Operation.UPDATE, "status"),
                                             (Operation.CREATE, "binding")])
async def test_limit_ranger_ignores_pod_updates_and_subresources(server: APIServer, op: Operation,
                                                                 subresource: str) -> None:
    await store(server, valid_limit_range())
    pod = valid_pod("p", 1, req(rl("1"), rl("1")))       # far above the max: would be refused
    await admit(server, attrs(pod, op, subresource=subresource))
    assert pod["spec"]["containers"][0]["resources"] == req(rl("1"), rl("1"))


async def test_limit_ranger_checks_resize(server: APIServer) -> None:
    await store(server, valid_limit_range())
    with pytest.raises(errors.StatusError):
        await admit(server, attrs(valid_pod("p", 1, req(rl("1"), rl("1"))), Operation.UPDATE, subresource="resize"))


async def test_limit_ranger_ignores_objects_being_deleted(server: APIServer) -> None:
    await store(server, valid_limit_range())
    old = {"metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {}}
    await store(server, limit_range(item("PersistentVolumeClaim", min={"storage": "10Gi"})), "pvc")
    await admit(server, attrs(pvc, Operation.UPDATE, "PersistentVolumeClaim", "persistentvolumeclaims", old=old))


@pytest.mark.parametrize("requests, message", [
    ({"storage": "15Gi"}, None),
    ({"storage": "5Gi"}, "minimum storage usage per PersistentVolumeClaim is 10Gi, but request is 5Gi"),
    ({"storage": "200Gi"}, "maximum storage usage per PersistentVolumeClaim is 100Gi, but request is 200Gi"),
    ({}, "[minimum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified, "
         "maximum storage usage per PersistentVolumeClaim is 100Gi.  No request is specified]"),
])
async def test_persistent_volume_claim_limit_func(server: APIServer, requests: dict[str, str],
                                                  message: str | None) -> None:
    await store(server, limit_range(item("PersistentVolumeClaim", min={"storage": "10Gi"}, max={"storage": "100Gi"})))
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": NS},
           "spec": {"resources": {"requests": requests}}}
    a = attrs(pvc, kind="PersistentVolumeClaim", resource="persistentvolumeclaims")
    if message is None:
        await admit(server, a)
        return
    with pytest.raises(errors.StatusError) as e:
        await admit(server, a)
    assert e.value.message == f'persistentvolumeclaims "c" is forbidden: {message}'


async def test_no_limit_ranges_leaves_the_pod_alone(server: APIServer) -> None:
    pod = valid_pod("p", 1, {})
    await admit(server, attrs(pod))
    assert pod == valid_pod("p", 1, {})


async def test_pod_create_through_the_api(server: APIServer) -> None:
    await server.storage.create("/registry/namespaces/test", {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": NS}, "status": {"phase": "Active"}})
    await store(server, valid_limit_range())

    async def post(pod: dict[str, Any]) -> Any:
        resp = await server.route_trusted(Request.build("POST", f"/api/v1/namespaces/{NS}/pods", "",
                                                        {"content-type": "application/json"}, orjson.dumps(pod)))
        return resp.status, orjson.loads(resp.body)
    status, body = await post(valid_pod("web", 1, {}))
    assert status == 201, body
    assert body["spec"]["containers"][0]["resources"] == {"requests": rl("50m", "5Mi"), "limits": rl("75m", "10Mi")}
    assert body["status"]["qosClass"] == "Burstable"
    status, body = await post(valid_pod("big", 1, req(rl("150m"), rl("150m"))))
    assert status == 403
    assert body["message"] == ('pods "big" is forbidden: maximum cpu usage per Container is 100m, '
                               'but limit is 150m')


async def test_limit_ranges_are_current_at_each_look_up(server: APIServer) -> None:
    """The watch-fed index sees a LimitRange written just before the pod, and its deletion."""
    plugin = LimitRanger(server)
    first = valid_pod("p1", 1, {})
    await plugin.admit(attrs(first))                      # primes the index: nothing to apply
    assert "resources" not in first["spec"]["containers"][0] or not first["spec"]["containers"][0]["resources"]
    await store(server, valid_limit_range())
    second = valid_pod("p2", 1, {})
    await plugin.admit(attrs(second))
    assert second["spec"]["containers"][0]["resources"]["requests"] == rl("50m", "5Mi")
    await server.storage.delete(f"/registry/limitranges/{NS}/abc")
    third = valid_pod("p3", 1, {})
    await plugin.admit(attrs(third))
    assert not third["spec"]["containers"][0].get("resources")


async def test_limit_ranges_after_the_history_window(server: APIServer) -> None:
    """A look-up after the watch fell out of the history window lists again."""
    plugin = LimitRanger(server)
    await plugin.admit(attrs(valid_pod("p1", 1, {})))
    await store(server, valid_limit_range())
    await server.storage.compact(server.storage.revision)
    pod = valid_pod("p2", 1, {})
    await plugin.admit(attrs(pod))
    assert pod["spec"]["containers"][0]["resources"]["limits"] == rl("75m", "10Mi")
