"""What a conversion costs on a custom-object create, in-process.

    PYTHONPATH=src python benchmarks/crd_conversion_bench.py [-n 300] [--runs 3]

An APIServer on memory storage with the CRD controller, and one CRD with two versions (v1
stored, v2 renaming a field), created three ways, each over fresh objects:

  storage version   POST in v1: no conversion
  None              POST in v2 of a CRD with conversion None: the apiVersion rewritten
  Webhook           POST in v2 of a CRD whose conversion webhook is a real HTTPS server on a
                    free loopback port in this process: two ConversionReviews per create
                    (v2 -> v1 to store, v1 -> v2 for the answer), as upstream

Prints creates/s (wall clock, the median of --runs) and the process CPU per create; the
webhook's own serving runs in the same process, so its CPU counts in the Webhook figure.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import statistics
import time
from typing import Any

import orjson
from aiohttp import web

from kubeplane.apiserver.apiextensions.controller import start_controller
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER
from kubeplane.testing.webhook_server import serve_posts, serving_tls

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def rename(obj: dict[str, Any], to: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    spec = out.get("spec") or {}
    if to.endswith("/v2") and "color" in spec:
        spec["colour"] = spec.pop("color")
    if to.endswith("/v1") and "colour" in spec:
        spec["color"] = spec.pop("colour")
    out["apiVersion"] = to
    return out


async def convert(request: web.Request) -> web.Response:
    review = orjson.loads(await request.read())
    req = review["request"]
    return web.Response(body=orjson.dumps({"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": {
        "uid": req["uid"], "result": {"status": "Success"},
        "convertedObjects": [rename(o, req["desiredAPIVersion"]) for o in req["objects"]]}}),
        content_type="application/json")


def crd(group: str, conversion: dict[str, Any]) -> dict[str, Any]:
    def version(name: str, field: str, storage: bool) -> dict[str, Any]:
        return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": {
                field: {"type": "string"}, "replicas": {"type": "integer", "minimum": 0}}}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [version("v1", "color", True), version("v2", "colour", False)],
                     "conversion": conversion}}


async def call(api: APIServer, method: str, path: str, body: Any) -> Any:
    resp = await api.route_trusted(Request.build(method, path, "", {"content-type": "application/json"},
                                                 orjson.dumps(body)))
    assert resp.status < 300, resp.body
    return resp


async def one_run(n: int) -> dict[str, tuple[float, float]]:
    ca_pem, ssl_ctx, tmp = serving_tls()
    runner, port = await serve_posts(convert, ssl_ctx)
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    tasks = await start_controller(api)
    webhook = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
        "url": f"https://127.0.0.1:{port}/convert", "caBundle": base64.b64encode(ca_pem).decode()}}}
    cases = {"storage version": ("none.example.com", "v1", {"strategy": "None"}),
             "None": ("none2.example.com", "v2", {"strategy": "None"}),
             "Webhook": ("hook.example.com", "v2", webhook)}
    out = {}
    try:
        for label, (group, version, conversion) in cases.items():
            await call(api, "POST", CRDS, crd(group, conversion))
            for _ in range(200):             # served once the controller has synced it
                r = await api.route_trusted(Request.build("GET", f"/apis/{group}/{version}/widgets", "", {}, b""))
                if r.status == 200:
                    break
                await asyncio.sleep(0.01)
            path = f"/apis/{group}/{version}/namespaces/default/widgets"
            field = "color" if version == "v1" else "colour"
            await call(api, "POST", path, {"apiVersion": f"{group}/{version}", "kind": "Widget",
                                           "metadata": {"name": "warm"}, "spec": {field: "red"}})
            wall, cpu = time.perf_counter(), time.process_time()
            for i in range(n):
                await call(api, "POST", path, {"apiVersion": f"{group}/{version}", "kind": "Widget",
                                               "metadata": {"name": f"w{i}"}, "spec": {field: "red", "replicas": 1}})
            out[label] = (n / (time.perf_counter() - wall), (time.process_time() - cpu) / n * 1e6)
    finally:
        api.crd_controller.unserve_all()       # type: ignore[attr-defined]  (the registry is the process's)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await runner.cleanup()
        await api.storage.close()
        tmp.cleanup()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [asyncio.run(one_run(args.n)) for _ in range(args.runs)]
    for label in runs[0]:
        rate = statistics.median(r[label][0] for r in runs)
        cpu = statistics.median(r[label][1] for r in runs)
        print(f"{label:16s} {rate:8.0f} creates/s   {cpu:7.0f} us CPU per create")


if __name__ == "__main__":
    main()
