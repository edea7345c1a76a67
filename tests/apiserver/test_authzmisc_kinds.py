"""Server behaviour of the authzmisc kinds beyond the registry round trip: the CSR requestor and
its /status and /approval subresources, field selectors, the reviews (answered from the
request's user and the token table, never stored) and the Local APIServices registered at start."""
from __future__ import annotations

import base64
import json
from typing import Any

from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage



CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
PEM = base64.b64encode(b"-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n").decode()


def csr(name: str, signer: str = "example.com/s") -> dict[str, Any]:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": {"request": PEM, "signerName": signer, "usages": ["client auth"], "username": "forged",
                     "groups": ["system:masters"]},
            "status": {"conditions": [{"type": "Approved", "status": "True"}]}}


async def as_user(server: APIServer, method: str, path: str, body: Any = None, token: str = "tok") -> tuple[int, Any]:
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    resp = await server.handle(Request.build(method, path, "", headers, json.dumps(body).encode() if body else b""))
    assert isinstance(resp.body, bytes)
    return resp.status, json.loads(resp.body)


async def test_csr_requestor_approval_and_status() -> None:
    server = APIServer(new_storage("memory"), tokens={"tok": "jane"})
    await server.bootstrap()
    status, created = await as_user(server, "POST", CSRS, csr("c1"))
    assert status == 201, created
    assert created["spec"]["username"] == "jane" and created["spec"]["groups"] == ["system:authenticated"]
    assert "status" not in created or not created["status"].get("conditions")

    # /status cannot approve
    body = {**created, "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "R"}]}}
    status, err = await as_user(server, "PUT", f"{CSRS}/c1/status", body)
    assert status == 422
    assert 'status.conditions: Forbidden: updates may not add a condition of type "Approved"' in err["message"]
    got = created
    # /approval can, and the condition's status defaults to True
    body = {**got, "status": {"conditions": [{"type": "Approved", "reason": "KubectlApprove", "message": "m"}]}}
    status, got = await as_user(server, "PUT", f"{CSRS}/c1/approval", body)
    assert status == 200, got
    [cond] = got["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Approved", "True", "KubectlApprove")
    # ... but not deny as well
    body = {**got, "status": {"conditions": [*got["status"]["conditions"], {"type": "Denied", "status": "True"}]}}
    status, err = await as_user(server, "PUT", f"{CSRS}/c1/approval", body)
    assert status == 422 and 'status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions ' \
        'are mutually exclusive' in err["message"]
    # the main resource keeps spec and status
    body = {**got, "spec": {**got["spec"], "signerName": "other.com/x"}, "status": {}}
    status, got2 = await as_user(server, "PUT", f"{CSRS}/c1", body)
    assert status == 200 and got2["spec"]["signerName"] == "example.com/s" and got2["status"] == got["status"]
    await server.storage.close()


async def test_csr_field_selector_and_table(api: Any) -> None:
    for name, signer in (("a", "example.com/one"), ("b", "example.com/two")):
        assert (await api.create(CSRS, csr(name, signer))).status == 201
    r = await api.get(CSRS, {"fieldSelector": "spec.signerName=example.com/two"})
    assert [o["metadata"]["name"] for o in r.json["items"]] == ["b"]
    r = await api.call("GET", CSRS, headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    assert [c["name"] for c in r.json["columnDefinitions"]] == [
        "Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"]
    assert r.json["rows"][0]["cells"][2:] == ["example.com/one", "system:anonymous", "<none>", "Pending"]


async def test_reviews_answer_the_requesting_user_and_store_nothing() -> None:
    server = APIServer(new_storage("memory"), tokens={"tok": "jane", "other": "bob"})
    await server.bootstrap()
    status, r = await as_user(server, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                              {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert status == 201 and r["status"]["userInfo"] == {"username": "jane", "groups": ["system:authenticated"]}

    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "other"}}
    status, r = await as_user(server, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert status == 201 and r["status"]["authenticated"] is True and r["status"]["user"]["username"] == "bob"
    review["spec"]["token"] = "nope"
    status, r = await as_user(server, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert status == 201 and "authenticated" not in r["status"] and r["status"]["user"] == {}
    review["spec"]["token"] = "12\xfai\U00024fc2"          # non-ASCII (found by the fuzzer: was a 500)
    status, r = await as_user(server, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert status == 201 and "authenticated" not in r["status"]
    review["spec"]["token"] = ""
    status, r = await as_user(server, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", review)
    assert (status, r["message"]) == (400, "token is required for TokenReview in authentication")

    lsar = {"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
            "spec": {"user": "u", "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}}
    status, r = await as_user(server, "POST", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", lsar)
    assert status == 201 and r["status"]["allowed"] is True and r["metadata"]["namespace"] == "default"
    status, r = await as_user(server, "POST", "/apis/authorization.k8s.io/v1/namespaces/other/localsubjectaccessreviews", lsar)
    assert status == 422 and "spec.resourceAttributes.namespace: Invalid value: \"default\": must match metadata.namespace" in r["message"]

    status, r = await as_user(server, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                              {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {}})
    assert (status, r["message"]) == (400, "no namespace on request")
    for plural in ("selfsubjectreviews", "tokenreviews"):
        kvs, _ = await server.storage.list(f"/registry/{plural}/")
        assert kvs == []
        status, _ = await as_user(server, "GET", f"/apis/authentication.k8s.io/v1/{plural}")
        assert status == 405
    await server.storage.close()


async def test_local_api_services_are_registered_at_start(api: Any) -> None:
    r = await api.get("/apis/apiregistration.k8s.io/v1/apiservices")
    names = [o["metadata"]["name"] for o in r.json["items"]]
    assert {"v1.", "v1.apps", "v1.rbac.authorization.k8s.io", "v1.apiregistration.k8s.io"} <= set(names)
    core = next(o for o in r.json["items"] if o["metadata"]["name"] == "v1.")
    assert core["spec"] == {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    assert core["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
    [cond] = core["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Available", "True", "Local")
    before = await api.rv("/apis/apiregistration.k8s.io/v1/apiservices/v1.apps")
    await api.server.bootstrap()                       # a restart changes nothing
    assert await api.rv("/apis/apiregistration.k8s.io/v1/apiservices/v1.apps") == before


async def test_role_binding_role_ref_is_immutable(api: Any) -> None:
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
          "roleRef": {"kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "jane"}]}
    created = (await api.create(path, rb)).json
    assert created["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    r = await api.call("PATCH", f"{path}/rb", body={"roleRef": {"name": "other"}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 422
    assert r.json["message"] == ('RoleBinding.rbac.authorization.k8s.io "rb" is invalid: roleRef: Invalid value: '
                                 '{"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: '
                                 'cannot change roleRef')
