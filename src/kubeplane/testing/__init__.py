"""What users import in their tests: fakes built on the real thing.

    from kubeplane.testing import FakeClientset
    fake = await FakeClientset.new(clock=FakeClock())

It sits above the API server and storage (the fake clientset is a real in-process API server on
memory storage), so that the client package, which components import, needs neither.
"""
from .fake import Action, FakeClientset, RecordingTransport

__all__ = ["Action", "FakeClientset", "RecordingTransport"]
