"""The Available condition of an APIService with spec.service, as upstream's availability
controller decides it:

1. the Service must exist (else False ServiceNotFound);
2. for a ClusterIP Service: it must have the port the APIService names (ServicePortError), it
   must have EndpointSlices (EndpointsNotFound), and one of them a ready endpoint with that
   port's name (MissingEndpoints);
3. GET /apis/<group>/<version> on an endpoint, as system:kube-aggregator in system:masters,
   must answer 2xx within 5 s (FailedDiscoveryCheck, with the error);
4. then True, Passed, "all checks passed".
The transition time moves only when the status changes (SetAPIServiceCondition).

Upstream: AvailableConditionController.sync (kube-aggregator pkg/controllers/status/remote/
remote_available_controller.go), SetAPIServiceCondition (pkg/apis/apiregistration/v1/helper).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .resolver import has_available_endpoint

Obj = dict[str, Any]
# The discovery check: None when it passed, else upstream's error text.
Check = Callable[[], Awaitable[str | None]]


def condition(status: str, reason: str, message: str) -> Obj:
    return {"type": "Available", "status": status, "reason": reason, "message": message}


async def available_condition(api_service: Obj, service: Obj | None, slices: list[Obj], check: Check) -> Obj:
    """The Available condition (without lastTransitionTime) of an APIService with spec.service."""
    ref = api_service["spec"]["service"]
    name, ns, port = ref.get("name", ""), ref.get("namespace", ""), ref.get("port", 443)
    if service is None:
        return condition("False", "ServiceNotFound", f'service/{name} in "{ns}" is not present')
    spec = service.get("spec") or {}
    if (spec.get("type") or "ClusterIP") == "ClusterIP":
        port_name = next(((p.get("name") or "") for p in spec.get("ports") or [] if p.get("port") == port), None)
        if port_name is None:
            return condition("False", "ServicePortError", f'service/{name} in "{ns}" is not listening on port {port}')
        if not slices:
            return condition("False", "EndpointsNotFound", f'cannot find endpointslices for service/{name} in "{ns}"')
        if not has_available_endpoint(port_name, slices):
            return condition("False", "MissingEndpoints",
                             f'endpointslices for service/{name} in "{ns}" have no addresses with port name "{port_name}"')
    error = await check()
    if error is not None:
        return condition("False", "FailedDiscoveryCheck", error)
    return condition("True", "Passed", "all checks passed")


def set_condition(api_service: Obj, new: Obj, now: str) -> None:
    """Replace the condition of new's type; the transition time moves only with the status.
    Upstream: SetAPIServiceCondition"""
    conditions = api_service.setdefault("status", {}).setdefault("conditions", [])
    existing = next((c for c in conditions if c.get("type") == new["type"]), None)
    if existing is None:
        conditions.append({**new, "lastTransitionTime": now})
        return
    if existing.get("status") != new["status"]:
        existing["status"] = new["status"]
        existing["lastTransitionTime"] = now
    existing["reason"], existing["message"] = new["reason"], new["message"]


def is_available(api_service: Obj) -> bool:
    """Upstream: IsAPIServiceConditionTrue(apiService, Available)"""
    return any(c.get("type") == "Available" and c.get("status") == "True"
               for c in (api_service.get("status") or {}).get("conditions") or [])
