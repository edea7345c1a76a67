"""A list of 10,000 pods on etcd: from the watch cache against straight from etcd, and what two
API servers' lists cost etcd.

    PYTHONPATH=src .venv/bin/python benchmarks/etcd_list.py [--pods 10000] [--lists 20]
        [--part store|servers|both]

One etcd member of its own (TLS, kubeplane.testing.etcd.EtcdCluster) holding --pods pods of
~1.7 KB (benchmarks/storage_bench.py's) in 20 namespaces, written through EtcdStorage.

store    In process, --lists lists of every pod, one at a time, each built into the body the API
         server sends (objects.list_body: the stored bytes joined, no re-encoding):
         - cache: EtcdStorage.list, i.e. a revision round trip, then the watch cache's objects
           (what `kubeplane up --storage etcd` serves);
         - etcd:  one range of the prefix from etcd, each value decoded and stamped with its
           resourceVersion (what an API server without a watch cache does per list, as
           upstream's with the cache off).
         Per list: wall ms, this process's CPU ms, etcd's CPU ms, bytes etcd sent.
servers  Two `kubeplane up --storage etcd --no-controllers` on that etcd (the second with the
         first's PKI and encryption key, as docs/deployment.md's HA setup), --lists
         `GET /api/v1/pods` through each, one at a time, then 2 x --lists through both, 8 at a
         time: wall ms per list (over 8 at a time: elapsed / lists) and
         what those lists cost etcd in calls by method, CPU and bytes sent (etcd's
         grpc_server_handled_total and etcd_network_client_grpc_sent_bytes_total). A list
         served from the cache costs etcd one revision round trip (a get of one key) or less.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import pathlib
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from typing import Any

import aiohttp
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from storage_bench import pod

from kubeplane.storage.etcd import EtcdConfig, EtcdStorage
from kubeplane.testing.etcd import EtcdCluster

PODS = "/registry/pods/"
HEAD = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":['


class Etcd:
    """The member's CPU seconds, gRPC calls by method and bytes sent to clients, so far."""

    def __init__(self, cluster: EtcdCluster) -> None:
        self.cluster = cluster
        self.ctx = ssl.create_default_context(cafile=str(cluster.pki / "ca.crt"))
        self.ctx.load_cert_chain(str(cluster.pki / "client.crt"), str(cluster.pki / "client.key"))

    def sample(self) -> dict[str, float]:
        pid = self.cluster.members[0].process.pid            # type: ignore[union-attr]
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        out = {"cpu": (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")}
        with urllib.request.urlopen(self.cluster.endpoints[0] + "/metrics", context=self.ctx, timeout=10) as r:
            text = r.read().decode()
        for m in re.finditer(r'^grpc_server_handled_total\{[^}]*grpc_method="(\w+)"[^}]*\} (\S+)$', text, re.M):
            out[m[1]] = out.get(m[1], 0) + float(m[2])
        sent = re.search(r"^etcd_network_client_grpc_sent_bytes_total (\S+)$", text, re.M)
        out["sent"] = float(sent[1]) if sent else 0.0
        return out

    def delta(self, before: dict[str, float], n: int) -> str:
        after = self.sample()
        d = {k: after[k] - before.get(k, 0.0) for k in after}
        calls = " ".join(f"{k}={v / n:.2f}" for k, v in sorted(d.items())
                         if k not in ("cpu", "sent") and v > 0)
        sent = d["sent"] / n
        size = f"{sent / 1e3:,.0f} kB" if sent >= 10_000 else f"{sent:,.0f} B"
        return f"etcd per list: CPU {d['cpu'] / n * 1e3:.1f} ms, sent {size}, calls [{calls}]"


async def fill(config: EtcdConfig, n: int) -> int:
    """Write n pods through EtcdStorage, 32 at a time; their JSON size."""
    s = EtcdStorage(config)
    await s.start()
    try:
        it = iter(range(n))

        async def writer() -> None:
            for i in it:
                await s.create(*pod(i))

        await asyncio.gather(*(writer() for _ in range(32)))
        return len((await s.get(pod(0)[0])).value)          # type: ignore[union-attr]
    finally:
        await s.close()


async def timed(lists: int, one: Any) -> tuple[float, float]:
    walls, c0 = [], time.process_time()
    for _ in range(lists):
        t0 = time.perf_counter()
        await one()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls) * 1e3, (time.process_time() - c0) / lists * 1e3


async def store_part(config: EtcdConfig, etcd: Etcd, args: argparse.Namespace) -> None:
    s = EtcdStorage(config)
    t0 = time.perf_counter()
    await s.start()
    print(f"cache loaded {await s.count(PODS):,} pods from etcd in {time.perf_counter() - t0:.2f} s")
    rpc, (start, end) = s._rpc, (s._etcd_key(PODS), s._range[1])
    try:
        async def from_cache() -> None:
            kvs, rev = await s.list(PODS)
            body = HEAD % rev + b",".join(kv.value for kv in kvs) + b"]}"
            assert len(kvs) == args.pods, len(kvs)
            assert body

        async def from_etcd() -> None:
            resp = await s._kv.Range(rpc.RangeRequest(key=start, range_end=end), timeout=60)
            kvs = [s._kv_of(kv) for kv in resp.kvs]
            body = HEAD % resp.header.revision + b",".join(kv.value for kv in kvs) + b"]}"
            assert len(kvs) == args.pods, len(kvs)
            assert body

        for name, one in (("cache", from_cache), ("etcd", from_etcd)) * 2:
            before = etcd.sample()
            wall, cpu = await timed(args.lists, one)
            print(f"{args.pods:,} pods from {name:5s}: {wall:7.1f} ms per list (median), CPU {cpu:6.1f} ms; "
                  + etcd.delta(before, args.lists), flush=True)
    finally:
        await s.close()


def start_up(data_dir: pathlib.Path, cluster: EtcdCluster) -> subprocess.Popen[bytes]:
    cfg = cluster.config()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubeplane", "up", "--data-dir", str(data_dir), "--port", "0", "--nodes", "0",
         "--no-controllers", "--storage", "etcd", "--etcd-servers", ",".join(cfg.servers),
         f"--etcd-cafile={cfg.cafile}", f"--etcd-certfile={cfg.certfile}", f"--etcd-keyfile={cfg.keyfile}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    assert proc.stdout is not None
    seen = b""
    while b"ready" not in (line := proc.stdout.readline()):
        if not line:
            raise RuntimeError(seen.decode(errors="replace"))
        seen += line
    threading_drain(proc)
    return proc


def threading_drain(proc: subprocess.Popen[bytes]) -> None:
    """Drain the rest of up's output: a chatty server never blocks on a full pipe."""
    threading.Thread(target=proc.stdout.read, daemon=True).start()       # type: ignore[union-attr]


def client(kubeconfig: pathlib.Path) -> tuple[str, aiohttp.ClientSession]:
    cfg = yaml.safe_load(kubeconfig.read_text())
    cluster = cfg["clusters"][0]["cluster"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    token = cfg["users"][0]["user"]["token"]
    return cluster["server"], aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, limit=16),
                                                    headers={"Authorization": f"Bearer {token}"})


async def servers_part(cluster: EtcdCluster, etcd: Etcd, root: pathlib.Path, args: argparse.Namespace) -> None:
    procs = []
    try:
        a = root / "a"
        procs.append(start_up(a, cluster))
        (root / "b").mkdir()
        shutil.copytree(a / "pki", root / "b" / "pki")
        with contextlib.suppress(FileNotFoundError):
            shutil.copy(a / "encryption-config.yaml", root / "b" / "encryption-config.yaml")
        procs.append(start_up(root / "b", cluster))
        sessions = [client(d / "kubeconfig") for d in (a, root / "b")]
        try:
            async def one(server: str, session: aiohttp.ClientSession) -> None:
                async with session.get(f"{server}/api/v1/pods") as r:
                    assert r.status == 200, r.status
                    body = await r.read()
                    assert body.count(b'"kind":"Pod"') == args.pods

            for name, (server, session) in zip(("A", "B"), sessions):
                await one(server, session)                          # warm: connection, first encode
                before = etcd.sample()
                wall, _ = await timed(args.lists, lambda s=server, c=session: one(s, c))
                print(f"API server {name}: GET /api/v1/pods ({args.pods:,}): {wall:6.1f} ms per list (median); "
                      + etcd.delta(before, args.lists), flush=True)
            n, pending = 2 * args.lists, iter(range(2 * args.lists))

            async def caller(i: int) -> None:
                for _ in pending:
                    await one(*sessions[i % 2])

            before, t0 = etcd.sample(), time.perf_counter()
            await asyncio.gather(*(caller(i) for i in range(8)))
            print(f"A and B, 8 lists at a time: {(time.perf_counter() - t0) / n * 1e3:6.1f} ms per list; "
                  + etcd.delta(before, n), flush=True)
        finally:
            for _, session in sessions:
                await session.close()
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(20)


async def main_async(args: argparse.Namespace, cluster: EtcdCluster, root: pathlib.Path) -> None:
    etcd = Etcd(cluster)
    t0 = time.perf_counter()
    size = await fill(cluster.config(), args.pods)
    print(f"wrote {args.pods:,} pods of {size:,} bytes in {time.perf_counter() - t0:.1f} s")
    if args.part in ("store", "both"):
        await store_part(cluster.config(), etcd, args)
    if args.part in ("servers", "both"):
        await servers_part(cluster, etcd, root, args)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pods", type=int, default=10_000)
    p.add_argument("--lists", type=int, default=20)
    p.add_argument("--part", choices=("store", "servers", "both"), default="both")
    args = p.parse_args()
    import uvloop
    uvloop.install()
    with tempfile.TemporaryDirectory() as tmp, EtcdCluster(pathlib.Path(tmp) / "etcd") as cluster:
        asyncio.run(main_async(args, cluster, pathlib.Path(tmp)))


if __name__ == "__main__":
    main()
