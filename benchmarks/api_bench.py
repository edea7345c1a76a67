"""API server benchmark: start-up time, GET/s, creates/s and watch fan-out, over real HTTPS.

Run:  .venv/bin/python benchmarks/api_bench.py [--storage sqlite|memory|etcd] [--seconds 5]

`kubeplane up` runs in its own process (as a user runs it); the load generator is this process,
an aiohttp client using the kubeconfig's CA and token (KUBEPLANE_BENCH_AUTH=x509: its client certificate,
as kubectl), so the figures include TLS, HTTP parsing,
authentication, routing and storage — everything a real client pays for.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import pathlib
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import aiohttp
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent


def start_up(data_dir: pathlib.Path, storage: str, extra: list[str] | None = None) -> tuple[subprocess.Popen, float]:
    """Start `kubeplane up` and return (process, seconds until it printed its ready line).

    The rest of its output is drained by a thread, so a chatty server never blocks on a full pipe.
    """
    etcd_args, etcd = [], None
    if storage == "etcd":                # one real etcd member (TLS) of its own, stopped with `up`
        from kubeplane.testing.etcd import EtcdCluster
        etcd = EtcdCluster(data_dir / "etcd").start()
        cfg = etcd.config()
        etcd_args = ["--etcd-servers", ",".join(cfg.servers), f"--etcd-cafile={cfg.cafile}",
                     f"--etcd-certfile={cfg.certfile}", f"--etcd-keyfile={cfg.keyfile}"]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kubeplane", "up", "--data-dir", str(data_dir), "--port", "0",
                             "--nodes", "0", "--storage", storage, *etcd_args, *(extra or [])],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    if etcd is not None:
        _ETCD[proc.pid] = etcd
    assert proc.stdout is not None
    seen = b""
    while b"ready" not in (line := proc.stdout.readline()):    # the ready line follows the start-up log lines
        if not line:
            raise RuntimeError(seen)
        seen += line
    elapsed = time.perf_counter() - t0
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return proc, elapsed


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(10)
    if (etcd := _ETCD.pop(proc.pid, None)) is not None:
        etcd.stop()


_ETCD: dict[int, Any] = {}          # up's pid -> its EtcdCluster


class Client:
    def __init__(self, kubeconfig: pathlib.Path, connections: int) -> None:
        cfg = yaml.safe_load(kubeconfig.read_text())
        cluster = cfg["clusters"][0]["cluster"]
        self.server = cluster["server"]
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        user = cfg["users"][0]["user"]
        self.headers = {"Content-Type": "application/json"}
        if os.environ.get("KUBEPLANE_BENCH_AUTH") == "x509":    # the admin's client certificate, as kubectl
            from kubeplane.client.transport import load_client_cert
            load_client_cert(ctx, base64.b64decode(user["client-certificate-data"]),
                             base64.b64decode(user["client-key-data"]))
        else:                                                   # the admin's bearer token
            self.headers["Authorization"] = f"Bearer {user['token']}"
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=connections),
                                             headers=self.headers)

    async def close(self) -> None:
        await self.session.close()


async def run_for(seconds: float, workers: int, op) -> int:
    """Run op() in `workers` concurrent loops for `seconds`; return how many completed."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def loop(i: int) -> None:
        nonlocal done
        n = 0
        while time.perf_counter() < deadline:
            await op(i, n)
            n += 1
            done += 1

    await asyncio.gather(*(loop(i) for i in range(workers)))
    return done


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


async def bench_get(c: Client, seconds: float, workers: int) -> float:
    url = f"{c.server}/api/v1/namespaces/default"

    async def op(i: int, n: int) -> None:
        async with c.session.get(url) as r:
            assert r.status == 200, r.status
            await r.read()

    t0 = time.perf_counter()
    n = await run_for(seconds, workers, op)
    return n / (time.perf_counter() - t0)


async def bench_create(c: Client, seconds: float, workers: int, prefix: str = "p") -> float:
    """Pod creates per second; `prefix` starts the pods' names (a second run takes another)."""
    url = f"{c.server}/api/v1/namespaces/default/pods"
    # The ServiceAccount admission plugin needs the namespace's default service account, which
    # only the controller-manager creates (absent with --no-controllers): make sure it is there.
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    async with c.session.post(f"{c.server}/api/v1/namespaces/default/serviceaccounts", data=json.dumps(sa)) as r:
        assert r.status in (201, 409), await r.text()

    async def op(i: int, n: int) -> None:
        async with c.session.post(url, data=json.dumps(pod(f"{prefix}-{i}-{n}"))) as r:
            assert r.status == 201, await r.text()
            await r.read()

    t0 = time.perf_counter()
    n = await run_for(seconds, workers, op)
    return n / (time.perf_counter() - t0)


async def bench_watch(c: Client, watchers: int, writes: int, workers: int) -> dict[str, float]:
    """10 watchers on configmaps while `writes` configmaps are created; time until all saw all."""
    rv = json.loads(await (await c.session.get(f"{c.server}/api/v1/namespaces/default/configmaps?limit=1")).read())
    rv = rv["metadata"]["resourceVersion"]
    seen = [0] * watchers
    finished = [0.0] * watchers

    async def watch(i: int) -> None:
        url = f"{c.server}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=600"
        async with c.session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as r:
            async for _ in r.content:
                seen[i] += 1
                if seen[i] == writes:
                    finished[i] = time.perf_counter()
                    return

    tasks = [asyncio.ensure_future(watch(i)) for i in range(watchers)]
    await asyncio.sleep(0.5)
    per_worker = writes // workers
    t0 = time.perf_counter()

    async def writer(w: int) -> None:
        for n in range(per_worker):
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{w}-{n}"}, "data": {"k": "v"}}
            async with c.session.post(f"{c.server}/api/v1/namespaces/default/configmaps", data=json.dumps(body)) as r:
                assert r.status == 201
                await r.read()

    await asyncio.gather(*(writer(w) for w in range(workers)))
    t_writes = time.perf_counter() - t0
    await asyncio.wait_for(asyncio.gather(*tasks), 120)
    t_all = max(finished) - t0
    return {"writes_per_s": writes / t_writes, "write_s": t_writes, "all_delivered_s": t_all,
            "delivery_lag_s": t_all - t_writes, "events_delivered": sum(seen)}


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        times = []
        for i in range(5):
            d = pathlib.Path(tmp) / f"startup-{i}"
            proc, dt = start_up(d, args.storage)
            stop(proc)
            times.append(dt)
        print(f"startup_ready_s median={statistics.median(times):.3f} all={[round(t, 3) for t in times]}")
        d = pathlib.Path(tmp) / "main"
        proc, _ = start_up(d, args.storage, args.up_args.split())
        try:
            c = Client(d / "kubeconfig", args.connections)
            try:
                print(f"get_per_s={await bench_get(c, args.seconds, args.connections):.0f}")
                print(f"create_per_s={await bench_create(c, args.seconds, args.connections):.0f}")
                w = await bench_watch(c, 10, args.writes, args.connections)
                print("watch " + " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in w.items()))
            finally:
                await c.close()
        finally:
            stop(proc)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--storage", default="sqlite")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--writes", type=int, default=10_000)
    p.add_argument("--up-args", default="", help='extra `kubeplane up` flags, e.g. "--no-controllers"')
    args = p.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
