"""Custom-object creates against ConfigMap creates in process: server CPU µs per create through
APIServer.handle (memory storage, the CRD controller running, no HTTP), and with `prof` a
cProfile of the custom-object creates by internal time.

Run:  PYTHONPATH=src .venv/bin/python benchmarks/crd_inprocess.py [prof] [--rounds 5] [-n 2000]

Prints each round (ConfigMaps then custom objects, interleaved so a loaded machine weighs on both
alike) and the medians: µs per ConfigMap create, per custom-object create, and their ratio.

The objects and the CRD are crd_creates.py's (its HTTPS benchmark's ratio is issue 13's target).
"""
import argparse
import asyncio
import cProfile
import json
import pathlib
import pstats
import statistics
import sys
import time

from kubeplane.apiserver.apiextensions.controller import start_controller
from kubeplane.apiserver.authentication.user import authenticated
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from crd_creates import GROUP, configmap, crd, widget


async def main() -> None:
    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    api.authenticator.token_file.tokens["t"] = authenticated("admin", "system:masters")
    tasks = await start_controller(api)
    H = {"authorization": "Bearer t", "content-type": "application/json"}
    r = await api.handle(Request.build("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", H, json.dumps(crd(False)).encode()))
    assert r.status == 201, r.body
    for _ in range(200):
        await asyncio.sleep(0.01)
        r = await api.handle(Request.build("GET", f"/apis/{GROUP}/v1/namespaces/default/widgets", "", H))
        if r.status == 200:
            break
    async def run(path: str, make: object, prefix: str, n: int) -> float:
        t = time.process_time()
        for i in range(n):
            r = await api.handle(Request.build("POST", path, "", H, json.dumps(make(f"{prefix}{i}")).encode()))  # type: ignore[operator]
            assert r.status == 201, r.body
        return (time.process_time() - t) / n * 1e6
    cms, ws = "/api/v1/namespaces/default/configmaps", f"/apis/{GROUP}/v1/namespaces/default/widgets"
    await run(cms, configmap, "w", 300)
    await run(ws, widget, "w", 300)
    rows = []
    for r in range(args.rounds):
        cm, cr = await run(cms, configmap, f"a{r}-", args.n), await run(ws, widget, f"a{r}-", args.n)
        rows.append((cm, cr, cr / cm))
        print(f"round {r + 1}: cm us {cm:.1f}  cr us {cr:.1f}  cr/cm {cr / cm:.3f}")
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"median: cm us {med[0]:.1f}  cr us {med[1]:.1f}  cr/cm {med[2]:.3f}")
    if args.prof:
        pr = cProfile.Profile()
        pr.enable()
        await run(ws, widget, "p", 3000)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    for t in tasks:
        t.cancel()


parser = argparse.ArgumentParser()
parser.add_argument("prof", nargs="?", help="also print a cProfile of custom-object creates")
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("-n", type=int, default=2000, help="creates of each kind per round")
args = parser.parse_args()
asyncio.run(main())
