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
from kubeplane.apiserver.server import APIServer

from .helpers import JANE, call
from .test_reviews import AZ, bind

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
# None today: kubeplane serves upstream's whole default policy, also the roles of controllers it
# does not run and the rules for APIs it does not serve (resource.k8s.io, ...), so that
# `kubectl get clusterroles` and `kubectl auth can-i` answer as on a kubeadm cluster.
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


def aggregated(name: str, roles: dict[str, Obj]) -> list[Obj]:
    """Upstream's clusterrole-aggregation controller on the golden roles: the rules of every role
    its selectors match, roles sorted by name, each rule once."""
    selectors = [s["matchLabels"] for s in roles[name]["aggregationRule"]["clusterRoleSelectors"]]
    out: list[Obj] = []
    for n in sorted(roles):
        labels = roles[n]["metadata"].get("labels") or {}
        if n != name and any(all(labels.get(k) == v for k, v in s.items()) for s in selectors):
            rules = aggregated(n, roles) if "aggregationRule" in roles[n] else roles[n]["rules"]
            out += [r for r in rules if r not in out]
    return out


@pytest.mark.parametrize("role", ["view", "edit", "admin"])
async def test_rules_review_of_user_facing_role_matches_upstream(api: APIServer, role: str) -> None:
    """What `kubectl auth can-i --list -n default` prints for a user bound to view/edit/admin in
    default: the SelfSubjectRulesReview's rules, which upstream builds from the same policy (the
    golden files). kubectl sorts what it prints, so the order of the rules does not matter."""
    roles = {o["metadata"]["name"]: o for o in golden("cluster-roles")}
    subjects_of = {o["metadata"]["name"]: o.get("subjects") or [] for o in golden("cluster-role-bindings")}
    authenticated_roles = [n for n, subjects in subjects_of.items()
                           if {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                               "name": "system:authenticated"} in subjects]
    assert authenticated_roles == ["system:basic-user", "system:discovery", "system:public-info-viewer"]
    rules = [r for n in authenticated_roles for r in roles[n]["rules"]] + aggregated(role, roles)
    want_resource = [{k: r[k] for k in ("verbs", "apiGroups", "resources", "resourceNames") if k in r}
                     for r in rules if "resources" in r]
    want_urls = [{"verbs": r["verbs"], "nonResourceURLs": r["nonResourceURLs"]} for r in rules
                 if "nonResourceURLs" in r]

    await bind(api, "jane", role, "default")
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
              "spec": {"namespace": "default"}}
    status, body = await call(api, JANE, "POST", f"{AZ}/selfsubjectrulesreviews", review)
    assert status == 201 and body["status"]["incomplete"] is False

    def canonical(rs: list[Obj]) -> list[str]:
        return sorted(yaml.safe_dump(r, sort_keys=True) for r in rs)
    assert canonical(body["status"]["resourceRules"]) == canonical(want_resource)
    assert canonical(body["status"]["nonResourceRules"]) == canonical(want_urls)
