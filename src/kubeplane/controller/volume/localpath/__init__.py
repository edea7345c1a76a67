"""The simulated local-path provisioner (kind's default dynamic provisioner)."""
from .provisioner import (
    DEFAULT_CLASS_NAME, PROVISIONER_NAME, LocalPathProvisioner, default_storage_class, volume_for_claim,
)

__all__ = ["DEFAULT_CLASS_NAME", "PROVISIONER_NAME", "LocalPathProvisioner", "default_storage_class",
           "volume_for_claim"]
