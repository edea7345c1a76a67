"""The ValidatingAdmissionPolicy status controller. Upstream: pkg/controller/validatingadmissionpolicystatus."""
from .controller import CONTROLLER_NAME, Controller

__all__ = ["CONTROLLER_NAME", "Controller"]
