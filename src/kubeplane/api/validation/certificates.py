"""certificates.k8s.io/v1 validation. Upstream: pkg/apis/certificates/validation/validation.go.

CertificateSigningRequests as upstream (usages, signerName, expirationSeconds, conditions, the
update rules of the main resource, /status and /approval, the compatibility options), except
that spec.request and status.certificate are checked as PEM blocks of the right type (the DER
inside is not parsed); `updates may not modify a condition` omits upstream's diff.
ClusterTrustBundle: name/signerName prefix and a PEM trustBundle. PodCertificateRequest:
metadata, signerName and an immutable spec only.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import is_dns1123_label, is_dns1123_subdomain, name_is_dns_subdomain, name_is_path_segment

Obj = dict[str, Any]

USAGES = ["any", "cert sign", "client auth", "code signing", "content commitment", "crl sign",
          "data encipherment", "decipher only", "digital signature", "email protection", "encipher only",
          "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", "key encipherment",
          "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing",
          "timestamping"]
_PEM_RE = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.S)
LEGACY_SIGNER = "kubernetes.io/legacy-unknown"
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
    """Upstream: ValidateCertificateSigningRequestSignerName"""
    if not name:
        return [errors.required(path, "signerName must be provided")]
    segments = name.split("/")
    if len(segments) != 2:
        return [errors.invalid(path, name, SIGNER_FORMAT)]
    errs: list[FieldError] = []
    domain, rest = segments
    if len(domain) > 253:
        errs.append(errors.too_long(path, 253))
    labels = domain.split(".")
    for lbl in labels:
        problems = is_dns1123_label(lbl)
        if problems:
            errs += [errors.invalid(path, domain, f"validating label {errors.go_quote(lbl)}: {p}") for p in problems]
            break
    if len(labels) < 2:
        errs.append(errors.invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    for lbl in rest.split("."):
        problems = is_dns1123_subdomain(lbl)
        if problems:
            errs += [errors.invalid(path, rest, f"validating label {errors.go_quote(lbl)}: {p}") for p in problems]
            break
    if len(name) > 253 + 253 + 63 + 1 + 1:
        errs.append(errors.too_long(path, 571))
    return errs


def _request(spec: Obj) -> list[FieldError]:
    raw = spec.get("request") or ""
    try:
        data = base64.b64decode(raw, validate=False)
    except (binascii.Error, ValueError):
        data = b""
    if "CERTIFICATE REQUEST" not in pem_blocks(data)[:1]:
        return [errors.invalid("spec.request", GoBytes(raw), "PEM block type must be CERTIFICATE REQUEST")]
    return []


TRUE_ONLY = ("Approved", "Denied", "Failed")        # upstream: trueConditionTypes


def _conditions(status: Obj, old: Obj | None) -> list[FieldError]:
    """Upstream: validateConditions (the compatibility options: what old already had is allowed)."""
    errs: list[FieldError] = []
    old_conds = ((old or {}).get("status") or {}).get("conditions") or []
    old_types = [c.get("type") or "" for c in old_conds]
    allow_both = {"Approved", "Denied"} <= set(old_types)
    allow_dupes = len(set(old_types)) < len(old_types)
    allow_empty = "" in old_types
    seen: set[str] = set()
    approved = denied = False
    for i, c in enumerate(status.get("conditions") or []):
        path, t = f"status.conditions[{i}]", (c or {}).get("type") or ""
        if not t and not allow_empty:
            errs.append(errors.required(path + ".type"))
        allowed = ["True"] if t in TRUE_ONLY else ["False", "True", "Unknown"]
        st = (c or {}).get("status") or ""
        if not st:
            errs.append(errors.required(path + ".status"))
        elif st not in allowed:
            errs.append(errors.not_supported(path + ".status", st, allowed))
        if not allow_both:
            if t == "Approved":
                approved = True
                if denied:
                    errs.append(errors.invalid(path + ".type", t, "Approved and Denied conditions are mutually exclusive"))
            elif t == "Denied":
                denied = True
                if approved:
                    errs.append(errors.invalid(path + ".type", t, "Approved and Denied conditions are mutually exclusive"))
        if not allow_dupes:
            if t in seen:
                errs.append(errors.duplicate(path + ".type", t))
            seen.add(t)
    return errs


def _certificate_error(cert: str) -> str:
    """Upstream: validateCertificate (here: PEM CERTIFICATE blocks only, the DER is not parsed)."""
    if not cert:
        return ""
    try:
        blocks = pem_blocks(base64.b64decode(cert))
    except (binascii.Error, ValueError):
        blocks = []
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    if any(b != "CERTIFICATE" for b in blocks):
        return "only CERTIFICATE PEM blocks are allowed, found " + errors.go_quote(next(b for b in blocks if b != "CERTIFICATE"))
    return ""


def _validate(csr: Obj, old: Obj | None) -> list[FieldError]:
    """Upstream: validateCertificateSigningRequest with getValidationOptions."""
    spec, status = csr.get("spec") or {}, csr.get("status") or {}
    old_spec = (old or {}).get("spec") or {}
    errs = m.validate_object_meta(csr.get("metadata") or {}, False, name_is_path_segment) if old is None else []
    errs += _request(spec)
    usages = spec.get("usages") or []
    if not usages:
        errs.append(errors.required("spec.usages", "usages must be provided"))
    old_usages = old_spec.get("usages") or []
    if not any(u not in USAGES for u in old_usages):
        errs += [errors.not_supported(f"spec.usages[{i}]", u, USAGES) for i, u in enumerate(usages) if u not in USAGES]
    if len(set(old_usages)) == len(old_usages):
        seen: set[str] = set()
        for i, u in enumerate(usages):
            if u in seen:
                errs.append(errors.duplicate(f"spec.usages[{i}]", u))
            seen.add(u)
    signer = spec.get("signerName") or ""
    if signer == LEGACY_SIGNER and old_spec.get("signerName") != LEGACY_SIGNER:
        errs.append(errors.invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version"))
    elif signer != LEGACY_SIGNER:
        errs += validate_signer_name(signer, "spec.signerName")
    exp = spec.get("expirationSeconds")
    if isinstance(exp, int) and exp < 600:
        errs.append(errors.invalid("spec.expirationSeconds", exp,
                                   "may not specify a duration less than 600 seconds (10 minutes)"))
    errs += _conditions(status, old)
    cert, old_cert = status.get("certificate") or "", ((old or {}).get("status") or {}).get("certificate") or ""
    arbitrary = old is not None and (cert == old_cert or bool(_certificate_error(old_cert)))
    if not arbitrary and (problem := _certificate_error(cert)):
        errs.append(errors.invalid("status.certificate", "<certificate data>", problem))
    return errs


def validate_csr(csr: Obj) -> list[FieldError]:
    """Upstream: ValidateCertificateSigningRequestCreate"""
    return _validate(csr, None)


def _by_type(csr: Obj, t: str) -> list[Obj]:
    return [c for c in (csr.get("status") or {}).get("conditions") or [] if c.get("type") == t]


def _update(new: Obj, old: Obj, *, certificate: bool, approval: bool) -> list[FieldError]:
    """Upstream: validateCertificateSigningRequestUpdate"""
    errs = _validate(new, old)
    for t in TRUE_ONLY:
        if len(_by_type(new, t)) < len(_by_type(old, t)):
            errs.append(errors.forbidden("status.conditions", f"updates may not remove a condition of type {errors.go_quote(t)}"))
    if not approval:
        for t in ("Approved", "Denied"):
            before, after = _by_type(old, t), _by_type(new, t)
            if len(after) > len(before):
                errs.append(errors.forbidden("status.conditions", f"updates may not add a condition of type {errors.go_quote(t)}"))
            elif len(after) == len(before) and after != before:
                errs.append(errors.forbidden("status.conditions", f"updates may not modify a condition of type {errors.go_quote(t)}"))
    cert, old_cert = (new.get("status") or {}).get("certificate") or "", (old.get("status") or {}).get("certificate") or ""
    if cert != old_cert:
        if not certificate:
            errs.append(errors.forbidden("status.certificate", "updates may not set certificate content"))
        elif old_cert:
            errs.append(errors.forbidden("status.certificate", "updates may not modify existing certificate content"))
    return errs + m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def validate_csr_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateCertificateSigningRequestUpdate and ...ApprovalUpdate (the main resource's
    strategy keeps the whole status, so only /approval can change the approval conditions)."""
    return _update(new, old, certificate=False, approval=True)


def validate_csr_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateCertificateSigningRequestStatusUpdate"""
    return _update(new, old, certificate=True, approval=False)


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
