"""certificates.k8s.io/v1 validation. Upstream: pkg/apis/certificates/validation/validation.go.

Checked: metadata (path-segment names), spec.request as a PEM CERTIFICATE REQUEST block (the
DER inside is not parsed), signerName (required, `<domain>/<path>`), usages, expirationSeconds,
conditions (type/status, Approved and Denied exclusive, no duplicates); ClusterTrustBundle
name/signerName prefix and a PEM trustBundle. Left out: parsing the CSR's DER and the
certificate chain, the legacy-signer usage rules, PodCertificateRequest's spec rules.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import name_is_dns_subdomain, name_is_path_segment

Obj = dict[str, Any]

USAGES = ["any", "cert sign", "client auth", "code signing", "content commitment", "crl sign",
          "data encipherment", "decipher only", "digital signature", "email protection", "encipher only",
          "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", "key encipherment",
          "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing",
          "timestamping"]
_PEM_RE = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.S)
SIGNER_FORMAT = "must be a fully qualified domain and path of the form 'example.com/signer-name'"


class GoBytes:
    """A []byte bad value: Go marshals it to JSON as a base64 string."""

    def __init__(self, b64: str) -> None:
        self.b64 = b64

    def __str__(self) -> str:
        return f'"{self.b64}"'


def pem_blocks(data: bytes) -> list[str]:
    return [t.decode() for t, _ in _PEM_RE.findall(data)]


def validate_signer_name(name: str, path: str) -> list[FieldError]:
    """Upstream: ValidateSignerName (the main rules: <domain>/<path>, domain a DNS subdomain)."""
    if not name:
        return [errors.required(path)]
    domain, sep, rest = name.partition("/")
    if not sep or not rest:
        return [errors.invalid(path, name, SIGNER_FORMAT)]
    return [errors.invalid(path, name, msg) for msg in name_is_dns_subdomain(domain, False)]


def _request(spec: Obj) -> list[FieldError]:
    raw = spec.get("request") or ""
    try:
        data = base64.b64decode(raw, validate=False)
    except (binascii.Error, ValueError):
        data = b""
    if "CERTIFICATE REQUEST" not in pem_blocks(data)[:1]:
        return [errors.invalid("spec.request", GoBytes(raw), "PEM block type must be CERTIFICATE REQUEST")]
    return []


def _conditions(status: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, c in enumerate(status.get("conditions") or []):
        path, t = f"status.conditions[{i}]", (c or {}).get("type") or ""
        if not t:
            errs.append(errors.required(path + ".type"))
        if (c or {}).get("status") not in ("True", "False", "Unknown"):
            errs.append(errors.not_supported(path + ".status", (c or {}).get("status") or "", ["False", "True", "Unknown"]))
        if t in seen and t in ("Approved", "Denied", "Failed"):
            errs.append(errors.duplicate(path + ".type", t))
        seen.add(t)
    if {"Approved", "Denied"} <= seen:
        errs.append(errors.invalid("status.conditions", GoConditions(status.get("conditions") or []),
                                   "Approved and Denied conditions are mutually exclusive"))
    return errs


class GoConditions:
    def __init__(self, conds: list[Obj]) -> None:
        self.conds = conds

    def __str__(self) -> str:
        import orjson
        return orjson.dumps(self.conds).decode()


def validate_csr(csr: Obj) -> list[FieldError]:
    """Upstream: ValidateCertificateSigningRequestCreate"""
    spec = csr.get("spec") or {}
    errs = m.validate_object_meta(csr.get("metadata") or {}, False, name_is_path_segment)
    errs += _request(spec)
    errs += validate_signer_name(spec.get("signerName") or "", "spec.signerName")
    exp = spec.get("expirationSeconds")
    if isinstance(exp, int) and exp < 600:
        errs.append(errors.invalid("spec.expirationSeconds", exp,
                                   "may not specify a duration less than 600 seconds (10 minutes)"))
    for i, u in enumerate(spec.get("usages") or []):
        if u not in USAGES:
            errs.append(errors.not_supported(f"spec.usages[{i}]", u, USAGES))
    return errs + _conditions(csr.get("status") or {})


def validate_csr_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateCertificateSigningRequestUpdate (and the /status and /approval ones):
    the strategies already kept spec; the conditions are checked again."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += _conditions(new.get("status") or {})
    old_cert = (old.get("status") or {}).get("certificate")
    new_cert = (new.get("status") or {}).get("certificate")
    if old_cert and new_cert != old_cert:
        errs.append(errors.invalid("status.certificate", "[]byte{...}", "updates may not modify existing certificate content"))
    if new_cert:
        try:
            blocks = pem_blocks(base64.b64decode(new_cert))
        except (binascii.Error, ValueError):
            blocks = []
        if not blocks or any(b != "CERTIFICATE" for b in blocks):
            errs.append(errors.invalid("status.certificate", "<certificate data>",
                                       "must contain at least one CERTIFICATE PEM block"))
    return errs


def validate_cluster_trust_bundle(ctb: Obj) -> list[FieldError]:
    """Upstream: ValidateClusterTrustBundle (name prefix from the signer, a PEM trust bundle)."""
    meta, spec = ctb.get("metadata") or {}, ctb.get("spec") or {}
    errs = m.validate_object_meta(meta, False, name_is_path_segment)
    signer, name = spec.get("signerName") or "", meta.get("name") or ""
    if signer:
        errs += validate_signer_name(signer, "spec.signerName")
        prefix = signer.replace("/", ":") + ":"
        if name and not name.startswith(prefix):
            errs.append(errors.invalid("metadata.name", name,
                                       f"ClusterTrustBundle for signerName {signer} must be named with prefix {prefix}"))
    elif ":" in name:
        errs.append(errors.invalid("metadata.name", name,
                                   "ClusterTrustBundle without signer name must not have \":\" in its name"))
    bundle = spec.get("trustBundle") or ""
    blocks = pem_blocks(bundle.encode())
    if not blocks:
        errs.append(errors.invalid("spec.trustBundle", "<value omitted>", "at least one trust anchor must be provided"))
    elif any(b != "CERTIFICATE" for b in blocks):
        errs.append(errors.invalid("spec.trustBundle", "<value omitted>",
                                   "entry 0 has bad block type: must be CERTIFICATE"))
    return errs


def validate_cluster_trust_bundle_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += [e for e in validate_cluster_trust_bundle(new) if not e.field.startswith("metadata.")]
    errs += m.immutable((new.get("spec") or {}).get("signerName"), (old.get("spec") or {}).get("signerName"),
                        "spec.signerName")
    return errs


def validate_pod_certificate_request(pcr: Obj) -> list[FieldError]:
    """Upstream: ValidatePodCertificateRequestCreate (here: metadata and the signer name)."""
    spec = pcr.get("spec") or {}
    errs = m.validate_object_meta(pcr.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_signer_name(spec.get("signerName") or "", "spec.signerName")


def validate_pod_certificate_request_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + m.immutable(new.get("spec"), old.get("spec"), "spec")
