"""kubeplane's bootstrap policy equals upstream's golden files (testdata/, see its README).

Upstream: TestBootstrapClusterRoles, TestBootstrapClusterRoleBindings, TestBootstrapControllerRoles,
TestBootstrapControllerRoleBindings, TestBootstrapNamespaceRoles, TestBootstrapNamespaceRoleBindings
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy_test.go): each writes a v1 List of the
objects sorted by name (namespaced ones by namespace, then name), every rule as policy.go builds
it (rules in the order written, each rule's lists sorted by the builder).
"""
from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from kubeplane.apiserver.authorization.rbac import bootstrappolicy as policy

Obj = dict[str, Any]
TESTDATA = Path(__file__).parent / "testdata"

RENDERERS: dict[str, Callable[[], list[Obj]]] = {
    "cluster-roles": policy.cluster_roles,
    "cluster-role-bindings": policy.cluster_role_bindings,
    "controller-roles": policy.controller_roles,
    "controller-role-bindings": policy.controller_role_bindings,
    "namespace-roles": policy.namespace_roles,
    "namespace-role-bindings": policy.namespace_role_bindings,
}

# Where kubeplane differs from upstream's default policy on purpose: (file, namespace, name) ->
# why. Every entry must still differ (a stale entry fails the test), and nothing else may.
ALLOWED_DIFFERENCES: dict[tuple[str, str, str], str] = {
}


def key(o: Obj) -> tuple[str, str]:
    return o["metadata"].get("namespace", ""), o["metadata"]["name"]


def render(objs: list[Obj]) -> list[Obj]:
    """kubeplane's objects in policy_test.go's shape."""
    out = []
    for o in sorted(objs, key=key):
        o = copy.deepcopy(o)
        if "aggregationRule" in o and not o.get("rules"):
            o["rules"] = None           # Go: an aggregated role's Rules is nil, written `rules: null`
        out.append(o)
    return out


def golden(name: str) -> list[Obj]:
    doc = yaml.safe_load((TESTDATA / f"{name}.yaml").read_text())
    assert (doc["apiVersion"], doc["kind"], doc["metadata"]) == ("v1", "List", {})
    items: list[Obj] = doc["items"]
    for o in items:
        o["metadata"].pop("creationTimestamp", None)     # older goldens' `creationTimestamp: null`
    return items


def dump(o: Obj | None) -> list[str]:
    return yaml.safe_dump(o, sort_keys=True).splitlines() if o is not None else ["(absent)"]


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_bootstrap_policy_matches_upstream_golden(name: str) -> None:
    want = golden(name)
    assert [key(o) for o in want] == sorted(key(o) for o in want)      # the golden's own order
    got = render(RENDERERS[name]())
    assert len({key(o) for o in got}) == len(got)
    want_by, got_by = {key(o): o for o in want}, {key(o): o for o in got}
    problems = []
    for k in sorted(want_by.keys() | got_by.keys()):
        differs = want_by.get(k) != got_by.get(k)
        allowed = (name, *k) in ALLOWED_DIFFERENCES
        if differs and not allowed:
            diff = difflib.unified_diff(dump(want_by.get(k)), dump(got_by.get(k)), "upstream", "kubeplane",
                                        lineterm="")
            problems.append(f"{k}:\n" + "\n".join(diff))
        elif allowed and not differs:
            problems.append(f"{k}: allow-listed but equal to upstream (remove it from ALLOWED_DIFFERENCES)")
    assert not problems, "\n\n".join(problems)
    # where both have the object, kubeplane keeps upstream's order too
    common = [k for k in (key(o) for o in want) if k in got_by]
    assert [k for k in (key(o) for o in got) if k in want_by] == common
