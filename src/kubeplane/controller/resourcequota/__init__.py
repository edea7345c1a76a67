"""The resource quota controller. Upstream: pkg/controller/resourcequota."""
from .resource_quota_controller import ResourceQuotaController, ResourceQuotaControllerOptions, served

__all__ = ["ResourceQuotaController", "ResourceQuotaControllerOptions", "served"]
