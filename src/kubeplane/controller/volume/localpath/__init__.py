"""The simulated local-path provisioner (kind's default dynamic provisioner)."""
from ....api.localpath import DEFAULT_CLASS_NAME, PROVISIONER_NAME, default_storage_class
from .provisioner import LocalPathProvisioner, volume_for_claim

__all__ = ["DEFAULT_CLASS_NAME", "PROVISIONER_NAME", "LocalPathProvisioner", "default_storage_class",
           "volume_for_claim"]
