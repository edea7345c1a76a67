"""kind's default StorageClass and its local-path provisioner's name. `kubeplane up` creates the
class before its ready line (cmd/storage_bootstrap.py) and the controller-manager provisions for
it (controller/volume/localpath); a module of its own, importing nothing, so that start-up pays
for neither the typed API nor the controller."""
from __future__ import annotations

from typing import Any

PROVISIONER_NAME = "rancher.io/local-path"
DEFAULT_CLASS_NAME = "standard"


def default_storage_class() -> dict[str, Any]:
    """kind's default StorageClass (its manifests/default-storage.yaml), as created at start-up."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": DEFAULT_CLASS_NAME,
                         "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": PROVISIONER_NAME, "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer"}
