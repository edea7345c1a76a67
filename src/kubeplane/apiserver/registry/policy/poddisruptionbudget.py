"""PodDisruptionBudgets. Upstream: pkg/registry/policy/poddisruptionbudget (strategy.go:
create starts from an empty status — Go's zero PodDisruptionBudgetStatus, whose counts are
not omitempty — and generation 1; generation follows spec changes)."""
from __future__ import annotations

from typing import Any

from ....api.resources import STATUS
from ....api.validation import policy as validation
from ...tables import policy as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy

EMPTY_STATUS = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


class PodDisruptionBudgetStrategy(Strategy):
    has_status = True
    sets_generation = True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["status"] = dict(EMPTY_STATUS)


POD_DISRUPTION_BUDGETS = register(ResourceDefinition(
    "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget", True,
    "io.k8s.api.policy.v1.PodDisruptionBudget",
    short_names=("pdb",), subresources=(STATUS("PodDisruptionBudget"),),
    strategy=PodDisruptionBudgetStrategy(),
    validate=validation.validate_pdb, validate_update=validation.validate_pdb_update,
    validate_status_update=validation.validate_pdb_status_update,
    columns=tables.pdb_columns, printer=tables.print_pdb,
))
