"""The authenticated user every request carries. Upstream: user.Info / user.DefaultInfo and the
well-known names (apiserver/pkg/authentication/user/user.go)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Upstream: the constants of user.go.
SYSTEM_PRIVILEGED_GROUP = "system:masters"
NODES_GROUP = "system:nodes"
MONITORING_GROUP = "system:monitoring"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ALL_AUTHENTICATED = "system:authenticated"
ANONYMOUS_NAME = "system:anonymous"
API_SERVER_USER = "system:apiserver"
KUBE_PROXY = "system:kube-proxy"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_SCHEDULER = "system:kube-scheduler"
NODE_USER_PREFIX = "system:node:"
# Upstream: user.CredentialIDKey, and the service account extras (authentication/serviceaccount/util.go)
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"

@dataclass(frozen=True, slots=True)
class UserInfo:
    """A user as the authenticators found it: name, uid, groups and extra (key -> values).
    Frozen and hashable (extra as sorted (key, values) pairs): one instance is shared by every
    request of an identity, and authorizers may cache decisions per user."""
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """authentication.k8s.io/v1 UserInfo (SelfSubjectReview, TokenReview, AdmissionReview)."""
        d: dict[str, Any] = {"username": self.name}
        if self.uid:
            d["uid"] = self.uid
        if self.groups:
            d["groups"] = list(self.groups)
        if self.extra:
            d["extra"] = {k: list(v) for k, v in self.extra}
        return d


ANONYMOUS = UserInfo(ANONYMOUS_NAME, groups=(ALL_UNAUTHENTICATED,))


def authenticated(name: str, *groups: str, uid: str = "") -> UserInfo:
    """A user with `system:authenticated` added, as upstream's authenticator union does
    (group.AuthenticatedGroupAdder) for every user but the anonymous one."""
    gs = tuple(groups) if ALL_AUTHENTICATED in groups else (*groups, ALL_AUTHENTICATED)
    return UserInfo(name, uid, gs)


# The API server's own loopback user (bootstrap writes, an eviction's budget update).
APISERVER = authenticated(API_SERVER_USER, SYSTEM_PRIVILEGED_GROUP)


def component(name: str) -> UserInfo:
    """The identity an in-process component acts as, as its upstream client certificate names
    it: system:kube-controller-manager, system:kube-scheduler, system:node:<n> in system:nodes."""
    if name.startswith(NODE_USER_PREFIX):
        return authenticated(name, NODES_GROUP)
    return authenticated(name)
