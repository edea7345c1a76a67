"""certificates.k8s.io/v1 defaulting. Upstream: pkg/apis/certificates/v1/defaults.go."""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def set_defaults_csr(csr: Obj) -> None:
    """Upstream: SetDefaults_CertificateSigningRequestCondition — a condition's status is True."""
    status = csr.get("status")
    for c in (status or {}).get("conditions") or [] if isinstance(status, dict) else []:
        if isinstance(c, dict) and not c.get("status"):
            c["status"] = "True"
