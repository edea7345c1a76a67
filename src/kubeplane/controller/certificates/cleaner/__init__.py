"""The CSR cleaner. Upstream: pkg/controller/certificates/cleaner."""
from .cleaner import CSRCleanerController

__all__ = ["CSRCleanerController"]
