"""The Node authorizer: what a kubelet (user system:node:<name> in group system:nodes) may do.

    1. A request not from a node: no opinion (RBAC decides).
    2. A node user without a name: no opinion, "unknown node for user ...".
    3. Secrets, configmaps (get/list/watch of one object), PVCs and PVs (get; PVC status
       update/patch), resource claims and volume attachments (get), service account tokens
       (create): only if the object leads to the node in the graph (a pod bound to the node uses
       it, or a PV of such a pod's claim).
    4. Its own Lease in kube-node-lease and CSINode; resource slices of the node; its own Node
       (reads; writes and status for NodeRestriction to check); pods: get of its pods, list/watch
       only with the fieldSelector spec.nodeName=<node>, create/delete (mirror pods), status and
       evictions (NodeRestriction checks they are its pods).
    5. Everything else: the static rules of the system:node role (rules.py), else no opinion.

The decisions a kubelet makes thousands of times a second (pods/status, leases, nodes/status,
events) need no graph: a name prefix test, a dict look-up and a few comparisons. Graph questions
first apply the storage changes made since the previous one (graph_populator.py).

Upstream: NodeAuthorizer.Authorize and its authorize* helpers
(plugin/pkg/auth/authorizer/node/node_authorizer.go) with AuthorizeNodeWithSelectors on (the
1.37 default); nodeidentifier.NewDefaultNodeIdentifier (pkg/auth/nodeidentifier/default.go).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from ...authentication.user import NODE_USER_PREFIX, NODES_GROUP, UserInfo
from ..authorizer import Attributes, Decision, attributes_of
from .graph import CONFIGMAP, POD, PV, PVC, RESOURCECLAIM, SECRET, SERVICEACCOUNT, SLICE, VA, Graph
from .graph_populator import GraphPopulator
from .rules import NODE_RULES, Rules

if TYPE_CHECKING:
    from ....storage.interface import Storage
    from ...request import RequestInfo
    from ...server import APIServer

log = logging.getLogger(__name__)

NO_OPINION, ALLOW = Decision.NO_OPINION, Decision.ALLOW
ALLOWED: tuple[Decision, str] = (ALLOW, "")
NAMESPACE_NODE_LEASE = "kube-node-lease"
_P = len(NODE_USER_PREFIX)

Result = tuple[Decision, str]


def node_identity(user: UserInfo) -> tuple[str, bool]:
    """(node name, is a node): a system:node:<name> user in the system:nodes group.
    Upstream: defaultNodeIdentifier.NodeIdentity."""
    if not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return "", False
    return user.name[_P:], True


class NodeAuthorizer:
    def __init__(self, populator: GraphPopulator, rules: Rules | None = None) -> None:
        self.populator = populator
        self.graph: Graph = populator.graph
        self.rules = rules if rules is not None else Rules(NODE_RULES)

    @classmethod
    def for_server(cls, api: APIServer, rules: Rules | None = None) -> NodeAuthorizer:
        """The authorizer of `--authorization-mode=Node`, fed from the server's store. Its graph
        must be loaded before it decides: `await authorizer.start()` once the store is open."""
        return cls.for_storage(api.storage, rules)

    @classmethod
    def for_storage(cls, storage: Storage, rules: Rules | None = None) -> NodeAuthorizer:
        return cls(GraphPopulator(storage), rules)

    async def start(self) -> None:
        await self.populator.start()

    def stop(self) -> None:
        self.populator.stop()

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Any], list[Any], bool, str]:
        """(resource rules, non-resource rules, incomplete, error) for a rules review: a node's
        permissions depend on the graph, so none are listed and the answer is incomplete.
        Upstream: NodeAuthorizer.RulesFor."""
        if node_identity(user)[1]:
            return [], [], True, "node authorizer does not support user rule resolution"
        return [], [], False, ""

    def decide(self, user: UserInfo, info: RequestInfo, path: str, field_selector: str) -> Result | None:
        """A node's request decided here when this authorizer has an opinion (a kubelet's pod
        status, its Lease, its Node: most of its requests), None when it has none (a union
        goes on to the next authorizer). authorizer.py Decide, for modes.RBACChain.

        A resource the graph does not subdivide (events, services, endpoints ...) is decided by
        the static rules alone, from the RequestInfo without building Attributes: the kubelets'
        ~4 Events per pod take this way. The rules name no resources or non-resource URLs
        (rules.py), so verb, group, resource and subresource are all they read."""
        if (info.is_resource_request and user.name.startswith(NODE_USER_PREFIX) and len(user.name) > _P
                and NODES_GROUP in user.groups):
            if (info.group, info.resource) not in _CHECKS:
                resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
                return ALLOWED if (info.verb, info.group, resource) in self.rules.allowed else None
            if (info.subresource == "status" and info.resource == "pods" and not info.group
                    and (info.verb == "update" or info.verb == "patch")):
                return ALLOWED          # pod() decides so without the graph: the kubelets' status writes
        result = self.authorize(attributes_of(user, info, path, field_selector))
        return result if result[0] is not NO_OPINION else None

    def authorize(self, a: Attributes) -> Result:
        """Upstream: NodeAuthorizer.Authorize."""
        user = a.user
        if not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
            return NO_OPINION, ""
        node = user.name[_P:]
        if not node:
            return NO_OPINION, f'unknown node for user "{user.name}"'
        if a.resource_request:
            check = _CHECKS.get((a.api_group, a.resource))
            if check is not None:
                return check(self, node, a)
        if self.rules.allow(a):
            return ALLOW, ""
        return NO_OPINION, ""

    # --- the subdivided resources ------------------------------------------------------------

    def _status_update(self, node: str, vtype: int, a: Attributes) -> Result:
        """Upstream: authorizeStatusUpdate."""
        if a.verb not in ("update", "patch"):
            return NO_OPINION, "can only get/update/patch this type"
        if a.subresource != "status":
            return NO_OPINION, "can only update status subresource"
        return self._related(node, vtype, a)

    def _get(self, node: str, vtype: int, a: Attributes) -> Result:
        """Upstream: authorizeGet."""
        if a.verb != "get":
            return NO_OPINION, "can only get individual resources of this type"
        if a.subresource:
            return NO_OPINION, "cannot get subresource"
        return self._related(node, vtype, a)

    def _read_namespaced(self, node: str, vtype: int, a: Attributes) -> Result:
        """get, list and watch of one named object. Upstream: authorizeReadNamespacedObject."""
        if a.verb not in ("get", "list", "watch"):
            return NO_OPINION, "can only read resources of this type"
        if a.subresource:
            return NO_OPINION, "cannot read subresource"
        if not a.namespace:
            return NO_OPINION, "can only read namespaced object of this type"
        return self._related(node, vtype, a)

    def _related(self, node: str, vtype: int, a: Attributes) -> Result:
        """Upstream: NodeAuthorizer.authorize (the graph question)."""
        if not a.name:
            return NO_OPINION, "No Object name found"
        return self._path(node, vtype, a)

    def _path(self, node: str, vtype: int, a: Attributes) -> Result:
        self.populator.sync()
        if self.graph.has_path_from(node, vtype, a.namespace, a.name):
            return ALLOW, ""
        log.debug("NODE DENY: %s", self.graph.why_not(node, vtype, a.namespace, a.name))
        return NO_OPINION, f"no relationship found between node '{node}' and this object"

    def secret(self, node: str, a: Attributes) -> Result:
        return self._read_namespaced(node, SECRET, a)

    def configmap(self, node: str, a: Attributes) -> Result:
        return self._read_namespaced(node, CONFIGMAP, a)

    def pvc(self, node: str, a: Attributes) -> Result:
        if a.subresource == "status":
            return self._status_update(node, PVC, a)
        return self._get(node, PVC, a)

    def pv(self, node: str, a: Attributes) -> Result:
        return self._get(node, PV, a)

    def resource_claim(self, node: str, a: Attributes) -> Result:
        return self._get(node, RESOURCECLAIM, a)

    def volume_attachment(self, node: str, a: Attributes) -> Result:
        return self._get(node, VA, a)

    def service_account(self, node: str, a: Attributes) -> Result:
        """Upstream: authorizeCreateToken."""
        if a.verb != "create" or not a.name:
            return NO_OPINION, "can only create tokens for individual service accounts"
        if a.subresource != "token":
            return NO_OPINION, "can only create token subresource of serviceaccount"
        return self._path(node, SERVICEACCOUNT, a)

    def lease(self, node: str, a: Attributes) -> Result:
        """Upstream: authorizeLease (the name of a create is NodeRestriction's to check)."""
        if a.verb not in ("get", "create", "update", "patch", "delete"):
            return NO_OPINION, "can only get, create, update, patch, or delete a node lease"
        if a.namespace != NAMESPACE_NODE_LEASE:
            return NO_OPINION, f'can only access leases in the "{NAMESPACE_NODE_LEASE}" system namespace'
        if a.verb != "create" and a.name != node:
            return NO_OPINION, "can only access node lease with the same name as the requesting node"
        return ALLOW, ""

    def csinode(self, node: str, a: Attributes) -> Result:
        """Upstream: authorizeCSINode."""
        if a.verb not in ("get", "create", "update", "patch", "delete"):
            return NO_OPINION, "can only get, create, update, patch, or delete a CSINode"
        if a.subresource:
            return NO_OPINION, "cannot authorize CSINode subresources"
        if a.verb != "create" and a.name != node:
            return NO_OPINION, "can only access CSINode with the same name as the requesting node"
        return ALLOW, ""

    def resource_slice(self, node: str, a: Attributes) -> Result:
        """Upstream: authorizeResourceSlice."""
        if a.subresource:
            return NO_OPINION, "cannot authorize ResourceSlice subresources"
        if a.verb == "create":
            return ALLOW, ""            # NodeRestriction checks spec.nodeName
        if a.verb in ("get", "update", "patch", "delete"):
            return self._related(node, SLICE, a)
        if a.verb in ("watch", "list", "deletecollection"):
            if _selects(a.field_selector, "nodeName", node):
                return ALLOW, ""
            return NO_OPINION, "can only list/watch/deletecollection resourceslices with nodeName field selector"
        return NO_OPINION, ("only the following verbs are allowed for a ResourceSlice: get, watch, list, create, "
                            "update, patch, delete, deletecollection")

    def node(self, node: str, a: Attributes) -> Result:
        """Upstream: authorizeNode (writes are NodeRestriction's to limit to its own Node)."""
        if not a.subresource:
            if a.verb in ("create", "update", "patch"):
                return ALLOW, ""
            if a.verb in ("get", "list", "watch"):
                # The name, not the graph: a kubelet reads its Node before creating it.
                if a.name == node:
                    return ALLOW, ""
                if not a.name:
                    return NO_OPINION, f"node '{node}' cannot read all nodes, only its own Node object"
                return NO_OPINION, f"node '{node}' cannot read '{a.name}', only its own Node object"
        elif a.subresource == "status" and a.verb in ("update", "patch"):
            return ALLOW, ""
        return NO_OPINION, ""

    def pod(self, node: str, a: Attributes) -> Result:
        """Upstream: authorizePod."""
        sub, verb = a.subresource, a.verb
        if sub == "status":
            if verb in ("update", "patch"):      # the kubelets' hottest request: decided here
                return ALLOW, ""
        elif not sub:
            if verb == "get":
                return self._get(node, POD, a)
            if verb in ("list", "watch"):
                if _selects(a.field_selector, "spec.nodeName", node):
                    return ALLOW, ""
                if a.name:
                    return self._related(node, POD, a)
                return NO_OPINION, "can only list/watch pods with spec.nodeName field selector"
            if verb in ("create", "delete"):     # mirror pods: NodeRestriction checks them
                return ALLOW, ""
        elif sub == "eviction" and verb == "create":
            return ALLOW, ""
        return NO_OPINION, ""


def _selects(field_selector: str, field: str, value: str) -> bool:
    """Whether a fieldSelector has the requirement field=value (or field==value).
    Upstream: fields.ParseSelector's terms, compared with selection.Equals."""
    for term in field_selector.split(","):
        if "!=" in term:
            continue
        k, eq, v = term.partition("==") if "==" in term else term.partition("=")
        if eq and k.strip() == field and v.strip() == value:
            return True
    return False


_CHECKS: dict[tuple[str, str], Callable[[NodeAuthorizer, str, Attributes], Result]] = {
    ("", "secrets"): NodeAuthorizer.secret,
    ("", "configmaps"): NodeAuthorizer.configmap,
    ("", "persistentvolumeclaims"): NodeAuthorizer.pvc,
    ("", "persistentvolumes"): NodeAuthorizer.pv,
    ("resource.k8s.io", "resourceclaims"): NodeAuthorizer.resource_claim,
    ("storage.k8s.io", "volumeattachments"): NodeAuthorizer.volume_attachment,
    ("", "serviceaccounts"): NodeAuthorizer.service_account,
    ("coordination.k8s.io", "leases"): NodeAuthorizer.lease,
    ("storage.k8s.io", "csinodes"): NodeAuthorizer.csinode,
    ("resource.k8s.io", "resourceslices"): NodeAuthorizer.resource_slice,
    ("", "nodes"): NodeAuthorizer.node,
    ("", "pods"): NodeAuthorizer.pod,
}
