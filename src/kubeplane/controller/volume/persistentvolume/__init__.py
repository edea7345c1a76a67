"""The PersistentVolume binder. Upstream: pkg/controller/volume/persistentvolume"""
from .pv_controller_base import PersistentVolumeController, PersistentVolumeControllerOptions

__all__ = ["PersistentVolumeController", "PersistentVolumeControllerOptions"]
