"""networking.k8s.io/v1 defaulting. Upstream: pkg/apis/networking/v1/defaults.go.

Ingress has no defaults: a path's pathType is required (validation), not defaulted.
"""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def set_defaults_network_policy(np: Obj) -> None:
    """Upstream: SetDefaults_NetworkPolicy and SetDefaults_NetworkPolicyPort."""
    spec = np.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("policyTypes"):
        # Any policy that does not specify policyTypes implies at least "Ingress".
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule.get("ports") or []) if isinstance(rule, dict) else []:
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"


def set_defaults_ingress_class(ic: Obj) -> None:
    """Upstream: SetDefaults_IngressClass — parameters.scope defaults to Cluster."""
    params = (ic.get("spec") or {}).get("parameters")
    if isinstance(params, dict) and params.get("scope") is None:
        params["scope"] = "Cluster"
