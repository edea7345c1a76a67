"""The PodSecurity admission plugin through the API: the namespace labels decide per mode."""
from __future__ import annotations

from typing import Any

import pytest

RESTRICTED_POD_SPEC: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{"name": "c", "image": "nginx",
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
}


def warnings_of(r: Any) -> list[str]:
    return [v for k, v in r.headers if k.lower() == "warning"]


async def namespace(api: Any, name: str, labels: dict[str, str] | None = None) -> Any:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
    return await api.call("POST", "/api/v1/namespaces", body=body)


def privileged_pod(api: Any, name: str, ns: str) -> dict[str, Any]:
    p = api.pod(name, ns)
    p["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    return p


async def test_enforce_restricted_refuses_with_upstreams_message(api: Any) -> None:
    assert (await namespace(api, "r", {"pod-security.kubernetes.io/enforce": "restricted"})).status == 201
    r = await api.call("POST", "/api/v1/namespaces/r/pods", body=privileged_pod(api, "p", "r"))
    assert r.status == 403, r.json
    assert r.json["reason"] == "Forbidden"
    assert r.json["message"] == (
        'pods "p" is forbidden: violates PodSecurity "restricted:latest": '
        'privileged (container "c" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")')
    assert r.json["details"] == {"name": "p", "kind": "pods"}
    assert (await api.get("/api/v1/namespaces/r/pods/p")).status == 404
    ok = api.pod("ok", "r", **RESTRICTED_POD_SPEC)
    r = await api.call("POST", "/api/v1/namespaces/r/pods", body=ok)
    assert r.status == 201, r.json
    assert warnings_of(r) == []
