"""The shipped admission plugins; importing this package registers each with the chain."""
from . import (  # noqa: F401
    default_ingress_class, default_storage_class, default_toleration_seconds, limit_ranger, namespace_lifecycle,
    noderestriction, pod_security, priority, resource_quota, service_account, storage_object_in_use_protection,
    taint_nodes_by_condition,
)
from . import validatingadmissionpolicy  # noqa: F401  (issue 12, helper cel)
from . import mutatingadmissionpolicy  # noqa: F401  (issue 12, helper cel2)
from . import certificates  # noqa: F401  (issue 12, helper identities)
