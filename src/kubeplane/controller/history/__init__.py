"""ControllerRevision history shared by the StatefulSet and DaemonSet controllers.

Upstream: pkg/controller/history
"""
from .controller_history import (
    CONTROLLER_REVISION_HASH_LABEL,
    FakeHistory,
    Interface,
    RealHistory,
    controller_revision_name,
    equal_revision,
    find_equal_revisions,
    hash_controller_revision,
    new_controller_revision,
    next_revision,
    raw_data,
    sort_controller_revisions,
    template_patch,
)
from .ref_manager import ControllerRevisionControllerRefManager

__all__ = ["CONTROLLER_REVISION_HASH_LABEL", "ControllerRevisionControllerRefManager", "FakeHistory", "Interface", "RealHistory", "controller_revision_name",
           "equal_revision", "find_equal_revisions", "hash_controller_revision", "new_controller_revision",
           "next_revision", "raw_data", "sort_controller_revisions", "template_patch"]
