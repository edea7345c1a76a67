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
