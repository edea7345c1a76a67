"""What a user may do in a namespace, as rule lists (SelfSubjectRulesReview): the union of
what each authorizer of the chain can tell.

Upstream: authorizer.RuleResolver and union.unionAuthzRulesHandler.RulesFor
(apiserver/pkg/authorization/union), privilegedGroupAuthorizer.RulesFor and
alwaysAllowAuthorizer.RulesFor (authorizerfactory/builtin.go), RBACAuthorizer.RulesFor
(rbac.go). An authorizer that cannot list rules (the Node authorizer for nodes) marks the
answer incomplete through its own `rules_for_user(user, namespace)`.
"""
from __future__ import annotations

from typing import Any

from ..authentication.user import UserInfo
from .authorizer import AlwaysAllow, Union

Obj = dict[str, Any]
EVERYTHING = ([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], [{"verbs": ["*"], "nonResourceURLs": ["*"]}])


def rules_for(authorizer: Any, user: UserInfo, namespace: str) -> tuple[list[Obj], list[Obj], bool, list[str]]:
    """(resourceRules, nonResourceRules, incomplete, errors) as authorization.k8s.io/v1 rules."""
    from .rbac import PrivilegedGroups, RBACAuthorizer
    chain = authorizer.authorizers if isinstance(authorizer, Union) else (authorizer,)
    resource: list[Obj] = []
    non_resource: list[Obj] = []
    incomplete = False
    errs: list[str] = []
    for z in chain:
        if isinstance(z, AlwaysAllow) or (isinstance(z, PrivilegedGroups) and not z.groups.isdisjoint(user.groups)):
            resource += EVERYTHING[0]
            non_resource += EVERYTHING[1]
        elif isinstance(z, RBACAuthorizer):
            rules, rbac_errs = z.rules_for(user, namespace)
            for r in rules:
                if r.resources:
                    d: Obj = {"verbs": list(r.verbs), "apiGroups": list(r.api_groups), "resources": list(r.resources)}
                    if r.resource_names:
                        d["resourceNames"] = list(r.resource_names)
                    resource.append(d)
                if r.non_resource_urls:
                    non_resource.append({"verbs": list(r.verbs), "nonResourceURLs": list(r.non_resource_urls)})
            errs += rbac_errs
        elif (own := getattr(z, "rules_for_user", None)) is not None:
            res, nonres, inc, err = own(user, namespace)
            resource += res
            non_resource += nonres
            incomplete = incomplete or inc
            if err:
                errs.append(err)
    return resource, non_resource, incomplete, errs
