"""The storage, endpoint and quota kinds are served with upstream's identity (discovery table)."""
from __future__ import annotations

import pytest

from kubeplane.api import upstream_resources as upstream
from kubeplane.apiserver.registry import REGISTRY

KINDS = [("", "v1", p) for p in ("persistentvolumes", "persistentvolumeclaims", "limitranges", "resourcequotas",
                                  "endpoints", "componentstatuses")] + \
        [("storage.k8s.io", "v1", p) for p in ("storageclasses", "csidrivers", "csinodes", "csistoragecapacities",
                                                "volumeattachments", "volumeattributesclasses")] + \
        [("discovery.k8s.io", "v1", "endpointslices")]


@pytest.mark.parametrize("key", KINDS, ids=lambda k: f"{k[2]}.{k[0] or 'core'}")
def test_identity_is_upstream_s(key: tuple[str, str, str]) -> None:
    d, u = REGISTRY.lookup(*key), upstream.lookup(*key)
    assert d is not None and u is not None
    assert (d.kind, d.singular, d.namespaced, d.definition) == (u.kind, u.singular_name, u.namespaced, u.definition)
    assert (sorted(d.verbs), d.short_names, d.categories) == (sorted(u.verbs), u.short_names, u.categories)
    assert [(s.name, s.kind, sorted(s.verbs)) for s in d.subresources] == \
        [(s.name, s.kind, sorted(s.verbs)) for s in u.subresources]


def test_endpoints_keep_the_storage_prefix_the_service_allocator_writes() -> None:
    d = REGISTRY.lookup("", "v1", "endpoints")
    assert d is not None and d.key("default", "kubernetes") == "/registry/endpoints/default/kubernetes"


def test_endpoint_slice_strategy_generation_and_deprecated_topology() -> None:
    """Upstream: endpointSliceStrategy (generation on any non-metadata or label change;
    dropTopologyOnV1)."""
    d = REGISTRY.lookup("discovery.k8s.io", "v1", "endpointslices")
    assert d is not None
    eps = {"metadata": {"name": "s"}, "addressType": "IPv4",
           "endpoints": [{"addresses": ["10.0.0.1"], "deprecatedTopology": {"kubernetes.io/hostname": "n1"}}]}
    d.strategy.prepare_for_create(eps)
    assert eps["metadata"]["generation"] == 1 and eps["endpoints"] == [{"addresses": ["10.0.0.1"]}]
    relabelled = {**eps, "metadata": {"name": "s", "labels": {"a": "b"}}}
    d.strategy.prepare_for_update(relabelled, eps)
    assert relabelled["metadata"]["generation"] == 2
    old = {"metadata": {"name": "s", "generation": 2}, "addressType": "IPv4",
           "endpoints": [{"addresses": ["10.0.0.1"], "deprecatedTopology": {"kubernetes.io/hostname": "n1"}}]}
    new = {"metadata": {"name": "s"}, "addressType": "IPv4",
           "endpoints": [{"addresses": ["10.0.0.2"], "deprecatedTopology": {"kubernetes.io/hostname": "n1"}}]}
    d.strategy.prepare_for_update(new, old)
    assert new["metadata"]["generation"] == 3 and new["endpoints"] == [{"addresses": ["10.0.0.2"], "nodeName": "n1"}]
