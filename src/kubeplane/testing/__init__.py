"""What users import in their tests: fakes built on the real thing, and the real thing.

    from kubeplane.testing import FakeClientset
    fake = await FakeClientset.new(clock=FakeClock())

    from kubeplane.testing import ControlPlane
    with ControlPlane() as cp:                 # `kubeplane up` in this process, over HTTPS
        ...
    # the same, as a child process; or a cluster that runs already (cluster.py)
    from kubeplane.testing import ExistingCluster, ProcessControlPlane

The fake clientset sits above the API server and storage (a real in-process API server on memory
storage), so that the client package, which components import, needs neither. ControlPlane (and
the pytest plugin, plugin.py, that hands it to tests) runs the whole of `kubeplane up`;
ProcessControlPlane runs it as a child process, and ExistingCluster uses a cluster given by its
kubeconfig (cluster.py).

Names are imported on first use: the pytest plugin loads this package in every test session of
an environment where kubeplane is installed, and must not bring the API server along.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster import ClusterClient, ExistingCluster, ProcessControlPlane, StartError
    from .controlplane import ControlPlane
    from .fake import Action, FakeClientset, RecordingTransport

__all__ = ["Action", "ClusterClient", "ControlPlane", "ExistingCluster", "FakeClientset", "ProcessControlPlane",
           "RecordingTransport", "StartError"]

_MODULE = {"Action": ".fake", "FakeClientset": ".fake", "RecordingTransport": ".fake",
           "ControlPlane": ".controlplane", "ClusterClient": ".cluster", "ExistingCluster": ".cluster",
           "ProcessControlPlane": ".cluster", "StartError": ".cluster"}


def __getattr__(name: str) -> Any:
    module = _MODULE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
