"""In-process density benchmark of the controllers' client side (not collected by pytest).

Run: .venv/bin/python tests/controller/bench_controllers.py [--replicas 1000] [--nodes 100]
                                                            [--profile FILE] [--top 40] [--requests]

One event loop holds the API server (memory storage), every controller, the scheduler and
the simulated kubelets, as `kubeplane up` does. It creates a Deployment of --replicas pods,
waits until all are available, then changes the image and waits for the rollout to finish.
Printed per phase: wall seconds and CPU seconds (time.process_time). With --profile the run
is under cProfile and the top functions of controller/ and client/tools/ are printed; with
--requests, the API requests of each phase are counted by user agent, verb and resource.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import pathlib
import pstats
import sys
import tempfile
import time

from kubeplane.apiserver.server import APIServer
from kubeplane.cmd.up import in_process_clientset, start_components
from kubeplane.storage import new_storage
from kubeplane.utils import gc_tuning
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

NS = "default"


def deployment(replicas: int, image: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench", "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "bench"}},
                     "strategy": {"rollingUpdate": {"maxSurge": "100%", "maxUnavailable": "0%"}},
                     "template": {"metadata": {"labels": {"app": "bench"}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


async def wait_done(client, replicas: int) -> None:
    """Poll the Deployment until updated == available == replicas and observedGeneration caught up."""
    while True:
        d = await client.get("bench")
        st = d.status
        if (st is not None and st.observed_generation == d.metadata.generation
                and (st.updated_replicas or 0) == replicas and (st.available_replicas or 0) == replicas
                and (st.replicas or 0) == replicas):
            return
        await asyncio.sleep(0.05)


async def main_async(args: argparse.Namespace) -> None:
    storage = new_storage("memory")
    api = APIServer(storage, options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    requests: collections.Counter[str] = collections.Counter()
    if args.requests:
        count_requests(api, requests)
    with tempfile.TemporaryDirectory() as tmp:
        tasks = start_components(api, argparse.Namespace(
            controllers=True, nodes=args.nodes, runtime="sim", profile="default", node_heartbeat_period=10.0,
            node_monitor_grace_period=40.0, data_dir=pathlib.Path(tmp)))
        cs = in_process_clientset(api, "bench")
        client = cs.apps_v1().deployments(NS)
        try:
            await asyncio.sleep(1.0)          # informers list, nodes register
            for phase in ("create", "rollout"):
                requests.clear()
                t0, c0 = time.perf_counter(), time.process_time()
                if phase == "create":
                    await client.create(deployment(args.replicas, "nginx:1.25"))
                else:
                    await client.patch("bench", {"spec": {"template": {"spec": {"containers": [
                        {"name": "c", "image": "nginx:1.26"}]}}}}, "strategic")
                await asyncio.wait_for(wait_done(client, args.replicas), args.timeout)
                print(f"{phase}: wall {time.perf_counter() - t0:6.2f} s  cpu {time.process_time() - c0:6.2f} s",
                      flush=True)
                for what, n in sorted(requests.items(), key=lambda kv: -kv[1]):
                    print(f"  {n / args.replicas:6.2f} per pod  {what}")
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            storage.stop_watches()
            await storage.close()


def count_requests(api: APIServer, counter: collections.Counter[str]) -> None:
    """Count every in-process request as "user-agent VERB resource[/subresource]"."""
    route = api.route_trusted

    async def counted(req):  # type: ignore[no-untyped-def]
        if "watch" not in req.query:
            parts = req.path.strip("/").split("/")
            if "namespaces" in parts[:-2]:          # .../namespaces/NS/PLURAL[/NAME[/SUB]]
                parts = parts[parts.index("namespaces") + 2:]
            else:                                    # /api/v1/PLURAL... or /apis/G/V/PLURAL...
                parts = parts[2 if parts[0] == "api" else 3:]
            resource = parts[0] + ("/" + parts[2] if len(parts) > 2 else "")
            counter[f"{req.headers.get('user-agent', '')} {req.method} {resource}"] += 1
        return await route(req)
    api.route_trusted = counted  # type: ignore[method-assign]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--replicas", type=int, default=1000)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--profile", default="")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--requests", action="store_true", help="count API requests per phase")
    args = p.parse_args()
    gc_tuning.tune()
    if not args.profile:
        asyncio.run(main_async(args))
        return
    prof = cProfile.Profile()
    prof.enable()
    asyncio.run(main_async(args))
    prof.disable()
    prof.dump_stats(args.profile)
    st = pstats.Stats(args.profile, stream=sys.stdout)
    st.sort_stats("tottime").print_stats(r"controller/|client/tools|client/informers", args.top)


if __name__ == "__main__":
    main()
