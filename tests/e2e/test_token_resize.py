"""`kubectl create token` (serviceaccounts/token) and in-place pod resize (pods/resize,
`kubectl patch/edit --subresource resize`) with the real kubectl against `kubeplane up`."""
from __future__ import annotations

import base64
import json
import os
import stat
import sys
from typing import Any, Iterator

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from .cluster import Cluster, eventually, running

ISSUER = "https://kubernetes.default.svc.cluster.local"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """One node: its kubelet applies resizes and reports the resources."""
    yield from running(nodes=1)


def claims_of(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    def part(p: str) -> Any:
        return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    header, payload, _ = token.split(".")
    return part(header), part(payload)


def verify_with_sa_pub(cluster: Cluster, token: str) -> None:
    """The signature checks out with the server's public key (pki/sa.pub); raises otherwise."""
    pub = serialization.load_pem_public_key((cluster.data_dir / "pki" / "sa.pub").read_bytes())
    signing_input, _, sig = token.rpartition(".")
    pub.verify(base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)), signing_input.encode(),  # type: ignore[union-attr]
               padding.PKCS1v15(), hashes.SHA256())  # type: ignore[call-arg]


def test_kubectl_create_token(cluster: Cluster) -> None:
    eventually(lambda: cluster.kubectl("get", "sa", "default", check=False).returncode == 0, "the default SA")
    token = cluster.kubectl("create", "token", "default").stdout.strip()
    header, c = claims_of(token)
    assert header["alg"] == "RS256" and header["kid"]
    sa = cluster.get_json("sa", "default")
    assert c["iss"] == ISSUER and c["aud"] == [ISSUER]
    assert c["sub"] == "system:serviceaccount:default:default"
    assert c["exp"] - c["iat"] == 3600 and c["nbf"] == c["iat"]
    assert c["kubernetes.io"] == {"namespace": "default",
                                  "serviceaccount": {"name": "default", "uid": sa["metadata"]["uid"]}}
    assert len(c["jti"]) == 36
    verify_with_sa_pub(cluster, token)
    with pytest.raises(InvalidSignature):
        verify_with_sa_pub(cluster, token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"))
    # The key in the JWKS the server publishes is the one in the header.
    jwks = json.loads(cluster.kubectl("get", "--raw", "/openid/v1/jwks").stdout)
    assert [k["kid"] for k in jwks["keys"]] == [header["kid"]]
    conf = json.loads(cluster.kubectl("get", "--raw", "/.well-known/openid-configuration").stdout)
    assert conf["issuer"] == ISSUER and conf["jwks_uri"].endswith("/openid/v1/jwks")


def test_kubectl_create_token_bound_to_a_pod(cluster: Cluster) -> None:
    cluster.kubectl("create", "serviceaccount", "robot")
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound"},
                        "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "nginx"}]}})
    try:
        pod = eventually(lambda: (p := cluster.get_json("pod", "bound"))["spec"].get("nodeName") and p, "scheduled")
        node = cluster.get_json("node", pod["spec"]["nodeName"])
        token = cluster.kubectl("create", "token", "robot", "--duration", "2h", "--audience", "vault",
                                "--audience", "other", "--bound-object-kind", "Pod",
                                "--bound-object-name", "bound").stdout.strip()
        _, c = claims_of(token)
        assert c["aud"] == ["vault", "other"] and c["exp"] - c["iat"] == 7200
        assert c["kubernetes.io"]["pod"] == {"name": "bound", "uid": pod["metadata"]["uid"]}
        assert c["kubernetes.io"]["node"] == {"name": node["metadata"]["name"], "uid": node["metadata"]["uid"]}
        verify_with_sa_pub(cluster, token)
        res = cluster.kubectl("create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name",
                              "bound", check=False)
        assert res.returncode == 1
        assert ('cannot bind token for serviceaccount "default" to pod running with different serviceaccount '
                'name.') in res.stderr
    finally:
        cluster.kubectl("delete", "pod", "bound", "--wait=false")


def test_kubectl_create_token_refusals(cluster: Cluster) -> None:
    res = cluster.kubectl("create", "token", "default", "--duration", "1m", check=False)
    assert res.returncode == 1
    assert ('TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: '
            'may not specify a duration less than 10 minutes') in res.stderr, res.stderr
    res = cluster.kubectl("create", "token", "nosuch", check=False)
    assert res.returncode == 1 and 'serviceaccounts "nosuch" not found' in res.stderr


def _resources(pod: dict[str, Any]) -> tuple[Any, Any]:
    (cs,) = pod["status"].get("containerStatuses") or [{}]
    return cs.get("resources"), cs.get("allocatedResources")


def test_kubectl_patch_and_edit_subresource_resize(cluster: Cluster, tmp_path: Any) -> None:
    res = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "resized"},
                        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": res}]}})
    try:
        eventually(lambda: _resources(cluster.get_json("pod", "resized")) == (res, res["requests"]), "resources reported")
        cluster.kubectl("patch", "pod", "resized", "--subresource", "resize", "--patch",
                        '{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"150m"},'
                        '"limits":{"cpu":"300m"}}}]}}')
        pod = cluster.get_json("pod", "resized")
        assert pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "150m"
        assert pod["metadata"]["generation"] == 2
        want = {"requests": {"cpu": "150m", "memory": "64Mi"}, "limits": {"cpu": "300m", "memory": "128Mi"}}
        pod = eventually(lambda: (p := cluster.get_json("pod", "resized")) and _resources(p) == (want, want["requests"])
                         and p, "the kubelet's report of the resize")
        assert pod["status"]["observedGeneration"] == 2
        # The main resource still refuses resource changes.
        out = cluster.kubectl("patch", "pod", "resized", "--patch",
                              '{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}', check=False)
        assert out.returncode == 1 and "pod updates may not change fields other than" in out.stderr
        # Only cpu and memory; QoS may not change.
        out = cluster.kubectl("patch", "pod", "resized", "--subresource", "resize", "--patch",
                              '{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"300m","memory":"128Mi"}}}]}}',
                              check=False)
        assert out.returncode == 1
        assert 'Pod QOS Class may not change as a result of resizing' in out.stderr, out.stderr
        # kubectl edit --subresource resize, with an editor that changes the memory request.
        editor = tmp_path / "editor.py"
        editor.write_text("import re, sys\np = sys.argv[1]\ns = open(p).read()\n"
                          "s = s.replace('memory: 64Mi', 'memory: 96Mi', 1)\nopen(p, 'w').write(s)\n")
        editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
        os.environ["KUBE_EDITOR"] = f"{sys.executable} {editor}"
        try:
            cluster.kubectl("edit", "pod", "resized", "--subresource", "resize")
        finally:
            del os.environ["KUBE_EDITOR"]
        pod = cluster.get_json("pod", "resized")
        assert pod["spec"]["containers"][0]["resources"]["requests"]["memory"] == "96Mi"
        assert pod["metadata"]["generation"] == 3
        eventually(lambda: _resources(cluster.get_json("pod", "resized"))[1] == {"cpu": "150m", "memory": "96Mi"},
                   "the edited resize reported")
    finally:
        cluster.kubectl("delete", "pod", "resized", "--wait=false")


def test_discovery_lists_the_subresources(cluster: Cluster) -> None:
    out = json.loads(cluster.kubectl("get", "--raw", "/api/v1").stdout)
    names = {r["name"] for r in out["resources"]}
    assert {"pods/resize", "serviceaccounts/token"} <= names
    token = next(r for r in out["resources"] if r["name"] == "serviceaccounts/token")
    assert (token["group"], token["version"], token["kind"], token["verbs"]) == (
        "authentication.k8s.io", "v1", "TokenRequest", ["create"])


def test_issuer_audiences_max_expiration_and_signing_key_flags(tmp_path: Any) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    key_file = tmp_path / "sa-ec.pem"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    c = Cluster(extra_args=("--service-account-issuer", "https://issuer.example", "--api-audiences", "a,b",
                            "--service-account-max-token-expiration", "2h",
                            "--service-account-signing-key-file", str(key_file))).start()
    try:
        eventually(lambda: c.kubectl("get", "sa", "default", check=False).returncode == 0, "the default SA")
        res = c.kubectl("create", "token", "default", "--duration", "3h")
        assert 'requested expiration of 10800 seconds shortened to 7200 seconds' in res.stderr
        header, claims = claims_of(res.stdout.strip())
        assert header["alg"] == "ES256"
        assert (claims["iss"], claims["aud"], claims["exp"] - claims["iat"]) == ("https://issuer.example", ["a", "b"], 7200)
        assert not (c.data_dir / "pki" / "sa.key").exists()      # the given key, not a made one
    finally:
        c.cleanup()
    bad = Cluster(extra_args=("--service-account-max-token-expiration", "10m"))
    with pytest.raises(RuntimeError, match="the service-account-max-token-expiration must be between 1 hour "
                                           "and 2\\^32 seconds"):
        bad.start()
    bad.cleanup()
