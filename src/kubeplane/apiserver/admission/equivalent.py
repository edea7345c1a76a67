"""Which resources are the same objects served under another group or version, and each one's kind.

Upstream: EquivalentResourceRegistry (apimachinery pkg/runtime/mapper.go), filled by the API
installer's RegisterKindFor for every resource and subresource it serves, keyed as kube-apiserver
keys it (NewEquivalentResourceRegistryWithIdentity with the storage factory's ResourcePrefix): two
resources are equivalent when they are stored under the same prefix. matchPolicy Equivalent
(webhooks and admission policies) asks it when no rule matches the request as it was made:
generic.Webhook.ShouldCallHook (plugin/webhook/generic/webhook.go), matchesResourceRules
(plugin/policy/matching/matching.go).

What kubeplane serves equivalently (every definition of the registry, by its storage prefix):
  events            core v1 Event  <->  events.k8s.io/v1 Event         (cohabiting, /registry/events/)
  horizontalpodautoscalers  autoscaling/v2  <->  autoscaling/v1        (one group, two versions)
  */scale           the kind is autoscaling/v1 Scale (deployments, replicasets, statefulsets,
                    replicationcontrollers): no equivalent while apps is served in v1 only
  */status          the resource's own kind in each version
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

if TYPE_CHECKING:
    from .interface import Attributes

R = TypeVar("R")


class GVR(NamedTuple):
    group: str
    version: str
    resource: str


    def __str__(self) -> str:
        """schema.GroupVersionResource.String()."""
        return f"{self.group}/{self.version}, Resource={self.resource}"


class GVK(NamedTuple):
    group: str
    version: str
    kind: str


class Match(NamedTuple):
    """The resource and kind a rule matched the request as (its own, or an equivalent)."""
    resource: GVR
    kind: GVK


class UnknownKindError(Exception):
    """An equivalent resource matched whose kind is not registered (upstream: `unable to convert
    to <gvr>: unknown kind`)."""


EMPTY_KIND = GVK("", "", "")


class EquivalentResourceRegistry:
    """Upstream: equivalentResourceRegistry — resources by a shared key (key_func's, or
    "<resource>.<group>" when it gives ""), and the kind each resource's subresource takes.
    Registration order is the order of EquivalentResourcesFor's answer."""

    def __init__(self, key_func: Callable[[str, str], str] | None = None) -> None:
        self._key_func = key_func
        self._keys: dict[tuple[str, str], str] = {}
        self._resources: dict[str, dict[str, list[GVR]]] = {}
        self._kinds: dict[GVR, dict[str, GVK]] = {}

    def register_kind_for(self, resource: GVR, subresource: str, kind: GVK) -> None:
        """Upstream: RegisterKindFor."""
        self._kinds.setdefault(resource, {})[subresource] = kind
        gr = (resource.group, resource.resource)
        key = (self._key_func(*gr) if self._key_func is not None else "") or (
            f"{resource.resource}.{resource.group}" if resource.group else resource.resource)
        self._keys[gr] = key
        self._resources.setdefault(key, {}).setdefault(subresource, []).append(resource)

    def equivalent_resources_for(self, resource: GVR, subresource: str) -> list[GVR]:
        """Upstream: EquivalentResourcesFor — resource itself included, when it is registered."""
        key = self._keys.get((resource.group, resource.resource))
        if key is None:
            return []
        return self._resources[key].get(subresource, [])

    def kind_for(self, resource: GVR, subresource: str) -> GVK:
        """Upstream: KindFor — the kind resource's subresource ("" = itself) takes; EMPTY_KIND if unknown."""
        return self._kinds.get(resource, {}).get(subresource, EMPTY_KIND)


def from_registry() -> EquivalentResourceRegistry:
    """The registry of every served resource and subresource, keyed by storage prefix (as
    kube-apiserver keys it: ResourcePrefix, so core and events.k8s.io events are one)."""
    from ..enablement import enabled
    from ..registry.registry import REGISTRY

    prefixes = {(d.group, d.plural): d.prefix for d in REGISTRY.resources}
    reg = EquivalentResourceRegistry(lambda group, resource: prefixes.get((group, resource), ""))
    for d in REGISTRY.resources:
        if not enabled(d.group, d.version, d.plural):
            continue
        gvr = GVR(d.group, d.version, d.plural)
        reg.register_kind_for(gvr, "", GVK(d.group, d.version, d.kind))
        for sub in d.subresources:
            own = not sub.group and not sub.version
            reg.register_kind_for(gvr, sub.name, GVK(d.group if own else sub.group, d.version if own else sub.version,
                                                     sub.kind))
    return reg


_default: tuple[int, object, EquivalentResourceRegistry] | None = None


def default() -> EquivalentResourceRegistry:
    """from_registry(), built once and again only when the registry or the served set changed."""
    global _default
    from .. import enablement
    from ..registry.registry import REGISTRY
    stamp = (len(REGISTRY.resources), enablement._served)
    if _default is None or (_default[0], _default[1]) != stamp:
        _default = (stamp[0], stamp[1], from_registry())
    return _default[2]


RuleMatcher = Callable[[Any, "Attributes", GVR], bool]


def match_resource_rules(rules: Iterable[R], a: Attributes, equivalent: bool, mapper: EquivalentResourceRegistry | None,
                         matches: Callable[[R, Attributes, GVR], bool], request_kind: GVK) -> Match | None:
    """The first rule matching the request as it was made (its resource, request_kind); else, under
    matchPolicy Equivalent, the first rule (earlier rules first) matching one of its equivalent
    resources, as that resource and its kind. Raises UnknownKindError.

    Upstream: ShouldCallHook's two loops (webhook/generic/webhook.go), matchesResourceRules
    (policy/matching/matching.go). Example: a rule for apps/v1beta1 deployments and a request to
    apps/v1 deployments — Exact: no match; Equivalent: the match is apps/v1beta1 deployments,
    kind apps/v1beta1 Deployment, and the webhook gets the object converted to it.
    """
    rules = tuple(rules)
    own = GVR(a.group, a.version, a.resource)
    for r in rules:
        if matches(r, a, own):
            return Match(own, request_kind)
    if not equivalent:
        return None
    others = [e for e in (mapper or default()).equivalent_resources_for(own, a.subresource) if e != own]
    for r in rules:
        for e in others:
            if matches(r, a, e):
                kind = (mapper or default()).kind_for(e, a.subresource)
                if kind == EMPTY_KIND:
                    raise UnknownKindError(f"unable to convert to {e}: unknown kind")
                return Match(e, kind)
    return None
