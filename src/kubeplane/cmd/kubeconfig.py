"""Writing the kubeconfig that `kubeplane up` hands to kubectl and other clients."""
from __future__ import annotations

import base64
import os
import pathlib

import yaml

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
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    os.replace(tmp, path)
