"""Pod resources through the API: pod-level defaults, the QoS class they give, and quantities
with the exa suffix (`1E` was a 500: read as an exponent without digits)."""
from __future__ import annotations

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec}}


async def test_pod_level_limits_make_a_guaranteed_pod(api) -> None:
    r = await api.create(PODS, pod("p", resources={"limits": {"cpu": "2", "memory": "1Gi"}}))
    assert r.status == 201, r.json
    assert r.json["spec"]["resources"]["requests"] == {"cpu": "2", "memory": "1Gi"}
    assert r.json["status"]["qosClass"] == "Guaranteed"


async def test_exa_quantities_are_quantities(api) -> None:
    p = pod("e")
    p["spec"]["containers"][0]["resources"] = {"limits": {"memory": "1E", "cpu": "2E"}}
    r = await api.create(PODS, p)
    assert r.status == 201, r.json
    assert r.json["spec"]["containers"][0]["resources"]["requests"] == {"memory": "1E", "cpu": "2E"}
    assert r.json["status"]["qosClass"] == "Guaranteed"
