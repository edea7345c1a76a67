"""The service account controller. Upstream: pkg/controller/serviceaccount."""
from .serviceaccounts_controller import SERVICE_ACCOUNTS_TO_ENSURE, ServiceAccountsController

__all__ = ["SERVICE_ACCOUNTS_TO_ENSURE", "ServiceAccountsController"]
