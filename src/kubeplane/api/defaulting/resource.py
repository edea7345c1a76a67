"""resource.k8s.io/v1 defaulting. Upstream: pkg/apis/resource/v1/defaults.go."""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _exact(req: Any) -> None:
    """Upstream: SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest — allocationMode
    ExactCount, count 1 with it; tolerations' operator Equal."""
    if not isinstance(req, dict):
        return
    if not req.get("allocationMode"):
        req["allocationMode"] = "ExactCount"
    if req["allocationMode"] == "ExactCount" and not req.get("count"):
        req["count"] = 1
    for t in req.get("tolerations") or []:
        if isinstance(t, dict) and not t.get("operator"):
            t["operator"] = "Equal"


def set_defaults_claim_spec(spec: Any) -> None:
    for req in ((spec or {}).get("devices") or {}).get("requests") or [] if isinstance(spec, dict) else []:
        if not isinstance(req, dict):
            continue
        _exact(req.get("exactly"))
        for sub in req.get("firstAvailable") or []:
            _exact(sub)


def set_defaults_resource_claim(claim: Obj) -> None:
    set_defaults_claim_spec(claim.get("spec"))


def set_defaults_resource_claim_template(tmpl: Obj) -> None:
    set_defaults_claim_spec((tmpl.get("spec") or {}).get("spec") if isinstance(tmpl.get("spec"), dict) else None)
