"""Custom-object creates against ConfigMap creates in process: server CPU µs per create through
APIServer.handle (memory storage, the CRD controller running, no HTTP), and with `prof` a
cProfile of the custom-object creates by internal time.

Run:  PYTHONPATH=src .venv/bin/python benchmarks/crd_inprocess.py [prof]

The objects and the CRD are crd_creates.py's (its HTTPS benchmark's ratio is issue 13's target).
"""
import asyncio
import cProfile
import json
import pathlib
import pstats
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
    print("cm us", round(await run(cms, configmap, "a", 2000), 1), "cr us", round(await run(ws, widget, "a", 2000), 1))
    if len(sys.argv) > 1:
        pr = cProfile.Profile()
        pr.enable()
        await run(ws, widget, "p", 3000)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    for t in tasks:
        t.cancel()


asyncio.run(main())
