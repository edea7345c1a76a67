"""The shipped admission plugins; importing this package registers each with the chain."""
from . import default_toleration_seconds, namespace_lifecycle  # noqa: F401
from . import resource_quota  # noqa: F401
