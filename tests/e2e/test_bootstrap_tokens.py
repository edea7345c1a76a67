"""Bootstrap tokens as kubeadm uses them, with real kubectl: a token Secret made with `kubectl
create secret generic --type bootstrap.kubernetes.io/token` authenticates (`kubectl auth
whoami`), the bootstrap signer signs kube-public/cluster-info (which anyone may read, as
kubeadm allows) with it, deleting the Secret revokes it at once, and the token cleaner deletes
an expired one."""
from __future__ import annotations

import base64
import datetime as dt
import json
import pathlib
import ssl
import urllib.request

import yaml

from kubeplane.api import bootstraptoken as bt

from .cluster import Cluster, eventually

TOKEN_ID, TOKEN_SECRET = "abcdef", "0123456789abcdef"


def create_token(cluster: Cluster, token_id: str, *extra: str) -> None:
    cluster.kubectl("create", "secret", "generic", f"bootstrap-token-{token_id}", "-n", "kube-system",
                    "--type", "bootstrap.kubernetes.io/token", f"--from-literal=token-id={token_id}",
                    f"--from-literal=token-secret={TOKEN_SECRET}", *extra)


def token_kubeconfig(cluster: Cluster, token: str) -> pathlib.Path:
    """The cluster's kubeconfig with only the token as credential (no client certificate)."""
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    cfg["users"][0]["user"] = {"token": token}
    path = cluster.data_dir / f"{token.split('.')[0]}.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return path


def cluster_info(cluster: Cluster) -> dict[str, str]:
    return cluster.get_json("configmap", "cluster-info", "-n", "kube-public")["data"]


def test_a_bootstrap_token_authenticates_and_signs_cluster_info(cluster: Cluster) -> None:
    create_token(cluster, TOKEN_ID, "--from-literal=usage-bootstrap-authentication=true",
                 "--from-literal=usage-bootstrap-signing=true",
                 "--from-literal=auth-extra-groups=system:bootstrappers:kubeadm:default-node-token")
    kubeconfig = token_kubeconfig(cluster, f"{TOKEN_ID}.{TOKEN_SECRET}")
    whoami = json.loads(cluster.kubectl("--kubeconfig", str(kubeconfig), "auth", "whoami", "-o", "json").stdout)
    assert whoami["status"]["userInfo"] == {
        "username": "system:bootstrap:abcdef",
        "groups": ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"]}

    # cluster-info: this server and its CA, signed with the token (kubeadm join's check)
    data = eventually(lambda: (d := cluster_info(cluster)).get(f"jws-kubeconfig-{TOKEN_ID}") and d,
                      "cluster-info signed")
    info = yaml.safe_load(data["kubeconfig"])
    admin = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]
    assert info["clusters"] == [{"name": "", "cluster": {
        "server": admin["server"], "certificate-authority-data": admin["certificate-authority-data"]}}]
    assert data[f"jws-kubeconfig-{TOKEN_ID}"] == bt.compute_detached_signature(data["kubeconfig"], TOKEN_ID,
                                                                              TOKEN_SECRET)

    # anyone may read it (kubeadm's kubeadm:bootstrap-signer-clusterinfo Role), without credentials
    ctx = ssl.create_default_context(cadata=base64.b64decode(admin["certificate-authority-data"]).decode())
    with urllib.request.urlopen(f"{admin['server']}/api/v1/namespaces/kube-public/configmaps/cluster-info",
                                context=ctx) as resp:
        assert json.loads(resp.read())["data"]["kubeconfig"] == data["kubeconfig"]

    # deleting the Secret revokes the token, and its signature goes
    cluster.kubectl("delete", "secret", f"bootstrap-token-{TOKEN_ID}", "-n", "kube-system")
    res = cluster.kubectl("--kubeconfig", str(kubeconfig), "get", "namespaces", check=False)
    assert res.returncode != 0 and "You must be logged in to the server (Unauthorized)" in res.stderr
    eventually(lambda: f"jws-kubeconfig-{TOKEN_ID}" not in cluster_info(cluster), "the signature removed")


def test_a_token_without_the_authentication_usage_is_refused(cluster: Cluster) -> None:
    create_token(cluster, "ghijkl", "--from-literal=usage-bootstrap-signing=true")
    res = cluster.kubectl("--kubeconfig", str(token_kubeconfig(cluster, f"ghijkl.{TOKEN_SECRET}")),
                          "auth", "whoami", check=False)
    assert res.returncode != 0 and "Unauthorized" in res.stderr


def test_the_token_cleaner_deletes_an_expired_token(cluster: Cluster) -> None:
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    create_token(cluster, "mnopqr", "--from-literal=usage-bootstrap-authentication=true",
                 f"--from-literal=expiration={soon}")
    eventually(lambda: cluster.kubectl("get", "secret", "bootstrap-token-mnopqr", "-n", "kube-system",
                                       check=False).returncode != 0, "the expired token deleted", timeout=30)


def test_a_joining_nodes_token_gets_its_client_certificate(cluster: Cluster) -> None:
    """kubeadm join's TLS bootstrap: with a token of kubeadm's default node group, the node's
    CSR is created, approved (kubeadm:node-autoapprove-bootstrap) and signed."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    create_token(cluster, "stuvwx", "--from-literal=usage-bootstrap-authentication=true",
                 "--from-literal=auth-extra-groups=system:bootstrappers:kubeadm:default-node-token")
    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
        x509.NameAttribute(NameOID.COMMON_NAME, "system:node:joiner")])).sign(key, hashes.SHA256())
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"name": "node-csr-joiner"},
           "spec": {"request": base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode(),
                    "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                    "usages": ["digital signature", "client auth"]}}
    kubeconfig = token_kubeconfig(cluster, f"stuvwx.{TOKEN_SECRET}")
    cluster.kubectl("--kubeconfig", str(kubeconfig), "create", "-f", "-", input=json.dumps(csr))
    issued = eventually(lambda: cluster.get_json("csr", "node-csr-joiner")["status"].get("certificate"),
                        "the node's certificate issued")
    cert = x509.load_pem_x509_certificate(base64.b64decode(issued))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:joiner"
    got = cluster.get_json("csr", "node-csr-joiner")
    assert got["spec"]["username"] == "system:bootstrap:stuvwx"
    assert [c["type"] for c in got["status"]["conditions"]] == ["Approved"]
