"""flowcontrol.apiserver.k8s.io/v1 defaulting. Upstream: pkg/apis/flowcontrol/v1/defaults.go."""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

FLOW_SCHEMA_DEFAULT_MATCHING_PRECEDENCE = 1000
DEFAULT_NOMINAL_CONCURRENCY_SHARES = 30


def set_defaults_flow_schema(fs: Obj) -> None:
    """Upstream: SetDefaults_FlowSchemaSpec — matchingPrecedence 1000 when unset (or 0)."""
    spec = fs.get("spec")
    if isinstance(spec, dict) and not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = FLOW_SCHEMA_DEFAULT_MATCHING_PRECEDENCE


def set_defaults_queuing(q: Obj) -> None:
    """Upstream: SetDefaults_QueuingConfiguration (zero means unset)."""
    for key, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
        if not q.get(key):
            q[key] = value


def set_defaults_priority_level_configuration(plc: Obj) -> None:
    """Upstream: SetDefaults_PriorityLevelConfiguration, SetDefaults_LimitedPriorityLevelConfiguration,
    SetDefaults_ExemptPriorityLevelConfiguration and SetDefaults_QueuingConfiguration."""
    spec = plc.get("spec")
    if not isinstance(spec, dict):
        return
    # Defaulters run on every non-nil struct of their type, whatever spec.type says.
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if isinstance(limited, dict):
        limited.setdefault("nominalConcurrencyShares", DEFAULT_NOMINAL_CONCURRENCY_SHARES)
        limited.setdefault("lendablePercent", 0)
    if isinstance(exempt, dict):
        exempt.setdefault("nominalConcurrencyShares", 0)
        exempt.setdefault("lendablePercent", 0)
    if isinstance(limited, dict):
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(queuing, dict):
            set_defaults_queuing(queuing)
