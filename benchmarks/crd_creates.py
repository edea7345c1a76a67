"""Custom-object creates/s against ConfigMap creates/s, over real HTTPS (issue 13's target: the
custom objects at least 80 % of the ConfigMaps).

Run:  .venv/bin/python benchmarks/crd_creates.py [--storage sqlite|memory] [--seconds 5] [--rounds 3]

`kubeplane up` runs in its own process (api_bench.start_up, with --no-controllers: the CRD
controller lives in the API server); the load is this process's aiohttp client (api_bench.Client).
A CRD with a typical structural schema (typed spec fields, a list-map, a status subresource,
one CEL rule with --cel) is created and waited for until Established; then ConfigMap and
custom-object creates alternate, `--rounds` times each, for `--seconds` each, so load from the
rest of the machine falls on both alike. Prints each round and the median ratio.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from api_bench import Client, run_for, start_up, stop

GROUP = "bench.example.com"


def crd(cel: bool) -> dict:
    spec: dict = {"type": "object", "properties": {
        "replicas": {"type": "integer", "minimum": 0, "default": 1},
        "image": {"type": "string", "maxLength": 256},
        "paused": {"type": "boolean"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"}, "port": {"type": "integer", "format": "int32"}}}},
        "env": {"type": "object", "additionalProperties": {"type": "string"}}}}
    if cel:
        spec["x-kubernetes-validations"] = [{"rule": "self.replicas <= 100", "message": "at most 100 replicas"}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                       "spec": spec,
                                       "status": {"type": "object", "properties": {
                                           "ready": {"type": "integer"}}}}}}}]}}


def widget(name: str) -> dict:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"replicas": 3, "image": "nginx:1.25", "paused": False,
                     "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}],
                     "env": {"MODE": "bench", "LEVEL": "info"}}}


def configmap(name: str) -> dict:
    """About the custom object's size and shape (a few keys, a label)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "bench"}},
            "data": {"replicas": "3", "image": "nginx:1.25", "paused": "false", "ports": "http=80,metrics=9090",
                     "MODE": "bench", "LEVEL": "info"}}


async def established(c: Client) -> None:
    url = f"{c.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{GROUP}"
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline:
        async with c.session.get(url) as r:
            conds = (json.loads(await r.read()).get("status") or {}).get("conditions") or []
        if any(x["type"] == "Established" and x["status"] == "True" for x in conds):
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("the CRD was not Established")


async def creates_per_s(c: Client, url: str, make, prefix: str, seconds: float, workers: int) -> float:
    async def op(i: int, n: int) -> None:
        async with c.session.post(url, data=json.dumps(make(f"{prefix}-{i}-{n}"))) as r:
            assert r.status == 201, await r.text()
            await r.read()

    t0 = time.perf_counter()
    n = await run_for(seconds, workers, op)
    return n / (time.perf_counter() - t0)


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp) / "main"
        proc, _ = start_up(d, args.storage, ["--no-controllers"])
        try:
            c = Client(d / "kubeconfig", args.connections)
            try:
                async with c.session.post(f"{c.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                          data=json.dumps(crd(args.cel))) as r:
                    assert r.status == 201, await r.text()
                await established(c)
                cms = f"{c.server}/api/v1/namespaces/default/configmaps"
                widgets = f"{c.server}/apis/{GROUP}/v1/namespaces/default/widgets"
                ratios = []
                for rnd in range(args.rounds):
                    cm = await creates_per_s(c, cms, configmap, f"cm{rnd}", args.seconds, args.connections)
                    cr = await creates_per_s(c, widgets, widget, f"w{rnd}", args.seconds, args.connections)
                    ratios.append(cr / cm)
                    print(f"round={rnd} configmap_creates_per_s={cm:.0f} custom_creates_per_s={cr:.0f} "
                          f"ratio={cr / cm:.3f}")
                print(f"ratio median={statistics.median(ratios):.3f} target>=0.80")
            finally:
                await c.close()
        finally:
            stop(proc)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--storage", default="sqlite")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--cel", action="store_true", help="give the CRD one CEL rule")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
