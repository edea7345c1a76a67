"""Who is asking, end to end with the real kubectl and the official Python client: the x509
admin kubeconfig (kind's and kubeadm's), the token file's admin token, service account tokens
from `kubectl create token` (working until the ServiceAccount is deleted), `kubectl auth
whoami`, `--as`/`--as-group`, and anonymous requests.

kubectl keeps the kubeconfig's client certificate when given --token, and the API server tries
the certificate first (upstream's order), so token requests use a kubeconfig without one
(`kubeconfig_with`)."""
from __future__ import annotations

import base64
import hashlib
import pathlib
import stat
from typing import Any

import yaml
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from .cluster import Cluster


def kubeconfig_with(cluster: Cluster, name: str, **user: str) -> pathlib.Path:
    """A copy of the admin kubeconfig whose user has only `user` (token=..., or nothing:
    anonymous; client-certificate-data=... alone)."""
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    cfg["users"][0]["user"] = dict(user)
    path = cluster.data_dir / f"{name}.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return path


def kubectl(cluster: Cluster, kubeconfig: pathlib.Path, *args: str, check: bool = True) -> Any:
    return cluster.kubectl("--kubeconfig", str(kubeconfig), *args, check=check)


def admin_user(cluster: Cluster) -> dict[str, str]:
    return dict(yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"])


def test_the_admin_kubeconfig_is_kinds_x509_user(cluster: Cluster) -> None:
    user = admin_user(cluster)
    cert_only = kubeconfig_with(cluster, "x509", **{k: v for k, v in user.items() if k != "token"})
    der = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"])).public_bytes(
        serialization.Encoding.DER)
    out = kubectl(cluster, cert_only, "auth", "whoami").stdout
    assert out.split("\n") == [
        "ATTRIBUTE                                           VALUE",
        "Username                                            kubernetes-admin",
        "Groups                                              [kubeadm:cluster-admins system:authenticated]",
        f"Extra: authentication.kubernetes.io/credential-id   [X509SHA256={hashlib.sha256(der).hexdigest()}]",
        ""]
    assert "default" in kubectl(cluster, cert_only, "get", "namespaces", "-o", "name").stdout
    for name in ("admin.crt", "admin.key", "tokens.csv", "admin.token"):
        assert stat.S_IMODE((cluster.data_dir / "pki" / name).stat().st_mode) == 0o600


def test_the_python_client_with_the_x509_kubeconfig(cluster: Cluster) -> None:
    from kubernetes import client, config
    user = admin_user(cluster)
    cert_only = kubeconfig_with(cluster, "x509-py", **{k: v for k, v in user.items() if k != "token"})
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(cert_only), client_configuration=cfg)
    assert not cfg.api_key
    with client.ApiClient(cfg) as api:
        names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
        review = client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert "kube-system" in names
    assert review.status.user_info.username == "kubernetes-admin"


def test_the_admin_token_names_the_same_user(cluster: Cluster) -> None:
    token_only = kubeconfig_with(cluster, "admin-token", token=admin_user(cluster)["token"])
    out = kubectl(cluster, token_only, "auth", "whoami", "-o", "jsonpath={.status.userInfo}").stdout
    assert yaml.safe_load(out) == {"username": "kubernetes-admin",          # the token is also super-admin
                                   "groups": ["kubeadm:cluster-admins", "system:masters", "system:authenticated"]}


def test_a_service_account_token_works_until_the_account_is_deleted(cluster: Cluster) -> None:
    cluster.kubectl("create", "serviceaccount", "robot")
    uid = cluster.get_json("serviceaccount", "robot")["metadata"]["uid"]
    token = cluster.kubectl("create", "token", "robot").stdout.strip()
    as_robot = kubeconfig_with(cluster, "robot", token=token)
    out = kubectl(cluster, as_robot, "auth", "whoami").stdout
    lines = out.split("\n")
    assert lines[:4] == ["ATTRIBUTE                                           VALUE",
                         "Username                                            system:serviceaccount:default:robot",
                         f"UID                                                 {uid}",
                         "Groups                                              [system:serviceaccounts "
                         "system:serviceaccounts:default system:authenticated]"]
    assert lines[4].startswith("Extra: authentication.kubernetes.io/credential-id   [JTI=")
    cluster.kubectl("delete", "serviceaccount", "robot")       # (whoami: any authenticated user may ask, RBAC or not)
    res = kubectl(cluster, as_robot, "auth", "whoami", check=False)
    assert res.returncode == 1
    assert "error: You must be logged in to the server (Unauthorized)" in res.stderr


def test_token_review_of_a_service_account_token(cluster: Cluster) -> None:
    cluster.kubectl("create", "serviceaccount", "reviewed")
    token = cluster.kubectl("create", "token", "reviewed", "--audience", "vault").stdout.strip()
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "spec": {"token": token, "audiences": ["vault"]}}
    out = cluster.kubectl("create", "--validate=false", "-f", "-", "-o", "json", input=yaml.safe_dump(review)).stdout
    status = yaml.safe_load(out)["status"]
    assert status["authenticated"] is True and status["audiences"] == ["vault"]
    assert status["user"]["username"] == "system:serviceaccount:default:reviewed"


def test_as_and_as_group(cluster: Cluster) -> None:
    out = cluster.kubectl("auth", "whoami", "--as", "jane", "--as-group", "devs", "--as-group", "ops").stdout
    assert out == ("ATTRIBUTE   VALUE\n"
                   "Username    jane\n"
                   "Groups      [devs ops system:authenticated]\n")
    out = cluster.kubectl("auth", "whoami", "--as", "system:serviceaccount:kube-system:bot", "-o",
                          "jsonpath={.status.userInfo.groups}").stdout
    assert yaml.safe_load(out) == ["system:serviceaccounts", "system:serviceaccounts:kube-system",
                                   "system:authenticated"]


def https_get(cluster: Cluster, path: str, token: str | None = None) -> tuple[int, Any]:
    """A GET without a client certificate (kubectl asks for a password when a kubeconfig has
    no credentials)."""
    import http.client
    import json
    import ssl
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cfg["certificate-authority-data"]).decode())
    host = cfg["server"].removeprefix("https://")
    conn = http.client.HTTPSConnection(host, context=ctx, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token is not None else {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_anonymous_and_bad_tokens(cluster: Cluster) -> None:
    assert https_get(cluster, "/version")[0] == 200
    code, body = https_get(cluster, "/api/v1/namespaces/default/secrets")    # anonymous: RBAC refuses
    assert (code, body["message"]) == (403, 'secrets is forbidden: User "system:anonymous" cannot list resource '
                                            '"secrets" in API group "" in the namespace "default"')
    code, body = https_get(cluster, "/version", "not-a-token")               # never anonymous
    assert (code, body["message"]) == (401, "Unauthorized")
    code, body = https_get(cluster, "/version", "")                          # no token: anonymous
    assert code == 200


def test_anonymous_auth_off() -> None:
    from .cluster import running
    for c in running(extra_args=("--anonymous-auth=false",)):
        assert https_get(c, "/version")[0] == 401
        assert https_get(c, "/version", admin_user(c)["token"])[0] == 200


@pytest.mark.parametrize("component,user", [("controller-manager", "system:kube-controller-manager"),
                                            ("scheduler", "system:kube-scheduler")])
def test_each_standalone_component_has_its_own_client_certificate(cluster: Cluster, component: str,
                                                                  user: str) -> None:
    conf = cluster.data_dir / f"{component}.conf"
    assert stat.S_IMODE(conf.stat().st_mode) == 0o600
    assert "token" not in yaml.safe_load(conf.read_text())["users"][0]["user"]
    out = kubectl(cluster, conf, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").stdout
    assert out == user


def test_a_standalone_scheduler_runs_as_itself(cluster: Cluster) -> None:
    """`kubeplane scheduler --kubeconfig DIR/scheduler.conf` connects with its certificate: its
    informers sync (list and watch over HTTPS as system:kube-scheduler), so /readyz passes."""
    import re
    import ssl
    import subprocess
    import sys
    import urllib.request
    from .cluster import eventually
    log_path = cluster.data_dir / "scheduler.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen([sys.executable, "-m", "kubeplane", "scheduler", "--kubeconfig",
                             str(cluster.data_dir / "scheduler.conf"), "--secure-port", "0",
                             "--no-leader-elect"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        port = eventually(lambda: re.search(rb"Serving securely on 127\.0\.0\.1:(\d+)", log_path.read_bytes()),
                          "the scheduler to serve").group(1).decode()
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE           # its self-signed serving cert

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz?verbose", context=ctx, timeout=5) as r:
                    return b"[+]sched-handler-sync ok" in r.read()
            except OSError:
                return False
        eventually(ready, "the scheduler's informers to sync")
        assert proc.poll() is None and b"Unauthorized" not in log_path.read_bytes()
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.mark.parametrize("content,message", [
    (None, "Error: invalid authentication config: open {path}: no such file or directory"),
    ("tok,user\n", "Error: invalid authentication config: token file '{path}' must have at least 3 columns "
                   "(token, user name, user uid), found 2"),
])
def test_a_bad_token_auth_file_stops_up_with_one_line(tmp_path: pathlib.Path, content: str | None,
                                                      message: str) -> None:
    import subprocess
    import sys
    path = tmp_path / "tokens.csv"
    if content is not None:
        path.write_text(content)
    res = subprocess.run([sys.executable, "-m", "kubeplane", "up", "--data-dir", str(tmp_path / "data"), "--port", "0",
                          "--nodes", "0", "--token-auth-file", str(path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1] == message.format(path=path)
