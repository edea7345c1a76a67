"""VolumeAttachments. Upstream: pkg/registry/storage/volumeattachment (strategy.go: status
reset on create, /status writes only status)."""
from __future__ import annotations

from ....api.defaulting import storage as defaulting
from ....api.resources import STATUS
from ....api.validation import storage as validation
from ...tables import storage as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class VolumeAttachmentStrategy(Strategy):
    has_status = True


VOLUME_ATTACHMENTS = register(ResourceDefinition(
    "storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", "volumeattachment", False,
    "io.k8s.api.storage.v1.VolumeAttachment",
    subresources=(STATUS("VolumeAttachment"),),
    strategy=VolumeAttachmentStrategy(),
    defaulter=defaulting.set_defaults_volume_attachment,
    validate=validation.validate_volume_attachment, validate_update=validation.validate_volume_attachment_update,
    validate_status_update=validation.validate_volume_attachment_status_update,
    columns=tables.volume_attachment_columns, printer=tables.print_volume_attachment,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
