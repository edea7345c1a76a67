"""Rule matching, from upstream's tables: TestRuleMatches (plugin/pkg/auth/authorizer/rbac/
rbac_test.go) and the evaluation helpers' cases (pkg/apis/rbac/v1/evaluation_helpers.go)."""
from __future__ import annotations

import pytest

from kubeplane.apiserver.authentication.user import authenticated
from kubeplane.apiserver.authorization.authorizer import Attributes
from kubeplane.apiserver.authorization.rbac.rules import Rule, compact_string, rule_allows

U = authenticated("u")


def rule(verbs: str, groups: str = "", resources: str = "", names: str = "", urls: str = "") -> Rule:
    def split(s: str) -> tuple[str, ...]:
        return tuple("" if x == '""' else x for x in s.split()) if s else ()
    return Rule(split(verbs), split(groups), split(resources), split(names), split(urls))


def res(verb: str, group: str, resource: str, sub: str = "", name: str = "", ns: str = "ns") -> Attributes:
    return Attributes(U, verb, True, ns, group, "v1", resource, sub, name)


def path(verb: str, p: str) -> Attributes:
    return Attributes(U, verb, False, path=p)


@pytest.mark.parametrize("r,a,allowed", [
    # TestRuleMatches: star verb, exact verb, wrong verb
    (rule("*", "*", "*"), res("get", "", "pods"), True),
    (rule("get", "*", "*"), res("get", "", "pods"), True),
    (rule("list", "*", "*"), res("get", "", "pods"), False),
    # groups: star, exact, core vs named group
    (rule("get", "*", "pods"), res("get", "apps", "pods"), True),
    (rule("get", '""', "pods"), res("get", "apps", "pods"), False),
    (rule("get", "apps", "deployments"), res("get", "apps", "deployments"), True),
    # subresources: exact, `*/sub`, the bare resource does not cover its subresources
    (rule("get", '""', "pods/status"), res("get", "", "pods", "status"), True),
    (rule("get", '""', "pods"), res("get", "", "pods", "status"), False),
    (rule("get", '""', "*/status"), res("get", "", "pods", "status"), True),
    (rule("get", '""', "*/status"), res("get", "", "pods"), False),
    (rule("get", '""', "*/scale"), res("get", "", "pods", "status"), False),
    (rule("get", '""', "*"), res("get", "", "pods", "status"), True),
    # upstream has no `resource/*`: it is only the literal resource "pods/*"
    (rule("get", '""', "pods/*"), res("get", "", "pods", "status"), False),
    # resource names: none means every name; a listed name; a list (no name) is not matched
    (rule("get", '""', "pods", "foo"), res("get", "", "pods", name="foo"), True),
    (rule("get", '""', "pods", "foo"), res("get", "", "pods", name="bar"), False),
    (rule("list", '""', "pods", "foo"), res("list", "", "pods"), False),
    (rule("get", '""', "pods"), res("get", "", "pods", name="bar"), True),
    # non-resource URLs: exact, star, trailing star prefix, not a resource rule
    (rule("get", urls="/api"), path("get", "/api"), True),
    (rule("get", urls="/api"), path("get", "/api/v1"), False),
    (rule("get", urls="/api/*"), path("get", "/api/v1"), True),
    (rule("get", urls="/api*"), path("get", "/apis"), True),
    (rule("get", urls="*"), path("get", "/metrics"), True),
    (rule("post", urls="/api"), path("get", "/api"), False),
    (rule("get", "*", "*"), path("get", "/api"), False),
    (rule("get", urls="*"), res("get", "", "pods"), False),
])
def test_rule_allows(r: Rule, a: Attributes, allowed: bool) -> None:
    assert rule_allows(a, r) is allowed


def test_compact_string_is_upstreams() -> None:
    r = rule("get list", '"" apps', "pods", "a")
    assert compact_string(r) == '{APIGroups:["" "apps"], Resources:["pods"], ResourceNames:["a"], Verbs:["get" "list"]}'
    assert compact_string(rule("get", urls="/healthz")) == '{NonResourceURLs:["/healthz"], Verbs:["get"]}'
