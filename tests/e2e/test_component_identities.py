"""The standalone components' own identities against `kubeplane up`:

- `kubeplane kubelet --nodes 2` bootstraps one client certificate per node through a
  CertificateSigningRequest (approved by up's csrapproving controller after a
  SubjectAccessReview, signed by csrsigning with the cluster CA), then each node writes as
  system:node:<name>: the audit log shows who created each Node and Lease, and a node's
  certificate is refused a Secret used by a pod of another node (the Node authorizer).
- `kubeplane controller-manager` (--use-service-account-credentials, on by default) makes each
  controller's requests with its kube-system service account's TokenRequest token: the
  ReplicaSet controller creates pods as system:serviceaccount:kube-system:replicaset-controller.
"""
from __future__ import annotations

import base64
import json
import os
import pathlib
import signal
import subprocess
import sys
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .cluster import KUBECTL, Cluster, eventually

PY = sys.executable
NODES = ("standalone-0", "standalone-1")
POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  verbs: [create]
  resources: [{group: "", resources: [nodes, pods]}, {group: coordination.k8s.io, resources: [leases]}]
- level: None
"""


class Component:
    """`kubeplane <component> ...` in its own process group, its output in a file."""

    def __init__(self, log: pathlib.Path, *args: str) -> None:
        self.log_path = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([PY, "-m", "kubeplane", *args], stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def alive(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"exited: {self.log_path.read_text()[-3000:]}")
        return True

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def audited(log: pathlib.Path, resource: str, name: str = "") -> dict[str, Any] | None:
    """The audit line of a successful create of `resource` named `name` (any name: "")."""
    if not log.exists():
        return None
    for line in log.read_text().splitlines():
        e = json.loads(line)
        ref = e.get("objectRef") or {}
        if (e["stage"] == "ResponseComplete" and e["verb"] == "create" and ref.get("resource") == resource
                and ref.get("name", "") == name and e["responseStatus"]["code"] == 201):
            return e
    return None


def node_kubeconfig(c: Cluster, cert_file: pathlib.Path, path: pathlib.Path) -> pathlib.Path:
    """A kubeconfig for the cluster with the node's kept certificate and key."""
    data = cert_file.read_bytes()
    end = data.index(b"-----END CERTIFICATE-----\n") + len(b"-----END CERTIFICATE-----\n")
    cfg = yaml.safe_load(c.kubeconfig.read_text())
    cfg["users"][0]["user"] = {"client-certificate-data": base64.b64encode(data[:end]).decode(),
                               "client-key-data": base64.b64encode(data[end:]).decode()}
    path.write_text(yaml.safe_dump(cfg))
    return path


def kubectl_as(kubeconfig: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "KUBECTL_KUBERC": "false"})


def test_a_standalone_kubelet_acts_as_each_node_with_a_certificate_from_a_csr(tmp_path: pathlib.Path) -> None:
    policy, audit = tmp_path / "policy.yaml", tmp_path / "audit.log"
    policy.write_text(POLICY)
    c = Cluster(nodes=1, extra_args=("--audit-policy-file", str(policy), "--audit-log-path", str(audit))).start()
    certs = tmp_path / "certs"
    kl = Component(tmp_path / "kubelet.log", "kubelet", "--kubeconfig", str(c.kubeconfig), "--nodes", "2",
                   "--node-prefix", "standalone-", "--port", "0", "--cert-dir", str(certs))
    try:
        for node in NODES:
            created = eventually(lambda n=node: kl.alive() and audited(audit, "nodes", n), f"the Node {node}")
            assert created["user"]["username"] == f"system:node:{node}"
            lease = eventually(lambda n=node: audited(audit, "leases", n), f"the Lease of {node}")
            assert lease["user"]["username"] == f"system:node:{node}"
            assert lease["user"]["groups"] == ["system:nodes", "system:authenticated"]

        csrs = c.get_json("csr")["items"]
        ours = [r for r in csrs if r["spec"]["username"] == "kubernetes-admin"]
        assert len(ours) == 2
        for r in ours:
            assert r["metadata"]["name"].startswith("node-csr-")
            assert r["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client-kubelet"
            assert [(x["type"], x["reason"], x["message"]) for x in r["status"]["conditions"]] == [
                ("Approved", "AutoApproved", "Auto approving kubelet client certificate after SubjectAccessReview.")]
            assert r["status"]["certificate"]
        table = c.kubectl("get", "csr").stdout
        assert table.count("Approved,Issued") == 2 and "kubernetes.io/kube-apiserver-client-kubelet" in table

        # The node's certificate is the node: the Node authorizer lets it read only what its pods use.
        as_node0 = node_kubeconfig(c, certs / NODES[0] / "kubelet-client-current.pem", tmp_path / "node0.conf")
        who = json.loads(kubectl_as(as_node0, "auth", "whoami", "-o", "json").stdout)
        assert who["status"]["userInfo"]["username"] == "system:node:standalone-0"
        for name, node in (("mine", NODES[0]), ("theirs", NODES[1])):
            c.kubectl("create", "secret", "generic", name, "--from-literal=k=v")
            c.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"uses-{name}", "namespace": "default"},
                          "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}],
                                   "volumes": [{"name": "s", "secret": {"secretName": name}}]}})
        eventually(lambda: kubectl_as(as_node0, "get", "secret", "mine").returncode == 0,
                   "the node to read the Secret of its own pod")
        res = kubectl_as(as_node0, "get", "secret", "theirs")
        assert res.returncode == 1
        assert ('secrets "theirs" is forbidden: User "system:node:standalone-0" cannot get resource "secrets" in API '
                'group "" in the namespace "default": no relationship found between node \'standalone-0\' and this '
                'object') in res.stderr

        # A CSR no controller approves by itself: `kubectl certificate approve`, then csrsigning issues it.
        key = ec.generate_private_key(ec.SECP256R1())
        req = (x509.CertificateSigningRequestBuilder().subject_name(x509.Name([
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "devs"), x509.NameAttribute(NameOID.COMMON_NAME, "jane")]))
            .sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
        c.apply_yaml({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                      "metadata": {"name": "jane"},
                      "spec": {"request": base64.b64encode(req).decode(), "usages": ["client auth"],
                               "signerName": "kubernetes.io/kube-apiserver-client"}})
        assert "Pending" in c.kubectl("get", "csr", "jane").stdout
        assert c.kubectl("certificate", "approve", "jane").stdout == "certificatesigningrequest.certificates.k8s.io/jane approved\n"
        cert = eventually(lambda: c.get_json("csr", "jane")["status"].get("certificate"), "jane's certificate")
        cert_file = tmp_path / "jane.pem"
        cert_file.write_bytes(base64.b64decode(cert) + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        who = json.loads(kubectl_as(node_kubeconfig(c, cert_file, tmp_path / "jane.conf"), "auth", "whoami",
                                    "-o", "json").stdout)["status"]["userInfo"]
        assert (who["username"], who["groups"]) == ("jane", ["devs", "system:authenticated"])
    finally:
        kl.stop()
        c.stop()
        c.cleanup()
    assert kl.proc.returncode == 0, kl.log_path.read_text()[-3000:]


def test_a_standalone_controller_manager_acts_as_each_controllers_service_account(tmp_path: pathlib.Path) -> None:
    policy, audit = tmp_path / "policy.yaml", tmp_path / "audit.log"
    policy.write_text(POLICY)
    c = Cluster(nodes=0, extra_args=("--no-controllers", "--audit-policy-file", str(policy),
                                     "--audit-log-path", str(audit))).start()
    cm = Component(tmp_path / "cm.log", "controller-manager", "--kubeconfig", str(c.data_dir / "controller-manager.conf"),
                   "--secure-port", "0", "--no-leader-elect")
    try:
        c.kubectl("create", "serviceaccount", "default", check=False)     # or the controller made it first
        c.apply_yaml({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
                      "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rs"}},
                               "template": {"metadata": {"labels": {"app": "rs"}},
                                            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
        pod = eventually(lambda: cm.alive() and audited(audit, "pods"), "the ReplicaSet controller's pod")
        assert pod["user"]["username"] == "system:serviceaccount:kube-system:replicaset-controller"
        assert "authentication.kubernetes.io/credential-id" in pod["user"]["extra"]       # a bound token's JTI
        assert pod["userAgent"] == "kube-controller-manager/replicaset-controller"
    finally:
        cm.stop()
        c.stop()
        c.cleanup()
    assert cm.proc.returncode == 0, cm.log_path.read_text()[-3000:]


def test_a_legacy_token_secret_is_filled_and_its_token_authenticates(tmp_path: pathlib.Path) -> None:
    c = Cluster(nodes=0).start()
    try:
        c.kubectl("create", "serviceaccount", "robot")
        c.apply_yaml({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                      "metadata": {"name": "robot-token", "namespace": "default",
                                   "annotations": {"kubernetes.io/service-account.name": "robot"}}})
        data = eventually(lambda: c.get_json("secret", "robot-token").get("data", {}).get("token") and
                          c.get_json("secret", "robot-token")["data"], "the tokens controller to fill the Secret")
        assert base64.b64decode(data["namespace"]) == b"default"
        assert base64.b64decode(data["ca.crt"]) == (c.data_dir / "pki" / "ca.crt").read_bytes()
        token = base64.b64decode(data["token"]).decode()
        cfg = yaml.safe_load(c.kubeconfig.read_text())
        cfg["users"][0]["user"] = {"token": token}
        (tmp_path / "robot.conf").write_text(yaml.safe_dump(cfg))
        res = kubectl_as(tmp_path / "robot.conf", "auth", "whoami", "-o", "json")
        who = json.loads(res.stdout)["status"]["userInfo"] if res.returncode == 0 else res.stderr
        assert who["username"] == "system:serviceaccount:default:robot", who
        labels = c.get_json("secret", "robot-token")["metadata"]["labels"]
        assert list(labels) == ["kubernetes.io/legacy-token-last-used"]
        c.kubectl("delete", "serviceaccount", "robot")
        eventually(lambda: c.kubectl("get", "secret", "robot-token", check=False).returncode == 1,
                   "the token Secret to go with its account")
    finally:
        c.stop()
        c.cleanup()
