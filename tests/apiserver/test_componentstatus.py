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


async def test_deprecated_kinds_warn_on_every_request(api: Any) -> None:
    """Upstream: the installer's deprecation warning (APILifecycleDeprecated 1.19 / 1.33)."""
    r = await api.get("/api/v1/componentstatuses")
    assert ("warning", '299 - "v1 ComponentStatus is deprecated in v1.19+"') in r.headers
    r = await api.get("/api/v1/namespaces/default/endpoints")
    assert r.headers[0] == ("warning", '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 '
                                       'EndpointSlice"')
    r = await api.get("/api/v1/namespaces/default/configmaps")
    assert not any(k == "warning" for k, _ in r.headers)
