"""What every node may do regardless of the graph: the rules of upstream's system:node role,
which the node authorizer evaluates itself (upstream binds that role to nobody since 1.8: the
Node mode grants it). Indexed once as (verb, group, resource[/subresource]) so a check is one
set look-up; none of the rules names resources or non-resource URLs.

Upstream: bootstrappolicy.NodeRules (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go)
with the features a 1.37 server enables by default (TokenRequest, CSI, RuntimeClass,
ExpandPersistentVolumes, DynamicResourceAllocation), and rbac.RulesAllow.
"""
from __future__ import annotations

from ..authorizer import Attributes

READ = ("get", "list", "watch")

# (verbs, API groups, resources)
NODE_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    # Needed to check API access. These creates are non-mutating.
    (("create",), ("authentication.k8s.io",), ("tokenreviews",)),
    (("create",), ("authorization.k8s.io",), ("subjectaccessreviews", "localsubjectaccessreviews")),
    # Needed to build serviceLister, to populate env vars for services.
    (READ, ("",), ("services",)),
    # Nodes can register Node API objects and report status (NodeRestriction limits them to their own).
    (("create", "get", "list", "watch"), ("",), ("nodes",)),
    (("update", "patch"), ("",), ("nodes/status",)),
    (("update", "patch"), ("",), ("nodes",)),
    (("create", "update", "patch"), ("",), ("events",)),
    (READ, ("",), ("pods",)),
    # Mirror pods, pod status, evictions (NodeRestriction limits them to the node's own pods).
    (("create", "delete"), ("",), ("pods",)),
    (("update", "patch"), ("",), ("pods/status",)),
    (("create",), ("",), ("pods/eviction",)),
    # Secrets, configmaps, PVs and PVCs: the node authorizer limits them to what its pods use.
    (READ, ("",), ("secrets", "configmaps")),
    (("get",), ("",), ("persistentvolumeclaims", "persistentvolumes")),
    (("get",), ("",), ("endpoints",)),
    (("create", "get", "list", "watch"), ("certificates.k8s.io",), ("certificatesigningrequests",)),
    (("get", "create", "update", "patch", "delete"), ("coordination.k8s.io",), ("leases",)),
    (("get",), ("storage.k8s.io",), ("volumeattachments",)),
    (("get", "update", "patch"), ("",), ("persistentvolumeclaims/status",)),
    (("create",), ("",), ("serviceaccounts/token",)),
    (("get", "watch", "list"), ("storage.k8s.io",), ("csidrivers",)),
    (("get", "create", "update", "patch", "delete"), ("storage.k8s.io",), ("csinodes",)),
    (READ, ("node.k8s.io",), ("runtimeclasses",)),
    (("get",), ("resource.k8s.io",), ("resourceclaims",)),
    (("deletecollection", "get", "list", "watch", "create", "update", "patch", "delete"), ("resource.k8s.io",),
     ("resourceslices",)),
)


class Rules:
    """rbac.RulesAllow over rules without wildcards, resource names or URLs, as a set."""

    def __init__(self, rules: tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = NODE_RULES) -> None:
        self.allowed = frozenset((v, g, r) for verbs, groups, resources in rules
                                 for v in verbs for g in groups for r in resources)

    def allow(self, a: Attributes) -> bool:
        if not a.resource_request:
            return False
        resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        return (a.verb, a.api_group, resource) in self.allowed
