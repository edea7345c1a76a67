"""Impersonation: Impersonate-User, -Group, -Uid and -Extra-<key> headers (kubectl --as,
--as-group, --as-uid).

Each thing asked for is authorized with the `impersonate` verb for the authenticated user:
users (or serviceaccounts in the named namespace, for system:serviceaccount:<ns>:<name>),
groups, uids and userextras/<key> (the last two in authentication.k8s.io), in upstream's order;
the first refusal is upstream's 403 (`users "jane" is forbidden: User "bob" cannot impersonate
resource "users" in API group "" at the cluster scope`). Groups, a uid or extras without a user
are a 400. Allowed, the impersonated user replaces the request's user, with
system:authenticated added (system:unauthenticated for system:anonymous) unless the groups
already name either, and a service account's groups when none are given; the authenticated
user is kept on the request as `impersonated_by` (what audit logs as the user, the new one as
impersonatedUser).

Upstream: k8s.io/apiserver pkg/endpoints/filters/impersonation/impersonation.go
(WithImpersonation, buildImpersonationRequests, unescapeExtraKey).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from ...api import errors
from ..authorization.authorizer import Attributes, Authorizer, Decision, forbidden
from .serviceaccount import make_group_names, split_username
from .user import ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS_NAME, UserInfo

if TYPE_CHECKING:
    from ..request import Request

USER_HEADER = "impersonate-user"
GROUP_HEADER = "impersonate-group"
UID_HEADER = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """One thing asked for (upstream reuses v1.ObjectReference for them)."""
    kind: str
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""

    def go_string(self) -> str:
        """Go's %v of the ObjectReference struct: its seven fields, space-separated."""
        return "{" + " ".join((self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path)) + "}"


def wants_impersonation(headers: dict[str, str]) -> bool:
    """Whether any Impersonate-* header is present (cheap: the hot path asks this per request,
    so one search of the names joined by LF, which no name holds, not a test per header)."""
    return "\nimpersonate-" in "\n" + "\n".join(headers)


def requests_of(req: Request) -> list[ObjectReference]:
    """The impersonation requests in the headers, in upstream's order; 400 for groups, a uid or
    extras without a user. Upstream: buildImpersonationRequests"""
    pairs = _header_pairs(req)
    refs: list[ObjectReference] = []
    user = next((v for k, v in pairs if k == USER_HEADER), "")
    if user:
        sa = split_username(user)
        refs.append(ObjectReference("ServiceAccount", sa[1], sa[0]) if sa else ObjectReference("User", user))
    groups = [v for k, v in pairs if k == GROUP_HEADER]
    refs.extend(ObjectReference("Group", g) for g in groups)
    extras = [(unquote_key(k[len(EXTRA_PREFIX):]), v) for k, v in pairs if k.startswith(EXTRA_PREFIX)]
    refs.extend(ObjectReference("UserExtra", v, api_version=f"{AUTHENTICATION_GROUP}/v1", field_path=key)
                for key, v in extras)
    uid = next((v for k, v in pairs if k == UID_HEADER), "")
    if uid:
        refs.append(ObjectReference("UID", uid, api_version=f"{AUTHENTICATION_GROUP}/v1"))
    if (groups or extras or uid) and not user:
        raise errors.BadRequest(f"requested [{' '.join(r.go_string() for r in refs)}] without impersonating a user")
    return refs


def impersonate(req: Request, requestor: UserInfo, authorizer: Authorizer) -> UserInfo | None:
    """The impersonated user, each part authorized for requestor; None without Impersonate-*
    headers. Upstream: WithImpersonation"""
    refs = requests_of(req)
    if not refs:
        return None
    groups_specified = any(r.kind == "Group" for r in refs)
    username, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for r in refs:
        group = r.api_version.rpartition("/")[0] if "/" in r.api_version else ""
        version = r.api_version.rpartition("/")[2]
        resource, subresource = "", ""
        if r.kind == "ServiceAccount":
            resource, username = "serviceaccounts", f"system:serviceaccount:{r.namespace}:{r.name}"
            if not groups_specified:
                groups = list(make_group_names(r.namespace))
        elif r.kind == "User":
            resource, username = "users", r.name
        elif r.kind == "Group":
            resource = "groups"
            groups.append(r.name)
        elif r.kind == "UserExtra":
            resource, subresource = "userextras", r.field_path
            extra.setdefault(r.field_path, []).append(r.name)
        else:                                           # UID
            resource, uid = "uids", r.name
        a = Attributes(requestor, "impersonate", True, r.namespace, group, version, resource, subresource, r.name)
        decision, reason = authorizer.authorize(a)
        if decision is not Decision.ALLOW:
            raise forbidden(a, reason)
    if username != ANONYMOUS_NAME:
        if ALL_AUTHENTICATED not in groups and ALL_UNAUTHENTICATED not in groups:
            groups.append(ALL_AUTHENTICATED)
    elif ALL_UNAUTHENTICATED not in groups:
        groups.append(ALL_UNAUTHENTICATED)
    return UserInfo(username, uid, tuple(groups), tuple(sorted((k, tuple(v)) for k, v in extra.items())))


def unquote_key(encoded: str) -> str:
    """Upstream: unescapeExtraKey — %-decoded, or as given when malformed (Go's PathUnescape
    refuses a bad escape where Python's unquote keeps it: the same result)."""
    try:
        return unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        return encoded


def _header_pairs(req: Request) -> list[tuple[str, str]]:
    """The Impersonate-* headers with every value, in order (a header may repeat: kubectl sends
    one Impersonate-Group per --as-group). The raw ASGI list when there is one, else the dict."""
    raw = req.raw_headers
    if raw is None:
        return [(k, v) for k, v in req.headers.items() if k.startswith("impersonate-")]
    out = []
    for k, v in raw:
        name = k.decode("latin-1").lower()
        if name.startswith("impersonate-"):
            out.append((name, v.decode("latin-1")))
    return out
