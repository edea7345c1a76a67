"""The CSR approving controller. Upstream: pkg/controller/certificates/approver."""
from .sarapprove import SARApprover, new_csr_approving_controller

__all__ = ["SARApprover", "new_csr_approving_controller"]
