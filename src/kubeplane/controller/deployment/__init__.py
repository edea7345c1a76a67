"""The Deployment controller. Upstream: pkg/controller/deployment."""
from .deployment_controller import CONTROLLER_KIND, MAX_RETRIES, DeploymentController, DeploymentControllerOptions

__all__ = ["CONTROLLER_KIND", "MAX_RETRIES", "DeploymentController", "DeploymentControllerOptions"]
