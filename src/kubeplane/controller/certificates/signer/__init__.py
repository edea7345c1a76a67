"""The CSR signing controllers. Upstream: pkg/controller/certificates/signer (and authority)."""
from .signer import (
    CertificateAuthority, Signer, load_ca, new_csr_signing_controllers,
)

__all__ = ["CertificateAuthority", "Signer", "load_ca", "new_csr_signing_controllers"]
