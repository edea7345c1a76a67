"""The authorizer interface: attributes of a request, a decision, and the union of authorizers.

Upstream: authorizer.Attributes / AttributesRecord, Decision, Authorizer
(apiserver/pkg/authorization/authorizer/interfaces.go), union.New
(apiserver/pkg/authorization/union/union.go), GetAuthorizerAttributes
(apiserver/pkg/endpoints/filters/authorization.go) and the 403 message of
responsewriters.forbiddenMessage.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable, Protocol

from ...api import errors
from ..authentication.user import UserInfo
from ..request import RequestInfo


class Decision(Enum):
    DENY = 0
    ALLOW = 1
    NO_OPINION = 2


@dataclass(slots=True, unsafe_hash=True)
class Attributes:
    """What is asked: a resource request (verb on group/resource[/subresource] in a namespace,
    maybe by name) or a non-resource one (verb on a path). Treat as immutable; not frozen
    because every request builds one, and a frozen dataclass's __init__ (object.__setattr__
    per field) costs ~17k instructions more than plain slot stores."""
    user: UserInfo
    verb: str
    resource_request: bool
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    # The request's fieldSelector, unparsed (upstream: GetFieldSelector; the node authorizer
    # allows a kubelet's pod list/watch only with spec.nodeName=<its node>).
    field_selector: str = ""


class Authorizer(Protocol):
    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        """The decision and its reason (shown in a 403 after the message, and in access reviews)."""
        ...


# An authorizer may also have `decide(user, info, path, field_selector) -> (Decision, reason)
# | None`: authorize(attributes_of(user, info, path, field_selector)) when it can answer
# without the Attributes (AlwaysAllow; modes.RBACChain from RBAC's cached decisions), None when
# it cannot. Every request asks it first (APIServer.authorize): building the Attributes and
# asking each authorizer of a union in turn is most of what a cached decision costs.
Decide = Callable[[UserInfo, RequestInfo, str, str], "tuple[Decision, str] | None"]


class AlwaysAllow:
    """Upstream: authorizerfactory.NewAlwaysAllowAuthorizer (--authorization-mode=AlwaysAllow)."""

    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""

    def decide(self, user: UserInfo, info: RequestInfo, path: str, field_selector: str) -> tuple[Decision, str]:
        return Decision.ALLOW, ""


class Union:
    """The first authorizer with an opinion decides; their reasons are joined as upstream's
    unionAuthzHandler does (its errors aside: none of ours fail)."""

    def __init__(self, *authorizers: Authorizer) -> None:
        self.authorizers = authorizers

    def authorize(self, a: Attributes) -> tuple[Decision, str]:
        reasons: list[str] | None = None          # made only when there is one: every request passes here
        for z in self.authorizers:
            decision, reason = z.authorize(a)
            if reason:
                if reasons is None:
                    reasons = []
                reasons.append(reason)
            if decision is not Decision.NO_OPINION:
                return decision, "\n".join(reasons) if reasons else ""
        return Decision.NO_OPINION, "\n".join(reasons) if reasons else ""


def attributes_of(user: UserInfo, info: RequestInfo, path: str, field_selector: str = "") -> Attributes:
    """Upstream: GetAuthorizerAttributes — a resource request's parts, or the path and the
    HTTP verb's lower-case name for anything else (the RequestInfo's verb is already that).
    A list or watch whose fieldSelector pins metadata.name is asked by that name, so a rule
    limited to resourceNames lets its holder list and watch those objects (`kubectl get pod x
    -w`). Upstream: RequestInfoFactory.NewRequestInfo's RequiresExactMatch("metadata.name")."""
    if info.is_resource_request:
        return Attributes(user, info.verb, True, info.namespace, info.group, info.version,
                          info.resource, info.subresource, request_name(info, field_selector), "", field_selector)
    return Attributes(user, info.verb or "get", False, path=path)


def request_name(info: RequestInfo, field_selector: str) -> str:
    """The name a resource request is authorized by: its own, or the one a list or watch's
    fieldSelector pins (attributes_of)."""
    if field_selector and not info.name and (info.verb == "list" or info.verb == "watch"):
        return selected_name(field_selector)
    return info.name


_OPERATORS = ("!=", "==", "=")          # upstream's termOperators, in the order tried


def selected_name(field_selector: str) -> str:
    r"""The name a field selector requires exactly (`metadata.name=x` or `==x`), if it parses and
    the name is a valid path segment; else "". Upstream: fields.ParseSelector (terms split at
    unescaped commas and sorted, each at its first operator; values unescaped: `\\`, `\,`, `\=`),
    RequiresExactMatch and path.IsValidPathSegmentName."""
    terms, term, escaped = [], [], False
    for c in field_selector:
        if escaped:
            term.append(c)
            escaped = False
        elif c == "\\":
            term.append(c)
            escaped = True
        elif c == ",":
            terms.append("".join(term))
            term = []
        else:
            term.append(c)
    terms.append("".join(term))
    found = ""
    for t in sorted(terms):             # parseSelector sorts its terms: the first of two names wins
        if not t:
            continue
        for i in range(len(t)):
            op = next((o for o in _OPERATORS if t.startswith(o, i)), None)
            if op is not None:
                break
        else:
            return ""                    # not a selector: the request is asked without a name
        value = _unescape(t[i + len(op):])
        if value is None:
            return ""
        if not found and op != "!=" and t[:i] == "metadata.name":
            found = value
    if found in (".", "..") or "/" in found or "%" in found:
        return ""
    return found


def _unescape(s: str) -> str | None:
    """Upstream: fields.UnescapeValue (None: an invalid escape or an unescaped `,` or `=`)."""
    out, escaped = [], False
    for c in s:
        if escaped:
            if c not in "\\,=":
                return None
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            return None
        else:
            out.append(c)
    return None if escaped else "".join(out)


def forbidden(a: Attributes, reason: str) -> errors.StatusError:
    """The 403 upstream writes: responsewriters.Forbidden with forbiddenMessage, wrapped by
    apierrors.NewForbidden on the group/resource (no subresource) and the name."""
    from ..admission.interface import status_forbidden
    user = a.user.name
    if not a.resource_request:
        msg = f'User "{user}" cannot {a.verb} path "{a.path}"'
    else:
        resource = a.resource + ("/" + a.subresource if a.subresource else "")
        msg = f'User "{user}" cannot {a.verb} resource "{resource}" in API group "{a.api_group}"'
        msg += f' in the namespace "{a.namespace}"' if a.namespace else " at the cluster scope"
    if reason:
        msg += ": " + reason
    if not a.resource_request:          # NewForbidden of an empty GroupResource
        return errors.StatusError(403, "Forbidden", "forbidden: " + msg, {})
    return status_forbidden(a.api_group, a.resource, a.name, msg)
