"""Writing the kubeconfig that `kubeplane up` hands to kubectl and other clients."""
from __future__ import annotations

import base64
import pathlib

import yaml

from ..utils.files import write_atomic

CLUSTER = "kubeplane"
USER = "kubeplane-admin"


def write_kubeconfig(path: pathlib.Path, server: str, ca_cert: pathlib.Path, token: str) -> None:
    """Write a kubeconfig with cluster, user, context and current-context set (mode 0600)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER, "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(ca_cert.read_bytes()).decode()}}],
        "users": [{"name": USER, "user": {"token": token}}],
        "contexts": [{"name": CLUSTER, "context": {"cluster": CLUSTER, "user": USER, "namespace": "default"}}],
        "current-context": CLUSTER,
        "preferences": {},
    }
    write_atomic(path, yaml.safe_dump(config, sort_keys=False).encode())
