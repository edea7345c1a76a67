"""The DaemonSet controller. Upstream: pkg/controller/daemon."""
from .daemon_controller import CONTROLLER_NAME, DaemonSetsController, new_pod, node_should_run_daemon_pod

__all__ = ["CONTROLLER_NAME", "DaemonSetsController", "new_pod", "node_should_run_daemon_pod"]
