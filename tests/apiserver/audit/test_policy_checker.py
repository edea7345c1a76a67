"""The audit policy checker, with upstream's tables as facts.

Upstream: TestChecker, TestCheckerPolicyOmitStages, TestOmitManagedFields
(apiserver/pkg/audit/policy/checker_test.go).
"""
from __future__ import annotations

import pytest

from kubeplane.apiserver.audit import policy as p
from kubeplane.apiserver.audit.policy import GroupResources as GR
from kubeplane.apiserver.audit.policy import PolicyRule as Rule
from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.apiserver.authorization.authorizer import Attributes

TIM = UserInfo("tim@k8s.io", groups=("humans", "developers"))
NOBODY = UserInfo("")      # upstream's nil user: no name, no groups

ATTRS = {
    "namespaced": Attributes(TIM, "get", True, "default", "", "v1", "pods", "", "busybox",
                             "/api/v1/namespaces/default/pods/busybox"),
    "cluster": Attributes(TIM, "get", True, "", "rbac.authorization.k8s.io", "v1beta1", "clusterroles", "", "edit",
                          "/apis/rbac.authorization.k8s.io/v1beta1/clusterroles/edit"),
    "nonResource": Attributes(TIM, "get", False, path="/logs/kubelet.log"),
    "subresource": Attributes(TIM, "get", True, "default", "", "v1", "pods", "log", "busybox",
                              "/api/v1/namespaces/default/pods/busybox"),
    "Unauthorized": Attributes(NOBODY, "get", True, "default", "", "v1", "pods", "", "busybox",
                               "/api/v1/namespaces/default/pods/busybox"),
    "ClusterRoleUpdate": Attributes(TIM, "update", True, "", "rbac.authorization.k8s.io", "v1beta1", "clusterroles",
                                    "status", "somerole", "/apis/rbac.authorization.k8s.io/v1beta1/clusterroles/somerole"),
}

M, R, RR, N = p.METADATA, p.REQUEST, p.REQUEST_RESPONSE, p.NONE
RULES = {
    "default": Rule(M),
    "create": Rule(R, verbs=("create",)),
    "tims": Rule(M, users=("tim@k8s.io",)),
    "humans": Rule(M, user_groups=("humans",)),
    "serviceAccounts": Rule(R, user_groups=("system:serviceaccounts",)),
    "getPods": Rule(RR, verbs=("get",), resources=(GR(resources=("pods",)),)),
    "getPodLogs": Rule(R, verbs=("get",), resources=(GR(resources=("pods/log",)),)),
    "getPodWildcardMatching": Rule(R, verbs=("get",), resources=(GR(resources=("*",)),)),
    "getPodResourceWildcardMatching": Rule(R, verbs=("get",), resources=(GR(resources=("*/log",)),)),
    "getPodSubResourceWildcardMatching": Rule(R, verbs=("get",), resources=(GR(resources=("pods/*",)),)),
    "getClusterRoles": Rule(RR, verbs=("get",), resources=(GR("rbac.authorization.k8s.io", ("clusterroles",)),),
                            namespaces=("",)),
    "getGroupWildCardMatchingWithSubresourceWildcardMatching": Rule(RR, verbs=("update",),
                                                                    resources=(GR("*", ("*/status",)),)),
    "getLogs": Rule(RR, verbs=("get",), non_resource_urls=("/logs*",)),
    "getMetrics": Rule(R, verbs=("get",), non_resource_urls=("/metrics",)),
    "clusterRoleEdit": Rule(R, resources=(GR("rbac.authorization.k8s.io", ("clusterroles",), ("edit",)),)),
    "omit RequestReceived": Rule(R, omit_stages=(p.REQUEST_RECEIVED,)),
    "only audit panic": Rule(R, omit_stages=(p.REQUEST_RECEIVED, p.RESPONSE_STARTED, p.RESPONSE_COMPLETE)),
}

# (request, expected level, rules in order): upstream's testAuditLevel
LEVEL_CASES = [
    ("namespaced", M, ["default"]),
    ("namespaced", N, ["create"]),
    ("namespaced", M, ["tims"]),
    ("namespaced", M, ["humans"]),
    ("namespaced", N, ["serviceAccounts"]),
    ("namespaced", RR, ["getPods"]),
    ("namespaced", N, ["getClusterRoles"]),
    ("namespaced", N, ["getLogs"]),
    ("namespaced", N, ["getMetrics"]),
    ("namespaced", M, ["getMetrics", "serviceAccounts", "default"]),
    ("namespaced", RR, ["getMetrics", "getPods", "default"]),
    ("namespaced", RR, ["getPodLogs", "getPods"]),
    ("cluster", M, ["default"]),
    ("cluster", N, ["create"]),
    ("cluster", M, ["tims"]),
    ("cluster", M, ["humans"]),
    ("cluster", N, ["serviceAccounts"]),
    ("cluster", N, ["getPods"]),
    ("cluster", RR, ["getClusterRoles"]),
    ("cluster", R, ["clusterRoleEdit", "getClusterRoles"]),
    ("cluster", N, ["getLogs"]),
    ("cluster", N, ["getMetrics"]),
    ("cluster", M, ["getMetrics", "serviceAccounts", "default"]),
    ("cluster", RR, ["getMetrics", "getClusterRoles", "default"]),
    ("cluster", N, ["getPodLogs", "getPods"]),
    ("nonResource", M, ["default"]),
    ("nonResource", N, ["create"]),
    ("nonResource", M, ["tims"]),
    ("nonResource", M, ["humans"]),
    ("nonResource", N, ["serviceAccounts"]),
    ("nonResource", N, ["getPods"]),
    ("nonResource", N, ["getClusterRoles"]),
    ("nonResource", RR, ["getLogs"]),
    ("nonResource", N, ["getMetrics"]),
    ("nonResource", M, ["getMetrics", "serviceAccounts", "default"]),
    ("nonResource", RR, ["getLogs", "getClusterRoles", "default"]),
    ("nonResource", N, ["getPodLogs", "getPods"]),
    ("subresource", R, ["getPodLogs", "getPods"]),
    ("subresource", R, ["getPodWildcardMatching"]),
    ("subresource", R, ["getPodResourceWildcardMatching"]),
    ("subresource", R, ["getPodSubResourceWildcardMatching"]),
    ("Unauthorized", N, ["tims"]),
    ("Unauthorized", M, ["tims", "default"]),
    ("Unauthorized", N, ["humans"]),
    ("Unauthorized", M, ["humans", "default"]),
    ("ClusterRoleUpdate", RR, ["getGroupWildCardMatchingWithSubresourceWildcardMatching"]),
]

RR_STAGE, RS_STAGE, RC_STAGE = p.REQUEST_RECEIVED, p.RESPONSE_STARTED, p.RESPONSE_COMPLETE


def evaluate(req: str, rule_names: list[str], policy_stages: tuple[str, ...] = ()) -> p.RequestAuditConfig:
    policy = p.Policy(tuple(RULES[n] for n in rule_names), policy_stages)
    return p.PolicyRuleEvaluator(policy).evaluate_policy_rule(ATTRS[req])


@pytest.mark.parametrize("policy_stages", [(), (RR_STAGE, RS_STAGE)], ids=["TestChecker", "PolicyOmitStages"])
@pytest.mark.parametrize(("req", "level", "rules"), LEVEL_CASES)
def test_checker_levels(req: str, level: str, rules: list[str], policy_stages: tuple[str, ...]) -> None:
    config = evaluate(req, rules, policy_stages)
    assert config.level == level
    assert config.omit_stages == frozenset(policy_stages)


@pytest.mark.parametrize(("req", "level", "policy_stages", "omitted", "rules"), [
    # TestChecker: omitStages per rule
    ("namespaced", R, (), {RR_STAGE}, ["omit RequestReceived", "getPods", "default"]),
    ("namespaced", R, (), {RR_STAGE, RS_STAGE, RC_STAGE}, ["only audit panic", "getPods", "default"]),
    ("cluster", R, (), {RR_STAGE}, ["omit RequestReceived", "getPods", "default"]),
    ("cluster", R, (), {RR_STAGE, RS_STAGE, RC_STAGE}, ["only audit panic", "getPods", "default"]),
    ("nonResource", R, (), {RR_STAGE}, ["omit RequestReceived", "getPods", "default"]),
    ("nonResource", R, (), {RR_STAGE, RS_STAGE, RC_STAGE}, ["only audit panic", "getPods", "default"]),
    # TestCheckerPolicyOmitStages: the policy's stages joined with the rule's
    ("namespaced", R, (RR_STAGE, RS_STAGE), {RR_STAGE, RS_STAGE}, ["omit RequestReceived", "getPods", "default"]),
    ("namespaced", R, (RR_STAGE, RS_STAGE), {RR_STAGE, RS_STAGE, RC_STAGE}, ["only audit panic", "getPods", "default"]),
    ("cluster", R, (RR_STAGE, RS_STAGE), {RR_STAGE, RS_STAGE}, ["omit RequestReceived", "getPods", "default"]),
    ("cluster", R, (RR_STAGE, RS_STAGE), {RR_STAGE, RS_STAGE, RC_STAGE}, ["only audit panic", "getPods", "default"]),
    ("nonResource", M, (RR_STAGE, RS_STAGE), {RR_STAGE, RS_STAGE}, ["default", "omit RequestReceived", "getPods"]),
    ("nonResource", R, (RR_STAGE, RS_STAGE), {RR_STAGE, RS_STAGE, RC_STAGE}, ["only audit panic", "getPods", "default"]),
])
def test_checker_omit_stages(req: str, level: str, policy_stages: tuple[str, ...], omitted: set[str],
                             rules: list[str]) -> None:
    config = evaluate(req, rules, policy_stages)
    assert (config.level, config.omit_stages) == (level, frozenset(omitted))


MATCHING = Rule(R, resources=(GR("rbac.authorization.k8s.io", ("*",)),))


@pytest.mark.parametrize(("policy_default", "rule_value", "want"), [
    (False, None, False),      # global policy default is false, rule does not override
    (True, None, True),        # global policy default is true, rule does not override
    (True, False, False),      # global policy default is true, rule overrides to false
    (False, True, True),       # global policy default is false, rule overrides to true
])
def test_omit_managed_fields(policy_default: bool, rule_value: bool | None, want: bool) -> None:
    rule = Rule(MATCHING.level, resources=MATCHING.resources, omit_managed_fields=rule_value)
    evaluator = p.PolicyRuleEvaluator(p.Policy((rule,), omit_managed_fields=policy_default))
    assert evaluator.evaluate_policy_rule(ATTRS["cluster"]).omit_managed_fields is want


def test_no_rule_matching_is_level_none_with_the_policy_defaults() -> None:
    evaluator = p.PolicyRuleEvaluator(p.Policy((RULES["create"],), (RR_STAGE,), omit_managed_fields=True))
    assert evaluator.evaluate_policy_rule(ATTRS["namespaced"]) == p.RequestAuditConfig(N, frozenset({RR_STAGE}), True)


@pytest.mark.parametrize(("path", "spec", "want"), [
    ("/logs/kubelet.log", "*", True), ("/metrics", "/metrics", True), ("/metrics", "/metric", False),
    ("/logs/kubelet.log", "/logs*", True), ("/logs", "/logs/*", False), ("/healthz/etcd", "/healthz*", True),
])
def test_path_matches(path: str, spec: str, want: bool) -> None:
    assert p.path_matches(path, spec) is want
