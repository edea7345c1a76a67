"""Which evaluator measures which resource.

Pods, services and PVCs have their own evaluators; a few core kinds keep a legacy alias next to
their `count/` name (`secrets`, `configmaps`, ...); any other resource gets an object-count
evaluator (`count/<resource>.<group>`) the first time it is asked for, as upstream's admission
plugin and quota monitor create them for every resource they see. Requests for the ignored
resources (not stored, or never quota'd: events, reviews, bindings) are never evaluated.

Upstream: NewEvaluators, legacyObjectCountAliases (pkg/quota/v1/evaluator/core/registry.go),
ignoredResources (pkg/quota/v1/install/registry.go), generic.NewRegistry.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from ....utils.clock import REAL_CLOCK, Clock
from ...generic import Evaluator, ObjectCountEvaluator
from .persistent_volume_claims import PersistentVolumeClaimEvaluator
from .pods import PodEvaluator
from .services import ServiceEvaluator

LEGACY_OBJECT_COUNT_ALIASES = {
    ("", "configmaps"): "configmaps",
    ("", "resourcequotas"): "resourcequotas",
    ("", "replicationcontrollers"): "replicationcontrollers",
    ("", "secrets"): "secrets",
}

IGNORED_RESOURCES = frozenset({
    ("", "bindings"),
    ("", "componentstatuses"),
    ("", "events"),
    ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
})

# count/<resource> or count/<resource>.<group>: the resource is the part before the first dot.
_COUNT_NAME = re.compile(r"count/([^.]+)(?:\.(.+))?")


class Registry:
    """The evaluators by (group, resource). Upstream: generic.simpleRegistry."""

    def __init__(self, evaluators: Iterable[Evaluator]) -> None:
        self._by_gr: dict[tuple[str, str], Evaluator] = {e.group_resource(): e for e in evaluators}

    def get(self, group: str, resource: str) -> Evaluator | None:
        return self._by_gr.get((group, resource))

    def get_or_count(self, group: str, resource: str) -> Evaluator:
        """The evaluator of a resource, an object-count one made and kept if there is none."""
        e = self._by_gr.get((group, resource))
        if e is None:
            e = self._by_gr[(group, resource)] = ObjectCountEvaluator(group, resource)
        return e

    def evaluators(self) -> list[Evaluator]:
        return list(self._by_gr.values())

    def for_names(self, names: Iterable[str]) -> list[Evaluator]:
        """The evaluators accounting for any of the quota names, making object-count ones for
        `count/...` names of resources not seen yet (upstream's quota monitor has one for every
        listable resource)."""
        names = list(names)
        for name in names:
            m = _COUNT_NAME.fullmatch(name)
            if m and (m.group(2) or "", m.group(1)) not in IGNORED_RESOURCES:
                self.get_or_count(m.group(2) or "", m.group(1))
        return [e for e in self._by_gr.values() if e.matching_resources(names)]


def new_registry(clock: Clock = REAL_CLOCK) -> Registry:
    """Upstream: NewEvaluators."""
    evaluators: list[Evaluator] = [PodEvaluator(clock), ServiceEvaluator(), PersistentVolumeClaimEvaluator()]
    evaluators += [ObjectCountEvaluator(g, r, alias) for (g, r), alias in LEGACY_OBJECT_COUNT_ALIASES.items()]
    return Registry(evaluators)
