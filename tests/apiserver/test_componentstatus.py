"""componentstatuses: get and list only, answered from the in-process components' health."""
from __future__ import annotations

from typing import Any

from kubeplane.utils.healthz import NamedCheck


def _conditions(cs: dict[str, Any]) -> tuple[str, str, str]:
    [c] = cs["conditions"]
    assert c["type"] == "Healthy"
    return c["status"], c.get("message", ""), c.get("error", "")


async def test_list_reports_each_component_from_its_health_check(api: Any) -> None:
    api.server.health.add_health_checks(NamedCheck("scheduler", lambda: None),
                                        NamedCheck("controller-manager", lambda: RuntimeError("crashed 2 time(s)")))
    r = await api.get("/api/v1/componentstatuses")
    assert r.status == 200 and r.json["kind"] == "ComponentStatusList"
    by_name = {cs["metadata"]["name"]: _conditions(cs) for cs in r.json["items"]}
    assert by_name == {"scheduler": ("True", "ok", ""), "controller-manager": ("False", "", "crashed 2 time(s)"),
                       "etcd-0": ("True", "ok", "")}


async def test_a_component_not_running_here_is_unhealthy(api: Any) -> None:
    r = await api.get("/api/v1/componentstatuses/scheduler")
    assert r.status == 200 and r.json["kind"] == "ComponentStatus"
    status, _, error = _conditions(r.json)
    assert status == "False" and "not running" in error


async def test_unknown_component_and_writes_are_refused(api: Any) -> None:
    r = await api.get("/api/v1/componentstatuses/nope")
    assert r.status == 404 and r.json["reason"] == "NotFound"
    r = await api.create("/api/v1/componentstatuses", {"apiVersion": "v1", "kind": "ComponentStatus",
                                                       "metadata": {"name": "x"}})
    assert r.status == 405 and r.json["reason"] == "MethodNotAllowed"
    r = await api.call("DELETE", "/api/v1/componentstatuses/scheduler")
    assert r.status == 405


async def test_list_honours_the_field_selector(api: Any) -> None:
    r = await api.get("/api/v1/componentstatuses", {"fieldSelector": "metadata.name=etcd-0"})
    assert [cs["metadata"]["name"] for cs in r.json["items"]] == ["etcd-0"]
