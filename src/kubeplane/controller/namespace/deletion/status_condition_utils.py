"""Namespace status conditions reporting how deletion of the namespace's content goes.

Upstream: pkg/controller/namespace/deletion/status_condition_utils.go. Every sync computes the
five conditions afresh: a problem found sets its condition True with a reason and message,
anything not reported is set False with the "ok" reason and message below.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ....api.types import core_v1

DISCOVERY_FAILURE = "NamespaceDeletionDiscoveryFailure"
GV_PARSING_FAILURE = "NamespaceDeletionGroupVersionParsingFailure"
CONTENT_FAILURE = "NamespaceDeletionContentFailure"
CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"

CONDITION_TYPES = (DISCOVERY_FAILURE, GV_PARSING_FAILURE, CONTENT_FAILURE, CONTENT_REMAINING, FINALIZERS_REMAINING)

OK_MESSAGES = {
    DISCOVERY_FAILURE: "All resources successfully discovered",
    GV_PARSING_FAILURE: "All legacy kube types successfully parsed",
    CONTENT_FAILURE: "All content successfully deleted, may be waiting on finalization",
    CONTENT_REMAINING: "All content successfully removed",
    FINALIZERS_REMAINING: "All content successfully removed",
}
OK_REASONS = {
    DISCOVERY_FAILURE: "ResourcesDiscovered",
    GV_PARSING_FAILURE: "ParsedGroupVersions",
    CONTENT_FAILURE: "ContentDeleted",
    CONTENT_REMAINING: "ContentRemoved",
    FINALIZERS_REMAINING: "ContentRemoved",
}


@dataclass
class AllGVRDeletionMetadata:
    """What remains after one pass. Upstream: allGVRDeletionMetadata"""

    gvr_to_num_remaining: dict[tuple[str, str], int] = field(default_factory=dict)   # (group, resource)
    finalizers_to_num_remaining: dict[str, int] = field(default_factory=dict)


@dataclass
class NamespaceConditionUpdater:
    """Collects problems during a sync, then writes them as conditions.

    Upstream: namespaceConditionUpdater
    """

    now: str
    new_conditions: list[core_v1.NamespaceCondition] = field(default_factory=list)
    delete_content_errors: list[str] = field(default_factory=list)

    def _condition(self, type_: str, reason: str, message: str, status: str = "True") -> core_v1.NamespaceCondition:
        return core_v1.NamespaceCondition(type=type_, status=status, reason=reason, message=message,
                                          last_transition_time=self.now)

    def process_content_totals(self, totals: AllGVRDeletionMetadata) -> None:
        """Upstream: ProcessContentTotals"""
        if totals.gvr_to_num_remaining:
            # e.g. "pods. has 2 resource instances" (resource.group, as upstream prints a GVR)
            remaining = sorted(f"{res}.{group} has {n} resource instances"
                               for (group, res), n in totals.gvr_to_num_remaining.items() if n)
            self.new_conditions.append(self._condition(
                CONTENT_REMAINING, "SomeResourcesRemain", f"Some resources are remaining: {', '.join(remaining)}"))
        if totals.finalizers_to_num_remaining:
            remaining = sorted(f"{fin} in {n} resource instances"
                               for fin, n in totals.finalizers_to_num_remaining.items() if n)
            self.new_conditions.append(self._condition(
                FINALIZERS_REMAINING, "SomeFinalizerRemain", f"Some finalizers are remaining: {', '.join(remaining)}"))

    def process_discover_resources_err(self, err: BaseException) -> None:
        """Upstream: ProcessDiscoverResourcesErr"""
        self.new_conditions.append(self._condition(DISCOVERY_FAILURE, "DiscoveryFailed", str(err)))

    def process_delete_content_err(self, err: BaseException) -> None:
        """Upstream: ProcessDeleteContentErr"""
        self.delete_content_errors.append(str(err))

    def update(self, status: Any) -> bool:
        """Write the conditions into a NamespaceStatus (a copy); whether anything changed.

        Upstream: Update / updateConditions
        """
        if get_condition(self.new_conditions, CONTENT_FAILURE) is None and self.delete_content_errors:
            msgs = sorted(self.delete_content_errors)
            self.new_conditions.append(self._condition(
                CONTENT_FAILURE, "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(msgs)} remaining: {', '.join(msgs)}"))
        return update_conditions(status, self.new_conditions, self.now)


def update_conditions(status: Any, new_conditions: list[core_v1.NamespaceCondition], now: str) -> bool:
    """Upstream: updateConditions — lastTransitionTime moves only when the status flips."""
    changed = False
    if status.conditions is None:
        status.conditions = []
    for type_ in CONDITION_TYPES:
        new = get_condition(new_conditions, type_) or core_v1.NamespaceCondition(
            type=type_, status="False", reason=OK_REASONS[type_], message=OK_MESSAGES[type_],
            last_transition_time=now)
        old = get_condition(status.conditions, type_)
        if old is None:
            status.conditions.append(new)
            changed = True
        elif (old.status, old.message, old.reason) != (new.status, new.message, new.reason):
            if old.status != new.status:
                old.last_transition_time = now
            old.status, old.reason, old.message = new.status, new.reason, new.message
            changed = True
    return changed


def get_condition(conditions: list[Any] | None, type_: str) -> Any | None:
    for c in conditions or ():
        if c.type == type_:
            return c
    return None
