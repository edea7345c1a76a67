"""Helpers of the RBAC server tests: a server with --authorization-mode=RBAC and a request as a user."""
from __future__ import annotations

import json
from typing import Any

from kubeplane.apiserver.authentication.user import UserInfo, authenticated
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer

RBAC_ONLY = ServerRunOptions(authorization_modes=("RBAC",),
                             disable_admission_plugins=frozenset({"ServiceAccount", "TaintNodesByCondition"}))
ADMIN = authenticated("root", "system:masters")
JANE = authenticated("jane")


async def call(api: APIServer, user: UserInfo, method: str, path: str, body: Any = None,
               query: str = "") -> tuple[int, Any]:
    raw = json.dumps(body).encode() if body is not None else b""
    req = Request.build(method, path, query, {"content-type": "application/json"} if raw else {}, raw)
    req.user = user
    resp = await api.route_trusted(req)
    assert isinstance(resp.body, bytes)
    return resp.status, json.loads(resp.body) if resp.body[:1] in (b"{", b"[") else resp.body
