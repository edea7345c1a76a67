"""Hostile bodies against `kubeplane up`: the 514-byte YAML alias bomb is a quick 400 and the
server keeps answering meanwhile; unknown fields never reach the store (kubectl's own flags)."""
from __future__ import annotations

import base64
import http.client
import json
import ssl
import threading
from typing import Any

import yaml

from .cluster import Cluster

CMS = "/api/v1/namespaces/default/configmaps"


def alias_bomb(levels: int = 9) -> bytes:
    """The issue's body: nine levels of `aN: &aN [*aN-1 x9]` (514 bytes, 9^9 nodes expanded)."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", "data:", "  k: v", "x:",
             "  a0: &a0 [x,x,x,x,x,x,x,x,x]"]
    lines += [f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines).encode()


class Raw:
    """Plain HTTPS requests with the kubeconfig's CA and token (kubectl parses YAML itself, and
    refuses the bomb before sending it)."""

    def __init__(self, cluster: Cluster) -> None:
        cfg = yaml.safe_load(cluster.kubeconfig.read_text())
        server = cfg["clusters"][0]["cluster"]["server"]
        self.host, self.port = server.removeprefix("https://").rsplit(":", 1)
        ca = base64.b64decode(cfg["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
        self.ctx = ssl.create_default_context(cadata=ca)
        self.token = cfg["users"][0]["user"]["token"]

    def request(self, method: str, path: str, body: bytes = b"",
                content_type: str = "application/json") -> tuple[int, Any]:
        conn = http.client.HTTPSConnection(self.host, int(self.port), context=self.ctx, timeout=30)
        try:
            conn.request(method, path, body=body or None,
                         headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())
        finally:
            conn.close()


def test_alias_bomb_is_a_quick_400_and_the_server_answers_meanwhile(cluster: Cluster) -> None:
    raw = Raw(cluster)
    bombs: list[tuple[int, Any]] = []

    def post_bombs() -> None:
        for _ in range(20):
            bombs.append(raw.request("POST", CMS, alias_bomb(), "application/yaml"))

    poster = threading.Thread(target=post_bombs)
    poster.start()
    gets = []
    while poster.is_alive():                 # the API keeps serving while the bombs arrive
        gets.append(raw.request("GET", "/api/v1/namespaces/default")[0])
    poster.join()
    assert gets and set(gets) == {200}
    assert len(bombs) == 20
    for code, body in bombs:
        assert code == 400 and body["reason"] == "BadRequest"
        assert body["message"].startswith("the object provided is unrecognized (must be of type ConfigMap): "
                                          "error converting YAML to JSON: yaml: document contains excessive aliasing")
    assert raw.request("GET", f"{CMS}/bomb")[0] == 404
    assert cluster.kubectl("get", "--raw", "/readyz").stdout == "ok"


def test_unknown_fields_are_dropped_with_validate_ignore(cluster: Cluster) -> None:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unknown-fields", "surprise": 1},
           "data": {"k": "v"}, "extra": {"nested": True}}
    cluster.kubectl("create", "--validate=ignore", "-f", "-", input=yaml.safe_dump(doc))
    stored = cluster.get_json("configmap", "unknown-fields")
    assert "extra" not in stored and "surprise" not in stored["metadata"] and stored["data"] == {"k": "v"}
    res = cluster.kubectl("create", "--validate=strict", "-f", "-", check=False,
                          input=yaml.safe_dump({**doc, "metadata": {"name": "strict-one"}}))
    assert res.returncode != 0 and 'unknown field "extra"' in res.stderr
    assert cluster.kubectl("get", "configmap", "strict-one", check=False).returncode != 0
