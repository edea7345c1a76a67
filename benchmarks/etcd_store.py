"""EtcdStorage in process: client CPU and throughput per create, update, consistent get.

    PYTHONPATH=src .venv/bin/python benchmarks/etcd_store.py [-n 3000] [--concurrency 16]
        [--runs 3] [--no-uvloop] [--profile create|update|get] [--endpoint URL]

(PYTHONPATH picks the tree measured: point it at another worktree's src to compare.)

One etcd member of its own (TLS, kubeplane.testing.etcd.EtcdCluster), or --endpoint (plain
http) for one already running. Each run opens a fresh EtcdStorage on a new prefix and times, at
--concurrency concurrent callers, as the API server's request handlers call the store:

  create   guarded creates of ~1 KB pods (the Txn, then the wait until the watch cache holds it)
  update   guarded updates of each pod on its current mod revision
  get      linearizable gets (each a shared revision round trip, then the cache)
  api      pod creates through the API server in process (APIServer.handle with a bearer
           token, as a request arrives after TLS and HTTP: authentication, admission with its
           namespace get, the registry, the store), on a store of their own

CPU is this process's (time.process_time: the client side, gRPC's threads included) and, with
an etcd of our own, the etcd member's (from /proc), per operation, the median over --runs; also
etcd's gRPC calls per operation by method (its grpc_server_handled_total), e.g. Range per get. The event loop is uvloop's, as `kubeplane up`
runs it (--no-uvloop: asyncio's). --profile PHASE runs cProfile over that phase of the last
run and prints the top functions.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import os
import pathlib
import pstats
import re
import ssl
import statistics
import tempfile
import time
import urllib.request

import orjson
from typing import Any, Awaitable, Callable

from kubeplane.storage.etcd import EtcdConfig, EtcdStorage

PHASES = ("create", "update", "get", "api")
API_POD = orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-", "labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}})
HEADERS = {"authorization": "Bearer t", "content-type": "application/json", "user-agent": "etcd_store/1.0"}


def pod(i: int) -> tuple[str, dict[str, Any]]:
    name = f"web-7d4b9c8f6-{i:06d}"
    return f"/registry/pods/default/{name}", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"3f1c0f7e-0000-4000-8000-{i:012d}",
                     "creationTimestamp": "2025-01-01T00:00:00Z", "generateName": "web-7d4b9c8f6-",
                     "labels": {"app": "web", "pod-template-hash": "7d4b9c8f6"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6",
                                          "uid": "9a0e-rs", "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                                 "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                               "limits": {"cpu": "500m", "memory": "256Mi"}}}],
                 "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                 "serviceAccountName": "default", "schedulerName": "default-scheduler"},
        "status": {"phase": "Pending", "qosClass": "Burstable"}}


class Probe:
    """etcd's CPU seconds and gRPC calls by method so far (our own member), or nothing."""

    def __init__(self, cluster: Any = None) -> None:
        self.cluster = cluster

    def cpu(self) -> float:
        if self.cluster is None:
            return 0.0
        pid = self.cluster.members[0].process.pid
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def calls(self) -> collections.Counter[str]:
        if self.cluster is None:
            return collections.Counter()
        ctx = ssl.create_default_context(cafile=str(self.cluster.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.cluster.pki / "client.crt"), str(self.cluster.pki / "client.key"))
        url = self.cluster.endpoints[0] + "/metrics"
        with urllib.request.urlopen(url, context=ctx, timeout=10) as r:
            text = r.read().decode()
        out: collections.Counter[str] = collections.Counter()
        for m in re.finditer(r'^grpc_server_handled_total\{[^}]*grpc_method="(\w+)"[^}]*\} (\S+)$', text, re.M):
            out[m[1]] += int(float(m[2]))
        return out


PROBE = Probe()


async def timed(n: int, concurrency: int, op: Callable[[int], Awaitable[Any]],
                profile: bool) -> tuple[float, float, float, str]:
    """Run op(0..n-1) with `concurrency` callers; (ops per second, CPU µs per op, etcd's CPU µs
    per op, etcd's calls per op)."""
    it = iter(range(n))

    async def caller() -> None:
        for i in it:
            await op(i)

    prof = cProfile.Profile() if profile else None
    calls0, e0 = PROBE.calls(), PROBE.cpu()
    t0, c0 = time.perf_counter(), time.process_time()
    if prof is not None:
        prof.enable()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    if prof is not None:
        prof.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ecpu, calls = PROBE.cpu() - e0, PROBE.calls() - calls0
    if prof is not None:
        st = pstats.Stats(prof)
        st.sort_stats("tottime").print_stats(25)
        st.sort_stats("cumulative").print_stats(30)
    per_op = " ".join(f"{m}={c / n:.2f}" for m, c in sorted(calls.items()) if c / n >= 0.01)
    return n / wall, cpu / n * 1e6, ecpu / n * 1e6, per_op


def fresh(config: EtcdConfig) -> EtcdStorage:
    """A store on a prefix of its own."""
    return EtcdStorage(EtcdConfig(config.servers, f"/bench-{time.monotonic_ns()}/registry",
                                  config.cafile, config.certfile, config.keyfile))


async def api_creates(config: EtcdConfig, args: argparse.Namespace, profile: bool) -> tuple[float, float, float, str]:
    from kubeplane.apiserver.request import Request
    from kubeplane.apiserver.server import APIServer

    s = fresh(config)
    await s.start()
    try:
        api = APIServer(s, tokens={"t": "admin"})
        await api.bootstrap()
        sa = orjson.dumps({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        await api.handle(Request.build("POST", "/api/v1/namespaces/default/serviceaccounts", "", dict(HEADERS), sa))

        async def create(i: int) -> None:
            r = await api.handle(Request.build("POST", "/api/v1/namespaces/default/pods", "", dict(HEADERS), API_POD))
            assert r.status == 201, r.body

        await timed(200, args.concurrency, create, False)            # warm
        return await timed(args.n, args.concurrency, create, profile)
    finally:
        await s.close()


async def one_run(config: EtcdConfig, run: int, args: argparse.Namespace,
                  last: bool) -> dict[str, tuple[float, float, float, str]]:
    s = fresh(config)
    await s.start()
    try:
        kvs: dict[int, Any] = {}

        async def create(i: int) -> None:
            key, obj = pod(i)
            kvs[i] = await s.create(key, obj)

        async def update(i: int) -> None:
            kv = kvs[i]
            obj = {**kv.obj, "status": {**kv.obj["status"], "phase": "Running"}}
            kvs[i] = await s.update(kv.key, obj, kv.mod_revision)

        async def get(i: int) -> None:
            assert await s.get(pod(i)[0]) is not None

        ops = {"create": create, "update": update, "get": get}
        out = {ph: await timed(args.n, args.concurrency, op, last and args.profile == ph) for ph, op in ops.items()}
    finally:
        await s.close()
    out["api"] = await api_creates(config, args, last and args.profile == "api")
    return out


async def main_async(args: argparse.Namespace, config: EtcdConfig) -> None:
    results: dict[str, list[tuple[float, float, float, str]]] = {ph: [] for ph in PHASES}
    for run in range(args.runs):
        r = await one_run(config, run, args, run == args.runs - 1)
        for ph in PHASES:
            results[ph].append(r[ph])
        print(f"run {run}: " + "  ".join(f"{ph} {r[ph][0]:,.0f}/s {r[ph][1]:.0f}µs etcd {r[ph][2]:.0f}µs [{r[ph][3]}]"
                                         for ph in PHASES), flush=True)
    print("median: " + "  ".join(
        f"{ph} {statistics.median(x[0] for x in results[ph]):,.0f}/s "
        f"{statistics.median(x[1] for x in results[ph]):.0f}µs CPU, etcd "
        f"{statistics.median(x[2] for x in results[ph]):.0f}µs" for ph in PHASES))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("-n", type=int, default=3000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--no-uvloop", action="store_true")
    p.add_argument("--profile", choices=PHASES)
    p.add_argument("--endpoint", help="an etcd already running (http://host:port), instead of one of our own")
    args = p.parse_args()
    if not args.no_uvloop:
        import uvloop
        uvloop.install()
    if args.endpoint:
        asyncio.run(main_async(args, EtcdConfig([args.endpoint])))
        return
    from kubeplane.testing.etcd import EtcdCluster
    with tempfile.TemporaryDirectory() as tmp, EtcdCluster(tmp) as cluster:
        PROBE.cluster = cluster
        asyncio.run(main_async(args, cluster.config()))


if __name__ == "__main__":
    main()
