"""Tables of certificates.k8s.io/v1. Upstream: AddHandlers (pkg/printers/internalversion/printers.go):
printCertificateSigningRequest, printClusterTrustBundle, printPodCertificateRequest."""
from __future__ import annotations

from typing import Any

from kubeplane.utils.duration import human_duration

from .columns import Column, _age, _col, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]


def csr_columns() -> list[Column]:
    return [
        _name(), _age(),
        _col("SignerName", "string", "Name of the signer"),
        _col("Requestor", "string", "Name of the requestor"),
        _col("RequestedDuration", "string", "Requested duration of the issued certificate"),
        _col("Condition", "string", "The condition of the certificate"),
    ]


def extract_csr_status(csr: Obj) -> str:
    """Upstream: extractCSRStatus"""
    status = csr.get("status") or {}
    types = {c.get("type") for c in status.get("conditions") or []}
    out = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        out += ",Failed"
    if status.get("certificate"):
        out += ",Issued"
    return out


def print_csr(csr: Obj, now: float) -> Row:
    meta, spec = csr.get("metadata") or {}, csr.get("spec") or {}
    exp = spec.get("expirationSeconds")
    duration = human_duration(float(exp)) if isinstance(exp, int) else "<none>"
    return [meta.get("name", ""), translate_timestamp_since(meta.get("creationTimestamp"), now),
            spec.get("signerName") or "<none>", spec.get("username") or "", duration,
            extract_csr_status(csr)], None


def ctb_columns() -> list[Column]:
    return [_name(), _col("SignerName", "string", "Name of the signer")]


def print_ctb(ctb: Obj, now: float) -> Row:
    return [(ctb.get("metadata") or {}).get("name", ""),
            (ctb.get("spec") or {}).get("signerName") or "<none>"], None


def pcr_columns() -> list[Column]:
    return [_name(), _col("PodName", "string", "Name of the pod"),
            _col("SignerName", "string", "Name of the signer"), _age()]


def print_pcr(pcr: Obj, now: float) -> Row:
    meta, spec = pcr.get("metadata") or {}, pcr.get("spec") or {}
    return [meta.get("name", ""), spec.get("podName") or "", spec.get("signerName") or "",
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
