"""storage.k8s.io: StorageClasses, CSIDrivers, CSINodes, CSIStorageCapacities,
VolumeAttachments, VolumeAttributesClasses."""
