"""Authentication's cost per request, in process: µs per APIServer.authenticate() for each kind
of credential (the HTTPS front end calls it once per request).

Run:  .venv/bin/python benchmarks/authn_bench.py [--n 20000] [--rounds 5]

Credentials: none (anonymous), the token file's token, a client certificate (converted once per
connection by the TLS protocol; per request only its validity is checked), a service account
token once its signature is cached (the claims' times, then the ServiceAccount's existence and
uid: in-memory storage gets), the same token's first use (parsing and the RSA verify), and
an impersonating request (two `impersonate` checks against AlwaysAllow). Best of --rounds.
"""
from __future__ import annotations

import argparse
import asyncio
import time

from kubeplane.apiserver.authentication.user import authenticated
from kubeplane.apiserver.authentication.x509 import X509Identity
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

PATH = "/api/v1/namespaces/default/pods"


def headers(**h: str) -> dict[str, str]:
    return {"accept": "application/json", "user-agent": "kubectl/v1.37.0", "accept-encoding": "gzip", **h}


async def per_request(api: APIServer, make: object, n: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        reqs = [make() for _ in range(n)]           # type: ignore[operator]
        t = time.perf_counter()
        for r in reqs:
            await api.authenticate(r)
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    api = APIServer(new_storage("memory"), tokens={"admin-token": "admin"}, options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench"}}
    req = Request.build("POST", "/api/v1/namespaces/default/serviceaccounts", headers={"content-type": "application/json"})
    req.obj = sa
    assert (await api.route_trusted(req)).status == 201
    tr = Request.build("POST", "/api/v1/namespaces/default/serviceaccounts/bench/token",
                       headers={"content-type": "application/json"},
                       body=b'{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}')
    import orjson
    token = orjson.loads((await api.route_trusted(tr)).body)["status"]["token"]
    cert = X509Identity(authenticated("kubernetes-admin", "kubeadm:cluster-admins"), 4e9)

    def with_cert() -> Request:
        r = Request.build("GET", PATH, headers=headers())
        r.x509 = cert
        return r

    cases = {
        "anonymous (public path)": lambda: Request.build("GET", "/version", headers=headers()),
        "token file": lambda: Request.build("GET", PATH, headers=headers(authorization="Bearer admin-token")),
        "client certificate": with_cert,
        "service account token, cached": lambda: Request.build("GET", PATH, headers=headers(
            authorization=f"Bearer {token}")),
        "impersonation (user + group)": lambda: Request.build("GET", PATH, headers=headers(
            authorization="Bearer admin-token", **{"impersonate-user": "jane", "impersonate-group": "devs"})),
    }
    print(f"µs per authenticate(), best of {a.rounds} x {a.n}")
    for name, make in cases.items():
        print(f"  {name:34s} {await per_request(api, make, a.n, a.rounds):7.2f}")
    sa_authn = api.authenticator.service_accounts
    assert sa_authn is not None

    def uncached() -> Request:
        sa_authn.cache.clear()
        return Request.build("GET", PATH, headers=headers(authorization=f"Bearer {token}"))
    n = max(a.n // 20, 1)
    best = float("inf")
    for _ in range(a.rounds):
        t = time.perf_counter()
        for _ in range(n):
            await api.authenticate(uncached())
        best = min(best, (time.perf_counter() - t) / n)
    print(f"  {'service account token, first use':34s} {best * 1e6:7.2f}")


if __name__ == "__main__":
    asyncio.run(main())
