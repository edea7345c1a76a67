"""certificates.k8s.io/v1 validation and the CSR strategies (pkg/apis/certificates/validation,
pkg/registry/certificates/certificates/strategy.go)."""
from __future__ import annotations

import base64
from typing import Any

from kubeplane.apiserver.authentication.user import authenticated
from kubeplane.api.validation import certificates as v
from kubeplane.apiserver.registry.certificates.csr import CSRStrategy

PEM = base64.b64encode(b"-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n").decode()


def msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def csr(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "c"}, "spec": {"request": PEM, "signerName": "example.com/s", **spec}}


def test_valid_csr() -> None:
    assert v.validate_csr(csr(usages=["client auth"], expirationSeconds=600)) == []


def test_csr_rules() -> None:
    bad = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
    assert msgs(v.validate_csr(csr(request=bad, signerName="", usages=["flying"], expirationSeconds=599))) == [
        f'spec.request: Invalid value: "{bad}": PEM block type must be CERTIFICATE REQUEST',
        'spec.usages[0]: Unsupported value: "flying": supported values: ' + ", ".join(f'"{u}"' for u in v.USAGES),
        "spec.signerName: Required value: signerName must be provided",
        "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)",
    ]
    assert msgs(v.validate_csr(csr(usages=["client auth", "client auth"]))) == [
        'spec.usages[1]: Duplicate value: "client auth"']
    assert msgs(v.validate_csr(csr())) == ["spec.usages: Required value: usages must be provided"]
    assert msgs(v.validate_csr(csr(signerName="nodomain", usages=["any"]))) == [
        "spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form "
        "'example.com/signer-name'"]


def test_approved_and_denied_are_exclusive() -> None:
    c = csr(usages=["any"])
    c["status"] = {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "False"}]}
    assert msgs(v.validate_csr(c)) == [
        'status.conditions[1].status: Unsupported value: "False": supported values: "True"',
        'status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions are mutually exclusive']
    assert msgs(v.validate_csr(csr(usages=["any"], signerName="example/s"))) == [
        'spec.signerName: Invalid value: "example": should be a domain with at least two segments separated by dots']


def test_strategies_keep_spec_and_split_conditions() -> None:
    s = CSRStrategy()
    obj = csr(username="forged", groups=["system:masters"], uid="x")
    obj["metadata"] = {"name": "c"}
    obj["status"] = {"conditions": [{"type": "Approved", "status": "True"}]}
    s.prepare_for_create(obj)
    s.prepare_for_create_by(obj, authenticated("jane"))
    assert "status" not in obj
    assert (obj["spec"]["username"], obj["spec"]["groups"], "uid" in obj["spec"]) == ("jane", ["system:authenticated"], False)

    old = {**obj, "metadata": {"name": "c", "generation": 1}}
    new = {**obj, "spec": {**obj["spec"], "signerName": "other.com/x"},
           "status": {"conditions": [{"type": "Approved", "status": "True"}]}, "metadata": {"name": "c"}}
    s.prepare_for_update(new, old)
    assert new["spec"] == old["spec"] and "status" not in new

    # /status cannot approve; /approval can, and cannot set the certificate
    new = {**old, "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "Y2VydA=="},
           "metadata": {"name": "c"}}
    s.prepare_for_status_update(new, old)
    assert new["status"]["certificate"] == "Y2VydA=="
    assert 'status.conditions: Forbidden: updates may not add a condition of type "Approved"' in msgs(
        v.validate_csr_status_update(new, old))
    new = {**old, "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "R"}],
                             "certificate": "Y2VydA=="}, "metadata": {"name": "c"}}
    s.prepare_for_subresource_update("approval", new, old)
    [cond] = new["status"]["conditions"]
    assert cond["reason"] == "R" and cond["lastUpdateTime"] and cond["lastTransitionTime"]
    assert "certificate" not in new["status"]


def test_cluster_trust_bundle_name_prefix() -> None:
    ctb = {"metadata": {"name": "wrong"}, "spec": {"signerName": "example.com/s",
                                                   "trustBundle": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}}
    assert msgs(v.validate_cluster_trust_bundle(ctb)) == [
        'metadata.name: Invalid value: "wrong": ClusterTrustBundle for signerName example.com/s must be named with '
        "prefix example.com:s:"]
