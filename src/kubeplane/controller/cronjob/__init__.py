"""The CronJob controller. Upstream: pkg/controller/cronjob."""
from .cronjob_controllerv2 import CONTROLLER_NAME, ControllerV2

__all__ = ["CONTROLLER_NAME", "ControllerV2"]
