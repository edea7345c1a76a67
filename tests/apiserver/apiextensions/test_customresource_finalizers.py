"""A custom object's finalizers need only be qualified names (apimachinery's ObjectMeta rules,
as customResourceStrategy uses); one without a path is accepted with upstream's warning
(WarningsOnCreate), where a built-in kind refuses it."""
from __future__ import annotations

from typing import Any

from kubeplane.api.validation import meta
from kubeplane.api.validation.names import name_is_dns_subdomain
from kubeplane.apiserver.apiextensions.customresource import KUBE_FINALIZER_RULE, finalizer_warnings

from .test_crd_controller import CRDS, established, served  # noqa: F401  (its fixture)
from .test_customresource_serving import BASE, crd, foo, warnings


def test_the_rule_left_out_is_the_one_built_ins_apply() -> None:
    errs = meta.validate_object_meta({"name": "a", "namespace": "d", "finalizers": ["bare"]}, True,
                                     name_is_dns_subdomain)
    assert [e.detail for e in errs] == [KUBE_FINALIZER_RULE]


def test_warnings() -> None:
    assert finalizer_warnings({"metadata": {"finalizers": ["example.com/ok", "orphan", "bare"]}}) == [
        'metadata.finalizers: "bare": prefer a domain-qualified finalizer name including a path (/) to avoid '
        "accidental conflicts with other finalizer writers"]


async def test_a_custom_object_with_a_bare_finalizer_is_created_with_a_warning(served: Any) -> None:  # noqa: F811
    api = served
    await api.create(CRDS, crd())
    await established(api, "foos.example.com")
    body = foo("a")
    body["metadata"]["finalizers"] = ["test-finalizer"]
    r = await api.create(BASE, body)
    assert r.status == 201, r.json
    assert warnings(r) == ['299 - "metadata.finalizers: \\"test-finalizer\\": prefer a domain-qualified finalizer '
                           'name including a path (/) to avoid accidental conflicts with other finalizer writers"']
    body["metadata"] = {"name": "b", "finalizers": ["Not Qualified!"]}
    r = await api.create(BASE, body)
    assert r.status == 422 and "metadata.finalizers" in r.json["message"], r.json
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["test-finalizer"]}}
    assert (await api.create("/api/v1/namespaces/default/configmaps", cm)).status == 422


def test_update_warnings_name_only_added_finalizers() -> None:
    old = {"metadata": {"finalizers": ["bare"]}}
    assert finalizer_warnings({"metadata": {"finalizers": ["bare"]}}, old) == []
    assert finalizer_warnings({"metadata": {"finalizers": ["bare", "new", "example.com/ok"]}}, old) == [
        'metadata.finalizers: "new": prefer a domain-qualified finalizer name including a path (/) to avoid '
        "accidental conflicts with other finalizer writers"]


async def test_an_update_adding_a_bare_finalizer_warns(served: Any) -> None:  # noqa: F811
    """Upstream: customResourceStrategy.WarningsOnUpdate (the finalizers the update adds; none
    on /status, whose strategy warns of nothing)."""
    api = served
    await api.create(CRDS, crd())
    await established(api, "foos.example.com")
    body = foo("a")
    body["metadata"]["finalizers"] = ["first"]
    created = (await api.create(BASE, body)).json
    created["metadata"]["finalizers"] = ["first", "second"]
    r = await api.call("PUT", f"{BASE}/a", body=created)
    assert r.status == 200, r.json
    assert warnings(r) == ['299 - "metadata.finalizers: \\"second\\": prefer a domain-qualified finalizer '
                           'name including a path (/) to avoid accidental conflicts with other finalizer writers"']
    r = await api.call("PATCH", f"{BASE}/a", body={"metadata": {"labels": {"x": "y"}}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200 and warnings(r) == [], r.json
    r = await api.call("PUT", f"{BASE}/a/status", body={**r.json, "status": {"n": 1}})
    assert r.status == 200 and warnings(r) == [], r.json
