"""Rule matching, with upstream's tables (plugin/webhook/predicates/rules/rules_test.go)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.equivalent import GVR
from kubeplane.apiserver.admission.webhook import rules

C, U, D, X = Operation.CREATE, Operation.UPDATE, Operation.DELETE, Operation.CONNECT


def a(group: str, version: str, resource: str, subresource: str = "", op: Operation = C,
      namespace: str = "ns", name: str = "name") -> Attributes:
    return Attributes(op, group, version, resource, "k" + resource, namespace, name, subresource=subresource)


def cluster(group: str, version: str, resource: str, subresource: str = "", name: str = "name") -> Attributes:
    return a(group, version, resource, subresource, namespace="", name=name)


def rule(**kw: Any) -> dict[str, Any]:
    """A rule matching everything but what kw sets."""
    return {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], **kw}


CASES = [
    # TestGroup
    ("group wildcard", rule(apiGroups=["*"]), [a("g", "v", "r")], []),
    ("group exact", rule(apiGroups=["g1", "g2"]), [a("g1", "v", "r"), a("g2", "v2", "r3")],
     [a("g3", "v", "r"), a("g4", "v", "r")]),
    # TestVersion
    ("version wildcard", rule(apiVersions=["*"]), [a("g", "v", "r")], []),
    ("version exact", rule(apiVersions=["v1", "v2"]), [a("g1", "v1", "r"), a("g2", "v2", "r")],
     [a("g1", "v3", "r"), a("g2", "v4", "r")]),
    # TestOperation
    ("operation wildcard", rule(operations=["*"]), [a("g", "v", "r", op=o) for o in (C, U, D, X)], []),
    ("create", rule(operations=["CREATE"]), [a("g", "v", "r", op=C)], [a("g", "v", "r", op=o) for o in (U, D, X)]),
    ("update", rule(operations=["UPDATE"]), [a("g", "v", "r", op=U)], [a("g", "v", "r", op=o) for o in (C, D, X)]),
    ("delete", rule(operations=["DELETE"]), [a("g", "v", "r", op=D)], [a("g", "v", "r", op=o) for o in (C, U, X)]),
    ("connect", rule(operations=["CONNECT"]), [a("g", "v", "r", op=X)], [a("g", "v", "r", op=o) for o in (C, U, D)]),
    ("multiple", rule(operations=["UPDATE", "DELETE"]), [a("g", "v", "r", op=U), a("g", "v", "r", op=D)],
     [a("g", "v", "r", op=C), a("g", "v", "r", op=X)]),
    # TestResource
    ("no subresources", rule(resources=["*"]), [a("g", "v", "r"), a("2", "v", "r2")],
     [a("g", "v", "r", "exec"), a("2", "v", "r2", "proxy")]),
    ("r & subresources", rule(resources=["r/*"]), [a("g", "v", "r"), a("g", "v", "r", "exec")],
     [a("2", "v", "r2"), a("2", "v", "r2", "proxy")]),
    ("r & subresources or r2", rule(resources=["r/*", "r2"]),
     [a("g", "v", "r"), a("g", "v", "r", "exec"), a("2", "v", "r2")], [a("2", "v", "r2", "proxy")]),
    ("proxy or exec", rule(resources=["*/proxy", "*/exec"]),
     [a("g", "v", "r", "exec"), a("2", "v", "r2", "proxy"), a("2", "v", "r3", "proxy")],
     [a("g", "v", "r"), a("2", "v", "r2"), a("2", "v", "r4", "scale")]),
    ("everything", rule(resources=["*/*"]), [a("g", "v", "r"), a("g", "v", "r", "status")], []),
    # TestScope (resources */* so only the scope decides)
    ("cluster scope", rule(scope="Cluster"),
     [cluster("g", "v", "r"), cluster("g", "v", "r", "exec"), cluster("", "v1", "namespaces", name="ns"),
      cluster("", "v1", "namespaces", "finalize", name="ns"), a("", "v1", "namespaces", name="ns"),
      a("", "v1", "namespaces", "finalize", name="ns")],
     [a("g", "v", "r"), a("g", "v", "r", "exec")]),
    ("namespace scope", rule(scope="Namespaced"), [a("g", "v", "r"), a("g", "v", "r", "exec")],
     [cluster("", "v1", "namespaces", name="ns"), cluster("", "v1", "namespaces", "finalize", name="ns"),
      a("", "v1", "namespaces", name="ns"), a("", "v1", "namespaces", "finalize", name="ns"),
      cluster("g", "v", "r"), cluster("g", "v", "r", "exec")]),
    ("all scopes", rule(scope="*"),
     [a("g", "v", "r"), a("g", "v", "r", "exec"), cluster("g", "v", "r"), cluster("g", "v", "r", "exec"),
      cluster("", "v1", "namespaces", name="ns"), a("", "v1", "namespaces", name="ns")], []),
    ("no scope", {k: v for k, v in rule().items() if k != "scope"}, [a("g", "v", "r"), cluster("g", "v", "r")], []),
]


@pytest.mark.parametrize(("rule_", "match", "no_match"), [pytest.param(r, m, n, id=i) for i, r, m, n in CASES])
def test_rules(rule_: dict[str, Any], match: list[Attributes], no_match: list[Attributes]) -> None:
    for attrs in match:
        assert rules.matches(rule_, attrs), attrs
    for attrs in no_match:
        assert not rules.matches(rule_, attrs), attrs


def test_resource_override_is_matched_instead_of_the_request() -> None:
    """matchPolicy Equivalent asks the rules about another version of the resource."""
    r = rule(apiVersions=["v2"])
    assert not rules.matches(r, a("autoscaling", "v1", "horizontalpodautoscalers"))
    assert rules.matches(r, a("autoscaling", "v1", "horizontalpodautoscalers"),
                         GVR("autoscaling", "v2", "horizontalpodautoscalers"))


@pytest.mark.parametrize("kind", sorted(rules.EXEMPT_KINDS))
def test_admission_configuration_is_exempt(kind: str) -> None:
    attrs = Attributes(C, rules.ADMISSION_GROUP, "v1", "x", kind, "", "n")
    assert rules.is_exempt_admission_configuration_resource(attrs, rules.ADMISSION_GROUP)
    assert not rules.is_exempt_admission_configuration_resource(Attributes(C, "", "v1", "pods", "Pod", "ns", "p"), "")
