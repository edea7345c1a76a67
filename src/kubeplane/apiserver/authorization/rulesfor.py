"""What a user may do in a namespace, as rule lists (SelfSubjectRulesReview): the union of
what each rule resolver of the chain can tell.

Upstream: authorizer.RuleResolver and union.unionAuthzRulesHandler.RulesFor
(apiserver/pkg/authorization/union), alwaysAllowAuthorizer.RulesFor and
alwaysDenyAuthorizer.RulesFor (authorizerfactory/builtin.go), RBACAuthorizer.RulesFor
(rbac.go), NodeAuthorizer.RulesFor, and the rule resolvers kube-apiserver gathers
(reloadableAuthorizerResolver.newForConfig, pkg/kubeapiserver/authorizer/reload.go): every
mode's authorizer, but not the system:masters one in front of them, which lists no rules (a
super-user's rules are what its bindings grant: cluster-admin's, once, through the bootstrap
binding). The Node authorizer answers a node "incomplete" through its own `rules_for`.
"""
from __future__ import annotations

from typing import Any

from ..authentication.user import UserInfo
from .authorizer import AlwaysAllow, Union

Obj = dict[str, Any]
EVERYTHING = ([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], [{"verbs": ["*"], "nonResourceURLs": ["*"]}])


def resource_rule(verbs: tuple[str, ...], groups: tuple[str, ...], resources: tuple[str, ...],
                  names: tuple[str, ...]) -> Obj:
    """An authorization.k8s.io/v1 ResourceRule as upstream serializes it: verbs always, the
    other lists only when not empty (omitempty)."""
    d: Obj = {"verbs": list(verbs)}
    for key, values in (("apiGroups", groups), ("resources", resources), ("resourceNames", names)):
        if values:
            d[key] = list(values)
    return d


def rules_for(authorizer: Any, user: UserInfo, namespace: str) -> tuple[list[Obj], list[Obj], bool, list[str]]:
    """(resourceRules, nonResourceRules, incomplete, errors) as authorization.k8s.io/v1 rules;
    the errors are flat, for api.errors-style aggregation (rbac.resolver.aggregate)."""
    from .rbac import RBACAuthorizer
    chain = authorizer.authorizers if isinstance(authorizer, Union) else (authorizer,)
    resource: list[Obj] = []
    non_resource: list[Obj] = []
    incomplete = False
    errs: list[str] = []
    for z in chain:
        if isinstance(z, AlwaysAllow):
            resource += EVERYTHING[0]
            non_resource += EVERYTHING[1]
        elif isinstance(z, RBACAuthorizer):
            rules, rbac_errs = z.rules_for(user, namespace)
            for r in rules:
                if r.resources:
                    resource.append(resource_rule(r.verbs, r.api_groups, r.resources, r.resource_names))
                if r.non_resource_urls:
                    non_resource.append({"verbs": list(r.verbs), "nonResourceURLs": list(r.non_resource_urls)})
            errs += rbac_errs
        elif (own := getattr(z, "rules_for", None)) is not None:      # the Node authorizer
            res, nonres, inc, err = own(user, namespace)
            resource += res
            non_resource += nonres
            incomplete = incomplete or inc
            if err:
                errs.append(err)
    return resource, non_resource, incomplete, errs
