"""The shipped admission plugins; importing this package registers each with the chain."""
from . import default_toleration_seconds, limit_ranger, namespace_lifecycle, priority, service_account  # noqa: F401
