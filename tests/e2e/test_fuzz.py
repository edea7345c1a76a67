"""A bounded fuzz run: schemathesis over the OpenAPI v3 documents `kubeplane up` serves.

Every operation of every served group-version is exercised with generated requests (valid and
invalid bodies, parameters and paths) from a fixed seed within a time budget; the only check is
schemathesis' `not_a_server_error`: hostile input must get a 4xx, never a 5xx, a hang or a
dropped connection. Afterwards the server must still answer and its log must hold no
"internal error" (the server logs every 500 with its traceback).

Streaming is left out, because a request that is *meant* not to end would only time out the
client: the `/watch/` paths, pods' `/exec`, `/attach` and `/portforward` (connect operations,
an upgrade to a stream) and the `watch` and `follow` parameters are removed from the
documents handed to schemathesis. So are the proxy subresources (`.../proxy`, `.../proxy/{path}`):
their answer is their backend's, and a backend that cannot be reached (a generated node without
addresses, a simulated pod) is upstream's 503, which the check would count as a server error;
tests/apiserver/test_proxy_subresources.py and tests/e2e/test_proxy.py cover their hostile input.
Everything else is as served.

The budget is KUBEPLANE_FUZZ_SECONDS (default 150) and the seed KUBEPLANE_FUZZ_SEED (default
20261126); a failure prints schemathesis' report with a curl command per finding.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import yaml

from .cluster import Cluster

BUDGET = int(os.environ.get("KUBEPLANE_FUZZ_SECONDS", "150"))
SEED = int(os.environ.get("KUBEPLANE_FUZZ_SEED", "20261126"))
STREAMING_PARAMS = ("watch", "follow")
STREAMING_SUBRESOURCES = ("/proxy", "/exec", "/attach", "/portforward")
ST = pathlib.Path(sys.executable).parent / "st"


def served_documents(c: Cluster) -> list[dict[str, Any]]:
    index = json.loads(c.kubectl("get", "--raw", "/openapi/v3").stdout)
    return [json.loads(c.kubectl("get", "--raw", "/openapi/v3/" + path).stdout) for path in sorted(index["paths"])]


def fuzz_document(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One document with every served path (the group-versions' paths are disjoint and their
    schemas are the same definitions), without the streaming paths and parameters."""
    merged: dict[str, Any] = {"openapi": docs[0]["openapi"], "info": docs[0]["info"], "paths": {},
                              "components": {"schemas": {}}}
    for doc in docs:
        merged["components"]["schemas"].update(doc.get("components", {}).get("schemas", {}))
        for path, item in doc.get("paths", {}).items():
            if "/watch/" in path or path.endswith(STREAMING_SUBRESOURCES) or "/proxy/" in path:
                continue
            merged["paths"][path] = _without_streaming(item)
    return merged


def _without_streaming(item: dict[str, Any]) -> dict[str, Any]:
    item = dict(item)
    keep = lambda params: [p for p in params if p.get("name") not in STREAMING_PARAMS]  # noqa: E731
    if "parameters" in item:
        item["parameters"] = keep(item["parameters"])
    for method, op in list(item.items()):
        if isinstance(op, dict) and "parameters" in op:
            item[method] = {**op, "parameters": keep(op["parameters"])}
    return item


def test_no_server_errors(cluster: Cluster, tmp_path: pathlib.Path) -> None:
    doc = fuzz_document(served_documents(cluster))
    assert len(doc["paths"]) > 40                       # every group-version's paths are in
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(doc))
    config = cluster.kubeconfig.read_text()
    token = next(line.split(":", 1)[1].strip() for line in config.splitlines() if line.strip().startswith("token:"))
    server = next(line.split(":", 1)[1].strip() for line in config.splitlines() if line.strip().startswith("server:"))
    res = subprocess.run(
        [str(ST), "run", str(spec), "--url", server, "--header", f"Authorization: Bearer {token}",
         "--tls-verify", "false", "--checks", "not_a_server_error", "--seed", str(SEED),
         "--max-time", str(BUDGET), "--request-timeout", "20", "--workers", "1", "--no-color",
         "--warnings", "off", "--suppress-health-check", "all"],
        capture_output=True, text=True, timeout=BUDGET + 300, cwd=tmp_path)
    report = res.stdout[-20000:] + res.stderr[-5000:]
    log = cluster.log_path.read_text()
    at = log.find("internal error serving")          # the server logs every 500 with its traceback
    tracebacks = log[at:at + 8000] if at >= 0 else ""
    assert res.returncode == 0, f"schemathesis found server errors or hangs:\n{report}\nserver log:\n{tracebacks}"
    # Still healthy, asked with the token: its user is also in system:masters, which no RBAC
    # change touches (the fuzzer deletes bindings, the certificate's user's among them).
    token_only = tmp_path / "token.kubeconfig"
    cfg = yaml.safe_load(config)
    cfg["users"][0]["user"] = {"token": token}
    token_only.write_text(yaml.safe_dump(cfg))
    assert cluster.kubectl("--kubeconfig", str(token_only), "get", "--raw", "/readyz").stdout == "ok"
    log = cluster.log_path.read_text()
    assert "internal error" not in log and "Traceback" not in log, log[-5000:]
