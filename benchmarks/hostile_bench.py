"""Decoding under attack: the event loop's worst stall while hostile or large bodies are
served, and the cost of an ordinary create (the fast path must stay fast).

Run:  .venv/bin/python benchmarks/hostile_bench.py [--creates 20000] [--only NAME]

The API server runs in this process on memory storage (no TLS, no sockets: what is measured is
decoding, defaulting, validation and storage, the work a body causes). A probe task sleeps
1 ms at a time and records how late it wakes: the worst lateness is the longest the loop was
held. Each case is posted a few times while the probe runs, and a GET sent 2 ms after each POST
is timed from then ("GET meanwhile": how long a client waited for an unrelated answer).
The garbage collector is tuned as `kubeplane up` tunes it (utils/gc_tuning.py).
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time

import orjson

from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.utils import gc_tuning

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def alias_bomb(levels: int = 9) -> bytes:
    """The issue's 514-byte ConfigMap: aN: &aN [*aN-1 x9]."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", "data:", "  k: v", "x:",
             "  a0: &a0 [x,x,x,x,x,x,x,x,x]"]
    lines += [f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines).encode()


def big_configmap(name: str, keys: int = 50_000) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                         "data": {f"key-{i}": "v" * 10 for i in range(keys)}})


def big_pod(name: str, containers: int = 2_000) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                         "spec": {"containers": [{"name": f"c{i}", "image": "nginx",
                                                  "env": [{"name": f"E{j}", "value": "x"} for j in range(20)]}
                                                 for i in range(containers)]}})


def big_yaml(name: str, keys: int = 40_000) -> bytes:
    return ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n"
            + "".join(f"  key-{i}: value-{i}\n" for i in range(keys))).encode()


def alias_growth(name: str) -> bytes:
    """Few aliases, many bytes: a 100 KB string aliased 60 times (6 MB expanded)."""
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\nx: &x \"{'y' * 100_000}\"\ndata:\n"
            + "".join(f"  k{i}: *x\n" for i in range(60))).encode()


def deep_json(name: str, depth: int = 100_000) -> bytes:
    return b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' + name.encode() + b'"},"x":' + \
        b"[" * depth + b"]" * depth + b"}"


CASES = {
    "yaml alias bomb (514 B)": (CMS, lambda n: alias_bomb(), "application/yaml"),
    "yaml alias growth (6 MB expanded)": (CMS, alias_growth, "application/yaml"),
    "json configmap 1.2 MB, 50k keys": (CMS, big_configmap, "application/json"),
    "json pod 1.7 MB, 2k containers": (PODS, big_pod, "application/json"),
    "yaml configmap 1.1 MB, 40k keys": (CMS, big_yaml, "application/yaml"),
    "json nested 100k deep": (CMS, deep_json, "application/json"),
}


async def probe(stop: asyncio.Event, stalls: list[float]) -> None:
    while not stop.is_set():
        t = time.perf_counter()
        await asyncio.sleep(0.001)
        stalls.append(time.perf_counter() - t - 0.001)


async def run_case(api: APIServer, name: str, path: str, make, content_type: str, repeat: int) -> None:
    bodies = [make(f"obj-{abs(hash(name)) % 1000}-{i}") for i in range(repeat)]   # built before the probe runs
    stalls: list[float] = []
    stop = asyncio.Event()
    task = asyncio.create_task(probe(stop, stalls))
    await asyncio.sleep(0.01)
    statuses, seconds, get_ms = [], [], []
    for body in bodies:
        t = time.perf_counter()
        post = asyncio.create_task(api.route_trusted(Request.build("POST", path, "", {"content-type": content_type}, body)))
        await asyncio.sleep(0.002)          # the POST is under way: a GET sent 2 ms in waits for whatever holds the loop
        await asyncio.create_task(api.route_trusted(Request.build("GET", "/api/v1/namespaces/default")))
        get_ms.append((time.perf_counter() - t - 0.002) * 1000)
        resp = await post
        seconds.append(time.perf_counter() - t)
        statuses.append(resp.status)
    stop.set()
    await task
    print(f"{name:36s} status={sorted(set(statuses))} request={statistics.median(seconds) * 1000:7.1f} ms  "
          f"worst loop stall={max(stalls) * 1000:6.1f} ms  GET meanwhile={max(get_ms):6.1f} ms")


async def creates_per_s(api: APIServer, n: int, run: int) -> float:
    """Pods created from JSON bytes (the HTTP path: decode, field checks, defaults, validation)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "", "labels": {"app": "bench"}},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
    bodies = []
    for i in range(n):
        pod["metadata"]["name"] = f"bench-{run}-{i}"
        bodies.append(json.dumps(pod).encode())
    headers = {"content-type": "application/json"}
    t = time.perf_counter()
    for body in bodies:
        r = await api.route_trusted(Request.build("POST", PODS, "", headers, body))
        assert r.status == 201, r.body
    return n / (time.perf_counter() - t)


async def main_async(args: argparse.Namespace) -> None:
    gc_tuning.tune()                        # as `kubeplane up` runs
    api = APIServer(new_storage("memory"))
    await api.bootstrap()
    # the default service account the ServiceAccount admission plugin needs (no controller-manager here)
    await api.storage.create("/registry/serviceaccounts/default/default", {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}})
    if args.gc_freeze:
        gc.freeze()
    if not args.only or args.only == "creates":
        rates = [await creates_per_s(api, args.creates, run) for run in range(3)]
        print(f"creates_per_s (in-process, JSON pod bodies) median={statistics.median(rates):.0f} "
              f"all={[round(r) for r in rates]}")
    for name, (path, make, ct) in CASES.items():
        if args.only and args.only not in name:
            continue
        await run_case(api, name, path, make, ct, args.repeat)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--creates", type=int, default=5_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", default="")
    p.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after start-up, as a server could")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
