"""CustomResourceDefinition defaulting and validation, against upstream's tables and messages
(apiextensions-apiserver pkg/apis/apiextensions/validation/validation_test.go, v1/defaults_test.go).
The openAPIV3Schema rules are the structural-schema library's and tested there."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.defaulting.apiextensions import set_defaults_custom_resource_definition
from kubeplane.api.validation import apiextensions as v

SCHEMA = {"openAPIV3Schema": {"type": "object"}}


def crd(**spec: Any) -> dict[str, Any]:
    """A valid, defaulted v1 CRD (plural "plural", group "group.com"), spec fields replaced by `spec`."""
    obj: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "plural.group.com"},
        "spec": {"group": "group.com", "scope": "Cluster",
                 "names": {"plural": "plural", "singular": "singular", "kind": "Plural", "listKind": "PluralList"},
                 "versions": [{"name": "version", "served": True, "storage": True, "schema": SCHEMA}],
                 "conversion": {"strategy": "None"}},
        "status": {"storedVersions": ["version"]}}
    obj["spec"].update(spec)
    return obj


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in v.validate_custom_resource_definition(obj)]


def test_a_valid_crd_has_no_errors() -> None:
    assert messages(crd()) == []


@pytest.mark.parametrize("spec, expected", [
    pytest.param({"group": "group"}, 'spec.group: Invalid value: "group": should be a domain with at least one dot',
                 id="group without a dot"),
    pytest.param({"scope": ""}, "spec.scope: Required value", id="missing scope"),
    pytest.param({"scope": "foo"}, 'spec.scope: Unsupported value: "foo": supported values: "Cluster", "Namespaced"',
                 id="bad scope"),
    pytest.param({"versions": [{"name": "version", "served": True, "storage": True, "schema": SCHEMA},
                               {"name": "version2", "served": True, "storage": True, "schema": SCHEMA}]},
                 "must have exactly one version marked as storage version", id="two storage versions"),
    pytest.param({"versions": [{"name": "version", "served": True, "storage": True, "schema": SCHEMA},
                               {"name": "version", "served": True, "storage": False, "schema": SCHEMA}]},
                 "must contain unique version names", id="duplicate versions"),
    pytest.param({"versions": [{"name": "Version", "served": True, "storage": True, "schema": SCHEMA}]},
                 'spec.versions[0].name: Invalid value: "Version": a DNS-1035 label must consist of lower case',
                 id="version name not a DNS-1035 label"),
    pytest.param({"versions": [{"name": "version", "served": True, "storage": True}]},
                 "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required", id="no schema"),
    pytest.param({"names": {"plural": "plural", "singular": "singular", "kind": "Plural", "listKind": "Plural"}},
                 'spec.names.listKind: Invalid value: "Plural": kind and listKind may not be the same',
                 id="kind equals listKind"),
    pytest.param({"names": {"plural": "plural", "singular": "singular", "kind": "Pl ural", "listKind": "PluralList"}},
                 'spec.names.kind: Invalid value: "Pl ural": may have mixed case, but should otherwise match: '
                 "a DNS-1035 label", id="kind not a label"),
    pytest.param({"names": {"plural": "plural", "singular": "singular", "kind": "Plural", "listKind": "PluralList",
                            "shortNames": ["a b"], "categories": ["c d"]}},
                 'spec.names.shortNames[0]: Invalid value: "a b"', id="short names and categories"),
    pytest.param({"names": {"plural": "", "singular": "", "kind": "", "listKind": ""}},
                 "spec.names.plural: Required value", id="names required"),
    pytest.param({"conversion": {"strategy": "non_existing_conversion"}},
                 'spec.conversion.strategy: Unsupported value: "non_existing_conversion": supported values: '
                 '"None", "Webhook"', id="bad conversion strategy"),
    pytest.param({"conversion": {"strategy": "Webhook"}},
                 "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                 id="webhook without client config"),
    pytest.param({"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://example.com/x"}}}},
                 "spec.conversion.conversionReviewVersions: Required value", id="webhook without review versions"),
    pytest.param({"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://example.com/x"},
                                                                    "conversionReviewVersions": ["invalid-version"]}}},
                 'spec.conversion.conversionReviewVersions: Invalid value: ["invalid-version"]: must include at least '
                 "one of v1, v1beta1", id="webhook with unknown review versions"),
    pytest.param({"conversion": {"strategy": "None", "webhook": {"clientConfig": {"url": "https://example.com/x"}}}},
                 "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to "
                 "Webhook", id="client config without a webhook"),
    pytest.param({"preserveUnknownFields": True},
                 "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
                 "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
                 id="preserveUnknownFields"),
])
def test_invalid_spec(spec: dict[str, Any], expected: str) -> None:
    msgs = messages(crd(**spec))
    assert any(expected in m for m in msgs), msgs


def test_name_must_be_plural_dot_group() -> None:
    obj = crd()
    obj["metadata"]["name"] = "plural.other.com"
    assert messages(obj) == ['metadata.name: Invalid value: "plural.other.com": must be spec.names.plural+"."+spec.group']


def test_one_version_reports_per_version_fields_at_the_top_level_as_upstream_internal_form() -> None:
    version = {"name": "version", "served": True, "storage": True, "schema": SCHEMA,
               "subresources": {"scale": {"specReplicasPath": ".foo", "statusReplicasPath": ".status.r"}},
               "additionalPrinterColumns": [{"name": "x", "type": "bad", "jsonPath": "spec"}]}
    msgs = messages(crd(versions=[version]))
    assert msgs == [
        'spec.subresources.scale.specReplicasPath: Invalid value: ".foo": should be a json path under .spec',
        'spec.additionalPrinterColumns[0].type: Invalid value: "bad": must be one of boolean,date,integer,number,string',
        'spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec": must be a simple json path starting with .']


def test_versions_that_differ_report_per_version_paths() -> None:
    first = {"name": "v1", "served": True, "storage": True, "schema": SCHEMA}
    second = {"name": "v2", "served": True, "storage": False, "schema": SCHEMA,
              "additionalPrinterColumns": [{"name": "", "type": "", "jsonPath": ""}],
              "subresources": {"scale": {}}}
    obj = crd(versions=[first, second])
    obj["status"]["storedVersions"] = ["v1"]
    assert messages(obj) == [
        "spec.versions[1].subresources.scale.specReplicasPath: Required value",
        "spec.versions[1].subresources.scale.statusReplicasPath: Required value",
        "spec.versions[1].additionalPrinterColumns[0].name: Required value",
        "spec.versions[1].additionalPrinterColumns[0].type: Required value: must be one of "
        "boolean,date,integer,number,string",
        "spec.versions[1].additionalPrinterColumns[0].JSONPath: Required value"]


def test_deprecation_warning_only_for_deprecated_versions() -> None:
    version = {"name": "version", "served": True, "storage": True, "schema": SCHEMA, "deprecationWarning": "x" * 257}
    assert messages(crd(versions=[version])) == [
        "spec.versions[0].deprecationWarning: Too long: may not be more than 256 bytes",
        'spec.versions[0].deprecationWarning: Invalid value: "' + "x" * 257 + '": can only be set for deprecated versions']


@pytest.mark.parametrize("stored, expected", [
    pytest.param([], ["status.storedVersions: Invalid value: []: must have at least one stored version"], id="none"),
    pytest.param(["other"], ['status.storedVersions: Invalid value: ["other"]: must have the storage version version',
                             'status.storedVersions[0]: Invalid value: "other": missing from spec.versions; other was '
                             "previously a storage version, and must remain in spec.versions until a storage migration "
                             "ensures no data remains persisted in other and removes other from status.storedVersions"],
                 id="storage version missing, unknown one"),
    pytest.param(["version"], [], id="ok"),
])
def test_stored_versions(stored: list[str], expected: list[str]) -> None:
    obj = crd()
    obj["status"]["storedVersions"] = stored
    assert messages(obj) == expected


def _established(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["status"]["conditions"] = [{"type": "Established", "status": "True"}]
    obj["metadata"]["resourceVersion"] = "1"
    return obj


@pytest.mark.parametrize("established, expected", [
    pytest.param(False, ['spec.group: Invalid value: "other.com": field is immutable',
                         'spec.names.plural: Invalid value: "plurals": field is immutable'], id="not established"),
    pytest.param(True, ['spec.scope: Invalid value: "Namespaced": field is immutable',
                        'spec.names.kind: Invalid value: "Other": field is immutable',
                        'spec.group: Invalid value: "other.com": field is immutable',
                        'spec.names.plural: Invalid value: "plurals": field is immutable'], id="established"),
])
def test_update_immutable_fields(established: bool, expected: list[str]) -> None:
    old = _established(crd()) if established else {**crd(), "metadata": {"name": "plural.group.com",
                                                                          "resourceVersion": "1"}}
    new = copy.deepcopy(old)
    new["spec"].update(group="other.com", scope="Namespaced")
    new["spec"]["names"].update(plural="plurals", kind="Other", listKind="OtherList")
    msgs = [str(e) for e in v.validate_custom_resource_definition_update(new, old)]
    assert [m for m in msgs if "immutable" in m] == expected


def test_status_update_validates_accepted_names_only() -> None:
    old = _established(crd())
    new = copy.deepcopy(old)
    new["status"]["acceptedNames"] = {"plural": "Bad Plural"}
    new["spec"]["scope"] = "nonsense"               # the status strategy keeps the stored spec anyway
    msgs = [str(e) for e in v.validate_custom_resource_definition_status_update(new, old)]
    assert len(msgs) == 1 and msgs[0].startswith('status.acceptedNames.plural: Invalid value: "Bad Plural"')


def test_defaults() -> None:
    """Upstream: SetDefaults_CustomResourceDefinition(Spec), SetDefaults_ServiceReference."""
    obj = {"spec": {"names": {"kind": "Foo"}, "versions": [{"name": "v1", "storage": False},
                                                              {"name": "v2", "storage": True}]}}
    set_defaults_custom_resource_definition(obj)
    assert obj["spec"]["names"] == {"kind": "Foo", "singular": "foo", "listKind": "FooList"}
    assert obj["spec"]["conversion"] == {"strategy": "None"}
    assert obj["status"] == {"storedVersions": ["v2"]}
    assert "scope" not in obj["spec"]                # v1 has no default scope: it is required
    webhook = {"spec": {"names": {"kind": "Foo", "singular": "s", "listKind": "L"},
                        "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "n"}}}}},
               "status": {"storedVersions": ["v0"]}}
    set_defaults_custom_resource_definition(webhook)
    assert webhook["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443
    assert webhook["spec"]["names"] == {"kind": "Foo", "singular": "s", "listKind": "L"}
    assert webhook["status"] == {"storedVersions": ["v0"]}


def test_an_empty_conversion_is_defaulted() -> None:
    """What server-side apply leaves after kubectl's upgrade from client-side apply (see the
    defaulter): the re-apply of a CRD must not fail on spec.conversion.strategy."""
    obj = {"spec": {"names": {"kind": "Foo"}, "conversion": {}}}
    set_defaults_custom_resource_definition(obj)
    assert obj["spec"]["conversion"] == {"strategy": "None"}


@pytest.mark.parametrize("obj", [{}, {"spec": None}, {"spec": {"names": 5, "versions": "x"}}, {"spec": {}, "status": 3}])
def test_garbage_does_not_crash(obj: dict[str, Any]) -> None:
    set_defaults_custom_resource_definition(obj)
    assert v.validate_custom_resource_definition({"metadata": {"name": "a.b.c"}, **obj})


def test_the_schema_library_sees_each_schema_at_upstreams_path() -> None:
    """validate_schema (the structural-schema library, bound by the CRD's registry definition)
    gets each openAPIV3Schema at the internal form's path: hoisted when all versions share it."""
    seen: list[str] = []

    def validate_schema(schema: dict[str, Any], path: str, status_enabled: bool) -> list[Any]:
        seen.append(path)
        return []
    v.validate_custom_resource_definition(crd(), validate_schema=validate_schema)
    other = {"openAPIV3Schema": {"type": "object", "description": "other"}}
    two = crd(versions=[{"name": "v1", "served": True, "storage": True, "schema": SCHEMA},
                        {"name": "v2", "served": True, "storage": False, "schema": other}])
    v.validate_custom_resource_definition(two, validate_schema=validate_schema)
    assert seen == ["spec.validation.openAPIV3Schema", "spec.versions[0].schema.openAPIV3Schema",
                    "spec.versions[1].schema.openAPIV3Schema"]
