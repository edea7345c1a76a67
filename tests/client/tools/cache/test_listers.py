"""Listers over an Indexer, and the SharedInformerFactory over a real in-process API server."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeplane.api import errors, labels
from kubeplane.api.resources import lookup
from kubeplane.api.types import apps_v1, core_v1, meta_v1
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.listers import PodLister
from kubeplane.client.tools.cache import (
    NAMESPACE_INDEX, GenericLister, Indexer, ResourceEventHandlerFuncs, meta_namespace_index_func,
)
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.storage import new_storage

from .fakes import settle


def pod(name: str, ns: str, **lbls: str) -> core_v1.Pod:
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=name, namespace=ns, labels=lbls or None))


def names(objs: list[Any]) -> list[str]:
    return sorted(o.metadata.name for o in objs)


@pytest.fixture
def pod_lister() -> PodLister:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    for p in (pod("web-1", "prod", app="web", tier="front"), pod("web-2", "prod", app="web", tier="back"),
              pod("db-1", "prod", app="db"), pod("web-1", "dev", app="web"), pod("plain", "dev")):
        idx.add(p)
    return PodLister(idx, lookup("", "v1", "pods"))


def test_namespace_get(pod_lister: PodLister) -> None:
    assert pod_lister.namespace("prod").get("web-1").metadata.labels == {"app": "web", "tier": "front"}
    assert pod_lister.pods("dev").get("web-1").metadata.namespace == "dev"       # the generated-lister alias


@pytest.mark.parametrize("resource, ns, name, message, details", [
    # upstream's generated listers: errors.NewNotFound(v1.Resource("pod"), name) — the lower-case kind
    pytest.param(("", "v1", "pods"), "prod", "nope", 'pod "nope" not found', {"name": "nope", "kind": "pod"},
                 id="core"),
    pytest.param(("apps", "v1", "deployments"), "prod", "web", 'deployment.apps "web" not found',
                 {"name": "web", "group": "apps", "kind": "deployment"}, id="apps"),
    pytest.param(("apps", "v1", "replicasets"), "prod", "web-5d9", 'replicaset.apps "web-5d9" not found',
                 {"name": "web-5d9", "group": "apps", "kind": "replicaset"}, id="replicasets"),
])
def test_get_missing_raises_upstreams_not_found(resource: tuple[str, str, str], ns: str, name: str, message: str,
                                                details: dict[str, str]) -> None:
    lister = GenericLister(Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func}), lookup(*resource))
    with pytest.raises(errors.NotFound) as exc:
        lister.namespace(ns).get(name)
    assert str(exc.value) == message
    assert exc.value.code == 404 and exc.value.reason == "NotFound"
    assert exc.value.details == details


def test_get_in_the_wrong_namespace_is_not_found(pod_lister: PodLister) -> None:
    with pytest.raises(errors.NotFound, match='pod "db-1" not found'):
        pod_lister.pods("dev").get("db-1")


def test_cluster_scoped_get() -> None:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    idx.add(core_v1.Node(metadata=meta_v1.ObjectMeta(name="node-1")))
    lister = GenericLister(idx, lookup("", "v1", "nodes"))
    assert lister.get("node-1").metadata.name == "node-1"
    with pytest.raises(errors.NotFound, match='node "node-2" not found'):
        lister.get("node-2")


@pytest.mark.parametrize("selector, prod, everywhere", [
    pytest.param(labels.EVERYTHING, ["db-1", "web-1", "web-2"], ["db-1", "plain", "web-1", "web-1", "web-2"],
                 id="everything"),
    pytest.param(labels.parse("app=web"), ["web-1", "web-2"], ["web-1", "web-1", "web-2"], id="equality"),
    pytest.param(labels.parse("app in (web,db),tier!=front"), ["db-1", "web-2"], ["db-1", "web-1", "web-2"],
                 id="set-based"),
    pytest.param(labels.parse("!app"), [], ["plain"], id="does-not-exist"),
    pytest.param(labels.from_label_selector({"matchLabels": {"app": "web"},
                                             "matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
                 ["web-1", "web-2"], ["web-1", "web-2"], id="label-selector"),
    pytest.param(labels.from_label_selector({}), ["db-1", "web-1", "web-2"],
                 ["db-1", "plain", "web-1", "web-1", "web-2"], id="empty-selector-selects-all"),
    pytest.param(labels.from_label_selector(None), [], [], id="nil-selector-selects-nothing"),
])
def test_list_with_selector(pod_lister: PodLister, selector: labels.Selector | None, prod: list[str],
                            everywhere: list[str]) -> None:
    assert names(pod_lister.pods("prod").list(selector)) == prod
    assert names(pod_lister.list(selector)) == everywhere
    assert names(pod_lister.namespace("").list(selector)) == everywhere      # "" is NamespaceAll


def test_list_defaults_to_everything(pod_lister: PodLister) -> None:
    assert names(pod_lister.pods("dev").list()) == ["plain", "web-1"]
    assert len(pod_lister.list()) == 5


def test_unknown_alias_is_an_attribute_error(pod_lister: PodLister) -> None:
    with pytest.raises(AttributeError):
        pod_lister.deployments("prod")  # type: ignore[attr-defined]


# --- the factory over a real (in-process) API server ----------------------------------------------


@pytest.fixture
async def clientset() -> Clientset:
    api = APIServer(new_storage("memory"))
    await api.bootstrap()
    return Clientset(InProcessTransport(api))


async def test_factory_shares_one_informer_per_resource(clientset: Clientset) -> None:
    await clientset.apps_v1().deployments("default").create(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
         "spec": {"selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    factory = SharedInformerFactory(clientset)
    first, second = factory.apps_v1().deployments(), factory.apps_v1().deployments()   # two callers
    assert first is second and first.informer() is second.informer()
    cms = factory.core_v1().configmaps()
    seen: list[str] = []
    first.informer().add_event_handler(ResourceEventHandlerFuncs(add_func=lambda d: seen.append(d.metadata.name)))
    factory.start()
    factory.start()                                               # idempotent: still one task each
    assert len(factory.tasks) == 2
    try:
        assert await asyncio.wait_for(factory.wait_for_cache_sync(), 10) is True
        assert first.informer().has_synced() and cms.informer().has_synced()
        d = second.lister().deployments("default").get("web")
        assert isinstance(d, apps_v1.Deployment) and seen == ["web"]
        assert first.lister().list(labels.EVERYTHING) == [d]

        await clientset.core_v1().configmaps("default").create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "labels": {"a": "b"}}})
        lister = cms.lister()
        assert await settle(lambda: len(lister.list(labels.parse("a=b"))) == 1, rounds=2000)
        assert lister.configmaps("default").get("cfg").metadata.labels == {"a": "b"}
    finally:
        await factory.shutdown()
    assert all(t.done() for t in factory.tasks.values())


async def test_factory_waits_only_for_started_informers_and_stays_shut_down(clientset: Clientset) -> None:
    factory = SharedInformerFactory(clientset)
    started = factory.core_v1().configmaps()
    factory.start()
    never_started = factory.core_v1().pods()                    # asked for after start()
    try:
        assert await asyncio.wait_for(factory.wait_for_cache_sync(), 10) is True
        assert started.informer().has_synced() and not never_started.informer().has_synced()
    finally:
        await factory.shutdown()
    factory.start()                                               # upstream: Start after Shutdown is a no-op
    assert set(factory.tasks) == {("", "v1", "configmaps")}
    assert not never_started.informer().started


async def test_factory_rejects_unknown_resources(clientset: Clientset) -> None:
    factory = SharedInformerFactory(clientset)
    with pytest.raises(AttributeError):
        factory.apps_v1().widgets()
