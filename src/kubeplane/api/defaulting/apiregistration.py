"""apiregistration.k8s.io/v1 defaulting. Upstream: kube-aggregator pkg/apis/apiregistration/v1/defaults.go."""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def set_defaults_api_service(svc: Obj) -> None:
    """Upstream: SetDefaults_ServiceReference — port 443."""
    ref = (svc.get("spec") or {}).get("service") if isinstance(svc.get("spec"), dict) else None
    if isinstance(ref, dict) and ref.get("port") is None:
        ref["port"] = 443
