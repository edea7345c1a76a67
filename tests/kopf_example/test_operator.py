"""Testing a kopf operator (operator.py) with kubeplane.testing: the README's worked example.

The control plane (the `kubeplane` fixture, one per session) serves kopf's example CRD, applied
once for this module; each test gets a fresh namespace and runs the operator in it with kopf's
own KopfRunner, then drives it with the official client as it would a real cluster.
"""
from __future__ import annotations

import pathlib
import time
from typing import Any, Callable

import pytest

pytest.importorskip("kopf")
kubernetes = pytest.importorskip("kubernetes")

HERE = pathlib.Path(__file__).parent
OPERATOR = str(HERE / "operator.py")
GROUP, VERSION, PLURAL = "kopf.dev", "v1", "kopfexamples"


@pytest.fixture(scope="module", autouse=True)
def crd(kubeplane: Any) -> None:
    kubeplane.apply(HERE / "crd.yaml")             # waits until the CRD is Established


def eventually(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll check() until it returns something truthy without raising; its last error otherwise."""
    deadline = time.monotonic() + timeout
    result = None
    while True:
        try:
            result = check()
            if result:
                return result
        except (AssertionError, kubernetes.client.ApiException):
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"still {result!r} after {timeout}s")
        time.sleep(0.05)


def example(name: str, field: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KopfExample", "metadata": {"name": name},
            "spec": {"field": field, "duration": "1m"}}


def test_create_update_delete(kubeplane_kopf: Any, kubeplane_namespace: str, kubeplane_client: Any) -> None:
    crs = kubernetes.client.CustomObjectsApi(kubeplane_client)
    core = kubernetes.client.CoreV1Api(kubeplane_client)
    ns = kubeplane_namespace
    with kubeplane_kopf("--namespace", ns, OPERATOR) as runner:
        crs.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, example("kex1", "one"))

        def kex1() -> dict[str, Any]:
            return crs.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "kex1")

        # create: the handler's result in the status, the child owned by the example
        def handled() -> dict[str, Any] | None:
            o = kex1()
            return o if "create_fn" in o.get("status", {}) else None

        obj = eventually(handled)
        assert obj["status"]["create_fn"] == {"children": ["kex1-child"], "message": "created with field=one"}
        assert obj["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
        child = core.read_namespaced_config_map("kex1-child", ns)
        assert child.data == {"field": "one"}
        assert [(o.kind, o.name, o.uid) for o in child.metadata.owner_references] == \
            [("KopfExample", "kex1", obj["metadata"]["uid"])]

        # update: the field handler patches the child and the status
        crs.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "kex1", {"spec": {"field": "two"}})
        eventually(lambda: core.read_namespaced_config_map("kex1-child", ns).data == {"field": "two"})
        eventually(lambda: kex1()["status"].get("field") == "two")

        # timer: ticks counted in the status
        eventually(lambda: kex1()["status"].get("ticks", 0) >= 2)

        # delete: held by kopf's finalizer until the handler ran, then gone
        crs.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "kex1")
        eventually(lambda: core.read_namespaced_config_map("kex1-deleted", ns))
        eventually(lambda: _gone(kex1))
    assert runner.exit_code == 0
    assert runner.exception is None
    assert "Handler 'create_fn' succeeded." in runner.output
    assert "Handler 'delete_fn' succeeded." in runner.output


def test_objects_of_other_namespaces_are_left_alone(kubeplane: Any, kubeplane_kopf: Any,
                                                    kubeplane_namespace: str, kubeplane_client: Any) -> None:
    crs = kubernetes.client.CustomObjectsApi(kubeplane_client)
    other = kubeplane.create_namespace(prefix="other")
    try:
        with kubeplane_kopf("--namespace", kubeplane_namespace, OPERATOR):
            crs.create_namespaced_custom_object(GROUP, VERSION, other, PLURAL, example("elsewhere", "x"))
            crs.create_namespaced_custom_object(GROUP, VERSION, kubeplane_namespace, PLURAL, example("here", "y"))
            eventually(lambda: "create_fn" in crs.get_namespaced_custom_object(
                GROUP, VERSION, kubeplane_namespace, PLURAL, "here").get("status", {}))
            left = crs.get_namespaced_custom_object(GROUP, VERSION, other, PLURAL, "elsewhere")
            assert "status" not in left or "create_fn" not in left["status"]
            assert not left["metadata"].get("finalizers")
    finally:
        kubeplane.delete_namespace(other)


def test_the_child_is_collected_with_its_owner(kubeplane_kopf: Any, kubeplane_namespace: str,
                                               kubeplane_client: Any) -> None:
    crs = kubernetes.client.CustomObjectsApi(kubeplane_client)
    core = kubernetes.client.CoreV1Api(kubeplane_client)
    ns = kubeplane_namespace
    with kubeplane_kopf("--namespace", ns, OPERATOR):
        crs.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, example("kex2", "one"))
        eventually(lambda: core.read_namespaced_config_map("kex2-child", ns))
        crs.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "kex2")
        eventually(lambda: _gone(lambda: crs.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "kex2")))
    # the collector learns custom kinds from discovery every few seconds (GarbageCollector.sync)
    eventually(lambda: _gone(lambda: core.read_namespaced_config_map("kex2-child", ns)), timeout=30)


def _gone(read: Callable[[], Any]) -> bool:
    try:
        read()
    except kubernetes.client.ApiException as err:
        if err.status == 404:
            return True
        raise
    return False
