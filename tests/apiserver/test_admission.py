"""Admission on create: DefaultTolerationSeconds (NamespaceLifecycle is covered in test_errors)."""
from __future__ import annotations

from typing import Any

import pytest

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
               "tolerationSeconds": 300}


@pytest.mark.parametrize("given, expected", [
    pytest.param(None, [NOT_READY, UNREACHABLE], id="none-given"),
    pytest.param([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 60}],
                 [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                   "tolerationSeconds": 60}, UNREACHABLE], id="own-not-ready-kept"),
    pytest.param([{"operator": "Exists"}], [{"operator": "Exists"}], id="tolerates-everything"),
    pytest.param([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],
                 [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}, NOT_READY],
                 id="empty-effect-covers-noexecute"),
    pytest.param([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
                 [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
                  NOT_READY, UNREACHABLE], id="noschedule-does-not-count"),
])
async def test_default_toleration_seconds(api: Any, given: list[dict[str, Any]] | None,
                                          expected: list[dict[str, Any]]) -> None:
    pod = api.pod("tol")
    if given is not None:
        pod["spec"]["tolerations"] = given
    r = await api.call("POST", api.PODS, body=pod)
    assert r.status == 201, r.json
    assert r.json["spec"]["tolerations"] == expected
