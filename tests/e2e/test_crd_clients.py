"""Python clients' custom-resource APIs against `kubeplane up` (issue 13: "the CRD tests of
lightkube, kr8s and pykube" failed on CRDs): each client creates a CRD with its own API, waits
for it to be Established as its users do, then creates, gets, lists by label, patches (spec and
the status subresource), watches and deletes custom objects, and deletes the CRD.

The official `kubernetes` client (a test dependency; its typed CustomObjectsApi and its dynamic
client) always runs; lightkube, kr8s and pykube-ng
run where they are installed (they are not kubeplane's dependencies) and are skipped otherwise.
Each client gets a CRD group of its own, so one cluster serves them all.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from .cluster import Cluster, eventually, namespace_for_test, running

VERSION, KIND, PLURAL = "v1", "Gizmo", "gizmos"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(storage="memory")


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(cluster, request.node.name)


def crd(group: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{PLURAL}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": PLURAL, "singular": "gizmo", "kind": KIND, "shortNames": ["gz"]},
                     "versions": [{"name": VERSION, "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": {"type": "object", "properties": {
                                           "size": {"type": "integer", "default": 1},
                                           "color": {"type": "string"}}},
                                       "status": {"type": "object", "properties": {
                                           "phase": {"type": "string"}}}}}}}]}}


def gizmo(group: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/{VERSION}", "kind": KIND,
            "metadata": {"name": name, "labels": {"app": "gizmo", "name": name}}, "spec": spec}


class Watched:
    """A watch's events (type, name) collected on a thread, as a client's users consume them."""

    def __init__(self, events: Iterator[tuple[str, str]]) -> None:
        self.seen: list[tuple[str, str]] = []
        self.thread = threading.Thread(target=self._run, args=(events,), daemon=True)
        self.thread.start()

    def _run(self, events: Iterator[tuple[str, str]]) -> None:
        for event in events:
            self.seen.append(event)
            if event[0] == "DELETED":
                return

    def until(self, *expected: tuple[str, str]) -> None:
        eventually(lambda: all(e in self.seen for e in expected), f"the watch to see {expected}; saw {self.seen}")


# -- the official client ---------------------------------------------------------------------

def test_kubernetes_client(cluster: Cluster, ns: str) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    group = "official.example.com"
    with cluster.python_client() as api_client:
        ext = kubernetes.client.ApiextensionsV1Api(api_client)
        crs = kubernetes.client.CustomObjectsApi(api_client)
        created = ext.create_custom_resource_definition(crd(group))      # the typed model decodes the answer
        assert created.metadata.name == f"{PLURAL}.{group}"
        assert created.status.stored_versions == [VERSION]

        def established() -> bool:
            got = ext.read_custom_resource_definition(f"{PLURAL}.{group}")
            return any(c.type == "Established" and c.status == "True" for c in got.status.conditions or [])
        eventually(established, "Established")

        w = kubernetes.watch.Watch()
        events = ((e["type"], e["object"]["metadata"]["name"]) for e in w.stream(
            crs.list_namespaced_custom_object, group, VERSION, ns, PLURAL, timeout_seconds=30))
        watched = Watched(events)
        obj = crs.create_namespaced_custom_object(group, VERSION, ns, PLURAL, gizmo(group, "g1", color="red"))
        assert obj["spec"] == {"color": "red", "size": 1}            # defaulted
        crs.create_namespaced_custom_object(group, VERSION, ns, PLURAL, gizmo(group, "g2"))
        got = crs.get_namespaced_custom_object(group, VERSION, ns, PLURAL, "g1")
        assert got["metadata"]["uid"] == obj["metadata"]["uid"]
        listed = crs.list_namespaced_custom_object(group, VERSION, ns, PLURAL, label_selector="name=g2")
        assert [o["metadata"]["name"] for o in listed["items"]] == ["g2"]
        everywhere = crs.list_cluster_custom_object(group, VERSION, PLURAL)
        assert sorted(o["metadata"]["name"] for o in everywhere["items"]) == ["g1", "g2"]

        patched = crs.patch_namespaced_custom_object(group, VERSION, ns, PLURAL, "g1", {"spec": {"size": 3}})
        assert patched["spec"] == {"color": "red", "size": 3}
        assert patched["metadata"]["generation"] == 2
        status = crs.patch_namespaced_custom_object_status(group, VERSION, ns, PLURAL, "g1",
                                                           {"status": {"phase": "Ready"}})
        assert status["status"] == {"phase": "Ready"} and status["metadata"]["generation"] == 2
        # the main resource ignores status, the status subresource ignores spec
        ignored = crs.patch_namespaced_custom_object(group, VERSION, ns, PLURAL, "g1", {"status": {"phase": "X"}})
        assert ignored["status"] == {"phase": "Ready"}
        applied = crs.patch_namespaced_custom_object(
            group, VERSION, ns, PLURAL, "g2", gizmo(group, "g2", color="blue"), field_manager="test",
            force=True, _content_type="application/apply-patch+yaml")
        assert applied["spec"] == {"color": "blue", "size": 1}
        assert "test" in [m["manager"] for m in applied["metadata"]["managedFields"]]

        crs.delete_namespaced_custom_object(group, VERSION, ns, PLURAL, "g1")
        watched.until(("ADDED", "g1"), ("ADDED", "g2"), ("MODIFIED", "g1"), ("DELETED", "g1"))
        w.stop()
        with pytest.raises(kubernetes.client.ApiException) as err:
            crs.get_namespaced_custom_object(group, VERSION, ns, PLURAL, "g1")
        assert err.value.status == 404

        ext.delete_custom_resource_definition(f"{PLURAL}.{group}")

        def gone() -> bool:
            try:
                ext.read_custom_resource_definition(f"{PLURAL}.{group}")
            except kubernetes.client.ApiException as e:
                return e.status == 404
            return False
        eventually(gone, "the CRD deleted (its objects first)")


def test_kubernetes_dynamic_client(cluster: Cluster, ns: str) -> None:
    """kubernetes.dynamic: kinds found through discovery (the CRD's, its status subresource)."""
    pytest.importorskip("kubernetes")
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    group = "dynamic.example.com"
    with cluster.python_client() as api_client:
        dyn = DynamicClient(api_client)
        crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
        crds.create(body=crd(group))
        eventually(lambda: any(c.type == "Established" and c.status == "True" for c in
                               crds.get(name=f"{PLURAL}.{group}").status.conditions or []), "Established")

        def gizmos() -> Any:                     # the discoverer's cache is refreshed on a miss
            try:
                return dyn.resources.get(api_version=f"{group}/{VERSION}", kind=KIND)
            except ResourceNotFoundError:
                return None
        res = eventually(gizmos, "the kind discovered")
        assert (res.name, res.namespaced, res.short_names) == (PLURAL, True, ["gz"])
        created = res.create(body=gizmo(group, "g1", color="red"), namespace=ns)
        assert created.spec.size == 1
        assert [o.metadata.name for o in res.get(namespace=ns, label_selector="name=g1").items] == ["g1"]
        patched = res.patch(name="g1", namespace=ns, body={"spec": {"size": 2}},
                            content_type="application/merge-patch+json")
        assert patched.spec.size == 2
        status = res.status.patch(name="g1", namespace=ns, body={"status": {"phase": "Ready"}},
                                  content_type="application/merge-patch+json")
        assert status.status.phase == "Ready"
        res.delete(name="g1", namespace=ns)
        with pytest.raises(NotFoundError):
            res.get(name="g1", namespace=ns)
        crds.delete(name=f"{PLURAL}.{group}")


# -- lightkube ---------------------------------------------------------------------------------

def test_lightkube(cluster: Cluster, ns: str) -> None:
    lightkube = pytest.importorskip("lightkube")
    from lightkube import codecs
    from lightkube.generic_resource import create_namespaced_resource, load_in_cluster_generic_resources
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
    from lightkube.types import PatchType

    group = "lightkube.example.com"
    client = lightkube.Client(config=lightkube.KubeConfig.from_file(cluster.kubeconfig))
    created = client.create(codecs.from_dict(crd(group)))
    assert created.status.storedVersions == [VERSION]
    client.wait(CustomResourceDefinition, f"{PLURAL}.{group}", for_conditions=["Established"])
    load_in_cluster_generic_resources(client)            # lists the CRDs: the kind becomes known
    Gizmo = create_namespaced_resource(group, VERSION, KIND, PLURAL)
    assert codecs.from_dict(gizmo(group, "g0")).__class__ is Gizmo

    watched = Watched((t, o.metadata.name) for t, o in client.watch(Gizmo, namespace=ns))
    obj = client.create(Gizmo(metadata=ObjectMeta(name="g1", labels={"name": "g1"}), spec={"color": "red"}),
                        namespace=ns)
    assert obj.spec == {"color": "red", "size": 1}
    client.create(codecs.from_dict(gizmo(group, "g2")), namespace=ns)
    assert client.get(Gizmo, "g1", namespace=ns).metadata.uid == obj.metadata.uid
    assert [o.metadata.name for o in client.list(Gizmo, namespace=ns, labels={"name": "g2"})] == ["g2"]
    assert sorted(o.metadata.name for o in client.list(Gizmo, namespace=lightkube.ALL_NS)) == ["g1", "g2"]

    patched = client.patch(Gizmo, "g1", {"spec": {"size": 3}}, namespace=ns, patch_type=PatchType.MERGE)
    assert patched.spec == {"color": "red", "size": 3} and patched.metadata.generation == 2
    status = client.patch(Gizmo.Status, "g1", {"status": {"phase": "Ready"}}, namespace=ns,
                          patch_type=PatchType.MERGE)
    assert status.status == {"phase": "Ready"}
    applied = client.apply(codecs.from_dict(gizmo(group, "g2", color="blue")), namespace=ns,
                           field_manager="test", force=True)
    assert applied.spec == {"color": "blue", "size": 1}
    replaced = client.replace(Gizmo(metadata=ObjectMeta(name="g2", resourceVersion=applied.metadata.resourceVersion),
                                    spec={"color": "green"}), namespace=ns)
    assert replaced.spec == {"color": "green", "size": 1}

    client.delete(Gizmo, "g1", namespace=ns)
    watched.until(("ADDED", "g1"), ("ADDED", "g2"), ("MODIFIED", "g1"), ("DELETED", "g1"))
    with pytest.raises(lightkube.ApiError) as err:
        client.get(Gizmo, "g1", namespace=ns)
    assert err.value.status.code == 404
    client.delete(CustomResourceDefinition, f"{PLURAL}.{group}")


# -- kr8s --------------------------------------------------------------------------------------

def test_kr8s(cluster: Cluster, ns: str) -> None:
    kr8s = pytest.importorskip("kr8s")
    from kr8s.objects import CustomResourceDefinition, new_class

    group = "kr8s.example.com"
    api = kr8s.api(kubeconfig=str(cluster.kubeconfig))
    definition = CustomResourceDefinition(crd(group), api=api)
    definition.create()
    definition.wait("condition=Established", timeout=30)
    assert definition.raw["status"]["storedVersions"] == [VERSION]
    # kinds by name, through discovery (its singularName): the plural, the short name, the kind
    for name in (f"{PLURAL}.{group}", "gz", KIND):
        assert api.lookup_kind(name) == (f"gizmo.{group}/{VERSION}", PLURAL, True)
    Gizmo = new_class(KIND, version=f"{group}/{VERSION}", namespaced=True)

    watched = Watched((t, o.name) for t, o in api.watch(f"{PLURAL}.{group}", namespace=ns))
    g1 = Gizmo({**gizmo(group, "g1", color="red"), "metadata": {"name": "g1", "namespace": ns, "labels": {"name": "g1"}}},
               api=api)
    g1.create()
    assert g1.spec == {"color": "red", "size": 1}
    Gizmo({**gizmo(group, "g2"), "metadata": {"name": "g2", "namespace": ns, "labels": {"name": "g2"}}}, api=api).create()
    got = api.get(f"{PLURAL}.{group}", "g1", namespace=ns)
    assert [o.metadata.uid for o in got] == [g1.metadata.uid]
    assert [o.name for o in api.get("gz", namespace=ns, label_selector={"name": "g2"})] == ["g2"]
    assert sorted(o.name for o in Gizmo.list(namespace=kr8s.ALL, api=api)) == ["g1", "g2"]

    g1.patch({"spec": {"size": 3}})
    assert g1.spec == {"color": "red", "size": 3} and g1.metadata.generation == 2
    g1.patch({"status": {"phase": "Ready"}}, subresource="status")
    g1.refresh()
    assert g1.status == {"phase": "Ready"}
    g1.label(tier="one")
    assert g1.labels == {"name": "g1", "tier": "one"}

    g1.delete()
    watched.until(("ADDED", "g1"), ("ADDED", "g2"), ("MODIFIED", "g1"), ("DELETED", "g1"))
    assert not g1.exists()
    definition.delete()


# -- pykube-ng ---------------------------------------------------------------------------------

def test_pykube(cluster: Cluster, ns: str) -> None:
    pykube = pytest.importorskip("pykube")

    group = "pykube.example.com"
    api = pykube.HTTPClient(pykube.KubeConfig.from_file(str(cluster.kubeconfig)))
    definition = pykube.CustomResourceDefinition(api, crd(group))
    definition.create()
    assert definition.obj["status"]["storedVersions"] == [VERSION]

    def established() -> bool:
        definition.reload()
        return any(c["type"] == "Established" and c["status"] == "True"
                   for c in definition.obj["status"].get("conditions", []))
    eventually(established, "Established")
    Gizmo = pykube.object_factory(api, f"{group}/{VERSION}", KIND)     # through discovery
    assert issubclass(Gizmo, pykube.objects.NamespacedAPIObject) and Gizmo.endpoint == PLURAL

    watch = Gizmo.objects(api, namespace=ns).watch()
    watched = Watched((e.type, e.object.name) for e in watch)
    g1 = Gizmo(api, {**gizmo(group, "g1", color="red"), "metadata": {"name": "g1", "namespace": ns,
                                                                    "labels": {"name": "g1"}}})
    g1.create()
    assert g1.obj["spec"] == {"color": "red", "size": 1}
    Gizmo(api, {**gizmo(group, "g2"), "metadata": {"name": "g2", "namespace": ns, "labels": {"name": "g2"}}}).create()
    assert Gizmo.objects(api, namespace=ns).get_by_name("g1").metadata["uid"] == g1.metadata["uid"]
    assert [o.name for o in Gizmo.objects(api, namespace=ns).filter(selector={"name": "g2"})] == ["g2"]
    assert sorted(o.name for o in Gizmo.objects(api, namespace=pykube.all)) == ["g1", "g2"]
    table = Gizmo.objects(api, namespace=ns).as_table()                # Table (meta.k8s.io/v1beta1)
    assert [c["name"] for c in table.columns] == ["Name", "Age"]
    assert sorted(row["cells"][0] for row in table.rows) == ["g1", "g2"]

    g1.obj["spec"]["size"] = 3
    g1.update()                                                         # a merge patch of what changed
    assert g1.obj["spec"] == {"color": "red", "size": 3} and g1.obj["metadata"]["generation"] == 2
    g1.patch({"status": {"phase": "Ready"}}, subresource="status")
    g1.reload()
    assert g1.obj["status"] == {"phase": "Ready"}

    g1.delete()
    watched.until(("ADDED", "g1"), ("ADDED", "g2"), ("MODIFIED", "g1"), ("DELETED", "g1"))
    assert not g1.exists()
    definition.delete()
    api.session.close()
