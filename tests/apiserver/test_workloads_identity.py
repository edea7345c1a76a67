"""The workload kinds of issue 11 are served with upstream's identity (discovery table)."""
from __future__ import annotations

import pytest

from kubeplane.api import upstream_resources as upstream
from kubeplane.apiserver.registry import REGISTRY

KINDS = [("", "v1", "replicationcontrollers"), ("", "v1", "podtemplates"),
         ("apps", "v1", "statefulsets"), ("apps", "v1", "daemonsets"), ("apps", "v1", "controllerrevisions"),
         ("batch", "v1", "jobs"), ("batch", "v1", "cronjobs")]


@pytest.mark.parametrize("key", KINDS, ids=lambda k: f"{k[2]}.{k[0] or 'core'}")
def test_identity_is_upstream_s(key: tuple[str, str, str]) -> None:
    d, u = REGISTRY.lookup(*key), upstream.lookup(*key)
    assert d is not None and u is not None
    assert (d.kind, d.singular, d.namespaced, d.definition) == (u.kind, u.singular_name, u.namespaced, u.definition)
    assert (sorted(d.verbs), d.short_names, d.categories) == (sorted(u.verbs), u.short_names, u.categories)
    assert sorted((s.name, s.kind, s.group, s.version, tuple(sorted(s.verbs))) for s in d.subresources) == \
        sorted((s.name, s.kind, s.group or "", s.version or "", tuple(sorted(s.verbs))) for s in u.subresources)
