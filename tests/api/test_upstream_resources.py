"""Upstream's discovery table (kubeplane.api.upstream_resources): its invariants, the schema and
types generated for every kind in it, and how the resources served today compare with it."""
from __future__ import annotations

import importlib.util
import json
import pathlib
import sys
from typing import Any

import msgspec
import pytest

from kubeplane.api import resources as res
from kubeplane.api import types as t
from kubeplane.api import upstream_resources as upstream
from kubeplane.api.schema import definitions
from kubeplane.api.types import _registry

ROOT = pathlib.Path(__file__).resolve().parents[2]
VERBS = {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
ALL = upstream.resources()
# metrics.k8s.io is metrics-server's (an aggregated API upstream), not in kube-apiserver's document.
OURS = [r for r in res.RESOURCES if r.group != "metrics.k8s.io"]
SERVED = [pytest.param(r, id=f"{r.group or 'core'}/{r.plural}") for r in OURS]

# Upstream subresources of the resources served today that kubeplane does not serve yet: none
# since the proxy and streaming subresources (issue 15). Adding one here needs a reason.
MISSING_SUBRESOURCES: set[tuple[str, str, str]] = set()


@pytest.fixture(scope="module")
def gen() -> Any:
    spec = importlib.util.spec_from_file_location("gen_discovery", ROOT / "tools/gen_discovery.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_discovery"] = module
    spec.loader.exec_module(module)
    return module


# --- the table --------------------------------------------------------------------------------

def test_table_covers_the_issue_list_and_only_ga_versions() -> None:
    gvs = {(g, v) for g, versions in upstream.group_versions() for v in versions}
    issue = {("", "v1"), ("apps", "v1"), ("batch", "v1"), ("autoscaling", "v1"), ("autoscaling", "v2"),
             ("policy", "v1"), ("networking.k8s.io", "v1"), ("discovery.k8s.io", "v1"),
             ("rbac.authorization.k8s.io", "v1"), ("storage.k8s.io", "v1"), ("scheduling.k8s.io", "v1"),
             ("node.k8s.io", "v1"), ("certificates.k8s.io", "v1"), ("admissionregistration.k8s.io", "v1"),
             ("flowcontrol.apiserver.k8s.io", "v1"), ("resource.k8s.io", "v1"),
             ("authentication.k8s.io", "v1"), ("authorization.k8s.io", "v1")}
    assert issue <= gvs
    # Besides the issue's list: what kubeplane serves already, the apiextensions and aggregator
    # servers' groups, and storagemigration (GA in 1.37).
    assert gvs - issue == {("coordination.k8s.io", "v1"), ("events.k8s.io", "v1"), ("apiextensions.k8s.io", "v1"),
                           ("apiregistration.k8s.io", "v1"), ("storagemigration.k8s.io", "v1")}
    assert not any("alpha" in v or "beta" in v for _, v in gvs)
    not_served = set(upstream.document()["notServedByDefault"])
    assert not_served and not not_served & {f"{g}/{v}" if g else v for g, v in gvs}


def test_groups_list_preferred_version_first() -> None:
    assert upstream.group_versions()[0] == ("", ["v1"])          # /api first, as upstream
    for g in upstream.document()["groups"]:
        assert g["preferredVersion"] == g["versions"][0]
    assert upstream.preferred_version("autoscaling") == "v2"
    assert upstream.preferred_version("apps") == "v1"
    assert upstream.preferred_version("extensions") is None


def test_every_group_version_has_resources_and_every_resource_a_group() -> None:
    gvs = {(g, v) for g, versions in upstream.group_versions() for v in versions}
    assert {(r.group, r.version) for r in ALL} == gvs


@pytest.mark.parametrize("r", ALL, ids=lambda r: f"{r.group or 'core'}/{r.version}/{r.resource}")
def test_row_is_well_formed(r: upstream.UpstreamResource) -> None:
    assert upstream.lookup(r.group, r.version, r.resource) is r
    assert r.resource.islower() and r.singular_name.islower() and r.singular_name
    assert set(r.verbs) <= VERBS and list(r.verbs) == sorted(r.verbs)
    assert r.server in ("kube-apiserver", "apiextensions-apiserver", "kube-aggregator")
    for s in r.subresources:
        assert "/" not in s.name and s.verbs and (s.group is None) == (s.version is None)
    assert [s.name for s in r.subresources] == sorted(s.name for s in r.subresources)


def test_table_is_unique_by_path_and_by_kind() -> None:
    assert len({(r.group, r.version, r.resource) for r in ALL}) == len(ALL)
    assert len({(r.group, r.version, r.kind) for r in ALL}) == len(ALL)


def test_known_rows() -> None:
    sts = upstream.lookup("apps", "v1", "statefulsets")
    assert sts and sts.short_names == ("sts",) and sts.categories == ("all",)
    assert sts.subresource("scale") == upstream.UpstreamSubresource("scale", "Scale", ("get", "patch", "update"),
                                                                    "autoscaling", "v1")
    assert sts.storage_version_hash == "H+vl74LkKdo="
    pods = upstream.lookup("", "v1", "pods")
    assert pods and pods.subresource("eviction") == upstream.UpstreamSubresource(
        "eviction", "Eviction", ("create",), "policy", "v1")
    assert pods.subresource("ephemeralcontainers") and pods.subresource("ephemeralcontainers").kind == "Pod"
    assert pods.subresource("resize") and pods.subresource("checkpoint") is None     # GA / alpha
    ns = upstream.lookup("", "v1", "namespaces")
    assert ns and "deletecollection" not in ns.verbs                 # as upstream
    cs = upstream.lookup("", "v1", "componentstatuses")
    assert cs and cs.verbs == ("get", "list") and not cs.namespaced
    sar = upstream.lookup("authorization.k8s.io", "v1", "localsubjectaccessreviews")
    assert sar and sar.verbs == ("create",) and sar.namespaced
    crd = upstream.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert crd and crd.short_names == ("crd", "crds") and crd.server == "apiextensions-apiserver"
    assert crd.definition == "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"


# --- schema and types for every kind ------------------------------------------------------------

@pytest.mark.parametrize("r", ALL, ids=lambda r: f"{r.group or 'core'}/{r.version}/{r.resource}")
def test_every_kind_has_its_schema_definition(r: upstream.UpstreamResource) -> None:
    d = definitions()[r.definition]
    assert d["x-kubernetes-group-version-kind"] == [{"group": r.group, "kind": r.kind, "version": r.version}]
    assert d["properties"]["metadata"]
    if "list" in r.verbs:
        lst = definitions()[r.definition + "List"]
        assert lst["x-kubernetes-group-version-kind"] == [
            {"group": r.group, "kind": r.kind + "List", "version": r.version}]


@pytest.mark.parametrize("r", ALL, ids=lambda r: f"{r.group or 'core'}/{r.version}/{r.resource}")
def test_every_kind_has_types(r: upstream.UpstreamResource) -> None:
    cls = t.kind_type(r.api_version, r.kind)
    assert issubclass(cls, msgspec.Struct) and cls.__name__ == r.kind
    obj = cls()
    assert t.to_dict(obj) == {"apiVersion": r.api_version, "kind": r.kind}
    if "list" in r.verbs:
        assert t.list_type(r.api_version, r.kind).__name__ == r.kind + "List"


def _refs(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            out.add(node["$ref"].rsplit("/", 1)[1])
        for v in node.values():
            _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)
    return out


@pytest.mark.parametrize("r", ALL, ids=lambda r: f"{r.group or 'core'}/{r.version}/{r.resource}")
def test_every_kind_has_complete_openapi_components(r: upstream.UpstreamResource) -> None:
    """What `kubectl explain` walks once the kind is served: its schema and all it references."""
    from kubeplane.apiserver.openapi import _schemas
    components = _schemas([r.definition])
    kind = components[r.definition]
    assert kind["x-kubernetes-group-version-kind"] == [{"group": r.group, "kind": r.kind, "version": r.version}]
    assert kind["description"] and kind["properties"]["metadata"]
    assert _refs(components, set()) <= set(components)


def test_subresource_kinds_with_a_schema_have_types() -> None:
    for api_version, kind in (("autoscaling/v1", "Scale"), ("policy/v1", "Eviction"),
                              ("authentication.k8s.io/v1", "TokenRequest"), ("v1", "Binding")):
        assert t.kind_type(api_version, kind).__name__ == kind


def test_types_package_lists_every_generated_module() -> None:
    modules = set(_registry.MODULES)
    assert modules == {m for m in t.__all__ if m[0].islower() and m.rsplit("_", 1)[-1].startswith("v")}
    assert modules == {p.stem for p in (ROOT / "src/kubeplane/api/types").glob("*_v*.py")}
    assert t.GROUP_MODULES == _registry.MODULES


# --- what is served today against upstream ----------------------------------------------------

@pytest.mark.parametrize("r", SERVED)
def test_served_resource_matches_upstream(r: res.ResourceInfo) -> None:
    up = upstream.lookup(r.group, r.version, r.plural)
    assert up is not None
    assert (r.kind, r.singular, r.namespaced, r.definition) == (up.kind, up.singular_name, up.namespaced, up.definition)
    assert tuple(sorted(r.verbs)) == up.verbs
    assert r.short_names == up.short_names
    assert r.categories == up.categories
    for s in r.subresources:          # what is served is upstream's, kind and verbs
        assert up.subresource(s.name) == upstream.UpstreamSubresource(
            s.name, s.kind, tuple(sorted(s.verbs)), s.group or None, s.version or None)


def test_missing_subresources_of_served_resources() -> None:
    missing = {(r.group, r.plural, s.name) for r in OURS
               for s in upstream.lookup(r.group, r.version, r.plural).subresources   # type: ignore[union-attr]
               if r.subresource(s.name) is None}
    assert missing == MISSING_SUBRESOURCES


# --- the generator ------------------------------------------------------------------------------

def test_generator_folds_subresources_into_their_resource(gen: Any) -> None:
    entries = [
        {"kind": "Widget", "name": "widgets", "namespaced": True, "singularName": "widget",
         "shortNames": ["wd"], "storageVersionHash": "abc=", "verbs": ["list", "create", "get"]},
        {"group": "autoscaling", "kind": "Scale", "name": "widgets/scale", "namespaced": True,
         "singularName": "", "verbs": ["update", "get"], "version": "v1"},
        {"kind": "Widget", "name": "widgets/status", "namespaced": True, "singularName": "", "verbs": ["get"]},
    ]
    (row,) = gen.table_rows("example.com", "v1", "kube-apiserver", entries)
    assert row["verbs"] == ["create", "get", "list"] and row["shortNames"] == ["wd"] and row["categories"] == []
    assert row["definition"] == "io.k8s.api.example.v1.Widget"
    assert row["subresources"] == [
        {"name": "scale", "kind": "Scale", "verbs": ["get", "update"], "group": "autoscaling", "version": "v1"},
        {"name": "status", "kind": "Widget", "verbs": ["get"]}]


def test_generator_reads_upstream_file_names(gen: Any, tmp_path: pathlib.Path) -> None:
    assert gen.file_name("", "v1") == "api__v1.json"
    assert gen.file_name("rbac.authorization.k8s.io", "v1") == "apis__rbac.authorization.k8s.io__v1.json"
    (tmp_path / "apis__apps__v1.json").write_text(json.dumps({"groupVersion": "apps/v2", "resources": []}))
    with pytest.raises(SystemExit, match="groupVersion"):
        gen.resource_lists(tmp_path, "apps", "v1")


def test_committed_table_is_in_the_generator_format(gen: Any) -> None:
    text = (ROOT / "src/kubeplane/api/upstream_resources.json").read_text()
    assert gen.dumps(json.loads(text)) == text
    assert json.loads(text)["source"]["generator"] == "tools/gen_discovery.py"
