"""spec.conversion of a CustomResourceDefinition, against upstream's tables and messages
(apiextensions-apiserver pkg/apis/apiextensions/validation/validation_test.go: the webhookconfig
cases, conversionReviewVersions, caBundle on create and update; apiserver
pkg/util/webhook/validation.go's URL and service rules)."""
from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from kubeplane.api.validation import apiextensions as v
from kubeplane.testing.webhook_server import make_pki

from test_validation_apiextensions import SCHEMA, crd

VERSIONS = [{"name": "version", "served": True, "storage": True, "schema": SCHEMA},
            {"name": "version2", "served": True, "storage": False, "schema": SCHEMA}]
URL = {"url": "https://example.com/webhook"}


def webhook(client: Any = None, versions: Any = ("v1",), **extra: Any) -> dict[str, Any]:
    hook: dict[str, Any] = {}
    if client is not None:
        hook["clientConfig"] = client
    if versions is not None:
        hook["conversionReviewVersions"] = list(versions)
    return {"versions": VERSIONS, "conversion": {"strategy": "Webhook", "webhook": hook}, **extra}


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in v.validate_custom_resource_definition(obj)]


P = "spec.conversion"


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param(webhook(URL), [], id="valid url"),
    pytest.param(webhook({"service": {"name": "n", "namespace": "ns", "port": 443, "path": "/a/b"}}), [],
                 id="valid service"),
    pytest.param(webhook({"service": {"name": "n", "namespace": "ns", "port": 0}}),
                 [f"{P}.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and "
                  "65535, inclusive"], id="invalid port 0"),
    pytest.param(webhook({"service": {"name": "n", "namespace": "ns", "port": 65536}}),
                 [f"{P}.webhookClientConfig.service.port: Invalid value: 65536: port is not valid: must be between 1 "
                  "and 65535, inclusive"], id="invalid port 65536"),
    pytest.param(webhook({"service": {"name": "", "namespace": "", "port": 443}}),
                 [f"{P}.webhookClientConfig.service.name: Required value",
                  f"{P}.webhookClientConfig.service.namespace: Required value"], id="service without a name"),
    pytest.param(webhook({"service": {"name": "n", "namespace": "ns", "port": 443, "path": "foo//Bar/"}}),
                 [f'{P}.webhookClientConfig.service.path: Invalid value: "foo//Bar/": must start with a \'/\'',
                  f'{P}.webhookClientConfig.service.path: Invalid value: "foo//Bar/": segment[1] may not be empty',
                  f'{P}.webhookClientConfig.service.path: Invalid value: "foo//Bar/": segment[2]: a lowercase RFC 1123 '
                  "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
                  "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"], id="service path segments"),
    pytest.param(webhook({"service": {"name": "n", "namespace": "ns", "port": 443, "path": "//"}}),
                 [f'{P}.webhookClientConfig.service.path: Invalid value: "//": segment[0] may not be empty'],
                 id="service path //"),
    pytest.param(webhook({"url": ""}),
                 [f"{P}.webhookClientConfig.url: Invalid value: \"\": 'https' is the only allowed URL scheme; "
                  "desired format: https://host[/path]",
                  f'{P}.webhookClientConfig.url: Invalid value: "": host must be specified; desired format: '
                  "https://host[/path]"], id="empty url"),
    pytest.param(webhook({"url": "http://u:p@example.com/x?q=1#f"}),
                 [f"{P}.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; "
                  "desired format: https://host[/path]",
                  f'{P}.webhookClientConfig.url: Invalid value: "u:p": user information is not permitted in the URL',
                  f'{P}.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL',
                  f'{P}.webhookClientConfig.url: Invalid value: "q=1": query parameters are not permitted in the URL'],
                 id="url parts"),
    pytest.param(webhook({}), [f"{P}.webhookClientConfig: Required value: exactly one of url or service is required"],
                 id="neither url nor service"),
    pytest.param(webhook({**URL, "service": {"name": "n", "namespace": "ns", "port": 443}}),
                 [f"{P}.webhookClientConfig: Required value: exactly one of url or service is required"],
                 id="both url and service"),
    pytest.param(webhook(None), [f"{P}.webhookClientConfig: Required value: required when strategy is set to Webhook"],
                 id="webhook without a client config"),
    pytest.param(webhook(URL, None), [f"{P}.conversionReviewVersions: Required value"], id="no review versions"),
    pytest.param(webhook(URL, ["0v"]),
                 [f'{P}.conversionReviewVersions[0]: Invalid value: "0v": a DNS-1035 label must consist of lower case '
                  "alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
                  "character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                  f'{P}.conversionReviewVersions: Invalid value: ["0v"]: must include at least one of v1, v1beta1'],
                 id="invalid review version"),
    pytest.param(webhook(URL, ["v1", "v1"]), [f'{P}.conversionReviewVersions[1]: Invalid value: "v1": duplicate version'],
                 id="duplicate review version"),
    pytest.param(webhook(URL, ["v2", "v1beta1"]), [], id="an unknown review version beside a known one"),
    pytest.param({"conversion": {"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}}},
                 [f"{P}.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"],
                 id="review versions without a webhook"),
    pytest.param({**webhook(URL), "preserveUnknownFields": True},
                 [f'{P}.strategy: Invalid value: "Webhook": must be None if spec.preserveUnknownFields is true',
                  "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set "
                  "x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"],
                 id="webhook with preserveUnknownFields"),
    pytest.param(webhook({**URL, "caBundle": base64.b64encode(b"not a certificate").decode()}), [],
                 id="invalid caBundle allowed on create"),
])
def test_conversion_validation(spec: dict[str, Any], expected: list[str]) -> None:
    assert messages(crd(**spec)) == expected


def _established(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["status"]["conditions"] = [{"type": "Established", "status": "True"}]
    obj["metadata"]["resourceVersion"] = "1"
    return obj


BAD_CA = base64.b64encode(b"not a certificate").decode()
GOOD_CA = base64.b64encode(make_pki()[0]).decode()


@pytest.mark.parametrize(("old_ca", "new_ca", "established", "refused"), [
    pytest.param(GOOD_CA, BAD_CA, True, True, id="valid to invalid, established: refused"),
    pytest.param(GOOD_CA, BAD_CA, False, False, id="valid to invalid, not established: allowed"),
    pytest.param(BAD_CA, BAD_CA + "Cg==", True, False, id="invalid to invalid: allowed"),
    pytest.param(None, BAD_CA, True, True, id="none to invalid, established: refused"),
    pytest.param(GOOD_CA, GOOD_CA, True, False, id="valid stays valid"),
])
def test_ca_bundle_on_update(old_ca: str | None, new_ca: str, established: bool, refused: bool) -> None:
    """Upstream: allowInvalidCABundle — an established CRD cannot get an invalid caBundle
    unless it already had one."""
    old = crd(**webhook({**URL, **({"caBundle": old_ca} if old_ca else {})}))
    old = _established(old) if established else {**old, "metadata": {**old["metadata"], "resourceVersion": "1"}}
    new = copy.deepcopy(old)
    new["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = new_ca
    msgs = [str(e) for e in v.validate_custom_resource_definition_update(new, old)]
    expected = [f"{P}.webhookClientConfig.caBundle: Invalid value: {new_ca!r}: unable to load root certificates: "
                "unable to parse bytes as PEM block".replace("'", '"')] if refused else []
    assert msgs == expected


def test_an_unrecognized_review_version_may_stay_on_update() -> None:
    """Upstream: requireRecognizedConversionReviewVersion is off when the old CRD had none recognized."""
    old = crd(**webhook(URL, ["v3"]))
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    assert [str(e) for e in v.validate_custom_resource_definition_update(new, old)] == []
    old["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = ["v1"]
    assert [str(e) for e in v.validate_custom_resource_definition_update(new, old)] == [
        f'{P}.conversionReviewVersions: Invalid value: ["v3"]: must include at least one of v1, v1beta1']
