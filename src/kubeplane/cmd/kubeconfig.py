"""Writing the kubeconfig that `kubeplane up` hands to kubectl and other clients."""
from __future__ import annotations

import base64
import pathlib

import yaml

from ..utils.files import write_atomic

CLUSTER = "kubeplane"
USER = "kubeplane-admin"


def write_kubeconfig(path: pathlib.Path, server: str, ca_cert: pathlib.Path, token: str = "",
                     client_cert: pathlib.Path | None = None, client_key: pathlib.Path | None = None,
                     user: str = USER) -> None:
    """Write a kubeconfig with cluster, user, context and current-context set (mode 0600).

    The user authenticates with a client certificate (client-certificate-data and
    client-key-data, as kind's and kubeadm's admin.conf) and/or a bearer token: given both,
    the API server's x509 authenticator runs first, so clients that present the certificate
    are its user; tools that only read `token` still get in (--token-auth-file names the same
    user)."""
    creds: dict[str, str] = {}
    if client_cert is not None and client_key is not None:
        creds["client-certificate-data"] = base64.b64encode(client_cert.read_bytes()).decode()
        creds["client-key-data"] = base64.b64encode(client_key.read_bytes()).decode()
    if token:
        creds["token"] = token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER, "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(ca_cert.read_bytes()).decode()}}],
        "users": [{"name": user, "user": creds}],
        "contexts": [{"name": CLUSTER, "context": {"cluster": CLUSTER, "user": user, "namespace": "default"}}],
        "current-context": CLUSTER,
        "preferences": {},
    }
    write_atomic(path, yaml.safe_dump(config, sort_keys=False).encode())


def write_component_kubeconfigs(data_dir: pathlib.Path, server: str, ca_cert: pathlib.Path) -> None:
    """DIR/controller-manager.conf and DIR/scheduler.conf (kubeadm's names): each component's
    own client certificate (utils/pki.py COMPONENTS), so `kubeplane controller-manager
    --kubeconfig DIR/controller-manager.conf` authenticates as system:kube-controller-manager."""
    from ..utils.pki import COMPONENTS
    pki = data_dir / "pki"
    for name, (user, _) in COMPONENTS.items():
        write_kubeconfig(data_dir / f"{name}.conf", server, ca_cert, client_cert=pki / f"{name}.crt",
                         client_key=pki / f"{name}.key", user=user)
