"""The generated typed accessors (tools/gen_client.py): committed output fresh, every served
resource reachable through the clientset, the informer factory and its lister, each typed."""
from __future__ import annotations

import importlib.util
import pathlib
import sys
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.resources import GROUP_VERSIONS as ALL_GROUP_VERSIONS
from kubeplane.api.resources import RESOURCES as ALL_RESOURCES
from kubeplane.api.resources import ResourceInfo
from kubeplane.client.clientset import Clientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.listers import LISTERS
from kubeplane.client.rest import ResourceClient
from kubeplane.client.transport import RawResponse

ROOT = pathlib.Path(__file__).resolve().parents[2]

# metrics.k8s.io has a clientset of its own upstream (k8s.io/metrics); no typed accessors here.
RESOURCES = tuple(r for r in ALL_RESOURCES if r.group != "metrics.k8s.io")
GROUP_VERSIONS = tuple(gv for gv in ALL_GROUP_VERSIONS if gv[0] != "metrics.k8s.io")


class _NoTransport:
    async def request(self, *args: Any, **kw: Any) -> RawResponse:
        raise AssertionError("no request expected")

    def stream(self, *args: Any, **kw: Any) -> Any:
        raise AssertionError("no request expected")

    async def close(self) -> None:
        pass


def _method(ri: ResourceInfo) -> str:
    """The accessor's group method: the api.types module of its kind (core_v1, apps_v1 ...)."""
    return types.kind_type(ri.api_version, ri.kind).__module__.rpartition(".")[2]


def test_committed_output_is_what_the_generator_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("gen_client", ROOT / "tools/gen_client.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "gen_client", gen)         # dataclasses look their module up
    monkeypatch.setattr(sys, "path", list(sys.path))            # the generator puts src/ first
    spec.loader.exec_module(gen)
    for name, src in gen.render_all().items():
        assert (ROOT / "src/kubeplane" / name).read_text() == src, f"{name} is stale: run tools/gen_client.py"


def test_every_group_version_has_a_factory_and_clientset_method() -> None:
    methods = {_method(ri) for ri in RESOURCES}
    assert len(methods) == len(GROUP_VERSIONS)
    informable = {_method(ri) for ri in RESOURCES if "watch" in ri.verbs}    # not authentication_v1
    for name in methods:
        assert callable(getattr(Clientset, name))
        assert callable(getattr(SharedInformerFactory, name, None)) == (name in informable)


@pytest.mark.parametrize("ri", RESOURCES, ids=lambda ri: f"{ri.plural}.{ri.group or 'core'}")
def test_typed_accessors_reach_the_resource(ri: ResourceInfo) -> None:
    cs = Clientset(_NoTransport())
    group = getattr(cs, _method(ri))()
    client = getattr(group, ri.plural)("ns1") if ri.namespaced else getattr(group, ri.plural)()
    assert isinstance(client, ResourceClient) and client.ri is ri
    assert client.type is types.kind_type(ri.api_version, ri.kind)
    assert client.namespace == ("ns1" if ri.namespaced else "")

    factory = SharedInformerFactory(cs)
    if "watch" not in ri.verbs:         # create-only reviews: no lister, no informer (as client-go)
        assert (ri.group, ri.version, ri.plural) not in LISTERS
        return
    informer = getattr(getattr(factory, _method(ri))(), ri.plural)()
    assert informer is factory.informer_for(ri.group, ri.version, ri.plural)     # one shared informer
    lister = informer.lister()
    assert type(lister) is LISTERS[(ri.group, ri.version, ri.plural)]
    assert hasattr(lister, ri.plural) == ri.namespaced      # upstream: Pods(ns) on PodLister, none on NodeLister


def test_an_unknown_resource_is_an_attribute_error() -> None:
    cs = Clientset(_NoTransport())
    with pytest.raises(AttributeError):
        cs.apps_v1().widgets("default")  # type: ignore[attr-defined]
    with pytest.raises(KeyError):
        cs.apps_v1().resource("widgets")


def test_factory_transform_is_set_on_every_informer() -> None:
    """Upstream: informers.WithTransform — each informer the factory makes gets it."""
    from kubeplane.client.tools.cache.shared_informer import transform_strip_managed_fields
    factory = SharedInformerFactory(Clientset(_NoTransport()), transform=transform_strip_managed_fields)
    assert factory.core_v1().pods().informer().transform is transform_strip_managed_fields
    assert factory.apps_v1().deployments().informer().transform is transform_strip_managed_fields
    assert SharedInformerFactory(Clientset(_NoTransport())).core_v1().nodes().informer().transform is None
