"""The front proxy's identity: a CA of its own (requestheader CA) and the client certificate the
aggregator presents to backends (CN front-proxy-client), and the ConfigMap through which
aggregated API servers learn to trust it.

    pki/front-proxy-ca.crt, .key        the requestheader client CA (kubeadm's names)
    pki/front-proxy-client.crt, .key    --proxy-client-cert-file / --proxy-client-key-file

kube-system/extension-apiserver-authentication carries what an aggregated server's delegated
authentication reads: client-ca-file (the cluster CA), requestheader-client-ca-file, and the
requestheader header names and allowed names as JSON lists (kubeadm's flags: allowed name
front-proxy-client, X-Remote-User / X-Remote-Uid / X-Remote-Group / X-Remote-Extra-). Anyone
may read it through the extension-apiserver-authentication-reader Role (bootstrap policy).

Upstream: kube-apiserver's ClusterAuthenticationTrustController (pkg/controlplane/controller/
clusterauthenticationtrust), kubeadm's front-proxy certificates.
"""
from __future__ import annotations

import copy
import pathlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ...api import errors
from ...utils.files import write_atomic
from ...utils.pki import _builder, _key_pem, client_cert

if TYPE_CHECKING:
    from ..server import APIServer

CONFIGMAP_NAMESPACE, CONFIGMAP_NAME = "kube-system", "extension-apiserver-authentication"
PROXY_CLIENT_NAME = "front-proxy-client"
USERNAME_HEADERS, UID_HEADERS, GROUP_HEADERS = ["X-Remote-User"], ["X-Remote-Uid"], ["X-Remote-Group"]
EXTRA_HEADERS_PREFIX = ["X-Remote-Extra-"]


@dataclass(frozen=True, slots=True)
class FrontProxyPKI:
    ca_cert: pathlib.Path
    client_cert: pathlib.Path
    client_key: pathlib.Path


def ensure_front_proxy_pki(pki: pathlib.Path) -> FrontProxyPKI:
    """Load or make pki/front-proxy-ca.* and pki/front-proxy-client.* (0600)."""
    paths = FrontProxyPKI(pki / "front-proxy-ca.crt", pki / "front-proxy-client.crt", pki / "front-proxy-client.key")
    ca_key_path = pki / "front-proxy-ca.key"
    if not (paths.ca_cert.exists() and ca_key_path.exists()):
        key = ec.generate_private_key(ec.SECP256R1())
        ca = (_builder("front-proxy-ca", None, key.public_key())
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
              .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
              .sign(key, hashes.SHA256()))
        write_atomic(ca_key_path, _key_pem(key))
        write_atomic(paths.ca_cert, ca.public_bytes(serialization.Encoding.PEM))
        paths.client_cert.unlink(missing_ok=True)
    if not (paths.client_cert.exists() and paths.client_key.exists()):
        ca = x509.load_pem_x509_certificate(paths.ca_cert.read_bytes())
        ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        cert, key_pem = client_cert(PROXY_CLIENT_NAME, [], ca, ca_key)
        write_atomic(paths.client_key, key_pem)
        write_atomic(paths.client_cert, cert)
    return paths


def authentication_config_map(client_ca: bytes, requestheader_ca: bytes) -> dict:
    """Upstream: ClusterAuthenticationTrustController's ConfigMap (list values JSON-encoded)."""
    data = {"client-ca-file": client_ca.decode(),
            "requestheader-allowed-names": orjson.dumps([PROXY_CLIENT_NAME]).decode(),
            "requestheader-client-ca-file": requestheader_ca.decode(),
            "requestheader-extra-headers-prefix": orjson.dumps(EXTRA_HEADERS_PREFIX).decode(),
            "requestheader-group-headers": orjson.dumps(GROUP_HEADERS).decode(),
            "requestheader-uid-headers": orjson.dumps(UID_HEADERS).decode(),
            "requestheader-username-headers": orjson.dumps(USERNAME_HEADERS).decode()}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP_NAME, "namespace": CONFIGMAP_NAMESPACE}, "data": data}


async def publish_authentication_config(api: APIServer, client_ca: bytes, requestheader_ca: bytes) -> None:
    """Create or update kube-system/extension-apiserver-authentication."""
    from ..registry import REGISTRY, store
    ri = REGISTRY.lookup("", "v1", "configmaps")
    assert ri is not None
    want = authentication_config_map(client_ca, requestheader_ca)
    opts = store.WriteOptions(field_manager="kube-apiserver")
    kv = await api.storage.get(ri.key(CONFIGMAP_NAMESPACE, CONFIGMAP_NAME))
    if kv is None:
        try:
            await store.create(api, opts, ri, CONFIGMAP_NAMESPACE, want, [])
        except errors.AlreadyExists:
            pass
        return
    if kv.obj.get("data") == want["data"]:
        return
    new = copy.deepcopy(kv.obj)
    new["data"] = want["data"]
    await store.update(api, opts, ri, new, kv.obj, int(kv.obj["metadata"]["resourceVersion"]), "", [])
