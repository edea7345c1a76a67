"""namespaceSelector and objectSelector, with upstream's cases (predicates/namespace/
matcher_test.go, predicates/object/matcher_test.go) on a memory store."""
from __future__ import annotations

from typing import Any

import pytest
from conftest import NS

from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.webhook.predicates import (
    SelectorError, match_namespace_selector, match_object_selector, parse_selector,
)
from kubeplane.apiserver.server import APIServer

C, U, D = Operation.CREATE, Operation.UPDATE, Operation.DELETE
RUNLEVEL_1 = parse_selector({"matchLabels": {"runlevel": "1"}})
TEAM_A = parse_selector({"matchLabels": {"team": "a"}})     # the fixture's namespace


def ns_obj(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


@pytest.mark.parametrize(("attrs", "selector", "expected"), [
    pytest.param(Attributes(C, "", "v1", "namespaces", "Namespace", "", "2", ns_obj("2", runlevel="1")),
                 RUNLEVEL_1, True, id="namespace create: the object's labels"),
    pytest.param(Attributes(U, "", "v1", "namespaces", "Namespace", "", "2", ns_obj("2", runlevel="2")),
                 RUNLEVEL_1, False, id="namespace update: the new object's labels"),
    pytest.param(Attributes(D, "", "v1", "namespaces", "Namespace", "", NS), TEAM_A, True,
                 id="namespace delete: the stored labels"),
    pytest.param(Attributes(C, "", "v1", "namespaces", "Namespace", "", NS, subresource="finalize"), TEAM_A, True,
                 id="namespace subresource: the stored labels"),
    pytest.param(Attributes(C, "", "v1", "pods", "Pod", NS, "p"), TEAM_A, True, id="pod: its namespace's labels"),
    pytest.param(Attributes(C, "", "v1", "pods", "Pod", NS, "p"), RUNLEVEL_1, False, id="pod: not selected"),
    pytest.param(Attributes(C, "", "v1", "nodes", "Node", "", "n"), RUNLEVEL_1, True,
                 id="cluster-scoped: never exempted"),
    pytest.param(Attributes(C, "", "v1", "pods", "Pod", NS, "p"), parse_selector({}), True, id="empty selector"),
])
async def test_namespace_selector(api: APIServer, attrs: Attributes, selector: Any, expected: bool) -> None:
    assert await match_namespace_selector(api, selector, attrs) == (expected, None)


async def test_namespace_not_found_is_its_404(api: APIServer) -> None:
    matches, err = await match_namespace_selector(api, TEAM_A, Attributes(C, "", "v1", "pods", "Pod", "gone", "p"))
    assert not matches and err is not None
    assert (err.code, err.message) == (404, 'namespaces "gone" not found')


async def test_a_bad_selector_is_an_internal_error(api: APIServer) -> None:
    bad = parse_selector({"matchExpressions": [{"key": "a", "operator": "Sometimes"}]})
    assert isinstance(bad, SelectorError)
    _, err = await match_namespace_selector(api, bad, Attributes(C, "", "v1", "pods", "Pod", NS, "p"))
    assert err is not None and err.code == 500 and err.message.startswith("Internal error occurred: ")
    _, err = match_object_selector(bad, Attributes(C, "", "v1", "pods", "Pod", NS, "p"))
    assert err is not None and err.code == 500


def obj(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "o", "labels": labels}}


@pytest.mark.parametrize(("new", "old", "selector", "expected"), [
    pytest.param(obj(a="1"), None, {"matchLabels": {"a": "1"}}, True, id="new object"),
    pytest.param(None, obj(a="1"), {"matchLabels": {"a": "1"}}, True, id="old object (delete)"),
    pytest.param(obj(a="2"), obj(a="1"), {"matchLabels": {"a": "1"}}, True, id="either"),
    pytest.param(obj(a="2"), obj(a="3"), {"matchLabels": {"a": "1"}}, False, id="neither"),
    pytest.param(None, None, {"matchLabels": {"a": "1"}}, False, id="no object"),
    pytest.param(None, None, {}, True, id="empty selector"),
    pytest.param(obj(), None, {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, True,
                 id="does not exist"),
])
def test_object_selector(new: Any, old: Any, selector: dict[str, Any], expected: bool) -> None:
    attrs = Attributes(U, "", "v1", "configmaps", "ConfigMap", NS, "o", new, old)
    assert match_object_selector(parse_selector(selector), attrs) == (expected, None)
