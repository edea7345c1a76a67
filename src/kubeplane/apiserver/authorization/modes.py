"""--authorization-mode: the authorizers a request passes, in the order given, behind the
super-user group, and what they need once the server has started.

Upstream: authzmodes (pkg/kubeapiserver/authorizer/modes), Config.New
(pkg/kubeapiserver/authorizer/config.go: system:masters first, then each mode) and
BuiltInAuthorizationOptions.Validate (pkg/kubeapiserver/options/authorization.go).
kube-apiserver's default is AlwaysAllow; kubeadm (and `kubeplane up`) run Node,RBAC.
"""
from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

from ..authentication.user import NODE_USER_PREFIX, NODES_GROUP
from .authorizer import AlwaysAllow, Attributes, Authorizer, Decision, Union

if TYPE_CHECKING:
    from ..authentication.user import UserInfo
    from ..request import RequestInfo
    from ..server import APIServer

ALLOW_PRIVILEGED = (Decision.ALLOW, "")

log = logging.getLogger(__name__)

ALWAYS_ALLOW, ALWAYS_DENY, NODE, RBAC, WEBHOOK = "AlwaysAllow", "AlwaysDeny", "Node", "RBAC", "Webhook"
MODES = (ALWAYS_ALLOW, ALWAYS_DENY, NODE, RBAC, WEBHOOK)
DEFAULT = (ALWAYS_ALLOW,)
KUBEADM_DEFAULT = (NODE, RBAC)


class AlwaysDeny:
    """Upstream: alwaysDenyAuthorizer"""

    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        return Decision.NO_OPINION, "Everything is forbidden."


def parse(value: str) -> tuple[str, ...]:
    """The comma-separated flag value, checked as upstream (the same messages)."""
    modes = tuple(m.strip() for m in value.split(",") if m.strip())
    if not modes:
        raise ValueError("at least one authorization-mode must be passed")
    for m in modes:
        if m not in MODES:
            raise ValueError(f'authorization-mode "{m}" is not a valid mode')
        if m == WEBHOOK:
            raise ValueError("authorization-mode Webhook's config file is not supported by kubeplane")
    if len(set(modes)) != len(modes):
        raise ValueError(f'authorization-mode "{",".join(modes)}" has mode specified more than once')
    if ALWAYS_ALLOW in modes and len(modes) > 1:
        log.warning("AlwaysAllow authorizer with other modes: requests no other mode allows are allowed")
    return modes


def node_authorizer(api: APIServer) -> Authorizer | None:
    """The Node authorizer (authorization/node's new_node_authorizer(api)), None while this
    build has none."""
    factory = _node_factory()
    return factory(api) if factory is not None else None


def has_node_authorizer(modes: tuple[str, ...]) -> bool:
    """Whether modes name Node and this build has its authorizer."""
    return NODE in modes and _node_factory() is not None


def _node_factory() -> Any:
    try:
        node = importlib.import_module("kubeplane.apiserver.authorization.node")
    except ImportError:
        return None
    return getattr(node, "new_node_authorizer", None)


class RBACChain(Union):
    """Config.New's chain for Node,RBAC (kubeadm's and `up`'s) or RBAC: system:masters, the
    Node authorizer, RBAC — with a decide() that answers most requests in one step
    (authorizer.py Decide): a super-user is allowed (PrivilegedGroups), a node's request goes
    to the Node authorizer alone when it has an opinion (its decisions follow its graph: not
    cached), anyone else's is RBAC's cached decision (the Node authorizer has no opinion on a
    user that is not a node: node_authorizer.node_identity)."""

    def __init__(self, privileged: Any, node: Any, rbac: Any) -> None:
        super().__init__(*(z for z in (privileged, node, rbac) if z is not None))
        self.privileged_groups: frozenset[str] = privileged.groups
        self.node = node
        self.rbac = rbac

    def decide(self, user: UserInfo, info: RequestInfo, path: str, field_selector: str) -> tuple[Decision, str] | None:
        groups = user.groups
        if not self.privileged_groups.isdisjoint(groups):
            return ALLOW_PRIVILEGED
        if self.node is not None and NODES_GROUP in groups and user.name.startswith(NODE_USER_PREFIX):
            return self.node.decide(user, info, path, field_selector)     # None: no opinion, RBAC's turn
        return self.rbac.decide(user, info, path, field_selector)


def new_authorizer(api: APIServer, modes: tuple[str, ...]) -> Authorizer:
    """Upstream: Config.New — system:masters, then each mode in order (Node,RBAC and RBAC as an
    RBACChain, which decides most requests in one step)."""
    if modes == (ALWAYS_ALLOW,):
        return AlwaysAllow()
    from .rbac import PrivilegedGroups, RBACAuthorizer
    chain: list[Any] = [PrivilegedGroups()]
    for m in modes:
        if m == ALWAYS_ALLOW:
            chain.append(AlwaysAllow())
        elif m == ALWAYS_DENY:
            chain.append(AlwaysDeny())
        elif m == RBAC:
            chain.append(RBACAuthorizer(rbac_index(api)))
        elif m == NODE:
            z = node_authorizer(api)
            if z is None:
                log.warning("authorization-mode Node: no Node authorizer in this build; nodes are authorized "
                            "by RBAC alone")
            else:
                chain.append(z)
    if modes in ((NODE, RBAC), (RBAC,)):
        return RBACChain(chain[0], chain[1] if len(chain) == 3 else None, chain[-1])
    return Union(*chain)


def rbac_index(api: APIServer) -> Any:
    """The server's one RBAC index (the authorizer, the access reviews and the escalation checks
    of registry/rbac/escalation.py share it)."""
    index = getattr(api, "_rbac_index", None)
    if index is None:
        from .rbac import PolicyIndex
        index = api._rbac_index = PolicyIndex(api.storage)     # type: ignore[attr-defined]
    return index


def rbac_authorizer(api: APIServer) -> Any:
    """The RBAC authorizer of api's chain, or None (the reviews fall back to api.authorizer)."""
    from .rbac import RBACAuthorizer
    for z in getattr(api.authorizer, "authorizers", (api.authorizer,)):
        if isinstance(z, RBACAuthorizer):
            return z
    return None


async def synced(api: APIServer) -> None:
    """Wait until the RBAC index holds every write made so far (PolicyIndex.synced)."""
    index = getattr(api, "_rbac_index", None)
    if index is not None:
        await index.synced()


async def post_start(api: APIServer) -> None:
    """Upstream: the rbac/bootstrap-roles post-start hook (whenever the RBAC API is served),
    then the RBAC index's first list, so the first request is decided on the stored policy."""
    from .. import enablement
    if enablement.enabled("rbac.authorization.k8s.io", "v1", "clusterroles"):
        from .rbac.reconcile import ensure_rbac_policy
        await ensure_rbac_policy(api)
    index = getattr(api, "_rbac_index", None)
    if index is not None:
        await index.start()
    for authorizer in getattr(api.authorizer, "authorizers", ()):
        if hasattr(authorizer, "populator"):         # the Node authorizer: its graph, loaded once
            await authorizer.start()
